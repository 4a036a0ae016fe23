"""The slow mode (docs/errors.md):
``python -m tests.fuzz [--count N] [--seed S] [--generated | --retyped] [FORMAT...]`` from
the repository root runs N inputs (default 100,000) of each format, mutated (``contract``),
with ``--generated`` built by Hypothesis (``generated``), or with ``--retyped`` a YAML
seed with one value of another type (``retyped``), and prints one JSON line of figures per
format; exit 1 if any input broke the contract."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from tests.fuzz.contract import ALL, Tally, Workspace, fuzz, report


def _scratch() -> str | None:
    """A memory-backed folder for the inputs where there is one (a file written per input
    costs ten times more on disk), else the default temporary folder."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz")
    parser.add_argument("formats", nargs="*", metavar="FORMAT", help=", ".join(ALL))
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--generated", action="store_true", help="Hypothesis-built inputs instead of mutations"
    )
    parser.add_argument(
        "--retyped", action="store_true", help="a YAML seed with one value of another type"
    )
    parser.add_argument("--save", metavar="DIR", help="write each failing input to DIR")
    args = parser.parse_args()
    unknown = [f for f in args.formats if f not in ALL]
    if unknown:
        parser.error(f"unknown formats {unknown}; choose from {', '.join(ALL)}")
    run = fuzz
    if args.generated:
        from tests.fuzz.generated import generated as run
    elif args.retyped:
        from tests.fuzz.retyped import retyped as run
    kind = "generated" if args.generated else "retyped" if args.retyped else "mutated"
    tallies: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="kvconfig-fuzz-", dir=_scratch()) as folder:
        work = Workspace(Path(folder))
        for fmt in args.formats or ALL:
            tallies[fmt] = run(
                work,
                fmt,
                args.count,
                args.seed,
                progress=lambda t, f=fmt: print(f"{f}: {t.inputs}", file=sys.stderr, flush=True),
            )
            row = json.loads(report({fmt: tallies[fmt]}))
            print(json.dumps({**row, "kind": kind, "seed": args.seed}), flush=True)
            for failure in tallies[fmt].failures[:20]:
                print(f"  {failure}", file=sys.stderr)
            if args.save:
                Path(args.save).mkdir(parents=True, exist_ok=True)
                for i, sample in enumerate(tallies[fmt].samples):
                    (Path(args.save) / f"{fmt}-{kind}-{i}.bin").write_bytes(sample)
    return 0 if all(t.ok() for t in tallies.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
