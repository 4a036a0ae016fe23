"""The Python API gives what the command line gives.

Each command line below is run twice: through ``kvconfig.cli.main`` and through the API
function of its command, with the options translated one to one (``via_api``). The
reports, exit codes and error lines must be equal. The translation reads every option
the parser defines, so an option the API lacks fails here. The cases are the examples
and every bad input of ``tests/invalid/`` (their golden lines, docs/errors.md).
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kvconfig
from kvconfig.cli import build_parser, main
from kvconfig.errors import InputError, KVConfigError

ROOT = Path(__file__).resolve().parents[1]
INVALID = ROOT / "tests" / "invalid"
QWEN = "Qwen/Qwen3-8B=examples/models/qwen3-8b"

#: Options that say how to print or which command runs, not what is planned.
OUTPUT = {"command", "format", "fleet", "schema", "help"}
#: CLI name of a positional -> the API's.
POSITIONAL = {"deployments": "paths", "deployment": "path_or_code"}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return dict(sub.choices)  # type: ignore[attr-defined]


API_OF: dict[str, Callable[..., Any]] = {
    "plan": kvconfig.plan_deployments,
    "lint": kvconfig.lint,
    "explain": kvconfig.explain,
    "export": kvconfig.export,
    "catalog": kvconfig.catalog,
    "diff": kvconfig.diff,
}


@pytest.mark.parametrize("command", sorted(API_OF))
def test_every_option_is_a_keyword(command: str) -> None:
    p = _subparsers()[command]
    dests = {a.dest for a in p._actions if a.dest not in OUTPUT}
    wanted = {POSITIONAL.get(d, d) for d in dests}
    if command == "catalog":
        wanted.add("format")  # catalog's format is its answer's shape
    params = set(inspect.signature(API_OF[command]).parameters)
    assert wanted <= params, wanted - params


def test_the_fleet_takes_the_options_the_cli_reads_with_fleet() -> None:
    p = _subparsers()["lint"]
    wanted = {POSITIONAL.get(a.dest, a.dest) for a in p._actions} - OUTPUT
    assert wanted <= set(inspect.signature(kvconfig.plan_fleet).parameters)


def via_api(argv: list[str]) -> tuple[str, int, list[str]]:
    """What the API answers for a command line: the CLI's stdout, exit code and error
    lines (``lint``: its outcomes' problems; the other commands raise)."""
    command: list[str] | None = None
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    ns = vars(build_parser().parse_args(argv))
    name = ns.pop("command")
    fmt = ns.pop("format", "text")
    if name == "diff":
        text, differ = kvconfig.diff(ns["a"], ns["b"])
        return text, int(differ), []
    if name == "catalog":
        return kvconfig.catalog(**ns, format=fmt), 0, []
    if name == "export" and ns.pop("schema"):
        [folder] = [*ns["deployments"], *([ns["output"]] if ns["output"] else [])]
        names = kvconfig.json_schemas(folder)
        return "".join(f"wrote {Path(folder) / n}\n" for n in names), 0, []
    kw = {POSITIONAL.get(k, k): v for k, v in ns.items()}
    if name == "lint" and kw.pop("fleet"):
        for option in ("model_path", "download"):
            kw.pop(option)
        fleet = kvconfig.plan_fleet(**kw, command=command)
        doc = fleet.model_dump(mode="json", by_alias=True)
        return json.dumps(doc), 1 if fleet.verdict == "reject" else 0, []
    if name == "explain":
        return kvconfig.explain(**kw, command=command), 0, []
    if name == "export":
        text = kvconfig.export(**kw, command=command)
        return text, 1 if '"verdict": "reject"' in text else 0, []
    runs = API_OF[name](**kw, command=command)
    if name == "plan":
        from kvconfig.report.json import render_json
        from kvconfig.report.text import render_plan

        if fmt == "json":
            text = render_json(runs)
        else:
            labels = [o.label() if o.engine else None for o in runs]
            text = "\n".join(render_plan(o.plan, lab) for o, lab in zip(runs, labels, strict=True))
        return text, kvconfig.exit_code(runs), []
    code = kvconfig.exit_code(runs)
    lines = [str(r.problem) for r in runs if r.problem is not None]
    return kvconfig.render(runs, fmt), code, lines


def via_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, int, str]:
    out = io.StringIO()
    code = main(argv, stdout=out)
    return out.getvalue(), code, capsys.readouterr().err


EXAMPLES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*.yaml"))
OPERATORS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples" / "operators").glob("*"))
GOOD = [
    *(["lint", "--platform", "gh200,b200", "--format", f, *EXAMPLES] for f in
      ("text", "json", "github", "sarif")),
    ["lint", "--model-path", QWEN, "--format", "json", *OPERATORS],
    ["lint", "--model-path", QWEN, "--format", "sarif", *OPERATORS],
    ["lint", "--platform", "h200", "--format", "github",
     "examples/qwen3-8b-eagle3-gh200-triton-64.yaml", "tests/invalid/empty.yaml"],
    ["plan", "--platform", "h100", "--format", "json", "--env", "VLLM_USE_V2_MODEL_RUNNER=0",
     "examples/qwen3-8b-eagle3-gh200-triton-128.yaml"],
    ["plan", "--platform", "b200", "--no-trtllm-cubins", "--hooks", "enforce",
     "examples/qwen3-8b-eagle3-gh200-triton-128.yaml"],
    ["plan", "--platform", "h100", "--format", "json", "--",
     "vllm", "serve", "examples/models/qwen3-8b", "--config=serve.yaml"],
    ["plan", "--model-path", QWEN, "examples/operators/pd-decode-prefill-manifest.yaml"],
    ["explain", "--platform", "gh200", "examples/qwen3-8b-eagle3-gh200-triton-128.yaml"],
    ["explain", "KV703"],
    ["export", "--platform", "gh200", "examples/native/qwen3-8b-eagle3-gh200-triton-128.yaml"],
    ["catalog", "--platform", "h100", "--format", "json"],
    ["catalog", "--backend", "FLASHINFER", "--platform", "b200"],
    ["lint", "--fleet", "--format", "json", "examples/fleets/nixl-28661-block-128.yaml"],
    ["lint", "--fleet", "--format", "json", "examples/fleets/correct-pd.yaml"],
]  # fmt: skip


@pytest.mark.parametrize("argv", GOOD, ids=lambda a: " ".join(a)[:80])
def test_the_api_answers_as_the_cli(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    out, code, _ = via_cli(argv, capsys)
    text, api_code, _ = via_api(argv)
    assert api_code == code
    if "--fleet" in argv:
        from kvconfig.schemas.fleet_plan import FleetPlan

        assert FleetPlan.model_validate(json.loads(text)) == FleetPlan.model_validate_json(out)
    else:
        assert text == out
    assert capsys.readouterr().out == ""


def test_the_diff_of_two_exports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    kvconfig.export("examples/qwen3-8b-eagle3-gh200-triton-64.yaml", output=a, platform="gh200")
    kvconfig.export("examples/qwen3-8b-eagle3-gh200-triton-128.yaml", output=b, platform="gh200")
    assert kvconfig.diff(a, a)[1] is False
    text, differ = kvconfig.diff(a, b)
    assert differ and "block_size" in text


def _invalid_cases() -> list[str]:
    names = {p.stem for p in INVALID.glob("*.args")} | {p.stem for p in INVALID.glob("*.yaml")}
    return sorted(names)


def _argv(name: str) -> list[str]:
    args = INVALID / f"{name}.args"
    if args.exists():
        return shlex.split(args.read_text(encoding="utf-8"))
    return ["lint", "--platform", "h200", f"{name}.yaml"]


#: Refusals of the command line's shape, which the API's signatures allow or cannot express.
CLI_ONLY = {
    "plan-two-files": "plan_deployments plans several files",
    "export-schema-two-folders": "json_schemas takes one folder",
}


@pytest.mark.parametrize("name", _invalid_cases())
def test_bad_input_raises_the_same_line(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each golden error line of tests/invalid/ comes out of the API too: raised as an
    InputError, or (``lint``) as the problems of its outcomes."""
    monkeypatch.chdir(INVALID)
    golden = (INVALID / f"{name}.err").read_text(encoding="utf-8")
    argv = _argv(name)
    if name in CLI_ONLY:
        pytest.skip(CLI_ONLY[name])
    try:
        cut = argv.index("--") if "--" in argv else len(argv)
        build_parser().parse_args(argv[:cut])
    except InputError:
        return  # a command-line usage error: the API has no command line
    try:
        lines = via_api(argv)[2]
    except KVConfigError as err:
        assert type(err) is InputError
        lines = [str(err)]
    assert lines, "the API accepted what the CLI refuses"
    assert "".join(f"kvconfig: {' '.join(s.split(chr(10)))}\n" for s in lines) == golden


@pytest.mark.vllm
def test_vllms_start_up_through_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("vllm")
    monkeypatch.chdir(ROOT)
    path = "examples/qwen3-8b-eagle3-gh200-triton-128.yaml"
    [offline] = kvconfig.plan_deployments(path, platform="gh200")
    [run] = kvconfig.plan_deployments(path, platform="gh200", engine="both", engine_timeout=600)
    assert offline.plan is not None and run.plan is not None
    assert offline.plan.engine is None and run.plan.engine is not None

    # vLLM's start-up agrees with the offline plan: the same groups, no KV602
    def sizes(o: Any) -> list[tuple[Any, ...]]:
        return [(g.kind, g.block_size, g.kernel_block_size, g.split) for g in o.plan.groups]

    assert sizes(run) == sizes(offline) == [("full_attention", 128, 64, 2)]
    assert "KV602" not in {f.code for f in run.plan.findings}
    assert {"KV101"} <= {f.code for f in run.plan.findings}
