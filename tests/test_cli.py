"""The command line: exit codes, formats, pasted commands, several files and platforms."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvconfig.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BAD = str(EXAMPLES / "qwen3-8b-eagle3-gh200-triton-128.yaml")
GOOD = str(EXAMPLES / "qwen3-8b-eagle3-gh200-triton-64.yaml")


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), stdout=out), out.getvalue()


def test_lint_exit_codes() -> None:
    assert run("lint", "--platform", "gh200", GOOD)[0] == 0
    assert run("lint", "--platform", "gh200", GOOD, BAD)[0] == 1
    assert run("lint", "--platform", "gh200", GOOD, BAD, "--hooks", "enforce")[0] == 0


def test_platform_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run("lint", GOOD)
    assert code == 2 and out == ""
    err = capsys.readouterr().err
    assert "--platform" in err and len(err.strip().splitlines()) == 1


def test_several_platforms_give_a_json_list() -> None:
    code, out = run("lint", "--platform", "gh200,b200,rtx pro 6000", "--format", "json", BAD)
    docs = json.loads(out)
    assert [d["platform"]["capability"] for d in docs] == ["9.0", "10.0", "12.0"]
    assert [d["verdict"] for d in docs] == ["reject", "ok", "reject"]
    assert code == 1


def test_json_contract_keys() -> None:
    _, out = run("plan", "--platform", "h200", "--format", "json", BAD)
    doc = json.loads(out)
    assert {"verdict", "vllm_version", "platform", "groups", "findings"} <= set(doc)
    group = doc["groups"][0]
    assert {
        "id",
        "kind",
        "block_size",
        "kernel_block_size",
        "split",
        "layers",
        "backends",
        "components",
    } <= set(group)
    assert set(group["components"]) == {"runner", "speculator"}
    finding = doc["findings"][0]
    assert {"code", "severity", "group", "message"} <= set(finding)
    from kvconfig.schemas.plan import Plan

    assert Plan.model_validate(doc).model_dump(mode="json", by_alias=True) == doc


def test_pasted_command_matches_the_yaml(tmp_path: Path) -> None:
    models = EXAMPLES / "models"
    spec = json.dumps(
        {
            "model": str(models / "qwen3-8b-eagle3-angelslim"),
            "method": "eagle3",
            "num_speculative_tokens": 3,
            "attention_backend": "TRITON_ATTN",
        }
    )
    code, out = run(
        "plan",
        "--platform",
        "gh200",
        "--format",
        "json",
        "--",
        "CUDA_VISIBLE_DEVICES=0",
        "VLLM_USE_V2_MODEL_RUNNER=1",
        "vllm",
        "serve",
        str(models / "qwen3-8b"),
        "--block-size",
        "128",
        "--attention-backend=FLASHINFER",
        "--speculative-config",
        spec,
    )
    pasted = json.loads(out)
    _, out2 = run("plan", "--platform", "gh200", "--format", "json", BAD)
    from_yaml = json.loads(out2)
    assert code == 1
    assert pasted["groups"] == from_yaml["groups"]
    assert [f["code"] for f in pasted["findings"]] == [f["code"] for f in from_yaml["findings"]]


def test_runner_v1_hands_the_drafter_the_runners_sizes() -> None:
    code, out = run(
        "plan",
        "--platform",
        "gh200",
        "--format",
        "json",
        "--env",
        "VLLM_USE_V2_MODEL_RUNNER=0",
        BAD,
    )
    doc = json.loads(out)
    assert code == 0 and doc["runner"] == "v1"
    # V1 drafters never inherit the target's backend: TRITON_ATTN was asked for explicitly.
    assert doc["groups"][0]["components"] == {"runner": 64, "speculator": 64}


def test_v1_draft_does_not_inherit_the_target_backend() -> None:
    models = EXAMPLES / "models"
    spec = json.dumps(
        {
            "model": str(models / "qwen3-8b-eagle3-angelslim"),
            "method": "eagle3",
            "num_speculative_tokens": 3,
        }
    )
    cmd = [
        "vllm",
        "serve",
        str(models / "qwen3-8b"),
        "--block-size",
        "128",
        "--attention-backend",
        "FLASHINFER",
        "--speculative-config",
        spec,
    ]
    _, v2 = run("plan", "--platform", "h100", "--format", "json", "--", *cmd)
    _, v1 = run(
        "plan",
        "--platform",
        "h100",
        "--format",
        "json",
        "--env",
        "VLLM_USE_V2_MODEL_RUNNER=0",
        "--",
        *cmd,
    )
    names = lambda doc: [b["name"] for b in json.loads(doc)["groups"][0]["backends"]]  # noqa: E731
    assert names(v2) == ["FLASHINFER"]  # V2 EAGLE drafters inherit --attention-backend
    assert names(v1) == ["FLASHINFER", "FLASH_ATTN"]  # V1: automatic choice on SM90


def test_api_plan_equals_cli_json() -> None:
    import kvconfig

    dep = kvconfig.load_deployment(BAD, platform="gh200")
    plan = kvconfig.resolve(dep)
    _, out = run("plan", "--platform", "gh200", "--format", "json", BAD)
    assert plan.model_dump(mode="json", by_alias=True) == json.loads(out)
    assert plan.verdict == "reject"


def test_lint_never_imports_torch_vllm_or_pydantic() -> None:
    code = (
        "import sys\n"
        "from kvconfig.cli import main\n"
        f"rc = main(['lint', '--platform', 'h200', {BAD!r}, {GOOD!r}])\n"
        "heavy = sorted(m for m in ('torch', 'vllm', 'pydantic', 'triton') if m in sys.modules)\n"
        "print('HEAVY', heavy, rc)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "HEAVY [] 1" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_formats_render(fmt: str) -> None:
    code, out = run("lint", "--platform", "gh200", "--format", fmt, BAD)
    assert code == 1 and "KV101" in out


def test_explain_plan_and_code() -> None:
    code, out = run("explain", "--platform", "gh200", BAD)
    assert code == 0
    assert "FLASHINFER" in out and "64: accepted by all -> k" in out
    code, out = run("explain", "KV101")
    assert code == 0 and "component-mismatch" in out


def test_env_decides_the_runner_of_a_native_file_too() -> None:
    native = str(EXAMPLES / "native" / "qwen3-8b-eagle3-gh200-triton-128.yaml")
    code, out = run("plan", "--format", "json", native)
    assert (code, json.loads(out)["runner"]) == (1, "v2")
    code, out = run("plan", "--format", "json", "--env", "VLLM_USE_V2_MODEL_RUNNER=0", native)
    assert (code, json.loads(out)["runner"]) == (0, "v1")


def test_backend_per_kind_uses_the_kind_vllms_selector_asks_for() -> None:
    # vLLM's selector looks up backend_per_kind with get_attn_spec_kind(), which knows only
    # MLA, sliding window and the attention type: chunked-local layers ask as full_attention.
    from kvconfig.load.platforms import parse_platform
    from kvconfig.plan.backends import requested_backend
    from kvconfig.plan.context import new_context
    from kvconfig.schemas.deployment import AttentionSettings, Deployment, LayerSet

    layer = LayerSet(kind="chunked_local")
    dep = Deployment(
        source="x",
        layers=[layer],
        attention=AttentionSettings(backend_per_kind={"full_attention": "TRITON_ATTN"}),
    )
    ctx = new_context(dep, parse_platform("h200"))
    assert requested_backend(ctx, layer)[0] == "TRITON_ATTN"


def test_a_refused_backend_is_one_finding_per_layer_kind() -> None:
    # GPT-OSS asks FLASHINFER for every layer; A100 cannot run its sinks. vLLM refuses
    # the request once per kind of layer (sliding window, full), and so does kvconfig.
    gpt_oss = str(EXAMPLES / "gpt-oss-120b-eagle3-h200-triton-128.yaml")
    code, out = run("plan", "--platform", "a100", "--format", "json", gpt_oss)
    refused = [f for f in json.loads(out)["findings"] if f["code"] == "KV301"]
    assert code == 1
    assert len(refused) == 2
    assert all("18 target layers" in f["message"] for f in refused)
    assert all("attention sinks not supported" in f["message"] for f in refused)


def test_without_trtllm_cubins_blackwell_flashinfer_splits_again() -> None:
    # FlashInfer takes pages over 64 tokens on SM10x only when TRTLLM attention is usable,
    # which vLLM checks by finding flashinfer-cubin or reaching NVIDIA's artifactory.
    code, out = run("plan", "--platform", "b200", "--format", "json", BAD)
    assert code == 0 and json.loads(out)["groups"][0]["kernel_block_size"] == 128
    code, out = run("plan", "--platform", "b200", "--no-trtllm-cubins", "--format", "json", BAD)
    assert code == 1 and json.loads(out)["groups"][0]["components"] == {
        "runner": 64,
        "speculator": 128,
    }
