"""The kvconfig hooks inside vLLM's real start-up, loaded by vLLM's own plugin loader.

Each case starts vLLM 0.33.0 under the emulated GPU (the engine mode) with
``KVCONFIG_MODE`` set: vLLM's ``EngineCore`` calls ``load_general_plugins``, which loads
the installed ``kvconfig`` entry point, and then runs its real ``initialize_kv_cache``,
``init_attn_backend`` and ``DraftModelSpeculator.set_attn`` with the hooks in place.
Nothing of vLLM's start-up is acted out here.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kvconfig import engine
from kvconfig.load.platforms import parse_platform
from tests.conftest import EXAMPLES, HAS_VLLM

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not HAS_VLLM, reason="needs vllm")]

SEED = EXAMPLES / "qwen3-8b-eagle3-gh200-triton-128.yaml"
AGREEING = EXAMPLES / "qwen3-8b-eagle3-gh200-triton-64.yaml"

CASES: dict[str, dict[str, Any]] = {
    "off": {"path": SEED, "hooks": "none"},
    "enforce": {"path": SEED, "hooks": "enforce"},
    "strict": {"path": SEED, "hooks": "strict"},
    "warn": {"path": SEED, "hooks": "warn"},
    "strict-agreeing": {"path": AGREEING, "hooks": "strict"},
    "strict-v1": {"path": SEED, "hooks": "strict", "env": {"VLLM_USE_V2_MODEL_RUNNER": "0"}},
}


@cache
def plans(export: str) -> dict[str, Any]:
    """vLLM's plan of every case, in one batch of engine children."""
    targets = []
    for case in CASES.values():
        env = dict(case.get("env", {}))
        settings = {}
        if case["hooks"] == "enforce":
            settings["KVCONFIG_PLAN_EXPORT"] = f"{export}/plan-{{rank}}.json"
        targets.append(
            engine.serve_config_target(
                str(case["path"]),
                parse_platform("gh200"),
                hooks=case["hooks"],
                env=env,
                settings=settings,
            )
        )
    done = engine.plans(targets, jobs=2)
    return {
        c: p if isinstance(p, Exception) else p.to_json() for c, p in zip(CASES, done, strict=True)
    }


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("export")


def _codes(plan: dict[str, Any]) -> list[str]:
    return [f["code"] for f in plan["findings"]]


def test_without_the_hooks_the_speculator_reads_unsplit_pages(export: Path) -> None:
    plan = plans(str(export))["off"]
    assert plan["hooks"] == "none"
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 128}
    assert _codes(plan) == ["KV101"]


def test_enforce_hands_the_runners_sizes_to_the_speculator(export: Path) -> None:
    plan = plans(str(export))["enforce"]
    assert plan["hooks"] == "enforce" and plan["verdict"] == "ok"
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 64}
    assert _codes(plan) == ["KV103"]


def test_enforce_exports_the_plan_vllm_built(export: Path) -> None:
    plan = plans(str(export))["enforce"]
    written = json.loads((export / "plan-0.json").read_text())
    assert written["hooks"] == "enforce"
    (group,) = written["groups"]
    assert (group["block_size"], group["kernel_block_size"]) == (128, 64)
    assert group["components"] == plan["groups"][0]["components"]
    names = {b["name"] for b in group["backends"]}
    assert names == {b["name"] for b in plan["groups"][0]["backends"]}


def test_strict_refuses_the_start_up_with_kvconfigs_message(export: Path) -> None:
    plan = plans(str(export))["strict"]
    assert plan["verdict"] == "reject" and plan["engine"]["refused"]
    (finding,) = plan["findings"]
    assert finding["code"] == "KV101"
    assert "KernelBlockSizeMismatch" in finding["message"]
    assert "64-token kernel pages" in finding["message"]
    assert "uses 128-token pages" in finding["message"]


def test_warn_starts_and_changes_nothing(export: Path) -> None:
    plan = plans(str(export))["warn"]
    assert plan["hooks"] == "warn" and not plan["engine"]["refused"]
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 128}


def test_strict_lets_an_agreeing_deployment_start(export: Path) -> None:
    plan = plans(str(export))["strict-agreeing"]
    assert plan["verdict"] == "ok" and not plan["engine"]["refused"]
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 64}


def test_strict_lets_model_runner_v1_start(export: Path) -> None:
    plan = plans(str(export))["strict-v1"]
    assert plan["runner"] == "v1" and plan["verdict"] == "ok"
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 64}
