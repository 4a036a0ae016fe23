"""The fleet benchmark: 64 engines over 8 distinct deployments, linted offline.

    python bench/fleet.py [--runs N] [--json FILE]

The fleet: 32 prefill and 32 decode engines, eight of each deployment (vllm serve configs
in a temporary folder): Qwen3-8B on H200s, on B200s and H100s at --block-size 128,
Qwen3.5-9B at TP1 and TP8, Gemma 2 with a backend per layer kind at TP1 and TP2; NIXL
between every prefill and decode engine, a Dynamo router in front, one shared file tier.
That is 1,024 prefill-decode pairs (16 distinct ones), with findings on most of them, so
the rules and their checked fixes run as well.

Measured: ``kvconfig lint --fleet``'s work in a fresh process (``python -c`` around
``kvconfig.fleet.lint_fleet``, imports included: the CLI's cost once it is wired), and
the same call again in one process (warm). The target is 1 s, cold.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "examples" / "models"
sys.path.insert(0, str(ROOT))

NIXL = {"kv_connector": "NixlConnector"}

#: name -> (platform, role, serve options, parallelism)
DEPLOYMENTS: dict[str, tuple[str, str, dict[str, Any], dict[str, int]]] = {
    "qwen3-prefill-h200": ("h200", "prefill", {"model": "qwen3-8b", "block-size": 64}, {}),
    "qwen3-decode-h200": ("h200", "decode", {"model": "qwen3-8b", "block-size": 64}, {}),
    "qwen3-prefill-b200": (
        "b200",
        "prefill",
        {"model": "qwen3-8b", "block-size": 128, "attention-backend": "FLASHINFER"},
        {},
    ),
    "qwen3-decode-h100": (
        "h100",
        "decode",
        {"model": "qwen3-8b", "block-size": 128, "attention-backend": "FLASHINFER"},
        {},
    ),
    "qwen35-prefill-tp1": ("h200", "prefill", {"model": "qwen3.5-9b"}, {"data": 8}),
    "qwen35-decode-tp8": ("h200", "decode", {"model": "qwen3.5-9b"}, {"tensor": 8}),
    "gemma2-prefill": (
        "h100",
        "prefill",
        {
            "model": "gemma-2-9b-it",
            "block-size": 128,
            "attention-config": {
                "backend_per_kind": {"sliding_window": "FLASHINFER", "full_attention": "FLASH_ATTN"}
            },
        },
        {},
    ),
    "gemma2-decode-tp2": (
        "h100",
        "decode",
        {
            "model": "gemma-2-9b-it",
            "block-size": 128,
            "attention-config": {
                "backend_per_kind": {"sliding_window": "FLASHINFER", "full_attention": "FLASH_ATTN"}
            },
        },
        {"tensor": 2},
    ),
}


def build(folder: Path, copies: int = 8) -> Path:
    """Write the deployments and the fleet file; returns the fleet file."""
    engines = []
    for name, (platform, role, options, parallel) in DEPLOYMENTS.items():
        serve = dict(options)
        serve["model"] = str(MODELS / str(options["model"]))
        kv_role = "kv_producer" if role == "prefill" else "kv_consumer"
        serve["kv-transfer-config"] = {**NIXL, "kv_role": kv_role}
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(serve, sort_keys=False), encoding="utf-8")
        env = {"VLLM_SSM_CONV_STATE_LAYOUT": "DS"} if "qwen35" in name else {}
        for i in range(copies):
            engine: dict[str, Any] = {
                "name": f"{name}-{i}",
                "deployment": path.name,
                "platform": platform,
                "role": role,
                "env": env,
            }
            if parallel:
                engine["parallelism"] = parallel
            engines.append(engine)
    fleet = {
        "kvconfig_fleet": 1,
        "name": "bench-64",
        "engines": engines,
        "router": {"kind": "dynamo", "block_size": 64},
        "offload": [
            {
                "name": "nfs",
                "kind": "fs",
                "root_dir": "/mnt/kv",
                "block_size": 256,
                "engines": [e["name"] for e in engines if e["name"].startswith("qwen3-")],
            }
        ],
    }
    path = folder / "fleet.yaml"
    path.write_text(yaml.safe_dump(fleet, sort_keys=False), encoding="utf-8")
    return path


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "runs": len(ordered),
        "median": statistics.median(ordered),
        "min": ordered[0],
        "max": ordered[-1],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kvconfig-fleet-bench-") as tmp:
        fleet = build(Path(tmp))
        code = (
            f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
            "from kvconfig.fleet import lint_fleet; "
            f"text, code = lint_fleet([{str(fleet)!r}]); print(code, len(text))"
        )
        cold = []
        for _ in range(args.runs):
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            )
            cold.append(time.perf_counter() - start)
        from kvconfig.fleet import fleet_document, lint_fleet

        doc = fleet_document([str(fleet)])
        warm = []
        for _ in range(args.runs):
            start = time.perf_counter()
            lint_fleet([str(fleet)])
            warm.append(time.perf_counter() - start)
    codes: dict[str, int] = {}
    for f in doc["findings"]:
        codes[f["code"]] = codes.get(f["code"], 0) + 1
    result = {
        "engines": len(doc["engines"]),
        "distinct_deployments": len(DEPLOYMENTS),
        "findings": codes,
        "exit": int(out.stdout.split()[0]),
        "cold_seconds": _stats(cold),
        "warm_seconds": _stats(warm),
        "target_seconds": 1.0,
        "python": sys.version.split()[0],
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0 if result["cold_seconds"]["median"] <= 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
