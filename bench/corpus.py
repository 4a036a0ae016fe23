"""Lint the whole real-file corpus (tests/realworld/files) offline, in one command.

    python bench/corpus.py [--runs 5] [--json FILE]

Each run is one fresh ``python -m kvconfig lint --platform H100 tests/realworld/files``
(every file read, every engine's arguments parsed, every engine whose model is here
planned; Qwen3-8B is mapped to examples/models/qwen3-8b, the other models are not in the
offline Hugging Face cache and stop at that), kvconfig's bytecode compiled beforehand, as
an installed package's is. Reports the median wall time and the CPU
time (user + system) of the child. Target: 3 s wall on the 2-core development machine
(docs/performance.md).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QWEN3_8B = ROOT / "examples" / "models" / "qwen3-8b"
COMMAND = [
    sys.executable, "-m", "kvconfig", "lint", "--platform", "H100",
    "--model-path", f"/models/Qwen3-8B={QWEN3_8B}",
    "--model-path", f"Qwen/Qwen3-8B={QWEN3_8B}",
    str(ROOT / "tests" / "realworld" / "files"),
]  # fmt: skip


def one() -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, exit code, lines of output) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(COMMAND, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = len((done.stdout + done.stderr).splitlines())
    return wall, cpu, done.returncode, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    files = [p for p in (ROOT / "tests" / "realworld" / "files").rglob("*") if p.is_file()]
    # kvconfig's bytecode compiled first, as pip compiles an installed package's: a stale
    # or missing cache (PYTHONDONTWRITEBYTECODE, a checkout just changed) is not what runs
    compileall.compile_dir(ROOT / "kvconfig", quiet=1)
    runs = [one() for _ in range(args.runs)]
    result = {
        "files": len(files),
        "runs": args.runs,
        "wall_median_s": round(statistics.median(r[0] for r in runs), 3),
        "wall_min_s": round(min(r[0] for r in runs), 3),
        "cpu_median_s": round(statistics.median(r[1] for r in runs), 3),
        "exit_code": runs[0][2],
        "output_lines": runs[0][3],
        "cores": os.cpu_count(),
        "load_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
