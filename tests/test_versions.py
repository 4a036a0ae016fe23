"""The vLLM releases kvconfig plans for come from one registry, and nothing else names one.

Every rule kvconfig mirrors (backend selection and its priorities, the trait tables,
the method lists, the catalog) is checked against one installed vLLM. A release whose
rules were not generated and checked that way is refused as input rather than planned
with another release's rules.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

import hooks
import kvconfig
from kvconfig.cli import main
from kvconfig.mirror import versions

ROOT = Path(__file__).resolve().parents[1]
DEEPSEEK_V32 = "model: ./models/deepseek-v3.2-exp\ntensor-parallel-size: 8\n"
#: A vLLM release number (0.20 and later); kvconfig's own version (0.1.0) is not one.
RELEASE = re.compile(r"\b0\.(?:[2-9]\d|\d{3,})\.\d+\b")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(argv, stdout=out)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.fixture
def deepseek(tmp_path: Path) -> Path:
    (tmp_path / "models").symlink_to(ROOT / "examples" / "models")
    path = tmp_path / "deepseek-v32.yaml"
    path.write_text(DEEPSEEK_V32, encoding="utf-8")
    return path


def test_a_release_kvconfig_has_no_rules_for_is_refused(
    deepseek: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM 0.32.0 has no FLASH_ATTN_MLA_SPARSE_FA4; planning it with 0.33.0's rules chose it
    argv = ["lint", "--platform", "b200", "--vllm-version", "0.32.0", str(deepseek)]
    code, out, err = _run(argv, capsys)
    assert code == 2, out
    assert "FLASH_ATTN_MLA_SPARSE_FA4" not in out
    assert err == (
        "kvconfig: --vllm-version: kvconfig does not plan for vLLM 0.32.0 "
        f"(known: {', '.join(versions.KNOWN)})\n"
    )


def test_the_default_release_plans(deepseek: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--platform", "b200", "--vllm-version", versions.DEFAULT, str(deepseek)]
    code, out, _ = _run(argv, capsys)
    assert code == 0
    assert f"vLLM {versions.DEFAULT}," in out


def test_the_api_and_the_catalog_command_refuse_it_too(
    deepseek: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(kvconfig.InputError, match=r"does not plan for vLLM 0\.32\.0"):
        kvconfig.load_deployment(deepseek, platform="b200", vllm_version="0.32.0")
    code, _, err = _run(["catalog", "--vllm-version", "0.32.0"], capsys)
    assert code == 2 and "does not plan for vLLM 0.32.0" in err


def test_a_native_file_naming_an_unknown_release_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "native.yaml"
    path.write_text("kvconfig: 1\nvllm_version: 0.32.0\nplatform: h200\nlayers:\n  - count: 2\n")
    code, _, err = _run(["lint", str(path)], capsys)
    assert code == 2
    assert err == (
        f"kvconfig: {path}:2: vllm_version: kvconfig does not plan for vLLM 0.32.0 "
        f"(known: {', '.join(versions.KNOWN)})\n"
    )


def test_the_hooks_support_the_registry_releases() -> None:
    assert hooks.SUPPORTED_VLLM_VERSIONS == versions.KNOWN
    assert versions.DEFAULT in versions.KNOWN


def test_only_the_registry_names_a_vllm_release() -> None:
    registry = ROOT / "kvconfig" / "mirror" / "versions.py"
    named = []
    for package in ("kvconfig", "hooks", "schemas"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == registry:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if RELEASE.search(line):
                    named.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not named, "\n".join(named)
    assert RELEASE.findall(registry.read_text(encoding="utf-8"))
