"""``--engine vllm`` and ``--engine both`` from the command line: every kind of input
reaches vLLM's own start-up as vLLM would receive it, in one pool of children."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kvconfig.cli import main
from tests.conftest import EXAMPLES, HAS_VLLM

SEED = str(EXAMPLES / "qwen3-8b-eagle3-gh200-triton-128.yaml")
ROOT = EXAMPLES.parent


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    out = io.StringIO()
    code = main(args, stdout=out)
    text = out.getvalue()
    return (
        code,
        json.loads(text) if text.strip().startswith(("{", "[")) else text,
        capsys.readouterr().err,
    )


def test_engine_vllm_without_vllm_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kvconfig import engine

    monkeypatch.setattr(
        engine, "available", lambda python=None: "vLLM is not installed (pip install x)"
    )
    code, out, err = _run(["lint", "--engine", "vllm", "--platform", "gh200", SEED], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--engine vllm needs vLLM" in err


def test_bad_engine_settings_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["lint", "--engine", "vllm", "--jobs", "0", SEED], capsys)
    assert code == 2 and "--jobs" in err and err.count("\n") == 1


needs_vllm = pytest.mark.skipif(not HAS_VLLM, reason="needs vllm")


@needs_vllm
@pytest.mark.vllm
def test_every_kind_of_input_through_one_pool(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a serve config, an operator file's engine (relative model paths mapped), a pasted
    # command and standard input; --engine both: offline and vLLM agree on all of them,
    # so the only findings are the plans' own
    monkeypatch.chdir(EXAMPLES)
    stdin = (EXAMPLES / "qwen3-8b-eagle3-gh200-triton-64.yaml").read_text(encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    command = ["vllm", "serve", "models/qwen3-8b", "--block-size", "32"]
    code, plans, err = _run(
        [
            "lint", "--engine", "both", "--platform", "gh200", "--format", "json",
            "qwen3-8b-eagle3-gh200-triton-128.yaml", "-", "--", *command,
        ],
        capsys,
    )  # fmt: skip
    assert err == ""
    assert code == 1  # the 128 seed is rejected by vLLM's own speculator
    assert [p["source"] for p in plans] == [
        "qwen3-8b-eagle3-gh200-triton-128.yaml",
        "<stdin>",
        "<command>",
    ]
    assert [p["verdict"] for p in plans] == ["reject", "ok", "ok"]
    for p in plans:
        assert p["engine"]["description"] == "vllm 0.33.0 start-up, emulated GH200"
        assert "KV602" not in {f["code"] for f in p["findings"]}, p["findings"]
    assert plans[0]["groups"][0]["components"] == {"runner": 64, "speculator": 128}
    assert plans[2]["groups"][0]["block_size"] == 32


@needs_vllm
@pytest.mark.vllm
def test_an_operator_files_engine_and_the_offline_gap_vllm_closes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    manifest = "examples/operators/qwen3-8b-eagle3-gh200-deployment.yaml"
    gemma = "examples/gemma-3-27b-h100-flashinfer-128.yaml"
    code, text, err = _run(
        [
            "lint", "--engine", "vllm", "--model-path", "/mnt/models=examples/models",
            manifest,
        ],
        capsys,
    )  # fmt: skip
    assert code == 1 and err == ""
    assert "Deployment/qwen3-8b-eagle3/vllm [GH200 (sm90)]: KV101" in text
    code, text, err = _run(["lint", "--engine", "vllm", "--platform", "h100", gemma], capsys)
    assert code == 1 and "KV301" in text and "partial multimodal" in text


@needs_vllm
@pytest.mark.vllm
def test_a_native_file_has_no_start_up_to_run(capsys: pytest.CaptureFixture[str]) -> None:
    native = sorted((EXAMPLES / "native").glob("*.yaml"))[0]
    code, out, err = _run(["plan", "--engine", "vllm", "--platform", "h100", str(native)], capsys)
    assert code == 2 and out == ""
    assert "native kvconfig file has no vLLM command" in err and err.count("\n") == 1


@needs_vllm
@pytest.mark.vllm
def test_an_architecture_kvconfig_cannot_derive_plans_with_vllm(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # GLM-4.5's MoE model: offline it is KV401, whose fix names --engine vllm; vLLM's
    # start-up builds it (transformers' Glm4MoeConfig fills what the file leaves out)
    folder = tmp_path / "glm"
    folder.mkdir()
    config: dict[str, Any] = {
        "architectures": ["Glm4MoeForCausalLM"],
        "model_type": "glm4_moe",
        "num_hidden_layers": 4,
        "torch_dtype": "bfloat16",
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    serve = tmp_path / "glm.yaml"
    serve.write_text("model: ./glm\nblock-size: 64\n", encoding="utf-8")
    code, offline, _ = _run(["plan", "--platform", "h100", "--format", "json", str(serve)], capsys)
    assert code == 0 and offline["verdict"] == "unknown"  # cannot tell is no rejection
    assert [f["code"] for f in offline["findings"]] == ["KV401"]
    assert any("--engine vllm" in fix for fix in offline["findings"][0]["fixes"])
    engine = ["plan", "--engine", "vllm", "--platform", "h100", "--format", "json", str(serve)]
    code, out, err = _run(engine, capsys)  # Glm4MoeConfig has no head_dim default
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "vLLM cannot build the model from its config.json" in err and "head_dim" in err
    config.update(head_dim=128, num_attention_heads=96, num_key_value_heads=8, hidden_size=5120)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code, plan, err = _run(engine, capsys)
    assert (code, err) == (0, "")
    assert plan["verdict"] == "ok" and plan["engine"]["refused"] is False
    (group,) = plan["groups"]
    assert group["block_size"] == 64 and len(group["layers"]["target"]) == 4
    # --engine auto: vLLM's start-up for what kvconfig cannot derive, offline for the rest
    derived = tmp_path / "qwen.yaml"
    qwen = Path("examples/models/qwen3-8b").resolve()
    derived.write_text(f"model: {qwen}\n", encoding="utf-8")
    auto = ["lint", "--engine", "auto", "--platform", "h100", "--format", "json"]
    code, plans, err = _run([*auto, str(serve), str(derived)], capsys)
    assert (code, err) == (0, "")
    assert [p.get("engine", {}).get("kind", "offline") for p in plans] == ["vllm", "offline"]
    assert plans[0]["groups"] == plan["groups"] and plans[1]["verdict"] == "ok"
