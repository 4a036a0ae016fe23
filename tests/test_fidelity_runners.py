"""Model Runner V1 and the kvconfig hooks against vLLM's own start-up.

Both hand the runner's kernel block sizes to the drafter: V1 in
``GPUModelRunner.initialize_metadata_builders`` (``drafter.initialize_attn_backend``),
the hooks by wrapping ``DraftModelSpeculator.set_attn``. What the drafter ends up with is
only visible in vLLM's whole start-up, so the truth here is the engine mode: the same
serve configs (Qwen3-8B with the AngelSlim EAGLE3 drafter, the table's target and drafter
backends, block sizes, head shapes via ``hf-overrides`` and tensor parallelism) planned
offline and by vLLM 0.33.0's start-up under an emulated GPU, with
``VLLM_USE_V2_MODEL_RUNNER=0``, or with the hooks loaded by vLLM's plugin loader
(``KVCONFIG_MODE=enforce``).

CI runs two block sizes and two head shapes; the slow mode (``KVCONFIG_SLOW=1``) the
table of tests/test_fidelity_core.py in full.
"""

from __future__ import annotations

import itertools
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from kvconfig import engine
from kvconfig.engine.compare import differences
from kvconfig.load.platforms import parse_platform
from tests.conftest import EXAMPLES, HAS_VLLM
from tests.test_engine_fidelity import _offline
from tests.test_fidelity_core import BLOCKS, HEADS, PAIRS, PLATFORMS

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not HAS_VLLM, reason="needs vllm")]

SLOW = os.environ.get("KVCONFIG_SLOW") == "1"
MODES = ("v1", "hooks")
CI_BLOCKS = (128, 256)
CI_HEADS = ((32, 8, 1), (64, 8, 8))
CASES = list(
    itertools.product(
        PLATFORMS, PAIRS, BLOCKS if SLOW else CI_BLOCKS, HEADS if SLOW else CI_HEADS, MODES
    )
)


def serve_config(pair: tuple[str, str | None], block: int, heads: tuple[int, int, int]) -> str:
    """The serve config of one table row."""
    target, draft = pair
    q, kv, tp = heads
    spec: dict[str, Any] = {
        "method": "eagle3",
        "model": str(EXAMPLES / "models" / "qwen3-8b-eagle3-angelslim"),
        "num_speculative_tokens": 3,
    }
    if draft is not None:
        spec["attention_backend"] = draft
    config: dict[str, Any] = {
        "model": str(EXAMPLES / "models" / "qwen3-8b"),
        "block-size": block,
        "attention-backend": target,
        "max-model-len": 4096,
        "hf-overrides": json.dumps({"num_attention_heads": q, "num_key_value_heads": kv}),
        "speculative-config": spec,
    }
    if tp > 1:
        config["tensor-parallel-size"] = tp
    return yaml.safe_dump(config, sort_keys=False)


def _id(case: tuple[Any, ...]) -> str:
    p, (t, d), b, h, m = case
    return f"{p.replace(' ', '')}-{t}+{d or 'auto'}-B{b}-q{h[0]}kv{h[1]}tp{h[2]}-{m}"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runners")


@cache
def _vllm(folder: str) -> dict[str, Any]:
    """vLLM's plan of every case, in one batch of engine children."""
    targets = []
    for case in CASES:
        platform, pair, block, heads, mode = case
        path = Path(folder) / f"{_id(case)}.yaml"
        path.write_text(serve_config(pair, block, heads))
        targets.append(
            engine.serve_config_target(
                str(path),
                parse_platform(platform),
                env={"VLLM_USE_V2_MODEL_RUNNER": "0"} if mode == "v1" else {},
                hooks="enforce" if mode == "hooks" else "none",
            )
        )
    done = engine.plans(targets, jobs=2)
    return {
        _id(c): p if isinstance(p, Exception) else p.to_json()
        for c, p in zip(CASES, done, strict=True)
    }


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_runner_v1_and_the_hooks_plan_as_vllm_starts(case: tuple[Any, ...], folder: Path) -> None:
    platform, _, _, _, mode = case
    vllm_plan = _vllm(str(folder))[_id(case)]
    assert isinstance(vllm_plan, dict), vllm_plan
    path = folder / f"{_id(case)}.yaml"
    env = {"VLLM_USE_V2_MODEL_RUNNER": "0"} if mode == "v1" else {}
    offline = _offline(path, platform, "enforce" if mode == "hooks" else "none", env)
    assert differences(offline, vllm_plan) == []
    if mode == "hooks" and not vllm_plan["engine"]["refused"]:
        for group in vllm_plan["groups"]:
            components = group["components"]
            if components["speculator"] is not None:
                assert components["speculator"] == components["runner"]


def test_the_hooks_fix_is_among_the_cases(folder: Path) -> None:
    """At least one row is a mismatch the hooks fix (KV103), seen in vLLM's start-up."""
    codes = {
        f["code"]
        for plan in _vllm(str(folder)).values()
        if isinstance(plan, dict)
        for f in plan["findings"]
    }
    assert "KV103" in codes
