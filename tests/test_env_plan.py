"""``VLLM_*`` variables that change the plan, against vLLM's own functions.

``VLLM_HAS_FLASHINFER_CUBIN``: vLLM's ``has_flashinfer_cubin`` (``vllm/utils/flashinfer.py``)
answers True whenever the variable is a non-zero integer, whatever is installed, and TRT-LLM
attention (``supports_trtllm_attention``) then counts the cubins as present; kvconfig plans
that deployment with the cubins even under ``--no-trtllm-cubins``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kvconfig.load.deployment import load
from tests.conftest import HAS_VLLM

QWEN = Path("examples/models/qwen3-8b").resolve()


def _cubins(tmp_path: Path, value: str | None) -> bool:
    path = tmp_path / "s.yaml"
    path.write_text(f"model: {QWEN}\n", encoding="utf-8")
    env = {} if value is None else {"VLLM_HAS_FLASHINFER_CUBIN": value}
    return load(str(path), platform="b200", env=env, trtllm_cubins=False).trtllm_cubins


@pytest.mark.parametrize("value", [None, "0", "1", "2"])
def test_the_variable_vouches_for_the_cubins(tmp_path: Path, value: str | None) -> None:
    assert _cubins(tmp_path, value) is (value not in (None, "0"))


@pytest.mark.vllm
@pytest.mark.skipif(not HAS_VLLM, reason="needs vllm")
@pytest.mark.parametrize("value", ["1", "2"])
def test_vllm_counts_the_cubins_when_the_variable_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    from vllm.utils import flashinfer

    monkeypatch.setenv("VLLM_HAS_FLASHINFER_CUBIN", value)
    flashinfer.has_flashinfer_cubin.cache_clear()
    try:
        assert flashinfer.has_flashinfer_cubin() is True
        assert _cubins(tmp_path, value) is True
    finally:
        flashinfer.has_flashinfer_cubin.cache_clear()
