"""kvconfig's benchmarks, side by side with vLLM's own path. One command runs them all:

    python bench/run.py [--quick] [--json bench/results.json]

1. cold ``kvconfig lint`` of one deployment (a fresh process each run) against the least
   a user would otherwise run to get vLLM's answer offline: import
   ``vllm.v1.worker.utils`` and call ``prepare_kernel_block_sizes`` on the same group
   (a fresh process each run, under kvconfig's emulated platform);
2. batch: 1,000 deployments linted in one process;
3. resolver: the plan of a 128-layer model with a drafter and 4 groups;
4. hooks: time the kvconfig hooks add to vLLM's ``init_attn_backend`` path, in process;
5. memory: peak RSS of a cold lint.

Each figure is a median with its spread (min, max, interquartile range) over the runs;
ratios are taken from the same run. Needs the test environment (vllm==0.33.0) for 1 and 4.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "qwen3-8b-eagle3-gh200-triton-128.yaml"
sys.path.insert(0, str(ROOT))


def stats(samples: Sequence[float]) -> dict[str, float]:
    """Median, min, max and interquartile range of ``samples``."""
    ordered = sorted(samples)
    q = statistics.quantiles(ordered, n=4) if len(ordered) >= 4 else [ordered[0], 0.0, ordered[-1]]
    return {
        "runs": len(ordered),
        "median": statistics.median(ordered),
        "min": ordered[0],
        "max": ordered[-1],
        "iqr": q[2] - q[0],
    }


def wall(cmd: Sequence[str], runs: int, env: dict[str, str] | None = None) -> list[float]:
    """Wall time of ``cmd`` in fresh processes (plus its exit codes checked for crashes)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        times.append(time.perf_counter() - start)
        if res.returncode not in (0, 1):
            raise RuntimeError(f"{cmd} failed ({res.returncode}): {res.stderr[-2000:]}")
    return times


def _bytecode_env() -> dict[str, str]:
    """Compile kvconfig's bytecode, as ``pip install`` does, and let the children use it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "kvconfig"), str(ROOT / "schemas")],
        env=env,
        check=True,
    )
    return env


def bench_cold(runs: int) -> dict[str, Any]:
    """1 and 5: cold lint vs vLLM's minimal offline path; peak RSS of the lint.

    Both sides run with compiled bytecode (an installed package has it; vLLM's wheel
    install compiles its own), in fresh processes.
    """
    env = _bytecode_env()
    kvconfig = [sys.executable, "-m", "kvconfig", "lint", "--platform", "gh200", str(EXAMPLE)]
    ours = wall(kvconfig, runs, env=env)
    with tempfile.TemporaryDirectory() as empty:
        # an empty bytecode cache that is never written: every module compiles from source
        cold_source = {**env, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": empty}
        no_bytecode = wall(kvconfig, max(5, runs // 3), env=cold_source)
    vllm_runs = max(3, runs // 10)
    theirs = wall(
        [sys.executable, str(ROOT / "bench" / "vllm_minimal.py")],
        vllm_runs,
        env={**env, "VLLM_LOGGING_LEVEL": "ERROR"},
    )
    probe = (
        "import resource, runpy, sys\n"
        f"sys.argv = {['kvconfig', 'lint', '--platform', 'gh200', str(EXAMPLE)]!r}\n"
        "try:\n    runpy.run_module('kvconfig', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "sys.stderr.write(f'RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n"
    )
    rss = []
    for _ in range(5):
        res = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=False
        )
        rss.append(int(res.stderr.strip().splitlines()[-1].split()[1]))
    return {
        "kvconfig_lint_s": stats(ours),
        "kvconfig_lint_without_bytecode_s": stats(no_bytecode),
        "vllm_prepare_kernel_block_sizes_s": stats(theirs),
        "ratio_median": statistics.median(theirs) / statistics.median(ours),
        "peak_rss_kib": stats(rss),
    }


def _batch_files(folder: Path, n: int) -> list[Path]:
    models = ROOT / "examples" / "models"
    shutil.copytree(models, folder / "models")
    blocks = [16, 32, 64, 128, 256, 512]
    drafts = ["TRITON_ATTN", "FLASH_ATTN", "FLASHINFER", "FLEX_ATTENTION"]
    files = []
    for i in range(n):
        path = folder / f"d{i:04d}.yaml"
        path.write_text(
            "model: ./models/qwen3-8b\n"
            f"block-size: {blocks[i % len(blocks)]}\n"
            "attention-backend: FLASHINFER\n"
            "speculative-config:\n"
            "  model: ./models/qwen3-8b-eagle3-angelslim\n"
            "  method: eagle3\n"
            "  num_speculative_tokens: 3\n"
            f"  attention_backend: {drafts[i % len(drafts)]}\n"
        )
        files.append(path)
    return files


def bench_batch(runs: int, n: int = 1000) -> dict[str, Any]:
    """2: n deployments linted in one (warm) process, through the CLI entry point."""
    import io

    from kvconfig.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        files = [str(p) for p in _batch_files(Path(tmp), n)]
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            code = main(
                ["lint", "--platform", "gh200", "--format", "json", *files], stdout=io.StringIO()
            )
            times.append(time.perf_counter() - start)
            assert code == 1
    return {"deployments": n, "seconds": stats(times)}


def resolver_deployment() -> Any:
    """A 128-layer model with a drafter, in 4 KV-cache groups, on H200."""
    from kvconfig.schemas.deployment import Deployment, LayerSet

    layers = [
        LayerSet(
            name=f"model.layers.{{i}}.g{g}",
            count=32,
            first_index=32 * g,
            backend="FLASHINFER",
            group=g,
        )
        for g in range(4)
    ]
    layers.append(
        LayerSet(
            name="model.layers.{i}.self_attn.attn",
            first_index=128,
            role="draft",
            backend="TRITON_ATTN",
            group=0,
        )
    )
    return Deployment(
        source="bench",
        platform="h200",
        layers=layers,
        block_size=64,
        speculative_method="eagle3",
    )


def timeit(fn: Callable[[], object], runs: int, inner: int = 1) -> list[float]:
    """Per-call seconds of ``fn`` (``inner`` calls per sample)."""
    for _ in range(max(10, runs // 10)):
        fn()
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        out.append((time.perf_counter() - start) / inner)
    return out


def bench_resolver(runs: int) -> dict[str, Any]:
    """3: the resolver on the 128-layer, 4-group model (safe and mismatching variants)."""
    from dataclasses import replace

    from kvconfig.plan.resolve import resolve

    safe = resolver_deployment()
    bad = replace(safe, block_size=128)
    return {
        "safe_us": stats([t * 1e6 for t in timeit(lambda: resolve(safe), runs, 10)]),
        "mismatch_with_fixes_us": stats([t * 1e6 for t in timeit(lambda: resolve(bad), runs, 10)]),
    }


def bench_hooks(runs: int) -> dict[str, Any] | None:
    """4: the hooks' cost on vLLM's init_attn_backend path (see bench/hooks_overhead.py)."""
    script = ROOT / "bench" / "hooks_overhead.py"
    if not script.exists():
        return None
    res = subprocess.run(
        [sys.executable, str(script), "--runs", str(runs)],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        return {"error": res.stderr[-2000:]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def machine() -> dict[str, Any]:
    """Where the figures were measured."""
    return {
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "system": platform.platform(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run every benchmark and print (and optionally write) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    runs = 10 if args.quick else 30
    result = {
        "machine": machine(),
        "cold": bench_cold(runs),
        "batch": bench_batch(3 if args.quick else 5),
        "resolver": bench_resolver(200 if args.quick else 1000),
        "hooks": bench_hooks(50 if args.quick else 200),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
