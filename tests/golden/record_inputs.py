"""Record (or check) the golden engines: what kvconfig reads from each operator file
under ``examples/operators/`` (one JSON file per example, ``Engine.to_json()`` of each
engine, paths inside the repository written relative to it).

    python tests/golden/record_inputs.py          # rewrite tests/golden/inputs/*.json
    python tests/golden/record_inputs.py --check  # exit 1 and list the differences

``tests/test_inputs_golden.py`` runs the check in the test suite.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OPERATORS = ROOT / "examples" / "operators"
GOLDEN = Path(__file__).resolve().parent / "inputs"


def examples() -> list[Path]:
    """Every operator example file."""
    return sorted(OPERATORS.glob("*.yaml"))


def _relative(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(str(ROOT)):
        return os.path.relpath(os.path.normpath(value), ROOT)
    if isinstance(value, list):
        return [_relative(v) for v in value]
    if isinstance(value, dict):
        return {k: _relative(v) for k, v in value.items()}
    return value


def record_one(path: Path) -> list[dict[str, Any]]:
    """The engines of one example, as plain JSON."""
    sys.path.insert(0, str(ROOT))
    from kvconfig.load.engines import engines_in

    rel = str(path.relative_to(ROOT))
    return [_relative(e.to_json()) for e in engines_in(path, rel)]


def golden_path(path: Path) -> Path:
    return GOLDEN / f"{path.stem}.json"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    GOLDEN.mkdir(parents=True, exist_ok=True)
    bad = []
    for path in examples():
        text = json.dumps(record_one(path), indent=1, sort_keys=True) + "\n"
        target = golden_path(path)
        if check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                bad.append(target.name)
        else:
            target.write_text(text, encoding="utf-8")
    for name in bad:
        print(f"differs: {name}")
    return 1 if bad else 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main(sys.argv[1:]))
