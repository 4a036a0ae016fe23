"""The offline plan equals vLLM's own start-up, group by group.

vLLM 0.33.0's start-up (``--engine vllm``, under the emulated GPU) is the oracle: every
bundled example on every platform it is linted for, and a seeded sweep of generated
deployments, are planned both ways and compared with ``kvconfig.engine.compare``. A
difference is an offline bug.

CI runs every example on eight platforms (Model Runner V2, no hooks), each example on its
own platform with Model Runner V1 and with the kvconfig hooks, and the first
``KVCONFIG_SWEEP_CI`` cases of the sweep (default 40). The slow mode (``-m slow`` or
``KVCONFIG_SLOW=1``) runs the whole product and the full sweep (``KVCONFIG_SWEEP_N``,
default 300; docs/engine.md has its figures).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kvconfig import engine
from kvconfig.engine.compare import differences
from kvconfig.load.platforms import parse_platform
from tests import engine_sweep
from tests.conftest import EXAMPLES, HAS_VLLM
from tests.golden import record

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not HAS_VLLM, reason="needs vllm"),
]

#: The platform each example is written for.
HOME = {
    "deepseek-v3-mtp-h200-fp8.yaml": "h200",
    "deepseek-v32-mtp-h200-fp8.yaml": "h200",
    "gemma-3-27b-h100-flashinfer-128.yaml": "h100",
    "gemma-3-27b-h100-flashinfer-128-text.yaml": "h100",
    "gpt-oss-120b-eagle3-h200-triton-128.yaml": "h200",
    "kimi-k2-eagle3-b200-128.yaml": "b200",
    "minimax-m3-eagle3-gb300-128.yaml": "gb300",
    "minimax-m3-eagle3-gb300-256.yaml": "gb300",
    "minimax-m3-eagle3-gb300-512.yaml": "gb300",
    "nemotron-h-8b-h100.yaml": "h100",
    "qwen3-8b-eagle3-gh200-default.yaml": "gh200",
    "qwen3-8b-eagle3-gh200-triton-128.yaml": "gh200",
    "qwen3-8b-eagle3-gh200-triton-256.yaml": "gh200",
    "qwen3-8b-eagle3-gh200-triton-64.yaml": "gh200",
    "qwen3-next-mtp-h200-flashinfer.yaml": "h200",
}
SLOW = os.environ.get("KVCONFIG_SLOW") == "1"
V1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}


def serve_configs() -> list[Path]:
    """The examples vLLM can start: serve configs (native files describe layers only)."""
    return [p for p in record.deployments() if p.parent == EXAMPLES]


def _offline(path: Path, platform: str, hooks: str, env: dict[str, str]) -> dict[str, Any]:
    from kvconfig.cli import main

    args = ["plan", str(path), "--platform", platform, "--hooks", hooks, "--format", "json"]
    for k, v in env.items():
        args += ["--env", f"{k}={v}"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(args, stdout=out)
    assert code in (0, 1), err.getvalue()
    plan: dict[str, Any] = json.loads(out.getvalue())
    return plan


def example_cases() -> list[tuple[str, str, str, tuple[tuple[str, str], ...]]]:
    """(file, platform, hooks, env) of the examples' profile."""
    out = []
    for path in serve_configs():
        name = path.name
        for platform in record.PLATFORMS:
            out.append((name, platform, "none", ()))
            if SLOW:
                out.append((name, platform, "enforce", ()))
                out.append((name, platform, "none", tuple(V1.items())))
        if not SLOW:
            out.append((name, HOME[name], "enforce", ()))
            out.append((name, HOME[name], "none", tuple(V1.items())))
    return out


CASES = example_cases()


@cache
def engine_plans() -> dict[tuple[str, str, str, tuple[tuple[str, str], ...]], Any]:
    """vLLM's plan of every example case, from one batch of engine children."""
    targets = [
        engine.serve_config_target(
            str(EXAMPLES / name), parse_platform(platform), hooks=hooks, env=dict(env)
        )
        for name, platform, hooks, env in CASES
    ]
    done = engine.plans(targets, jobs=2)
    return {
        c: p if isinstance(p, Exception) else p.to_json() for c, p in zip(CASES, done, strict=True)
    }


def test_every_example_has_a_home_platform() -> None:
    assert sorted(HOME) == sorted(p.name for p in serve_configs())


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=[f"{n.removesuffix('.yaml')}@{p}/{h}/{'v1' if e else 'v2'}" for n, p, h, e in CASES],
)
def test_the_offline_plan_of_an_example_is_vllms(
    case: tuple[str, str, str, tuple[tuple[str, str], ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, platform, hooks, env = case
    monkeypatch.chdir(record.ROOT)
    vllm_plan = engine_plans()[case]
    assert isinstance(vllm_plan, dict), vllm_plan
    offline = _offline(EXAMPLES / name, platform, hooks, dict(env))
    assert differences(offline, vllm_plan) == []


SWEEP_N = int(
    os.environ.get("KVCONFIG_SWEEP_N", "300") if SLOW else os.environ.get("KVCONFIG_SWEEP_CI", "40")
)


@cache
def sweep() -> list[engine_sweep.Result]:
    return engine_sweep.run(engine_sweep.cases(SWEEP_N, engine_sweep.SEED), jobs=2)


def test_the_sweep_agrees_with_vllm() -> None:
    results = sweep()
    summary = engine_sweep.summary(results)
    assert summary["outcomes"].get("engine-input-error", 0) == 0, summary["input_errors"]
    assert summary["outcomes"].get("offline-input-error", 0) == 0, summary["input_errors"]
    unexplained = {
        case: diffs
        for case, diffs in summary["differences"].items()
        if case not in engine_sweep.EXPLAINED
    }
    assert unexplained == {}
    assert len(results) == SWEEP_N
