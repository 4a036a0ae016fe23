"""Every release kvconfig knows plans with its own data and rules; a release it does not
know plans with the nearest one it knows, and says so (KV502), never exit 2.

Offline only: each release's data is checked against that release's installed vLLM in
``tests/test_release_drift.py``, and its plans against that release's start-up in
``tests/test_release_engine.py``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kvconfig.cli import main
from kvconfig.mirror import versions
from kvconfig.mirror.catalog import load_catalog
from tests.conftest import EXAMPLES

SEED = EXAMPLES / "qwen3-8b-eagle3-gh200-triton-128.yaml"
MANIFEST = EXAMPLES / "operators" / "qwen3-8b-eagle3-gh200-deployment.yaml"
DEEPSEEK_V32 = "model: ./models/deepseek-v3.2-exp\ntensor-parallel-size: 8\n"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(argv, stdout=out)
    return code, out.getvalue(), capsys.readouterr().err


def _plan(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code, out, err = _run(["plan", "--format", "json", *argv], capsys)
    assert code in (0, 1), err
    doc: dict[str, object] = json.loads(out)
    return doc


@pytest.mark.parametrize("version", versions.KNOWN)
def test_every_known_release_has_its_own_data_and_rules(version: str) -> None:
    folder = versions.folder(version)
    for name in ("catalog.json", "facts.json", "argv.json"):
        doc = json.loads((folder / name).read_text(encoding="utf-8"))
        assert doc["vllm_version"] == version, name
    assert versions.rules(version) == versions.RULES[version]
    assert versions.facts(version).version == version


def test_the_rules_table_has_a_row_for_each_release_and_nothing_else() -> None:
    assert set(versions.KNOWN) <= set(versions.RULES)
    assert tuple(versions.RULES)[-len(versions.KNOWN) :] == versions.KNOWN


@pytest.mark.parametrize(
    ("named", "planned", "assumed"),
    [
        (versions.KNOWN[0], versions.KNOWN[0], False),
        ("0.34.0", versions.KNOWN[-1], True),
        ("v1.0.0", versions.KNOWN[-1], True),
        ("nightly", versions.KNOWN[-1], True),
        ("latest", versions.KNOWN[-1], True),
        ("0.32.1", "0.32.0", True),
        ("0.32.0.post1", "0.32.0", True),
        ("0.33.0rc1", "0.33.0", True),
        ("0.29.0", versions.KNOWN[0], True),
    ],
)
def test_a_named_release_plans_with_itself_or_the_nearest_known_one(
    named: str, planned: str, assumed: bool
) -> None:
    got = versions.release(named)
    assert (got.version, got.assumed) == (planned, assumed)
    if assumed:
        assert f"vLLM {named}" in got.message() and f"assumes vLLM {planned}" in got.message()
        assert "--engine vllm" in got.message()


@pytest.mark.parametrize("version", versions.KNOWN)
def test_the_seed_deployment_is_rejected_on_every_release_and_passes_hooked(
    version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["lint", "--platform", "gh200", "--vllm-version", version, str(SEED)]
    code, out, _ = _run(argv, capsys)
    assert code == 1 and "KV101" in out and "KV502" not in out
    code, out, _ = _run([*argv[:-1], "--hooks", "enforce", str(SEED)], capsys)
    assert code == 0, out


@pytest.mark.parametrize("named", ["0.34.0", "nightly"])
def test_an_unknown_release_plans_with_a_finding_never_exit_2(
    named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["lint", "--platform", "gh200", "--vllm-version", named, str(SEED)]
    code, out, err = _run(argv, capsys)
    assert code == 1 and err == ""
    assert "KV101" in out and "KV502 release-assumed" in out
    assert f"assumes vLLM {versions.KNOWN[-1]}" in out and "--engine vllm" in out


def test_a_word_that_is_no_release_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(
        ["lint", "--platform", "gh200", "--vllm-version", "banana", str(SEED)], capsys
    )
    assert code == 2
    assert err.startswith("kvconfig: --vllm-version: 'banana' is not a vLLM release")


def test_a_native_file_naming_an_unknown_release_plans_with_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "native.yaml"
    path.write_text("kvconfig: 1\nvllm_version: 0.34.0\nplatform: h200\nlayers:\n  - count: 2\n")
    code, out, err = _run(["lint", str(path)], capsys)
    assert code == 0 and err == ""
    assert "KV502" in out and "vLLM 0.34.0" in out


@pytest.fixture
def deepseek(tmp_path: Path) -> Path:
    (tmp_path / "models").symlink_to(EXAMPLES / "models")
    path = tmp_path / "deepseek-v32.yaml"
    path.write_text(DEEPSEEK_V32, encoding="utf-8")
    return path


def test_a_backend_a_release_lacks_is_never_chosen(
    deepseek: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # FLASH_ATTN_MLA_SPARSE_FA4 first appears in the newest release's registry and
    # priorities; the older releases choose among the backends they have
    newest = json.dumps(_plan(["--platform", "b200", str(deepseek)], capsys))
    assert "FLASH_ATTN_MLA_SPARSE_FA4" in newest
    for version in versions.KNOWN[:-1]:
        assert "FLASH_ATTN_MLA_SPARSE_FA4" not in load_catalog(version).registry
        plan = _plan(["--platform", "b200", "--vllm-version", version, str(deepseek)], capsys)
        assert "FLASH_ATTN_MLA_SPARSE_FA4" not in json.dumps(plan)
        assert plan["vllm_version"] == version


def _manifest(tmp_path: Path, image: str) -> Path:
    text = MANIFEST.read_text(encoding="utf-8").replace("vllm/vllm-openai:v0.33.0", image)
    path = tmp_path / "deployment.yaml"
    path.write_text(text, encoding="utf-8")
    return path


MODELS = ["--model-path", f"/mnt/models={EXAMPLES / 'models'}"]


@pytest.mark.parametrize("version", versions.KNOWN)
def test_the_image_tag_picks_the_release(
    version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _manifest(tmp_path, f"vllm/vllm-openai:v{version}")
    plan = _plan([*MODELS, str(path)], capsys)
    assert plan["vllm_version"] == version
    assert not any(f["code"] == "KV502" for f in plan["findings"])  # type: ignore[attr-defined,index]


def test_vllm_version_goes_over_the_image_tag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _manifest(tmp_path, f"vllm/vllm-openai:v{versions.KNOWN[0]}")
    older, newer = versions.KNOWN[0], versions.KNOWN[-1]
    assert _plan([*MODELS, "--vllm-version", older, str(path)], capsys)["vllm_version"] == older
    assert _plan([*MODELS, "--vllm-version", newer, str(path)], capsys)["vllm_version"] == newer


@pytest.mark.parametrize("image", ["vllm/vllm-openai:latest", "vllm/vllm-openai:v0.34.0"])
def test_an_image_of_an_unknown_release_plans_with_a_finding(
    image: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _manifest(tmp_path, image)
    code, out, err = _run(["lint", *MODELS, str(path)], capsys)
    assert code == 1 and err == ""
    assert "KV101" in out and "KV502" in out
    assert image.split(":")[1].lstrip("v") in out
    assert f"assumes vLLM {versions.KNOWN[-1]}" in out


def _fleet(tmp_path: Path, decode_release: str | None) -> Path:
    text = (EXAMPLES / "fleets" / "correct-pd.yaml").read_text(encoding="utf-8")
    text = text.replace("../models/", f"{EXAMPLES / 'models'}/")
    if decode_release is not None:
        text = text.replace(
            "    kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_consumer}",
            "    kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_consumer}\n"
            f"    vllm_version: '{decode_release}'",
        )
    path = tmp_path / f"fleet-{decode_release}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_fleet_may_mix_releases_and_nixl_refuses_the_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = _fleet(tmp_path, None)
    code, out, err = _run(["lint", "--fleet", "--format", "json", str(same)], capsys)
    assert code == 0, out + err
    older = versions.KNOWN[0]
    mixed = _fleet(tmp_path, older)
    code, out, err = _run(["lint", "--fleet", "--format", "json", str(mixed)], capsys)
    doc = json.loads(out)
    releases = {e["name"]: e["plan"]["vllm_version"] for e in doc["engines"]}
    assert releases == {"prefill": versions.DEFAULT, "decode": older}
    assert code == 1
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    assert errors and all("vllm_version" in f["message"] for f in errors), errors


def test_an_interpreter_without_vllm_is_an_input_error_not_a_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python = tmp_path / "venv-without-vllm"
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(python)], check=True)
    argv = ["lint", "--platform", "gh200", "--engine", "vllm", "--vllm-python"]
    code, out, err = _run([*argv, str(python / "bin" / "python"), str(SEED)], capsys)
    assert code == 2 and out == ""
    assert "KV601" not in err and "start-up could not begin" in err
    code, out, err = _run([*argv, str(tmp_path / "missing"), str(SEED)], capsys)
    assert code == 2 and "is not an executable file" in err


def test_a_fleet_engine_of_an_unknown_release_plans_with_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _fleet(tmp_path, "0.34.0")
    code, out, err = _run(["lint", "--fleet", "--format", "json", str(fleet)], capsys)
    assert err == "", err
    plans = {e["name"]: e["plan"] for e in json.loads(out)["engines"]}
    decode = [f for f in plans["decode"]["findings"] if f["code"] == "KV502"]
    assert plans["decode"]["vllm_version"] == versions.KNOWN[-1]
    assert len(decode) == 1 and "vLLM 0.34.0" in decode[0]["message"]
    assert not any(f["code"] == "KV502" for f in plans["prefill"]["findings"])
    assert code in (0, 1)
