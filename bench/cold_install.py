"""Cold start from a regular install, side by side with vLLM's minimal path, in one run.

    python bench/cold_install.py [--venv DIR] [--runs N] [--json FILE]

1. builds kvconfig's wheel from this checkout (``pip wheel --no-deps``) and installs it,
   with its dependencies, into a fresh virtualenv (``--venv``: reuse one that has it);
2. times, in fresh processes and alternately (so both sides see the same load on the
   machine): the installed ``kvconfig lint --platform gh200`` of the seed deployment,
   the venv's bare ``python -c pass`` (the interpreter's own start), and
   ``bench/vllm_minimal.py`` with this interpreter (which has vLLM);
3. prints medians, minimums and interquartile ranges of wall time and of CPU time
   (user + system of the child), and the ratio of the medians.

CPU time counts only the child's own work, so it moves less than wall time when other
work shares the machine's two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "qwen3-8b-eagle3-gh200-triton-128.yaml"


def install(venv: Path) -> Path:
    """A virtualenv with kvconfig's wheel installed (built from this checkout)."""
    with tempfile.TemporaryDirectory() as wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
             "-w", wheels, str(ROOT)],
            check=True,
        )  # fmt: skip
        [wheel] = Path(wheels).glob("kvconfig-*.whl")
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True
        )
    return venv


def timed(cmd: Sequence[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode not in (0, 1):
        raise RuntimeError(f"{cmd} failed ({res.returncode}): {res.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def stats(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    q = statistics.quantiles(ordered, n=4) if len(ordered) >= 4 else [ordered[0], 0, ordered[-1]]
    return {
        "runs": len(ordered),
        "median": statistics.median(ordered),
        "min": ordered[0],
        "max": ordered[-1],
        "iqr": q[2] - q[0],
    }


def measure(venv: Path, runs: int, vllm_every: int) -> dict[str, Any]:
    lint = [str(venv / "bin" / "kvconfig"), "lint", "--platform", "gh200", str(EXAMPLE)]
    bare = [str(venv / "bin" / "python"), "-c", "pass"]
    theirs = [sys.executable, str(ROOT / "bench" / "vllm_minimal.py")]
    samples: dict[str, list[tuple[float, float]]] = {"lint": [], "python": [], "vllm": []}
    with tempfile.TemporaryDirectory() as cwd:  # nothing of the checkout on sys.path
        for i in range(runs):
            samples["lint"].append(timed(lint, Path(cwd)))
            samples["python"].append(timed(bare, Path(cwd)))
            if i % vllm_every == 0:
                os.environ["VLLM_LOGGING_LEVEL"] = "ERROR"
                samples["vllm"].append(timed(theirs, Path(cwd)))
    out: dict[str, Any] = {}
    for name, pairs in samples.items():
        out[name] = {"wall_s": stats([w for w, _ in pairs]), "cpu_s": stats([c for _, c in pairs])}
    out["ratio_wall_median"] = out["vllm"]["wall_s"]["median"] / out["lint"]["wall_s"]["median"]
    out["ratio_cpu_median"] = out["vllm"]["cpu_s"]["median"] / out["lint"]["cpu_s"]["median"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--venv", type=Path, help="a virtualenv with kvconfig installed (reused)")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--vllm-every", type=int, default=6, help="one vLLM run every N lint runs")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        venv = args.venv if args.venv is not None else install(Path(scratch) / "venv")
        result = {
            "machine": {"cpus": os.cpu_count(), "load_before": os.getloadavg()},
            "command": f"kvconfig lint --platform gh200 {EXAMPLE.relative_to(ROOT)}",
            **measure(venv, args.runs, args.vllm_every),
        }
        result["machine"]["load_after"] = os.getloadavg()
    text = json.dumps(result, indent=2) + "\n"
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
