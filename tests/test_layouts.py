"""Layouts beyond dense attention: derivation from config.json, grouping, B, k, verdicts.

The example table (``layout_cases.CASES``) is checked against vLLM's own code in
``test_fidelity_layouts.py``; here kvconfig must reproduce it without vLLM.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from layout_cases import CASES, EXAMPLES, MODELS, Case

from kvconfig.cli import main
from kvconfig.derive import layers as derive_layers
from kvconfig.derive.inputs import Context, Model
from kvconfig.errors import InputError, UnsupportedArchitecture
from kvconfig.load.deployment import load
from kvconfig.load.models import read_model
from kvconfig.load.platforms import parse_platform
from kvconfig.plan.resolve import resolve
from kvconfig.plan.result import PlanResult


def plan_of(path: str | Path, platform: str, hooks: str | None = None) -> PlanResult:
    return resolve(load(str(path), hooks=hooks), parse_platform(platform))


def serve_file(tmp_path: Path, name: str, text: str) -> Path:
    """A vllm serve YAML next to links to the bundled models."""
    models = tmp_path / "models"
    if not models.exists():
        models.symlink_to(MODELS)
    path = tmp_path / name
    path.write_text(text)
    return path


def model(name: str) -> Model:
    return read_model(MODELS / name, "test", "model")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_example_plan_matches_the_table(case: Case) -> None:
    plan = plan_of(EXAMPLES / case.file, case.platform)
    assert plan.verdict == case.verdict
    assert [(g.kind, g.block_size, g.kernel_block_size) for g in plan.groups] == case.groups
    speculator = {g.id: g.speculator_k for g in plan.groups if g.draft_layers}
    assert speculator == case.speculator
    assert any(f.code == "KV501" for f in plan.findings) == case.adjusted


@pytest.mark.parametrize("case", [c for c in CASES if c.groups], ids=lambda c: c.id)
def test_examples_are_safe_with_the_hooks(case: Case) -> None:
    plan = plan_of(EXAMPLES / case.file, case.platform, hooks="enforce")
    assert plan.verdict == "ok"
    for g in plan.groups:
        if g.draft_layers:
            assert g.speculator_k == g.runner_k


def test_every_example_is_in_the_table() -> None:
    assert {c.file for c in CASES} == {p.name for p in EXAMPLES.glob("*.yaml")}


def test_adjusted_block_size_is_explained() -> None:
    plan = plan_of(EXAMPLES / "qwen3-next-mtp-h200-flashinfer.yaml", "h200")
    (note,) = [f for f in plan.findings if f.code == "KV501"]
    assert note.severity == "info" and "576" in note.message and "checkpoint" in note.message
    attention = plan.groups[-1]
    assert "hybrid alignment" in attention.block_size_reason
    assert "prefix caching" in plan.groups[0].block_size_reason


# --- derivation -------------------------------------------------------------------------


def _kinds(sets: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in sets:
        out[s["kind"]] = out.get(s["kind"], 0) + s["count"]
    return out


def _names(sets: list[dict[str, Any]]) -> list[str]:
    return [
        s["name"].replace("{i}", str(s["first_index"] + k)) for s in sets for k in range(s["count"])
    ]


def test_gemma3_slides_five_layers_of_six() -> None:
    sets = derive_layers.derive(model("gemma-3-27b-it"), "bfloat16")
    assert _kinds(sets) == {"sliding_window": 52, "full_attention": 10}
    full = [s["first_index"] for s in sets if s["kind"] == "full_attention"]
    assert full == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59]
    assert {s.get("sliding_window") for s in sets if s["kind"] == "sliding_window"} == {1024}
    assert _names(sets)[0] == "language_model.model.layers.0.self_attn.attn"


def test_gemma2_alternates() -> None:
    sets = derive_layers.derive(model("gemma-2-9b-it"), "bfloat16")
    assert [s["kind"] for s in sets[:2]] == ["sliding_window", "full_attention"]
    assert _kinds(sets) == {"sliding_window": 21, "full_attention": 21}
    assert sets[0]["head_size"] == 256 and sets[0]["sliding_window"] == 4096


def test_gpt_oss_slides_on_even_layers_with_sinks() -> None:
    sets = derive_layers.derive(model("gpt-oss-120b"), "bfloat16")
    assert _kinds(sets) == {"sliding_window": 18, "full_attention": 18}
    assert sets[0]["kind"] == "sliding_window" and sets[0]["sliding_window"] == 128
    assert all(s["has_sink"] for s in sets)
    assert _names(sets)[1] == "model.layers.1.attn.attn"


def test_deepseek_v3_is_mla_with_one_mtp_layer() -> None:
    m = model("deepseek-v3")
    sets = derive_layers.derive(m, "bfloat16")
    assert _kinds(sets) == {"mla_attention": 61}
    assert sets[0]["head_size"] == 576 and sets[0]["num_kv_heads"] == 1
    mtp = derive_layers.derive_mtp(m, "bfloat16")
    assert _names(mtp) == ["model.layers.61.self_attn.attn"]


def test_kimi_k2_has_no_mtp_layers() -> None:
    with pytest.raises(InputError, match="num_nextn_predict_layers"):
        derive_layers.derive_mtp(model("kimi-k2-instruct"), "bfloat16")


def test_deepseek_v32_registers_each_indexer_before_its_mla_layer() -> None:
    sets = derive_layers.derive(model("deepseek-v3.2-exp"), "bfloat16")
    names = _names(sets)
    assert names[:3] == [
        "model.layers.0.self_attn.indexer.k_cache",
        "model.layers.0.self_attn.attn",
        "model.layers.1.self_attn.indexer.k_cache",
    ]
    assert _kinds(sets) == {"indexer": 61, "sparse_mla": 61}
    indexer = next(s for s in sets if s["kind"] == "indexer")
    assert indexer["head_size"] == 128 + 4 and indexer["kv_cache_dtype"] == "uint8"


def test_deepseek_v32_skipped_indexers() -> None:
    cfg = json.loads((MODELS / "deepseek-v3.2-exp" / "config.json").read_text())
    cfg["index_topk_freq"] = 4
    sets = derive_layers.derive(derive_layers.Model("x", cfg), "bfloat16")
    # max(i - 2 + 1, 0) % 4 == 0: layers 0, 1, 5, 9, ...
    with_indexer = [s["first_index"] for s in sets if s["kind"] == "indexer"]
    assert with_indexer[:4] == [0, 1, 5, 9]
    mtp = derive_layers.derive_mtp(derive_layers.Model("x", cfg), "bfloat16")
    assert _kinds(mtp) == {"indexer": 1, "sparse_mla": 1}


def test_minimax_m3_dense_then_sparse_with_indexers() -> None:
    sets = derive_layers.derive(model("minimax-m3-nvfp4"), "bfloat16")
    assert _kinds(sets) == {"full_attention": 60, "indexer": 57}
    names = _names(sets)
    assert names[3] == "language_model.model.layers.3.self_attn.attn.index_cache"
    assert names[4] == "language_model.model.layers.3.self_attn.attn"
    sparse = [s for s in sets if s.get("backend") == "MINIMAX_M3_SPARSE"]
    assert sum(s["count"] for s in sparse) == 57


def _state(name: str, **ctx: Any) -> int:
    sets = derive_layers.derive(model(name), "bfloat16", context=Context(**ctx))
    (value,) = {s["state_bytes"] for s in sets if s["kind"] == "mamba"}
    return int(value)


def test_gated_delta_net_state_size() -> None:
    # conv (2*16*128 + 32*128)/tp x (4-1+spec) bf16, recurrent 32/tp x 128 x 128 bf16
    assert _state("qwen3-next-80b-a3b-instruct") == 8192 * 3 * 2 + 32 * 128 * 128 * 2
    assert (
        _state("qwen3-next-80b-a3b-instruct", tensor_parallel_size=2, num_speculative_tokens=2)
        == 4096 * 5 * 2 + 16 * 128 * 128 * 2
    )
    # Qwen3.5 keeps its recurrent state in float32 (config mamba_ssm_dtype)
    assert _state("qwen3.5-9b") == 8192 * 3 * 2 + 32 * 128 * 128 * 4


def test_qwen3_next_layer_pattern_and_mtp() -> None:
    m = model("qwen3-next-80b-a3b-instruct")
    sets = derive_layers.derive(m, "bfloat16")
    assert _kinds(sets) == {"mamba": 36, "full_attention": 12}
    assert _names(sets)[3] == "model.layers.3.self_attn.attn"
    assert _names(derive_layers.derive_mtp(m, "bfloat16")) == ["mtp.layers.0.self_attn.attn"]


def test_nemotron_h_and_jamba() -> None:
    sets = derive_layers.derive(model("nemotron-h-8b-base-8k"), "bfloat16")
    assert _kinds(sets) == {"mamba": 24, "full_attention": 4}
    # conv (8192 + 2*8*128) x 3 bf16, SSM 128 x 64 x 128 float32 (NemotronH default)
    assert _state("nemotron-h-8b-base-8k") == 10240 * 3 * 2 + 128 * 64 * 128 * 4
    jamba = derive_layers.derive(model("jamba-v0.1"), "bfloat16")
    assert _kinds(jamba) == {"mamba": 28, "full_attention": 4}
    assert [s["first_index"] for s in jamba if s["kind"] == "full_attention"] == [4, 12, 20, 28]
    assert _state("jamba-v0.1") == 8192 * 3 * 2 + 8192 * 16 * 2


# --- settings that change the plan ------------------------------------------------------


def test_disable_hybrid_kv_cache_manager_merges_sliding_windows(tmp_path: Path) -> None:
    text = (
        "model: ./models/gemma-3-27b-it\nblock-size: 128\nattention-backend: FLASHINFER\n"
        "language-model-only: true\n"
    )
    hybrid = plan_of(serve_file(tmp_path, "a.yaml", text), "h100")
    merged = plan_of(
        serve_file(tmp_path, "b.yaml", text + "disable-hybrid-kv-cache-manager: true\n"), "h100"
    )
    assert len(hybrid.groups) == 7
    assert [(g.kind, len(g.target_layers), g.kernel_block_size) for g in merged.groups] == [
        ("full_attention", 62, 64)
    ]


def test_disable_hybrid_kv_cache_manager_fails_for_mamba_hybrids(tmp_path: Path) -> None:
    text = "model: ./models/nemotron-h-8b-base-8k\ndisable-hybrid-kv-cache-manager: true\n"
    plan = plan_of(serve_file(tmp_path, "n.yaml", text), "h100")
    assert plan.verdict == "reject"
    assert [f.code for f in plan.findings if f.severity == "error"] == ["KV205"]


def test_backend_per_kind_splits_a_hybrid_model(tmp_path: Path) -> None:
    text = (
        "model: ./models/gemma-3-27b-it\nblock-size: 128\nlanguage-model-only: true\n"
        "attention-config:\n  backend_per_kind:\n    sliding_window: TRITON_ATTN\n"
        "    full_attention: FLASHINFER\n"
    )
    plan = plan_of(serve_file(tmp_path, "g.yaml", text), "h100")
    got = {(g.kind, g.voters[0].name, g.kernel_block_size) for g in plan.groups}
    assert got == {("sliding_window", "TRITON_ATTN", 128), ("full_attention", "FLASHINFER", 64)}


def test_backend_per_kind_mla_reaches_sparse_mla(tmp_path: Path) -> None:
    text = (
        "model: ./models/deepseek-v3.2-exp\ntensor-parallel-size: 8\n"
        "attention-config:\n  backend_per_kind:\n    mla_attention: FLASHMLA_SPARSE\n"
    )
    plan = plan_of(serve_file(tmp_path, "d.yaml", text), "b200")
    names = {v.name for v in plan.groups[0].voters}
    assert names == {"DEEPSEEK_V32_INDEXER", "FLASHMLA_SPARSE"}


def test_kv_cache_dtype_changes_the_mla_backend(tmp_path: Path) -> None:
    bf16 = plan_of(serve_file(tmp_path, "a.yaml", "model: ./models/deepseek-v3\n"), "h200")
    fp8 = plan_of(
        serve_file(tmp_path, "b.yaml", "model: ./models/deepseek-v3\nkv-cache-dtype: fp8\n"), "h200"
    )
    assert [v.name for v in bf16.groups[0].voters] == ["FLASH_ATTN_MLA"]
    assert bf16.groups[0].block_size == 16
    assert [v.name for v in fp8.groups[0].voters] == ["FLASHMLA"]
    assert fp8.groups[0].block_size == 64


def test_tensor_parallelism_changes_the_hybrid_block(tmp_path: Path) -> None:
    base = "model: ./models/qwen3-next-80b-a3b-instruct\n"
    blocks = {
        tp: plan_of(
            serve_file(tmp_path, f"q{tp}.yaml", base + f"tensor-parallel-size: {tp}\n"), "a100"
        )
        .groups[-1]
        .block_size
        for tp in (1, 4)
    }
    # A100: no checkpoint grid, 16-token alignment; TP4 halves the state, one KV head per rank
    assert blocks == {
        1: 16 * -(-(8192 * 3 * 2 + 32 * 128 * 128 * 2) // (16 * 2048)),
        4: 16 * -(-(2048 * 3 * 2 + 8 * 128 * 128 * 2) // (16 * 1024)),
    }


def test_qwen3_next_without_prefix_caching(tmp_path: Path) -> None:
    """16-token alignment only: 1,097,728-byte states, 2,048-byte tokens: 544-token blocks,
    which FlashInfer reads in 32-token pages (544 is no multiple of 64)."""
    text = (
        "model: ./models/qwen3-next-80b-a3b-instruct\nattention-backend: FLASHINFER\n"
        "no-enable-prefix-caching: true\n"
    )
    plan = plan_of(serve_file(tmp_path, "q.yaml", text), "h200")
    attention = plan.groups[-1]
    assert (attention.block_size, attention.kernel_block_size) == (544, 32)
    assert {g.block_size for g in plan.groups if g.kind == "mamba"} == {262144}


def test_without_prefix_caching_mamba_blocks_hold_a_request(tmp_path: Path) -> None:
    text = "model: ./models/nemotron-h-8b-base-8k\nno-enable-prefix-caching: true\n"
    plan = plan_of(serve_file(tmp_path, "n.yaml", text), "h100")
    mamba = [g for g in plan.groups if g.kind == "mamba"]
    assert {g.block_size for g in mamba} == {8192}
    assert plan.groups[-1].block_size == 1040


UNDERIVED = {
    # Whisper's decoder cross-attends to the audio encoder's states: no rule derives it
    "architectures": ["WhisperForConditionalGeneration"],
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 64,
}


def _underived(tmp_path: Path) -> Path:
    folder = tmp_path / "whisper"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(UNDERIVED))
    path = tmp_path / "whisper.yaml"
    path.write_text("model: ./whisper\n")
    return path


@pytest.mark.parametrize(
    "command",
    [["lint"], ["plan"], ["export"], ["lint", "--format", "github"], ["lint", "--format", "sarif"]],
    ids=" ".join,
)
def test_an_underived_model_is_unknown_not_rejected(
    tmp_path: Path, capsys: Any, command: list[str]
) -> None:
    path = _underived(tmp_path)
    assert main([*command, "--platform", "h200", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "KV401" in out and "'WhisperForConditionalGeneration'" in out
    assert "kvconfig: 1" not in out  # no guessed native file
    assert err.count("\n") == 1 and "warning:" in err and "verdict unknown" in err


def test_an_underived_model_is_unknown_in_json_and_the_lint_summary(
    tmp_path: Path, capsys: Any
) -> None:
    path = _underived(tmp_path)
    assert main(["lint", "--platform", "h200", "--format", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    plan = doc  # one deployment on one platform: one plan object
    assert plan["verdict"] == "unknown"
    assert [(f["code"], f["severity"]) for f in plan["findings"]] == [("KV401", "warning")]
    assert main(["lint", "--platform", "h200", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("unknown ") and out.endswith("0 of 1 safe, 1 unknown\n")


def test_an_underived_model_and_a_rejected_one_exit_1(tmp_path: Path, capsys: Any) -> None:
    bad = Path("examples/qwen3-8b-eagle3-gh200-triton-128.yaml").resolve()
    assert main(["lint", "--platform", "gh200", str(_underived(tmp_path)), str(bad)]) == 1


def test_an_underived_engine_is_unknown_in_a_fleet(tmp_path: Path, capsys: Any) -> None:
    path = _underived(tmp_path)
    code = main(["lint", "--fleet", "--platform", "h200", "--format", "json", str(path)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["verdict"] == "unknown"
    assert [(f["code"], f["severity"]) for f in doc["findings"]] == [("KV401", "warning")]
    assert doc["engines"] == []


def test_unsupported_architecture_error_has_no_guessed_sketch() -> None:
    with pytest.raises(UnsupportedArchitecture) as info:
        derive_layers.derive(derive_layers.Model("m/config.json", UNDERIVED), "bfloat16")
    err = info.value
    assert err.architecture == "WhisperForConditionalGeneration" and err.snippet == ""
    assert str(err).startswith("m/config.json: kvconfig cannot derive")


def test_unsupported_architecture_pickles() -> None:
    import pickle

    err = UnsupportedArchitecture("X", "x/config.json", "kvconfig: 1")
    back = pickle.loads(pickle.dumps(err))
    assert (back.architecture, back.source, back.snippet, str(back)) == (
        "X",
        "x/config.json",
        "kvconfig: 1",
        str(err),
    )
