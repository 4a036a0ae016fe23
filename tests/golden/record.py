"""Record (or check) the golden plans: every bundled example on every platform it is
linted for, with and without the kvconfig hooks, on both model runners, as
``kvconfig plan --format json`` prints it (or the error line and exit code when it
refuses the input).

    python tests/golden/record.py          # rewrite tests/golden/plans/*.json
    python tests/golden/record.py --check  # exit 1 and list the differences

``tests/test_golden.py`` runs the check in the test suite.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PLANS = Path(__file__).resolve().parent / "plans"

PLATFORMS = ("a100", "l40s", "h100", "h200", "gh200", "b200", "gb300", "rtx-pro-6000")
HOOKS = ("none", "enforce")
RUNNERS = ("v2", "v1")


def deployments() -> list[Path]:
    """Every deployment file under examples/ (serve configs and native files)."""
    return sorted(
        p
        for p in EXAMPLES.rglob("*.yaml")
        # operator files (examples/operators) have their own golden engines (tests/golden/inputs);
        # fleet files (examples/fleets) are fleets, not deployments (tests/test_fleet_*.py)
        if not {"models", "operators", "fleets"} & set(p.relative_to(EXAMPLES).parts)
    )


def plan(path: Path, platform: str, hooks: str, runner: str) -> dict[str, object]:
    """The plan JSON of one deployment, or the refusal, as the CLI gives it."""
    from kvconfig.cli import main

    out, err = io.StringIO(), io.StringIO()
    rel = str(path.relative_to(ROOT))
    args = ["plan", rel, "--platform", platform, "--hooks", hooks, "--format", "json"]
    if runner == "v1":
        args += ["--env", "VLLM_USE_V2_MODEL_RUNNER=0"]
    with contextlib.redirect_stderr(err):
        code = main(args, stdout=out)
    if code == 2:
        return {"exit": code, "stderr": err.getvalue().strip()}
    return {"exit": code, "plan": json.loads(out.getvalue())}


def record_one(path: Path) -> dict[str, object]:
    return {f"{p}/{h}/{r}": plan(path, p, h, r) for p in PLATFORMS for h in HOOKS for r in RUNNERS}


def golden_path(path: Path) -> Path:
    rel = path.relative_to(EXAMPLES).with_suffix(".json")
    return PLANS / str(rel).replace("/", "__")


def main(argv: list[str]) -> int:
    import os

    os.chdir(ROOT)
    check = "--check" in argv
    bad = 0
    PLANS.mkdir(exist_ok=True)
    for path in deployments():
        got = record_one(path)
        target = golden_path(path)
        text = json.dumps(got, indent=1, sort_keys=True) + "\n"
        if check:
            want = target.read_text() if target.is_file() else ""
            if want != text:
                bad += 1
                print(f"differs: {target.relative_to(ROOT)}")
        else:
            target.write_text(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
