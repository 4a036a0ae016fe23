"""The command line on every kind of input: operator files (one outcome per engine, the
platform from the GPU label), standard input, what vLLM's parsing hides as findings,
fleets, and ``kvconfig diff``."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from kvconfig.cli import main
from kvconfig.schemas.plan import Plan

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MOUNTS = f"/mnt/models={EXAMPLES / 'models'}"
MANIFEST = str(EXAMPLES / "operators" / "qwen3-8b-eagle3-gh200-deployment.yaml")
PD = str(EXAMPLES / "operators" / "pd-decode-prefill-manifest.yaml")


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), stdout=out), out.getvalue()


def test_an_operator_files_engine_is_a_deployment_on_its_labelled_gpu() -> None:
    code, out = run("lint", "--model-path", MOUNTS, MANIFEST)
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith(f"reject  {MANIFEST}:24 Deployment/qwen3-8b-eagle3/vllm")
    assert "[GH200 (sm90)]: KV101 component-mismatch" in first
    code, out = run("plan", "--format", "json", "--model-path", MOUNTS, MANIFEST)
    plan = json.loads(out)
    engine = plan["operator_engine"]
    assert (engine["name"], engine["line"]) == ("Deployment/qwen3-8b-eagle3/vllm", 24)
    assert engine["reading"]["speculative"] == "eagle3"
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 128}
    Plan.model_validate(plan)  # the documented schema holds the operator_engine record


def test_every_engine_of_a_manifest_is_reported(tmp_path: Path) -> None:
    qwen = EXAMPLES / "models" / "qwen3-8b"
    code, out = run(
        "lint", "--platform", "h100", "--format", "json", "--model-path", f"Qwen/Qwen3-8B={qwen}",
        PD,
    )  # fmt: skip
    plans = json.loads(out)
    assert code == 0
    assert [p["operator_engine"]["name"] for p in plans] == [
        "Deployment/qwen3-decode/vllm",
        "Deployment/qwen3-prefill/vllm",
    ]


def test_a_mapped_path_that_is_not_there_names_the_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run("lint", "--model-path", "/mnt/models=/nowhere", MANIFEST)
    err = capsys.readouterr().err
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert f"{MANIFEST}:" in err and "Deployment/qwen3-8b-eagle3/vllm" in err
    assert "--model-path" in err


def test_an_engine_without_a_platform_is_an_input_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    compose = str(EXAMPLES / "operators" / "qwen3-8b-eagle3-gh200-compose.yaml")
    code, _ = run("lint", compose)
    err = capsys.readouterr().err
    assert code == 2 and "no platform given" in err and err.count("\n") == 1


def test_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES)
    text = (EXAMPLES / "qwen3-8b-eagle3-gh200-triton-128.yaml").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text)))
    code, out = run("lint", "--platform", "gh200", "--format", "json", "-")
    plan = json.loads(out)
    assert code == 1 and plan["source"] == "<stdin>"
    assert [f["code"] for f in plan["findings"]] == ["KV101"]


def test_what_vllms_parsing_hides_is_a_finding(tmp_path: Path) -> None:
    # vLLM reads --config FILE, never --config=FILE: the block size in the file is lost
    config = tmp_path / "serve.yaml"
    config.write_text("block-size: 64\n", encoding="utf-8")
    model = str(EXAMPLES / "models" / "qwen3-8b")
    command = ["vllm", "serve", model, f"--config={config}"]
    code, out = run("plan", "--platform", "h100", "--format", "json", "--", *command)
    plan = json.loads(out)
    assert code == 0
    assert "KV801" in {f["code"] for f in plan["findings"]}
    assert plan["groups"][0]["block_size"] == 16  # vLLM's default, not the file's 64


def test_a_fleet_from_the_command_line() -> None:
    fleet = str(EXAMPLES / "fleets" / "nixl-28661-block-128.yaml")
    code, out = run("lint", "--fleet", fleet)
    assert code == 1 and "KV703" in out
    code, out = run("lint", "--fleet", "--format", "json", fleet)
    doc = json.loads(out)
    assert code == 1 and doc["kvconfig_fleet"] == 1 and doc["verdict"] == "reject"
    code, out = run("lint", "--fleet", str(EXAMPLES / "fleets" / "correct-pd.yaml"))
    assert code == 0


def test_a_fleet_reports_as_text_json_or_html_only(capsys: pytest.CaptureFixture[str]) -> None:
    fleet = str(EXAMPLES / "fleets" / "correct-pd.yaml")
    assert run("lint", "--fleet", "--format", "sarif", fleet) == (2, "")
    assert "--fleet reports as text, json or html" in capsys.readouterr().err


def test_diff_of_two_plans(tmp_path: Path) -> None:
    paths = []
    for name in ("triton-64", "triton-128", "triton-64"):
        src = EXAMPLES / f"qwen3-8b-eagle3-gh200-{name}.yaml"
        code, out = run("plan", "--platform", "gh200", "--format", "json", str(src))
        path = tmp_path / f"{len(paths)}-{name}.json"
        path.write_text(out, encoding="utf-8")
        paths.append(str(path))
    code, out = run("diff", paths[0], paths[1])
    assert code == 1 and "digest" in out
    code, out = run("diff", paths[0], paths[2])
    assert code == 0 and "same plan" in out


def test_diff_of_a_file_that_is_no_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("[1]", encoding="utf-8")
    assert run("diff", str(bad), str(bad)) == (2, "")
    err = capsys.readouterr().err
    assert "not a kvconfig plan" in err and err.count("\n") == 1


OPERATOR_FILES = sorted((EXAMPLES / "operators").glob("*.yaml"))


@pytest.mark.parametrize("path", OPERATOR_FILES, ids=[p.name for p in OPERATOR_FILES])
def test_every_operator_example_lints(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # every engine of the file is planned (none is an input error) once its model paths
    # and Hub ids are mapped to the bundled configs
    from kvconfig.load.engines import engines_in

    models = EXAMPLES / "models"
    rules = {
        "Qwen/Qwen3-8B": "qwen3-8b",
        "google/gemma-3-27b-it": "gemma-3-27b-it",
        "deepseek-ai/DeepSeek-V3": "deepseek-v3",
        "/mnt/models/qwen3-8b-eagle3-angelslim": "qwen3-8b-eagle3-angelslim",
        "/mnt/models/qwen3-8b": "qwen3-8b",
        "/mnt/models": "qwen3-8b",
    }
    args = ["lint", "--platform", "h100", "--vllm-version", "0.33.0", "--format", "json"]
    for pattern, folder in rules.items():
        args += ["--model-path", f"{pattern}={models / folder}"]
    code, out = run(*args, str(path))
    assert code in (0, 1), capsys.readouterr().err
    plans = json.loads(out)
    plans = plans if isinstance(plans, list) else [plans]
    names = [e.name for e in engines_in(path, str(path))]
    assert [p["operator_engine"]["name"] for p in plans] == names


def test_a_folder_reports_every_file_and_exits_with_the_worst_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One bad file does not hide the others: each file's outcome is reported."""
    from kvconfig.cli import main

    (tmp_path / "a-bad.yaml").write_text("model: [\n")
    (tmp_path / "b-unknown.yaml").write_text("model: m\nblok-size: 16\n")
    (tmp_path / "c-twice.yaml").write_text("model: m\nkv-transfer-config: '{bad'\n")
    assert main(["lint", "--platform", "h100", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":", 2)[1] for line in err] == [
        f" {tmp_path}/a-bad.yaml",
        f" {tmp_path}/b-unknown.yaml",
        f" {tmp_path}/c-twice.yaml",
    ]


@pytest.mark.parametrize(
    ("name", "beside", "helm"),
    [
        ("values-gpu.yaml", False, True),
        ("gaudi-values.yaml", False, True),
        ("serve.yaml", True, True),  # beside a Chart.yaml
        ("serve.yaml", False, False),
    ],
)
def test_a_helm_charts_values_read_as_a_serve_config_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, beside: bool, helm: bool
) -> None:
    """A YAML file kvconfig reads as ``vllm serve --config`` whose keys vLLM refuses: bad
    input at the key vLLM names (not a key it starts with), and where the file is named or
    placed as a Helm chart's values, the hint says which charts kvconfig reads."""
    path = tmp_path / name
    path.write_text("model: m\nmodelParameters:\n  maxModelLen: 8192\n")
    if beside:
        (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    code, _ = run("lint", "--platform", "H100", str(path))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{path}:2: modelParameters: unknown vLLM" in err
    assert ("helm template" in err) == helm
