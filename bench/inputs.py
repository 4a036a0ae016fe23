"""Cold reading of a 20-document Kubernetes manifest, offline, models in the Hub cache.

    python bench/inputs.py [--runs 30] [--json FILE]

Each run is a fresh interpreter (compiled bytecode, as an installed package has) that
reads the manifest with ``kvconfig.load.engines.engines_in``, splits every engine's
arguments with ``kvconfig.load.argv.parse_serve_args`` and resolves its Hugging Face id
from a local cache (``kvconfig.load.hub.resolve``, no network, huggingface_hub not
imported). The manifest: 10 Deployments running vLLM (bash scripts, ``$(VAR)``, GPU
labels), each with a Service, generated here.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: qwen3-{i}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: qwen3-{i}}}
  template:
    metadata:
      labels: {{app: qwen3-{i}, llm-d.ai/role: decode}}
    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          command: ["/bin/bash", "-c"]
          args:
            - |
              export VLLM_USE_V2_MODEL_RUNNER=1
              exec vllm serve "$(MODEL)" --block-size ${{BLOCK_SIZE:-64}} \\
                --tensor-parallel-size 2 --max-model-len 32768 \\
                --speculative-config '{{"method": "ngram", "num_speculative_tokens": 3}}'
          env:
            - name: MODEL
              value: Qwen/Qwen3-8B
            - name: HF_TOKEN
              valueFrom: {{secretKeyRef: {{name: hf, key: token}}}}
          resources:
            limits: {{nvidia.com/gpu: "2"}}
---
apiVersion: v1
kind: Service
metadata:
  name: qwen3-{i}
spec:
  selector: {{app: qwen3-{i}}}
  ports: [{{port: 8000}}]
"""

CHILD = """
import sys
from pathlib import Path
from kvconfig.load.argv import parse_serve_args
from kvconfig.load.engines import engines_in
from kvconfig.load.hub import resolve
engines = engines_in(Path(sys.argv[1]), sys.argv[1])
for e in engines:
    args = parse_serve_args(e.argv, entry=e.parser)
    resolve(args.model)
assert len(engines) == 10 and "huggingface_hub" not in sys.modules
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "manifest.yaml"
        manifest.write_text("---\n".join(DEPLOYMENT.format(i=i) for i in range(10)))
        cache = Path(tmp) / "hub"
        snapshot = cache / "models--Qwen--Qwen3-8B" / "snapshots" / ("0" * 40)
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_bytes(
            (ROOT / "examples/models/qwen3-8b/config.json").read_bytes()
        )
        (cache / "models--Qwen--Qwen3-8B" / "refs").mkdir()
        (cache / "models--Qwen--Qwen3-8B" / "refs" / "main").write_text("0" * 40)
        env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
        env["PYTHONPATH"] = str(ROOT)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(ROOT / "kvconfig")], check=True
        )
        times = []
        for _ in range(args.runs + 1):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", CHILD, str(manifest)], env=env, check=True)
            times.append(time.perf_counter() - start)
        times = sorted(times[1:])
        baseline = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            baseline.append(time.perf_counter() - start)
    q = statistics.quantiles(times, n=4)
    result = {
        "what": "cold read of a 20-document manifest (10 vLLM Deployments), Hub cache hit",
        "runs": len(times),
        "median_s": round(statistics.median(times), 4),
        "min_s": round(times[0], 4),
        "max_s": round(times[-1], 4),
        "iqr_s": round(q[2] - q[0], 4),
        "python_start_median_s": round(statistics.median(baseline), 4),
        "manifest_bytes": len("---\n".join(DEPLOYMENT.format(i=i) for i in range(10))),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
