"""Time the kvconfig hooks add to vLLM's KV-cache initialisation path, in process.

The path is what Model Runner V2 runs between loading the model and binding the KV
cache: the runner's ``init_attn_backend`` over every layer, then the speculator's
``DraftModelSpeculator.set_attn`` (the real vLLM 0.33.0 functions, on the seed's
FLASHINFER target + TRITON_ATTN EAGLE3 drafter under an emulated SM90; only the GPU
metadata builders are stood in for, as in tests/test_hooks_engine.py). It is timed with
the hooks off, then installed in ``enforce`` mode (which also checks every group, logs
the plan and, here, exports nothing). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    """Measure and print ``{"off_us": ..., "enforce_us": ..., "overhead_us": ...}``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()

    from tools.catalog import emulate

    emulate.install()
    import pytest

    from kvconfig import hooks
    from tests.test_hooks_engine import build
    from tools.catalog.emulate import Emulation, emulated

    logging.getLogger("kvconfig").setLevel(logging.ERROR)
    monkeypatch = pytest.MonkeyPatch()
    results: dict[str, Any] = {}
    with emulated(Emulation(capability=(9, 0), num_heads=32, num_kv_heads=8)) as config:
        engine = build(config, 128, monkeypatch)

        def plain() -> None:
            groups, _ = engine.runner_backend()
            engine.set_attn(engine.speculator(), groups)

        def hooked() -> None:
            engine.initialize_kv_cache(engine.runner(), engine.speculator())

        for name, fn, mode in (("off", plain, "off"), ("enforce", hooked, "enforce")):
            hooks.install(mode=mode)
            for _ in range(20):
                fn()
            samples = []
            for _ in range(args.runs):
                start = time.perf_counter()
                fn()
                samples.append((time.perf_counter() - start) * 1e6)
            results[name] = samples
        hooks.uninstall()
    monkeypatch.undo()
    off, on = statistics.median(results["off"]), statistics.median(results["enforce"])
    print(
        json.dumps(
            {
                "runs": args.runs,
                "off_us": {"median": off, "min": min(results["off"]), "max": max(results["off"])},
                "enforce_us": {
                    "median": on,
                    "min": min(results["enforce"]),
                    "max": max(results["enforce"]),
                },
                "overhead_us": on - off,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
