"""The engine mode: vLLM's own start-up under the emulated GPU.

The first tests need no vLLM (the pieces the parent process runs); the rest start real
engine children and read what vLLM 0.33.0's start-up decided.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kvconfig import engine
from kvconfig.engine import driver, emulate
from kvconfig.engine.compare import differences
from kvconfig.engine.plan import REFUSALS, refusal_code
from kvconfig.engine.pool import Gpu, Request, child_env
from kvconfig.errors import InputError
from kvconfig.load.platforms import parse_platform
from tests.conftest import EXAMPLES, HAS_VLLM

SEED = "qwen3-8b-eagle3-gh200-triton-128.yaml"

# vLLM 0.33.0's texts for each kind of refusal (from the files REFUSALS names).
VLLM_TEXTS = {
    "KV301": "Selected backend AttentionBackendEnum.FLASHINFER is not valid for this "
    "configuration. Reason: ['partial multimodal token full attention not supported']",
    "KV302": "No valid attention backend found for cuda with head_size 80",
    "KV301 (FP8)": "FP8 KV cache is not supported by the Triton attention backend on NVIDIA "
    "A100-SXM4-80GB (compute capability 8.0); native FP8 (fp8e4nv) requires SM89+.",
    "KV301 (softcap)": "FlexAttention does not support logits soft cap yet.",
    "KV102": "TRITON_ATTN needs 64-token kernel blocks, which packed 128-token KV cache "
    "blocks cannot be split into. Reduce --block-size to 64",
    "KV201": "No common block size for 256 (FA4: [128]; FLASHINFER: [16, 32, 64]).",
    "KV203": "The attention backends share no supported KV cache block size (...)",
    "KV204": "Aligned KV cache block size 528 is not supported by attention backend(s): X",
    "KV305": "flex_attn_kv_block_size must be a power of 2 and divisible by flex_attn_block_n, "
    "got 96, None",
    "KV306": "No KV cache layout satisfies every supported set: [['LBHNC', 'BLHNC'], ['LBNHC']]",
    "KV603": "To serve at least one request with the model's max seq len (1048576), (138.25 GiB "
    "KV cache is needed, which is larger than the available KV cache memory (73.58 GiB).",
    "KV603 (none)": "No available memory for the cache blocks. Try increasing "
    "`gpu_memory_utilization` when initializing the engine",
}


@pytest.mark.parametrize("code", sorted(VLLM_TEXTS))
def test_each_refusal_text_maps_to_its_code(code: str) -> None:
    assert refusal_code(VLLM_TEXTS[code], None) == code.split(" ", maxsplit=1)[0]


def test_a_refusal_after_the_runner_voted_is_the_speculators() -> None:
    facts = {"kernel_block_sizes": [64], "groups": []}
    assert refusal_code(VLLM_TEXTS["KV201"], facts) == "KV202"
    assert refusal_code("something else entirely", facts) == "KV601"


def test_every_refusal_pattern_has_a_sample() -> None:
    for parts, _ in REFUSALS:
        assert any(all(p in text for p in parts) for text in VLLM_TEXTS.values()), parts


def test_the_hooks_refusing_a_mismatch_is_the_mismatch() -> None:
    message = "kvconfig: KV-cache group 0 ..."
    assert refusal_code(message, None, "KernelBlockSizeMismatch") == "KV101"


def _plan(**over: Any) -> dict[str, Any]:
    group = {
        "id": 0,
        "kind": "full_attention",
        "block_size": 128,
        "kernel_block_size": 64,
        "packed": False,
        "layers": {"target": ["a", "b"], "draft": ["d"]},
        "backends": [
            {"name": "FLASHINFER", "role": "target", "layers": ["a", "b"]},
            {"name": "TRITON_ATTN", "role": "draft", "layers": ["d"]},
        ],
        "components": {"runner": 64, "speculator": 128},
    }
    group.update(over.pop("group", {}))
    plan = {"verdict": "reject", "groups": [group], "findings": [], "engine": {"refused": False}}
    plan.update(over)
    return plan


def test_equal_plans_have_no_differences() -> None:
    assert differences(_plan(), _plan()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"verdict": "ok"}, "verdict"),
        ({"group": {"block_size": 64}}, "group 0 block_size"),
        ({"group": {"components": {"runner": 64, "speculator": 64}}}, "group 0 speculator"),
        ({"group": {"kernel_block_size": 32}}, "group 0 kernel_block_size"),
        ({"group": {"layers": {"target": ["a"], "draft": ["b", "d"]}}}, "group 0 layers"),
    ],
)
def test_each_kind_of_difference_is_reported(change: dict[str, Any], expected: str) -> None:
    found = differences(_plan(), _plan(**change))
    assert len(found) == 1 and found[0].startswith(expected), found


def _errors(*codes: str) -> list[dict[str, str]]:
    return [{"code": c, "severity": "error"} for c in codes]


def test_a_refused_start_up_compares_by_verdict_and_cause_only() -> None:
    refused = _plan(groups=[], engine={"refused": True}, findings=_errors("KV201"))
    assert differences(_plan(findings=_errors("KV101", "KV201")), refused) == []
    assert differences(_plan(verdict="ok"), refused)[0].startswith("verdict")


@pytest.mark.parametrize(
    ("offline", "engine", "refused"),
    [
        (("KV201",), ("KV301",), True),  # vLLM refuses for another reason than kvconfig says
        (("KV201",), ("KV601",), True),  # a refusal kvconfig does not classify never matches
        (("KV101",), ("KV101", "KV201"), False),  # vLLM started: the causes must be the same
    ],
)
def test_two_rejections_with_different_causes_differ(
    offline: tuple[str, ...], engine: tuple[str, ...], refused: bool
) -> None:
    eng = _plan(findings=_errors(*engine), engine={"refused": refused})
    found = differences(_plan(findings=_errors(*offline)), eng)
    assert found[0].startswith("cause: offline rejects with " + ", ".join(offline)), found


def test_an_underived_offline_plan_is_not_compared() -> None:
    unknown = {"code": "KV401", "severity": "warning"}
    off = _plan(verdict="unknown", groups=[], findings=[unknown])
    assert differences(off, _plan(findings=_errors("KV101"))) == []


def test_running_out_of_memory_is_no_difference_in_the_plan() -> None:
    memory = {"code": "KV603", "severity": "error"}
    refused = _plan(groups=[], engine={"refused": True}, findings=[memory])
    assert differences(_plan(verdict="ok"), refused) == []


def test_the_stub_driver_exports_every_entry_point_and_reports_no_device(tmp_path: Path) -> None:
    path = driver.stub_driver(tmp_path)
    assert path.name == "libcuda.so.1" and path == driver.stub_driver(tmp_path)  # built once
    lib = ctypes.CDLL(str(path))
    for name in driver.DRIVER_SYMBOLS:
        for symbol in (name, f"{name}_v2"):
            assert getattr(lib, symbol)() == driver.CUDA_ERROR_NO_DEVICE


def test_a_child_environment_is_built_not_inherited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_ATTENTION_BACKEND", "FLASHINFER")
    monkeypatch.setenv("KVCONFIG_MODE", "strict")
    gpu = Gpu("NVIDIA H100 80GB HBM3", (9, 0), 80 << 30)
    env = child_env(Request(("m",), "/", gpu, env={"VLLM_BATCH_INVARIANT": "1"}), tmp_path)
    assert "VLLM_ATTENTION_BACKEND" not in env
    assert env["VLLM_BATCH_INVARIANT"] == "1"
    assert env["KVCONFIG_MODE"] == "off"
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["VLLM_CACHE_ROOT"].startswith(str(tmp_path))
    hooked = child_env(Request(("m",), "/", gpu, hooks="enforce", download=True), tmp_path)
    assert hooked["KVCONFIG_MODE"] == "enforce"
    assert "HF_HUB_OFFLINE" not in hooked


def test_non_nvidia_platforms_are_refused_as_input() -> None:
    target = engine.serve_config_target(str(EXAMPLES / SEED), parse_platform("mi300x"))
    with pytest.raises(InputError, match="emulates NVIDIA GPUs"):
        engine.plans([target])


# ----------------------------------------------------------------------------- vLLM

needs_vllm = pytest.mark.skipif(not HAS_VLLM, reason="needs vllm")


def _engine(name: str, platform: str, **kw: Any) -> dict[str, Any]:
    target = engine.serve_config_target(str(EXAMPLES / name), parse_platform(platform), **kw)
    (plan,) = engine.plans([target])
    assert not isinstance(plan, Exception), plan
    return plan.to_json()


@needs_vllm
@pytest.mark.vllm
def test_the_seed_is_rejected_by_vllms_own_speculator() -> None:
    plan = _engine(SEED, "gh200")
    assert plan["verdict"] == "reject"
    assert [f["code"] for f in plan["findings"]] == ["KV101"]
    (group,) = plan["groups"]
    assert (group["block_size"], group["kernel_block_size"]) == (128, 64)
    assert group["components"] == {"runner": 64, "speculator": 128}
    assert plan["runner"] == "v2" and plan["hooks"] == "none"
    assert plan["engine"]["description"] == "vllm 0.33.0 start-up, emulated GH200"
    assert plan["engine"]["stood_in"] == list(emulate.STOOD_IN)


@needs_vllm
@pytest.mark.vllm
def test_vllms_plugin_loader_loads_the_hooks_and_they_fix_the_seed() -> None:
    plan = _engine(SEED, "gh200", hooks="enforce")
    assert plan["hooks"] == "enforce"
    assert plan["verdict"] == "ok"
    assert [f["code"] for f in plan["findings"]] == ["KV103"]
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 64}


@needs_vllm
@pytest.mark.vllm
def test_model_runner_v1_hands_its_sizes_to_the_drafter() -> None:
    plan = _engine(SEED, "gh200", env={"VLLM_USE_V2_MODEL_RUNNER": "0"})
    assert plan["runner"] == "v1" and plan["verdict"] == "ok"
    assert plan["groups"][0]["components"] == {"runner": 64, "speculator": 64}


@needs_vllm
@pytest.mark.vllm
def test_gemma3_with_flashinfer_is_refused_with_vllms_text() -> None:
    plan = _engine("gemma-3-27b-h100-flashinfer-128.yaml", "h100")
    assert plan["verdict"] == "reject" and plan["engine"]["refused"]
    (finding,) = plan["findings"]
    assert finding["code"] == "KV301"
    assert "partial multimodal token full attention not supported" in finding["message"]
    assert "vllm/platforms/cuda.py" in finding["message"]


@needs_vllm
@pytest.mark.vllm
def test_arguments_vllms_parser_rejects_are_input_errors(tmp_path: Path) -> None:
    target = engine.Target(
        source="<command>",
        argv=(str(EXAMPLES / "models" / "qwen3-8b"), "--block-size", "eight"),
        cwd=str(tmp_path),
        platform=parse_platform("h100"),
    )
    (result,) = engine.plans([target])
    assert isinstance(result, InputError)
    assert "invalid" in str(result) and "--block-size" in str(result)


@needs_vllm
@pytest.mark.vllm
def test_one_child_serves_many_deployments_and_nothing_is_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kvconfig.engine.pool import Pool

    # a temporary folder of its own: others' files in /tmp do not count
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = set(os.listdir(tempfile.gettempdir()))
    model = str(EXAMPLES / "models" / "qwen3-8b")
    requests = [
        Request(
            (model, "--block-size", str(b)), str(EXAMPLES), Gpu("NVIDIA H100", (9, 0), 80 << 30)
        )
        for b in (16, 32, 64)
    ]
    with Pool() as pool:
        answers = pool.ask_all(requests)
        scratch = pool._scratch
        assert pool.started == 1
    assert [a.status for a in answers] == ["ok"] * 3
    assert [a.data["facts"]["groups"][0]["block_size"] for a in answers] == [16, 32, 64]
    assert not scratch.exists()
    assert set(os.listdir(tempfile.gettempdir())) == before


@needs_vllm
@pytest.mark.vllm
def test_a_start_up_past_its_time_is_stopped() -> None:
    from kvconfig.engine.pool import Pool

    gpu = Gpu("NVIDIA H100", (9, 0), 80 << 30)
    with Pool(timeout=0.01) as pool:
        answer = pool.ask(Request((str(EXAMPLES / "models" / "qwen3-8b"),), str(EXAMPLES), gpu))
    assert answer.status == "timeout"
    assert "longer than" in answer.data["message"]
