"""The GitHub Action (``action.yml``): ``kvconfig lint`` of a workflow's paths.

``action.yml`` installs kvconfig from the action's checkout, then runs ``python -m
kvconfig.cli.action`` with its inputs as ``INPUT_*`` variables (``INPUTS``). This step:

* lints the paths (globs and folders, relative to ``GITHUB_WORKSPACE``) for the
  platforms, through the API (``kvconfig.lint``);
* prints one annotation per finding and per unreadable file (``--format github``);
* writes the SARIF log (``--format sarif``) when asked, for the upload step;
* writes a table of the outcomes to ``GITHUB_STEP_SUMMARY``;
* writes its outputs to ``GITHUB_OUTPUT``: ``verdict`` (ok, reject, error),
  ``exit-code`` (what the job exits with under ``fail-on``), ``sarif-file``, and the
  counts ``rejected``, ``errors``, ``warnings``.

It exits 0 once it has reported, so the SARIF upload still runs; the action's last step
exits with ``exit-code``. Bad inputs of the action itself are one ``::error`` line and
exit code 2. docs/ci.md documents the inputs.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from kvconfig.errors import InputError

if TYPE_CHECKING:
    from kvconfig.report.outcome import Outcome

#: The action's inputs (``action.yml``) -> the variable its lint step sets.
INPUTS = {
    "paths": "INPUT_PATHS",
    "platforms": "INPUT_PLATFORMS",
    "fail-on": "INPUT_FAIL_ON",
    "sarif": "INPUT_SARIF",
    "sarif-file": "INPUT_SARIF_FILE",
    "hooks": "INPUT_HOOKS",
    "vllm-version": "INPUT_VLLM_VERSION",
    "env": "INPUT_ENV",
    "model-path": "INPUT_MODEL_PATH",
    "trtllm-cubins": "INPUT_TRTLLM_CUBINS",
}

#: ``fail-on``: which outcomes fail the job.
FAIL_ON = ("error", "warning", "none")


def _input(env: Mapping[str, str], name: str) -> str:
    return env.get(INPUTS[name], "").strip()


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    value = _input(env, name).lower()
    if not value:
        return default
    if value in ("true", "false"):
        return value == "true"
    raise InputError(f"expected true or false, got {value!r}", key=name, hint=f"{name}: true")


def _lines(text: str) -> list[str]:
    """A multi-line input: one item per line, blank lines and ``#`` comments dropped."""
    stripped = (line.strip() for line in text.splitlines())
    return [line for line in stripped if line and not line.startswith("#")]


def paths_of(text: str, workspace: Path) -> list[str]:
    """The paths input: words separated by spaces or lines; a glob (``deploy/**/*.yaml``)
    is expanded relative to the workspace, in sorted order. A word that names nothing is
    an input error."""
    found: list[str] = []
    for word in text.split():
        if glob.has_magic(word):
            matches = sorted(glob.glob(word, root_dir=workspace, recursive=True))
            matches = [m for m in matches if (workspace / m).is_file() or (workspace / m).is_dir()]
            if not matches:
                raise InputError(
                    f"{word!r} matches no file", key="paths", hint="paths relative to the workspace"
                )
            found += matches
        else:
            found.append(word)
    if not found:
        raise InputError("no paths given", key="paths", hint="paths: deploy/vllm/")
    return found


def fail_code(outcomes: Sequence[Outcome], fail_on: str) -> int:
    """The job's exit code: ``error`` fails on a rejected deployment (1) or an unreadable
    file (2), ``warning`` also on a warning finding (1), ``none`` never."""
    from kvconfig import exit_code

    if fail_on == "none":
        return 0
    code = exit_code(outcomes)
    if code == 0 and fail_on == "warning" and _count(outcomes, "warning"):
        return 1
    return code


def _count(outcomes: Sequence[Outcome], severity: str) -> int:
    return sum(
        1 for o in outcomes if o.plan is not None for f in o.plan.findings if f.severity == severity
    )


def summary(outcomes: Sequence[Outcome]) -> str:
    """The step summary: one row per deployment and platform."""
    rows = [
        "## kvconfig lint",
        "",
        "| deployment | platform | verdict | findings |",
        "|---|---|---|---|",
    ]
    for o in outcomes:
        codes = ", ".join(f"{f.code} {f.name}" for f in o.plan.findings) if o.plan else ""
        if o.plan is None:
            codes = _cell(o.where()[2])
        rows.append(f"| {_cell(o.label())} | {_cell(o.platform)} | {o.verdict} | {codes} |")
    return "\n".join(rows) + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _write_outputs(path: str, values: Mapping[str, str]) -> None:
    """Append ``name=value`` lines to the ``GITHUB_OUTPUT`` file (values are one line)."""
    with open(path, "a", encoding="utf-8") as f:
        for name, value in values.items():
            assert "\n" not in value
            f.write(f"{name}={value}\n")


def run(env: Mapping[str, str], out: TextIO) -> int:
    """The action's lint step; returns the process's exit code (0 once reported)."""
    from kvconfig import lint, render
    from kvconfig.report.export import atomic_write

    workspace = Path(env.get("GITHUB_WORKSPACE") or os.getcwd())
    fail_on = _input(env, "fail-on") or "error"
    if fail_on not in FAIL_ON:
        raise InputError(
            f"expected one of {', '.join(FAIL_ON)}, got {fail_on!r}",
            key="fail-on",
            hint="fail-on: error",
        )
    paths = paths_of(_input(env, "paths"), workspace)
    write_sarif = _flag(env, "sarif", False)
    sarif_file = _input(env, "sarif-file") or str(
        Path(env.get("RUNNER_TEMP") or workspace) / "kvconfig.sarif"
    )
    os.chdir(workspace)  # reports name files as the repository does (annotations, SARIF)
    outcomes = lint(
        paths,
        platform=_input(env, "platforms").replace(" ", ",").strip(",") or None,
        env=_lines(_input(env, "env")),
        hooks=_input(env, "hooks") or None,
        vllm_version=_input(env, "vllm-version") or None,
        model_path=_lines(_input(env, "model-path")),
        trtllm_cubins=None if _flag(env, "trtllm-cubins", True) else False,
    )
    out.write(render(outcomes, "github"))
    if write_sarif:
        atomic_write(Path(sarif_file), render(outcomes, "sarif"))
    verdicts = [o.verdict for o in outcomes]
    code = fail_code(outcomes, fail_on)
    if env.get("GITHUB_STEP_SUMMARY"):
        with open(env["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as f:
            f.write(summary(outcomes))
    if env.get("GITHUB_OUTPUT"):
        _write_outputs(
            env["GITHUB_OUTPUT"],
            {
                "verdict": "error" if "error" in verdicts else "reject" if "reject" in verdicts
                else "ok",
                "exit-code": str(code),
                "sarif-file": sarif_file if write_sarif else "",
                "rejected": str(verdicts.count("reject")),
                "errors": str(verdicts.count("error")),
                "warnings": str(_count(outcomes, "warning")),
            },
        )  # fmt: skip
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kvconfig.cli.action`` (no arguments: the inputs are variables)."""
    if argv if argv is not None else sys.argv[1:]:
        print("::error title=kvconfig action::takes no arguments (inputs are INPUT_*)")
        return 2
    try:
        return run(os.environ, sys.stdout)
    except InputError as err:
        text = " ".join(str(err).split("\n"))
        print(f"::error title=kvconfig action::{text.replace('%', '%25')}")
        if os.environ.get("GITHUB_OUTPUT"):
            _write_outputs(os.environ["GITHUB_OUTPUT"], {"verdict": "error", "exit-code": "2"})
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
