"""The registry sweep (``tests/registry_sweep.py``): offline plans of the registry's
text-generation architectures against vLLM's own start-up.

CI runs a subset: families derived by the generic decoder rule (OPT's
``model.decoder.layers``, GPT-2's ``n_layer``/``n_head`` aliases, Falcon's
``transformer.h``, Llama 4's chunked-local layers), Mamba1 and an MLA family, each on
vLLM's choice at B=16 and on FlexAttention at B=96 (its metadata builder refuses a
kernel block size that is not a power of two: KV305 on both sides). ``KVCONFIG_SLOW=1``
runs every architecture on every setting of ``registry_sweep.SETTINGS``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import registry_sweep as S

from kvconfig.derive.layers import DERIVERS
from kvconfig.mirror import versions
from kvconfig.mirror.architectures import decoder_rules
from tests.conftest import HAS_VLLM

needs_vllm = pytest.mark.skipif(not HAS_VLLM, reason="needs vllm")

SUBSET = (
    "OPTForCausalLM",
    "GPT2LMHeadModel",
    "FalconForCausalLM",
    "Llama4ForCausalLM",
    "MambaForCausalLM",
    "AXK1ForCausalLM",
    "GraniteMoeForCausalLM",
)

#: The subset's architectures with (non-MLA) attention layers FlexAttention serves.
ATTENTION = (*SUBSET[:4], "GraniteMoeForCausalLM")


def test_the_rules_name_architectures_of_the_release() -> None:
    rules = decoder_rules()
    known = versions.facts(versions.DEFAULT).architectures
    assert len(rules) >= 40 and set(rules) <= known
    for arch, rule in rules.items():
        assert "{i}" in rule["layers"], arch
        assert rule["layers"].count("{i}") == 1, arch


def test_opt_and_llama4_have_their_own_layer_names_and_kinds() -> None:
    # what issue 20 found wrong in the old native-file sketch
    assert decoder_rules()["OPTForCausalLM"]["layers"] == "model.decoder.layers.{i}.self_attn.attn"
    assert decoder_rules()["Llama4ForCausalLM"]["chunked"] is True
    assert "Llama4ForCausalLM" not in DERIVERS


@needs_vllm
@pytest.mark.vllm
def test_the_registry_subset_agrees_with_vllms_start_up(tmp_path: Path) -> None:
    folders = S.configs(tmp_path)
    chosen = [a for a in SUBSET if a in folders]
    assert len(chosen) == len(SUBSET)
    selected = [
        c for c in S.cases(chosen) if (c.platform, c.block_size) in (("h100", 16), ("l40s", 96))
    ]
    results = S.run(selected, folders)
    data = S.summary(results)
    assert data["outcomes"].get("agree", 0) == len(selected), json.dumps(data, indent=1)
    flex = [r for r in results if r.case.backend == "FLEX_ATTENTION"]
    for r in flex:
        assert isinstance(r.engine, dict) and isinstance(r.offline, dict)
        codes = {f["code"] for f in r.offline["findings"] if f["severity"] == "error"}
        if r.case.arch in ATTENTION:  # Mamba has no attention layer, MLA no FlexAttention
            assert "KV305" in codes and r.engine["verdict"] == "reject", r.case


def _layout_case(tmp_path: Path) -> Path:
    models = Path("examples/models").resolve()
    path = tmp_path / "layouts.yaml"
    path.write_text(
        f"model: {models / 'qwen3-8b'}\n"
        "attention-backend: FLASHINFER\nblock-size: 64\nmax-model-len: 4096\n"
        "speculative-config: {method: eagle3, model: "
        f"{models / 'qwen3-8b-eagle3-angelslim'}, num_speculative_tokens: 3, "
        "attention_backend: FLEX_ATTENTION}\n",
        encoding="utf-8",
    )
    return path


@needs_vllm
@pytest.mark.vllm
def test_no_common_kv_cache_layout_on_sm100_as_vllm_refuses(tmp_path: Path) -> None:
    from kvconfig import engine
    from kvconfig.load.platforms import parse_platform

    path = _layout_case(tmp_path)
    for platform, refused in (("b200", True), ("h100", False)):
        offline: Any = S.offline_plan(path, platform)
        target = engine.serve_config_target(str(path), parse_platform(platform))
        (vllm,) = engine.plans([target], timeout=900)
        assert not isinstance(vllm, Exception)
        eng = vllm.to_json()
        off_codes = [f["code"] for f in offline["findings"] if f["severity"] == "error"]
        eng_codes = [f["code"] for f in eng["findings"] if f["severity"] == "error"]
        if refused:
            assert off_codes == eng_codes == ["KV306"], (off_codes, eng)
        else:
            assert "KV306" not in off_codes + eng_codes


@pytest.mark.skipif(not os.environ.get("KVCONFIG_SLOW"), reason="slow mode: KVCONFIG_SLOW=1")
@pytest.mark.vllm
def test_the_whole_registry_agrees(tmp_path: Path) -> None:
    folders = S.configs(tmp_path)
    data = S.summary(S.run(S.cases(sorted(folders)), folders, jobs=2))
    assert data["agreement"] is not None and data["agreement"] >= 0.99, json.dumps(data, indent=1)
    assert data["derived_share"] is not None and data["derived_share"] >= 0.9


#: Phi-3-mini-4k-instruct's published attention geometry (microsoft/Phi-3-mini-4k-instruct
#: config.json); the rest comes from transformers' Phi3Config, as vLLM reads it.
PHI3 = {
    "architectures": ["Phi3ForCausalLM"],
    "model_type": "phi3",
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 4096,
    "sliding_window": 2047,
    "vocab_size": 32064,
    "torch_dtype": "bfloat16",
}


def _both(path: Path, platform: str) -> tuple[dict[str, Any], dict[str, Any]]:
    from kvconfig import engine
    from kvconfig.load.platforms import parse_platform

    offline: Any = S.offline_plan(path, platform)
    target = engine.serve_config_target(str(path), parse_platform(platform))
    (vllm,) = engine.plans([target], timeout=900)
    assert not isinstance(vllm, Exception) and isinstance(offline, dict)
    return offline, vllm.to_json()


@needs_vllm
@pytest.mark.vllm
def test_phi3_is_one_sliding_window_group_and_qwen35_flex_pages_are_refused(
    tmp_path: Path,
) -> None:
    from kvconfig.engine.compare import differences

    phi = tmp_path / "phi3"
    phi.mkdir()
    (phi / "config.json").write_text(json.dumps(PHI3), encoding="utf-8")
    serve = tmp_path / "phi3.yaml"
    serve.write_text(f"model: {phi}\nblock-size: 16\n", encoding="utf-8")
    offline, vllm = _both(serve, "h100")
    assert differences(offline, vllm) == []
    (group,) = vllm["groups"]
    assert group["kind"] == "sliding_window" and len(group["layers"]["target"]) == 32
    qwen = tmp_path / "qwen35.yaml"
    model = Path("examples/models/qwen3.5-9b").resolve()
    qwen.write_text(
        f"model: {model}\nattention-backend: FLEX_ATTENTION\nmax-model-len: 4096\n",
        encoding="utf-8",
    )
    offline, vllm = _both(qwen, "h100")
    assert differences(offline, vllm) == []
    assert [f["code"] for f in vllm["findings"] if f["severity"] == "error"] == ["KV305"]
    assert "576" in next(f["message"] for f in vllm["findings"] if f["code"] == "KV305")
