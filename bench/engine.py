"""The engine mode's cost: vLLM's own start-up under the emulated GPU.

    python bench/engine.py [--runs 3] [--warm 10] [--json FILE]

* cold: ``kvconfig plan --engine vllm`` of the seed deployment in a fresh process (the
  engine child starts, imports vLLM, installs the emulation and starts one deployment);
* warm: per deployment, ``--warm`` further start-ups of the bundled examples' models in one
  child after the first (what a lint of many deployments on one platform pays each);
* memory: the largest resident set of an engine child (``ru_maxrss`` of the children).

Medians with their spread, as bench/run.py reports them. The seed's GPU engine start-up,
for comparison, is about 70 s to profile, compile and warm up (the upstream fix's
description, GH200).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import machine, stats  # noqa: E402

SEED = ROOT / "examples" / "qwen3-8b-eagle3-gh200-triton-128.yaml"
MODELS = ROOT / "examples" / "models"
WARM_MODELS = (
    "qwen3-8b",
    "gemma-2-9b-it",
    "gpt-oss-120b",
    "deepseek-v3",
    "kimi-k2-instruct",
    "qwen3-next-80b-a3b-instruct",
    "nemotron-h-8b-base-8k",
    "jamba-v0.1",
)


def bench_cold(runs: int) -> dict[str, Any]:
    """Fresh ``kvconfig plan --engine vllm`` processes on the seed."""
    cmd = [sys.executable, "-m", "kvconfig", "plan", "--engine", "vllm", "--platform", "gh200"]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            [*cmd, str(SEED)], check=False, capture_output=True, text=True, cwd=ROOT
        )
        times.append(time.perf_counter() - start)
        if done.returncode != 1:  # the seed is rejected
            raise RuntimeError(f"engine plan failed ({done.returncode}): {done.stderr[-2000:]}")
    return {"seconds": stats(times)}


def bench_warm(warm: int) -> dict[str, Any]:
    """Per-deployment seconds in one child, after its first start-up."""
    from kvconfig.engine.pool import Gpu, Pool, Request

    gpu = Gpu("NVIDIA H100 80GB HBM3", (9, 0), 80 << 30)
    models = [WARM_MODELS[i % len(WARM_MODELS)] for i in range(warm + 1)]
    requests = [
        Request((str(MODELS / m), "--max-model-len", "4096"), str(ROOT), gpu) for m in models
    ]
    with Pool() as pool:
        start = time.perf_counter()
        first = pool.ask(requests[0])
        started = time.perf_counter() - start
        answers = [pool.ask(r) for r in requests[1:]]
    bad = [a.data for a in [first, *answers] if a.status != "ok"]
    if bad:
        raise RuntimeError(f"warm start-ups failed: {bad[:2]}")
    per = {m: a.seconds for m, a in zip(models[1:], answers, strict=True)}
    return {
        "child_start_and_first_seconds": started,
        "per_deployment_seconds": stats([a.seconds for a in answers]),
        "by_model_seconds": per,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm", type=int, default=16)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    result = {
        "machine": machine(),
        "cold": bench_cold(args.runs),
        "warm": bench_warm(args.warm),
        "child_peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
