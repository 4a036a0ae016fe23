"""kvconfig in other tools: pre-commit, JSON Schema in editors, GitHub annotations, SARIF,
and errors that cross process boundaries (pickling)."""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kvconfig.cli import main
from kvconfig.errors import (
    InputError,
    KernelBlockSizeMismatch,
    KVConfigError,
    NoCommonKernelBlockSize,
)
from kvconfig.report.export import schemas
from kvconfig.report.github import render_github
from kvconfig.report.outcome import Outcome
from kvconfig.report.sarif import render_sarif

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
NATIVE = sorted((EXAMPLES / "native").glob("*.yaml"))
SCHEMA_DIR = ROOT / "schemas" / "json"
INVALID = Path(__file__).parent / "invalid"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(argv, stdout=out)
    captured = capsys.readouterr()
    return code, out.getvalue(), captured.err


# ---------------------------------------------------------------- JSON Schema


def test_the_checked_in_schemas_are_current() -> None:
    fresh = schemas()
    assert sorted(fresh) == sorted(p.name for p in SCHEMA_DIR.glob("*.json"))
    for name, text in fresh.items():
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == text, (
            f"schemas/json/{name} is stale: run 'kvconfig export --schema -o schemas/json'"
        )


@pytest.mark.parametrize("spelling", [["-o"], []], ids=["-o DIR", "DIR"])
def test_export_schema_writes_a_folder(
    spelling: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(["export", "--schema", *spelling, str(tmp_path / "s")], capsys)
    assert (code, err) == (0, "")
    for name, text in schemas().items():
        assert (tmp_path / "s" / name).read_text(encoding="utf-8") == text
        assert f"wrote {tmp_path / 's' / name}" in out


def _validator(name: str) -> Any:
    import jsonschema

    doc = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc["$id"].startswith("urn:kvconfig:schema:")
    return jsonschema.Draft202012Validator(doc)


def test_there_are_native_examples() -> None:
    assert len(NATIVE) >= 2


@pytest.mark.parametrize("path", NATIVE, ids=lambda p: p.name)
def test_every_native_example_validates_against_the_json_schema(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = [e.message for e in _validator("deployment.schema.json").iter_errors(data)]
    assert errors == []


@pytest.mark.parametrize("path", NATIVE, ids=lambda p: p.name)
def test_native_examples_point_editors_at_the_schema(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    modeline = re.search(r"^# yaml-language-server: \$schema=(\S+)$", text, re.M)
    assert modeline is not None
    hint = yaml.safe_load(text)["$schema"]
    assert hint == modeline.group(1)
    assert (path.parent / hint).resolve() == (SCHEMA_DIR / "deployment.schema.json").resolve()


@pytest.mark.parametrize("path", NATIVE, ids=lambda p: p.name)
def test_native_examples_load_and_resolve(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["plan", "--format", "json", str(path)], capsys)
    assert err == ""
    plan = json.loads(out)
    assert code == (0 if plan["verdict"] == "ok" else 1)
    assert list(_validator("plan.schema.json").iter_errors(plan)) == []


@pytest.mark.parametrize(
    "name",
    [
        "native-unknown-key",
        "native-layer-unknown-key",
        "native-attention-unknown-key",
        "native-wrong-type",
        "native-count-zero",
        "native-head-size-bool",
        "native-bad-role",
        "native-bad-kind",
        "native-version-2",
        "native-no-layers",
        "native-empty-layers",
        "native-layers-mapping",
        "native-custom-size-zero",
        "native-custom-size-string",
        "native-custom-no-sizes",
        "native-block-size-negative",
        "native-runner",
    ],
)
def test_the_schema_rejects_what_kvconfig_rejects_by_shape(name: str) -> None:
    """Editors flag these files too: their errors are of shape, which the schema states."""
    data = yaml.safe_load((INVALID / f"{name}.yaml").read_text(encoding="utf-8"))
    assert list(_validator("deployment.schema.json").iter_errors(data)), name


def test_a_file_without_the_format_key_is_not_a_native_file() -> None:
    data = yaml.safe_load(NATIVE[0].read_text(encoding="utf-8"))
    del data["kvconfig"]
    messages = [e.message for e in _validator("deployment.schema.json").iter_errors(data)]
    assert messages == ["'kvconfig' is a required property"]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_plans_of_the_serve_examples_follow_the_plan_schema(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(EXAMPLES)
    code, out, err = _run(["plan", "--platform", "gh200", "--format", "json", path.name], capsys)
    assert err == "" and code in (0, 1)
    assert list(_validator("plan.schema.json").iter_errors(json.loads(out))) == []


# ---------------------------------------------------------------- GitHub annotations

_ANNOTATION = re.compile(
    r"^::(error|warning|notice) file=([^,]*)(?:,line=(\d+))?,title=([^:]*)::(.*)$"
)


def _lint_copy(tmp_path: Path, name: str, example: str, capsys: pytest.CaptureFixture[str],
               fmt: str) -> tuple[int, str, str, Path]:  # fmt: skip
    text = (
        (EXAMPLES / example)
        .read_text(encoding="utf-8")
        .replace("./models/", f"{EXAMPLES / 'models'}/")
    )
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, err = _run(["lint", "--platform", "gh200", "--format", fmt, str(path)], capsys)
    return code, out, err, path


def test_github_annotations_point_at_the_block_size_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err, path = _lint_copy(
        tmp_path, "a,b:c%d.yaml", "qwen3-8b-eagle3-gh200-triton-128.yaml", capsys, "github"
    )
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert len(lines) == 1
    m = _ANNOTATION.match(lines[0])
    assert m is not None, lines[0]
    level, file, line, title, message = m.groups()
    assert level == "error"
    # properties escape % , : (and line breaks); the message escapes % and line breaks
    assert file == str(path).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")
    block_line = next(
        i for i, t in enumerate(path.read_text().splitlines(), 1) if t.startswith("block-size:")
    )
    assert int(line) == block_line
    assert title == "KV101 component-mismatch [GH200 (sm90)]".replace(":", "%3A")
    assert "has 128-token blocks" in message and "Fix: --block-size 64" in message


def test_github_annotations_escape_an_input_error(tmp_path: Path) -> None:
    problem = InputError("100% wrong\nvalue", source="x,y.yaml", line=7, key="block-size")
    text = render_github([Outcome("x,y.yaml", "-", error=str(problem), problem=problem)])
    assert text == (
        "::error file=x%2Cy.yaml,line=7,title=kvconfig input error::"
        "block-size: 100%25 wrong\\nvalue\n"
    )


def test_github_input_errors_from_the_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(INVALID)
    code, out, err = _run(
        ["lint", "--platform", "h200", "--format", "github", "yaml-duplicate-key.yaml"], capsys
    )
    assert code == 2
    assert err == (INVALID / "yaml-duplicate-key.err").read_text(encoding="utf-8")
    assert out == (
        "::error file=yaml-duplicate-key.yaml,line=3,title=kvconfig input error::"
        "duplicate key 'kind', first set on line 2 (keep one of them)\n"
    )


def test_an_error_in_a_model_config_is_annotated_on_that_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(INVALID)
    code, out, _ = _run(
        ["lint", "--platform", "h200", "--format", "github", "model-config-bad-json.yaml"], capsys
    )
    assert code == 2
    assert out.startswith("::error file=models/bad-json/config.json,line=5,title=")


# ---------------------------------------------------------------- SARIF


def _check_sarif(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of SARIF 2.1.0 that code-scanning tools require, checked field by field."""
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-2.1.0.json")
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "kvconfig"
    ids = [r["id"] for r in driver["rules"]]
    assert len(ids) == len(set(ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
    for result in run["results"]:
        assert result["ruleId"] in ids
        assert result["level"] in ("error", "warning", "note", "none")
        assert isinstance(result["message"]["text"], str) and result["message"]["text"]
        (loc,) = result["locations"]
        phys = loc["physicalLocation"]
        assert phys["artifactLocation"]["uri"]
        if "region" in phys:
            assert isinstance(phys["region"]["startLine"], int)
            assert phys["region"]["startLine"] >= 1
    return list(run["results"])


def test_sarif_of_a_rejected_and_a_bad_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(EXAMPLES)
    bad = os.path.relpath(INVALID / "block-size-zero.yaml", EXAMPLES)
    code, out, _ = _run(
        [
            "lint", "--platform", "gh200", "--format", "sarif",
            "qwen3-8b-eagle3-gh200-triton-128.yaml", "qwen3-8b-eagle3-gh200-triton-64.yaml", bad,
        ],
        capsys,
    )  # fmt: skip
    assert code == 2
    results = _check_sarif(json.loads(out))
    by_rule = {r["ruleId"]: r for r in results}
    assert set(by_rule) == {"KV101", "input-error"}
    kv101 = by_rule["KV101"]["locations"][0]["physicalLocation"]
    assert kv101["artifactLocation"]["uri"] == "qwen3-8b-eagle3-gh200-triton-128.yaml"
    assert kv101["region"]["startLine"] == 5
    bad_loc = by_rule["input-error"]["locations"][0]["physicalLocation"]
    assert (bad_loc["artifactLocation"]["uri"], bad_loc["region"]["startLine"]) == (bad, 2)
    assert by_rule["input-error"]["message"]["text"].startswith("block-size: expected an integer")


def test_sarif_with_nothing_to_report_is_still_a_valid_log() -> None:
    assert _check_sarif(json.loads(render_sarif([]))) == []


# ---------------------------------------------------------------- pre-commit


def _hook() -> dict[str, Any]:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = hooks
    return dict(hook)


def test_the_hook_is_declared_as_pre_commit_expects() -> None:
    hook = _hook()
    assert hook["id"] == "kvconfig-lint"
    assert hook["language"] == "python"
    assert hook["entry"] == "kvconfig lint"
    assert {"id", "name", "entry", "language"} <= set(hook)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'kvconfig = "kvconfig.cli:run"' in pyproject  # the entry's console script
    files = re.compile(hook["files"])
    assert files.search("deploy/serve.yaml") and files.search("a/b.yml")
    assert not files.search("config.json") and not files.search("serve.yaml.bak")


def _run_hook(args: list[str], filenames: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The hook as pre-commit runs it: entry, then the configured args, then the file names."""
    hook = _hook()
    entry = shlex.split(hook["entry"])
    exe = shutil.which(entry[0])
    command = [exe] if exe else [sys.executable, "-m", "kvconfig"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [*command, *entry[1:], *args, *filenames],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_hook_passes_safe_files() -> None:
    proc = _run_hook(
        ["--platform", "gh200"],
        ["qwen3-8b-eagle3-gh200-triton-64.yaml", "qwen3-8b-eagle3-gh200-default.yaml"],
        EXAMPLES,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines()[-1] == "2 of 2 safe"


def test_the_hook_fails_a_rejected_file_and_says_why() -> None:
    proc = _run_hook(
        ["--platform", "gh200"],
        ["qwen3-8b-eagle3-gh200-triton-64.yaml", "qwen3-8b-eagle3-gh200-triton-128.yaml"],
        EXAMPLES,
    )
    assert (proc.returncode, proc.stderr) == (1, "")
    assert "reject  qwen3-8b-eagle3-gh200-triton-128.yaml [GH200 (sm90)]: KV101" in proc.stdout
    assert "fix: --block-size 64" in proc.stdout


def test_the_hook_fails_an_unreadable_file_in_one_line() -> None:
    bad = os.path.relpath(INVALID / "yaml-tab-indent.yaml", EXAMPLES)
    proc = _run_hook(
        ["--platform", "gh200"], ["qwen3-8b-eagle3-gh200-triton-64.yaml", bad], EXAMPLES
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"kvconfig: {bad}:3: invalid YAML: ")
    rows = [r.split()[:2] for r in proc.stdout.splitlines() if not r.startswith("  ")]
    assert rows[:2] == [["ok", "qwen3-8b-eagle3-gh200-triton-64.yaml"], ["error", f"{bad}:3"]]


def test_the_hook_runs_native_files_without_a_platform_flag() -> None:
    proc = _run_hook([], [str(p) for p in NATIVE], ROOT)
    assert proc.stderr == ""
    assert proc.returncode == 1  # the Qwen3 + EAGLE3 native file is rejected (KV101)
    assert len([r for r in proc.stdout.splitlines() if not r.startswith("  ")]) == len(NATIVE) + 1


# ---------------------------------------------------------------- pickling


def _round_trip(err: KVConfigError) -> KVConfigError:
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert str(back) == str(err)
    assert back.args == err.args
    assert vars(back) == vars(err)
    return back


def test_input_error_pickles_with_every_field() -> None:
    err = InputError("expected 1", source="a.yaml", line=3, key="kvconfig", hint="use 1")
    back = _round_trip(err)
    assert isinstance(back, InputError)
    assert (back.message, back.source, back.line, back.key, back.hint) == (
        "expected 1", "a.yaml", 3, "kvconfig", "use 1",
    )  # fmt: skip
    assert back.render() == "a.yaml:3: kvconfig: expected 1 (use 1)"


def test_no_common_kernel_block_size_pickles_with_every_field() -> None:
    err = NoCommonKernelBlockSize(256, [("FLASH_ATTN", "[128]"), ("FLASHINFER", "[16, 32, 64]")])
    back = _round_trip(err)
    assert isinstance(back, NoCommonKernelBlockSize)
    assert back.block_size == 256
    assert back.declared == [("FLASH_ATTN", "[128]"), ("FLASHINFER", "[16, 32, 64]")]
    assert (
        str(back) == "No common block size for 256 (FLASH_ATTN: [128]; FLASHINFER: [16, 32, 64])."
    )


def test_kernel_block_size_mismatch_pickles_with_every_field() -> None:
    err = KernelBlockSizeMismatch(
        group=0,
        layers=[f"model.layers.{i}.self_attn.attn" for i in range(37)],
        backends=["FLASHINFER", "TRITON_ATTN"],
        block_size=128,
        expected=64,
        found=128,
        component="speculator",
        detail="seen in DraftModelSpeculator.set_attn",
    )
    back = _round_trip(err)
    assert isinstance(back, KernelBlockSizeMismatch)
    assert (back.group, back.block_size, back.expected, back.found) == (0, 128, 64, 128)
    assert back.layers == err.layers and back.backends == err.backends
    assert (back.component, back.detail) == ("speculator", "seen in DraftModelSpeculator.set_attn")
    assert back.render() == err.render()


@pytest.mark.parametrize("err", [
    InputError("bad", source="x.yaml"),
    NoCommonKernelBlockSize(64, [("FLASH_ATTN", "[128]")]),
    KernelBlockSizeMismatch(group=1, layers=["l"], backends=["B"], block_size=256, expected=64,
                            found=256),
], ids=type)  # fmt: skip
def test_errors_survive_a_process_boundary(err: KVConfigError) -> None:
    """What vLLM's worker processes do with an exception: pickle it in one, raise it in another."""
    import concurrent.futures
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        future = pool.submit(_raise, pickle.dumps(err))
        with pytest.raises(type(err)) as caught:
            future.result(timeout=120)
    assert str(caught.value) == str(err)
    assert vars(caught.value) == vars(err)


def _raise(blob: bytes) -> None:
    raise pickle.loads(blob)
