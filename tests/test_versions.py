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

import kvconfig
from kvconfig import hooks
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


def test_the_default_release_plans(deepseek: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--platform", "b200", "--vllm-version", versions.DEFAULT, str(deepseek)]
    code, out, _ = _run(argv, capsys)
    assert code == 0
    assert f"vLLM {versions.DEFAULT}," in out


def test_the_api_plans_an_unknown_release_with_the_newest_rules(deepseek: Path) -> None:
    loaded = kvconfig.load_deployment(deepseek, platform="b200", vllm_version="0.99.0")
    assert loaded.vllm_version == versions.KNOWN[-1]


def test_the_catalog_of_an_unknown_release_is_the_nearest_ones_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(["catalog", "--vllm-version", "0.99.0", "--platform", "h100"], capsys)
    assert code == 0 and "FLASH_ATTN" in out
    assert "KV502" in err and "vLLM 0.99.0" in err and f"assumes vLLM {versions.KNOWN[-1]}" in err
    code, out, err = _run(["catalog", "--vllm-version", versions.KNOWN[0]], capsys)
    assert code == 0 and err == ""


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
