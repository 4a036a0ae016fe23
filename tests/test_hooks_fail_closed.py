"""The hooks fail closed, on vLLM 0.33.0's real start-up: model runner, EAGLE3 speculator
and NIXL connector worker, the hooks loaded by vLLM's own plugin loader, nothing of
kvconfig's stubbed.

kvconfig's own machinery is made to fail by making a vLLM function the hooks call
unreadable (it raises), where vLLM's start-up holds its own binding and runs on
(``tests/hooks_child.py``): ``vllm.v1.worker.utils.prepare_kernel_block_sizes``, which the
speculator hook calls to recompute the runner's kernel block sizes, and
``kv_connector.utils.get_current_attn_backends_and_specs``, which the connector hook calls
to read the connector's backends. Then:

* ``strict`` refuses to start with ``HooksFailed`` saying what failed;
* ``enforce`` starts, logs one ERROR naming what is unchecked, and ``hooks.status()``
  lists it in ``unchecked``;
* ``warn`` starts and logs the same.

The deployment is one that agrees (Qwen3-8B on FLASHINFER, the AngelSlim EAGLE3 drafter
on TRITON_ATTN, --block-size 64), so nothing but the injected failure is found.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kvconfig import engine
from kvconfig.load.platforms import parse_platform
from tests.conftest import EXAMPLES, HAS_VLLM

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not HAS_VLLM, reason="needs vllm")]

ROOT = Path(__file__).resolve().parents[1]
AGREEING = EXAMPLES / "qwen3-8b-eagle3-gh200-triton-64.yaml"
NIXL = ("--kv-transfer-config", '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}')
MODES = ("strict", "enforce", "warn")


@cache
def runs(scratch: str) -> tuple[dict[tuple[str, str], dict[str, Any]], str]:
    """Every (injection, mode): the start-up's answer and the hooks' status; and vLLM's
    log (stderr) of the whole process."""
    from kvconfig.engine.driver import stub_driver
    from kvconfig.engine.pool import Request, child_env

    platform = parse_platform("gh200")
    target = engine.serve_config_target(str(AGREEING), platform)
    request = Request(
        argv=target.argv, cwd=target.cwd, gpu=engine._gpu(platform), cubins=False, hooks="strict"
    )
    folder = Path(scratch)
    gpu = request.gpu
    doc = {
        "setup": {
            "gpu": {
                "name": gpu.name,
                "capability": list(gpu.capability),
                "memory_bytes": gpu.memory_bytes,
            },
            "driver": str(stub_driver(folder / "driver")),
            "scratch": str(folder),
        },
        "cwd": target.cwd,
        "runs": [
            {"inject": "prepare", "argv": list(target.argv), "modes": list(MODES)},
            {"inject": "connector", "argv": [*target.argv, *NIXL], "modes": list(MODES)},
        ],
    }
    path = folder / "request.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    env = child_env(request, folder)
    env["VLLM_LOGGING_LEVEL"] = "INFO"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "hooks_child.py"), str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(folder),
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    return {(a["inject"], a["mode"]): a for a in answers}, done.stderr


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("fail-closed"))


SPECULATOR_FAILED = "recomputing the model runner's kernel block sizes for the speculator"
CONNECTOR_FAILED = "reading NixlPullConnectorWorker's and the model runner's kernel block sizes"


def test_the_hooks_are_loaded_by_vllms_plugin_loader(scratch: str) -> None:
    answers, _ = runs(scratch)
    assert all(a["loaded"] and a["active"] for a in answers.values())


def test_strict_refuses_to_start_when_the_speculator_hook_fails(scratch: str) -> None:
    a = runs(scratch)[0][("prepare", "strict")]
    assert (a["status"], a["error"]) == ("refused", "HooksFailed")
    assert SPECULATOR_FAILED in a["message"]
    assert (
        "RuntimeError: injected: vLLM's prepare_kernel_block_sizes is unreadable" in (a["message"])
    )
    assert "speculator EagleSpeculator's kernel block sizes" in a["message"]
    assert "KVCONFIG_MODE=strict refuses to start" in a["message"]


@pytest.mark.parametrize("mode", ["enforce", "warn"])
def test_enforce_and_warn_start_and_say_what_is_unchecked(scratch: str, mode: str) -> None:
    answers, log = runs(scratch)
    a = answers[("prepare", mode)]
    assert (a["status"], a["hooks_mode"]) == ("ok", mode), a["message"]
    (unchecked,) = a["unchecked"]
    assert "speculator EagleSpeculator's kernel block sizes" in unchecked
    assert SPECULATOR_FAILED in unchecked
    line = f"is not checked; KVCONFIG_MODE={mode}: starting with it UNCHECKED"
    assert any(
        "ERROR" in text and SPECULATOR_FAILED in text and line in text for text in log.splitlines()
    )


def test_strict_refuses_the_connector_when_its_hook_fails(scratch: str) -> None:
    a = runs(scratch)[0][("connector", "strict")]
    (nixl,) = a["nixl"]
    assert nixl["refusal"]["error"] == "HooksFailed"
    assert CONNECTOR_FAILED in nixl["refusal"]["message"]
    assert "get_current_attn_backends_and_specs is unreadable" in nixl["refusal"]["message"]


@pytest.mark.parametrize("mode", ["enforce", "warn"])
def test_enforce_and_warn_keep_the_connector_and_say_so(scratch: str, mode: str) -> None:
    answers, log = runs(scratch)
    a = answers[("connector", mode)]
    assert a["status"] == "ok"
    (nixl,) = a["nixl"]
    assert not nixl.get("refusal"), nixl
    assert [u for u in a["unchecked"] if CONNECTOR_FAILED in u] != []
    assert any("ERROR" in text and CONNECTOR_FAILED in text for text in log.splitlines())
