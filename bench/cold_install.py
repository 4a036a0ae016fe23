"""Cold start from a regular install, side by side with vLLM's minimal path, in one run.

    python bench/cold_install.py [--venv DIR] [--runs N] [--vllm-every N]
                                 [--vllm-python PATH] [--lock FILE] [--json FILE]
                                 [--baseline-venv DIR]

1. builds kvconfig's wheel from this checkout (``pip wheel --no-deps``) and installs it,
   with its dependencies, into a fresh virtualenv (``--venv``: reuse one that has it),
   and checks that the install is a regular one: kvconfig imported from the
   virtualenv's site-packages, no editable finder or path file pointing elsewhere;
2. times, in fresh processes and alternately (so both sides see the same load on the
   machine): the installed ``kvconfig lint --platform gh200`` console script on the seed
   deployment, the virtualenv's bare ``python -c pass`` (the interpreter's own start),
   the same command of another install (``--baseline-venv``, e.g. the wheel of an older
   commit: a before/after comparison in the same minutes), and, every ``--vllm-every``
   lint runs, ``bench/vllm_minimal.py`` with an interpreter
   that has vLLM (``--vllm-python``, default this one). With ``--lock FILE`` the
   measurement holds an exclusive ``flock`` on FILE (a machine shared with other heavy
   jobs that take the same lock: they wait, so both sides see a quieter machine) and the
   vLLM runs are niced by 10;
3. prints medians, minimums and interquartile ranges of wall time and of CPU time
   (user + system of the child), the ratio of the medians, and the machine's load
   average (1 minute) at each lint run.

CPU time counts only the child's own work, so it moves less than wall time when other
work shares the machine's cores.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "qwen3-8b-eagle3-gh200-triton-128.yaml"
TARGET_S = 0.1
"""Most a cold ``kvconfig lint`` of one deployment may take (median wall time)."""
TARGET_RATIO = 100.0
"""Least ratio of vLLM's minimal path to the cold lint (medians)."""


def install(venv: Path) -> Path:
    """A fresh virtualenv with kvconfig's wheel, built from this checkout, installed."""
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


def regular(venv: Path, cwd: Path) -> dict[str, Any]:
    """Where the virtualenv's kvconfig comes from; raises unless it is a regular install
    (the package in its site-packages, no editable finder, no path file naming another
    folder: an editable install's finder costs the start-up time a user does not pay)."""
    probe = (
        "import json, sys, sysconfig, kvconfig\n"
        "site = sysconfig.get_paths()['purelib']\n"
        "print(json.dumps({'file': kvconfig.__file__, 'site': site, 'finders': "
        "[type(f).__module__ for f in sys.meta_path]}))\n"
    )
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        cwd=cwd, capture_output=True, text=True, check=True,
    )  # fmt: skip
    info: dict[str, Any] = json.loads(out.stdout)
    site = Path(info["site"])
    editable = sorted(p.name for p in site.iterdir() if "__editable__" in p.name)
    paths = sorted(
        line.strip()
        for pth in site.glob("*.pth")
        for line in pth.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith(("#", "import "))
    )
    if not Path(info["file"]).is_relative_to(site) or editable or paths:
        raise RuntimeError(f"not a regular install: {info}, editable {editable}, paths {paths}")
    return {"kvconfig": info["file"], "editable_files": editable, "path_entries": paths}


@contextlib.contextmanager
def locked(path: Path | None) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (nothing when None)."""
    if path is None:
        yield
        return
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def timed(cmd: Sequence[str], cwd: Path, expect: int, *, nice: int = 0) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one fresh process, which must exit with
    ``expect``."""
    env = {**os.environ, "VLLM_LOGGING_LEVEL": "ERROR"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    res = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False,
        preexec_fn=(lambda: os.nice(nice)) if nice else None,
    )  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != expect:
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


def measure(
    venv: Path,
    cwd: Path,
    *,
    runs: int,
    vllm_every: int,
    vllm_python: str,
    lock: Path | None,
    baseline: Path | None = None,
) -> dict[str, Any]:
    def lint_of(env: Path) -> list[str]:
        return [str(env / "bin" / "kvconfig"), "lint", "--platform", "gh200", str(EXAMPLE)]

    lint = lint_of(venv)
    bare = [str(venv / "bin" / "python"), "-c", "pass"]
    theirs = [vllm_python, str(ROOT / "bench" / "vllm_minimal.py")]
    samples: dict[str, list[tuple[float, float]]] = {"lint": [], "python": [], "vllm": []}
    if baseline is not None:
        samples["baseline_lint"] = []
        timed(lint_of(baseline), cwd, 1)
    load: list[float] = []
    timed(lint, cwd, 1)  # the first run after an install reads the files from disk
    with locked(lock):
        for i in range(runs):
            load.append(os.getloadavg()[0])
            samples["lint"].append(timed(lint, cwd, 1))  # 1: the seed deployment is rejected
            if baseline is not None:
                samples["baseline_lint"].append(timed(lint_of(baseline), cwd, 1))
            samples["python"].append(timed(bare, cwd, 0))
            if i % vllm_every == 0:
                samples["vllm"].append(timed(theirs, cwd, 0, nice=10 if lock else 0))
    out: dict[str, Any] = {"load_1min_at_lint_runs": stats(load)}
    for name, pairs in samples.items():
        out[name] = {"wall_s": stats([w for w, _ in pairs]), "cpu_s": stats([c for _, c in pairs])}
    lint_wall, lint_cpu = out["lint"]["wall_s"]["median"], out["lint"]["cpu_s"]["median"]
    out["ratio_wall_median"] = out["vllm"]["wall_s"]["median"] / lint_wall
    out["ratio_cpu_median"] = out["vllm"]["cpu_s"]["median"] / lint_cpu
    ratio = out["ratio_wall_median"]
    out["targets"] = {
        f"lint wall median <= {TARGET_S} s": lint_wall <= TARGET_S,
        f"vLLM / lint (wall medians) >= {TARGET_RATIO:g}": ratio >= TARGET_RATIO,
    }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--venv", type=Path, help="a virtualenv with kvconfig installed (reused)")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--vllm-every", type=int, default=6, help="one vLLM run every N lint runs")
    p.add_argument(
        "--vllm-python", default=sys.executable, help="an interpreter with vLLM installed"
    )
    p.add_argument("--lock", type=Path, help="hold a flock on this file while measuring")
    p.add_argument("--json", type=Path)
    p.add_argument(
        "--baseline-venv", type=Path, help="another install whose lint is timed alternately"
    )
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        venv = args.venv if args.venv is not None else install(Path(scratch) / "venv")
        cwd = Path(scratch) / "cwd"  # nothing of the checkout on sys.path
        cwd.mkdir()
        result = {
            "machine": {
                "cpus": os.cpu_count(),
                "python": sys.version.split()[0],
                "load_before": os.getloadavg(),
            },
            "command": f"kvconfig lint --platform gh200 {EXAMPLE.relative_to(ROOT)}",
            "install": regular(venv, cwd),
            **measure(
                venv,
                cwd,
                runs=args.runs,
                vllm_every=args.vllm_every,
                vllm_python=args.vllm_python,
                lock=args.lock,
                baseline=args.baseline_venv,
            ),
        }
        result["machine"]["load_after"] = os.getloadavg()
        result["install"]["kvconfig"] = "<venv>/" + str(
            Path(result["install"]["kvconfig"]).relative_to(venv)
        )
    text = json.dumps(result, indent=2) + "\n"
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
