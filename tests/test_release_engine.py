"""The seed deployment and the hooks on each older release's own start-up.

Each case starts that release's vLLM (``--vllm-python``: the release's interpreter,
``tests/releases.py``) under the emulated GPU with ``KVCONFIG_MODE`` set, so vLLM's
plugin loader loads the kvconfig hooks installed beside it and runs that release's
``initialize_kv_cache``, ``init_attn_backend`` and ``DraftModelSpeculator.set_attn``.
The newest release is covered by ``tests/test_hooks_engine.py``.

Each older release also runs the first ``KVCONFIG_RELEASE_SWEEP`` cases of the seeded
engine sweep (``tests/engine_sweep.py``; default 6, the slow mode 300), planned offline
with that release's rules and by its own start-up.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

import pytest

from kvconfig import engine
from kvconfig.engine.compare import differences
from kvconfig.load.deployment import load
from kvconfig.load.platforms import parse_platform
from kvconfig.mirror import versions
from kvconfig.plan.resolve import resolve
from tests import engine_sweep
from tests.conftest import EXAMPLES
from tests.releases import python_for, python_for_full

pytestmark = pytest.mark.vllm

SEED = EXAMPLES / "qwen3-8b-eagle3-gh200-triton-128.yaml"
AGREEING = EXAMPLES / "qwen3-8b-eagle3-gh200-triton-64.yaml"
OLDER = versions.KNOWN[:-1]
SLOW = os.environ.get("KVCONFIG_SLOW") == "1"
SWEEP_N = int(os.environ.get("KVCONFIG_RELEASE_SWEEP", "300" if SLOW else "6"))
HYBRID = EXAMPLES / "qwen3-next-mtp-h200-flashinfer.yaml"
CASES: dict[str, tuple[Any, str, str]] = {
    "off": (SEED, "none", "gh200"),
    "enforce": (SEED, "enforce", "gh200"),
    "strict": (SEED, "strict", "gh200"),
    "warn": (SEED, "warn", "gh200"),
    "strict-agreeing": (AGREEING, "strict", "gh200"),
    "hybrid": (HYBRID, "none", "h200"),
}


@cache
def plans(version: str) -> dict[str, Any]:
    """That release's plan of every case, in one batch of engine children."""
    python = python_for_full(version)
    targets = [
        engine.serve_config_target(str(path), parse_platform(platform), hooks=hooks)
        for path, hooks, platform in CASES.values()
    ]
    done = engine.plans(targets, jobs=1, python=python)
    return {
        c: p if isinstance(p, Exception) else p.to_json() for c, p in zip(CASES, done, strict=True)
    }


def _codes(plan: dict[str, Any]) -> list[str]:
    return [f["code"] for f in plan["findings"]]


@pytest.mark.parametrize("version", OLDER)
def test_the_release_itself_starts_and_is_the_one_planned(version: str) -> None:
    plan = plans(version)["off"]
    assert not isinstance(plan, Exception), plan
    assert plan["vllm_version"] == version
    assert f"vllm {version} start-up" in json.dumps(plan)


@pytest.mark.parametrize("version", OLDER)
def test_the_seed_is_rejected_by_the_release_and_offline_alike(version: str) -> None:
    plan = plans(version)["off"]
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 128}
    assert _codes(plan) == ["KV101"]
    dep = load(str(SEED), platform="gh200", vllm_version=version)
    offline = resolve(dep, parse_platform("gh200")).to_json()
    assert offline["verdict"] == plan["verdict"] == "reject"
    assert offline["groups"][0]["components"] == plan["groups"][0]["components"]


@pytest.mark.parametrize("version", OLDER)
def test_enforce_hands_the_runners_size_to_the_speculator(version: str) -> None:
    plan = plans(version)["enforce"]
    assert plan["hooks"] == "enforce" and plan["verdict"] == "ok"
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 64}


@pytest.mark.parametrize("version", OLDER)
def test_strict_refuses_with_kvconfigs_message(version: str) -> None:
    plan = plans(version)["strict"]
    assert plan["verdict"] == "reject" and plan["engine"]["refused"]
    (finding,) = plan["findings"]
    assert finding["code"] == "KV101" and "KernelBlockSizeMismatch" in finding["message"]


@pytest.mark.parametrize("version", OLDER)
def test_warn_starts_and_changes_nothing(version: str) -> None:
    plan = plans(version)["warn"]
    assert plan["hooks"] == "warn" and not plan["engine"]["refused"]
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 128}


@pytest.mark.parametrize("version", OLDER)
def test_strict_lets_an_agreeing_deployment_start(version: str) -> None:
    plan = plans(version)["strict-agreeing"]
    assert plan["verdict"] == "ok" and not plan["engine"]["refused"]


@pytest.mark.parametrize("version", OLDER)
def test_the_hybrid_alignment_is_the_releases_own(version: str) -> None:
    # Qwen3-Next with prefix caching: each release aligns B its own way
    # (versions.Rules.hybrid_over_backends, checkpoint_grid)
    plan = plans(version)["hybrid"]
    dep = load(str(HYBRID), platform="h200", vllm_version=version)
    offline = resolve(dep, parse_platform("h200")).to_json()
    assert differences(offline, plan) == []
    assert offline["groups"][0]["block_size"] == plan["groups"][0]["block_size"]


@pytest.mark.parametrize("version", OLDER)
def test_the_sweep_agrees_with_the_releases_start_up(version: str) -> None:
    python = python_for(version)
    chosen = engine_sweep.cases(SWEEP_N, engine_sweep.SEED)
    results = engine_sweep.run(chosen, jobs=2, version=version, python=python)
    summary = engine_sweep.summary(results)
    assert summary["input_errors"] == {}
    assert {r.engine["vllm_version"] for r in results if isinstance(r.engine, dict)} == {version}
    unexplained = {
        case: diffs
        for case, diffs in summary["differences"].items()
        if case not in engine_sweep.EXPLAINED
    }
    assert unexplained == {}
    assert summary["outcomes"].get("agree", 0) > 0


def _sweep_case(index: int, version: str) -> engine_sweep.Result:
    """One case of the seeded sweep, planned offline and by ``version``'s start-up."""
    case = engine_sweep.cases(index + 1, engine_sweep.SEED)[index]
    (result,) = engine_sweep.run([case], version=version, python=python_for_full(version))
    assert isinstance(result.engine, dict) and isinstance(result.offline, dict), result.engine
    assert result.engine["vllm_version"] == version
    assert result.differences == []
    return result


@pytest.mark.parametrize("version", OLDER)
def test_a_drafter_on_another_backend_groups_as_the_release_does(version: str) -> None:
    # sweep case 39: GPT-OSS on B300, Model Runner V1, FP8 cache, FlashInfer for the target
    # and Triton for its EAGLE3 drafter. From 0.32.0 the runner aligns each spec to its
    # backend's kernel blocks (versions.Rules.spec_alignment): the draft layer's spec
    # differs from the target's and every layer gets a group (37); 0.30.0 and 0.31.0 merge
    # it with the full-attention layers (2 groups)
    result = _sweep_case(39, version)
    assert (result.case.runner, result.case.draft_backend) == ("v1", "TRITON_ATTN")
    aligned = versions.rules(version).spec_alignment == "runner"
    assert len(result.engine["groups"]) == (37 if aligned else 2)


@pytest.mark.parametrize("version", OLDER)
def test_a_sliding_window_picks_its_block_as_the_release_does(version: str) -> None:
    # sweep case 61: Gemma 2 (head size 256, sliding windows) on B300 with FlashAttention
    # and --block-size 16. From 0.31.0 the sliding-window layer asks FlashAttention for its
    # sizes with its spec (FA4's 128-token pages) and the full-attention pages scale to
    # 128; 0.30.0's backends take no spec and no config is current then: 16 stays
    # (versions.Rules.backends_take_specs)
    result = _sweep_case(61, version)
    assert result.case.block_size == 16 and result.case.family.model == "gemma-2-9b-it"
    takes = versions.rules(version).backends_take_specs
    assert {g["block_size"] for g in result.engine["groups"]} == {128 if takes else 16}


def test_the_serve_parser_is_found_where_each_release_keeps_it() -> None:
    pytest.importorskip("vllm")
    from kvconfig.engine import startup

    parser = startup.serve_function("make_arg_parser")
    assert parser.__module__ in versions.SERVE_ARGUMENTS
    from kvconfig.errors import MachineryError

    with pytest.raises(MachineryError, match="cannot find no_such_function"):
        startup.serve_function("no_such_function")


def test_a_failure_of_kvconfigs_engine_code_is_not_vllms_answer() -> None:
    pytest.importorskip("vllm")
    from types import SimpleNamespace

    from kvconfig.engine import readout, startup

    try:
        readout.read(SimpleNamespace(kv_cache_config=1), None)
    except Exception as err:  # kvconfig's own code fails on what it was handed
        assert startup.ours(err)
    else:
        pytest.fail("readout.read raised nothing")
    try:
        import vllm.config

        vllm.config.VllmConfig(model_config=0)  # type: ignore[arg-type]
    except Exception as err:  # vLLM's own code raises
        assert not startup.ours(err)
