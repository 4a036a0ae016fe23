"""``VLLM_MLA_DISABLE=1`` offline against vLLM 0.33.0's start-up (``--engine vllm``).

vLLM's ``ModelConfig.use_mla`` is then False and DeepSeek-V3 builds plain attention
layers (``DeepseekV2Attention``: every head cached, ``qk_nope_head_dim +
qk_rope_head_dim`` values per head), planned as full attention on FLASH_ATTN on an
H200. The offline plan must be the one vLLM's start-up builds under the emulated GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kvconfig import engine
from kvconfig.load.platforms import parse_platform
from tests.conftest import EXAMPLES, HAS_VLLM
from tests.test_engine_fidelity import _offline

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not HAS_VLLM, reason="needs vllm")]

EXAMPLE = EXAMPLES / "deepseek-v3-mtp-h200-fp8.yaml"
ENV = {"VLLM_MLA_DISABLE": "1"}


@pytest.fixture(scope="module", autouse=True)
def _slow_start() -> Iterator[None]:
    """vLLM's import can take minutes on a loaded host: the engine children of this
    module get 15 minutes to start instead of 5."""
    from kvconfig.engine import pool

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pool, "START_TIMEOUT", 900.0)
        yield


def _summary(plan: dict[str, Any]) -> list[tuple[str, int, int | None, list[str]]]:
    return [
        (
            g["kind"],
            g["block_size"],
            g["kernel_block_size"],
            sorted({b["name"] for b in g["backends"]}),
        )
        for g in plan["groups"]
    ]


def test_vllm_mla_disable_plans_deepseek_v3_as_vllm_starts_it() -> None:
    from kvconfig.engine.compare import differences

    (theirs,) = engine.plans(
        [engine.serve_config_target(str(EXAMPLE), parse_platform("h200"), env=ENV)]
    )
    assert not isinstance(theirs, Exception), theirs
    vllm = theirs.to_json()
    ours = _offline(EXAMPLE, "h200", "none", ENV)
    assert _summary(vllm) == [("full_attention", 16, 16, ["FLASH_ATTN"])], vllm["findings"]
    assert _summary(ours) == _summary(vllm)
    assert differences(ours, vllm) == []


def test_without_it_deepseek_v3_stays_mla() -> None:
    ours = _offline(EXAMPLE, "h200", "none", {})
    assert [g["kind"] for g in ours["groups"]] == ["mla_attention"]
