"""The seed deployment and the hooks on each older release's own start-up.

Each case starts that release's vLLM (``--vllm-python``: the release's interpreter,
``tests/releases.py``) under the emulated GPU with ``KVCONFIG_MODE`` set, so vLLM's
plugin loader loads the kvconfig hooks installed beside it and runs that release's
``initialize_kv_cache``, ``init_attn_backend`` and ``DraftModelSpeculator.set_attn``.
The newest release is covered by ``tests/test_hooks_engine.py``.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from kvconfig import engine
from kvconfig.load.deployment import load
from kvconfig.load.platforms import parse_platform
from kvconfig.mirror import versions
from kvconfig.plan.resolve import resolve
from tests.conftest import EXAMPLES
from tests.releases import python_for

pytestmark = pytest.mark.vllm

SEED = EXAMPLES / "qwen3-8b-eagle3-gh200-triton-128.yaml"
AGREEING = EXAMPLES / "qwen3-8b-eagle3-gh200-triton-64.yaml"
OLDER = versions.KNOWN[:-1]
CASES: dict[str, tuple[Any, str]] = {
    "off": (SEED, "none"),
    "enforce": (SEED, "enforce"),
    "strict": (SEED, "strict"),
    "warn": (SEED, "warn"),
    "strict-agreeing": (AGREEING, "strict"),
}


@cache
def plans(version: str) -> dict[str, Any]:
    """That release's plan of every case, in one batch of engine children."""
    python = python_for(version)
    targets = [
        engine.serve_config_target(str(path), parse_platform("gh200"), hooks=hooks)
        for path, hooks in CASES.values()
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
