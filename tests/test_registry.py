"""The registry sweep (``tests/registry_sweep.py``): offline plans of the registry's
text-generation architectures against vLLM's own start-up.

CI runs a subset: families derived by the generic decoder rule (OPT's
``model.decoder.layers``, GPT-2's ``n_layer``/``n_head`` aliases, Falcon's
``transformer.h``, Llama 4's chunked-local layers), Mamba1, an MLA family, Zamba2's
shared attention blocks and Dory's looped layers, each on vLLM's choice at B=16, five
of them also on FlexAttention at B=96 (its metadata builder refuses a kernel block size
that is not a power of two: KV305 on both sides). ``KVCONFIG_SLOW=1``
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
    "Zamba2ForCausalLM",
    "DoryForCausalLM",
)

#: The subset's architectures that also run on FlexAttention at B=96; those with
#: (non-MLA) attention layers it serves are refused there (KV305).
FLEX = (
    "OPTForCausalLM",
    "Llama4ForCausalLM",
    "MambaForCausalLM",
    "AXK1ForCausalLM",
    "GraniteMoeForCausalLM",
)
ATTENTION = ("OPTForCausalLM", "Llama4ForCausalLM", "GraniteMoeForCausalLM")


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
        c
        for c in S.cases(chosen)
        if (c.platform, c.block_size) == ("h100", 16)
        or ((c.platform, c.block_size) == ("l40s", 96) and c.arch in FLEX)
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


#: Families derived by ``derive.mamba2`` and OLMo-Hybrid's gated delta net, with the
#: deployment settings that change their state (ranks, cache dtypes).
HYBRIDS = (
    ("FalconH1ForCausalLM", "falcon_h1", "tensor-parallel-size: 2\n"),
    ("GraniteMoeHybridForCausalLM", "granitemoehybrid", "mamba-ssm-cache-dtype: float32\n"),
    ("Zamba2ForCausalLM", "zamba2", "tensor-parallel-size: 4\n"),
    ("NemotronHPuzzleForCausalLM", "nemotron_h", "tensor-parallel-size: 2\n"),
    ("OlmoHybridForCausalLM", "olmo_hybrid", "mamba-cache-dtype: float32\n"),
)


@needs_vllm
@pytest.mark.vllm
def test_hybrids_agree_with_vllm_over_ranks_and_state_dtypes(tmp_path: Path) -> None:
    """The recurrent state sizes decide B (hybrid alignment pads the attention page to the
    largest state), so each hybrid at other ranks and state dtypes than the sweep's plans
    the groups, B and kernel sizes vLLM's start-up does."""
    from kvconfig import engine
    from kvconfig.derive.inputs import Model
    from kvconfig.derive.layers import model_context_length
    from kvconfig.engine.compare import differences
    from kvconfig.load.platforms import parse_platform
    from tools.registry.configs import default_config

    paths = []
    for arch, module, extra in HYBRIDS:
        config = default_config(arch, module)
        assert isinstance(config, dict), config
        folder = tmp_path / arch
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        length = min(4096, model_context_length(Model(str(folder), config)) or 4096)
        serve = tmp_path / f"{arch}.yaml"
        serve.write_text(f"model: {folder}\nmax-model-len: {length}\n{extra}", encoding="utf-8")
        paths.append(serve)
    targets = [engine.serve_config_target(str(p), parse_platform("h100")) for p in paths]
    answers = engine.plans(targets, timeout=900)
    for path, answer in zip(paths, answers, strict=True):
        offline: Any = S.offline_plan(path, "h100", tmp_path)
        assert isinstance(offline, dict) and not isinstance(answer, Exception), (offline, answer)
        vllm = answer.to_json()
        assert vllm["groups"] and any(g["kind"] == "mamba" for g in vllm["groups"]), path
        assert differences(offline, vllm) == [], path.name


@needs_vllm
@pytest.mark.vllm
def test_environment_that_changes_llama4s_plan_as_vllm_reads_it(tmp_path: Path) -> None:
    """``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0`` turns the hybrid KV-cache
    manager off for chunked-local attention (Llama 4's groups become one full-attention
    group); a ``--max-model-len`` above the model's length is refused unless
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``. Offline and vLLM's start-up, on the same files."""
    from kvconfig import engine
    from kvconfig.api import load_deployment, resolve
    from kvconfig.engine.compare import differences
    from kvconfig.errors import InputError
    from kvconfig.load.platforms import parse_platform
    from tools.registry.configs import default_config

    config = default_config("Llama4ForCausalLM", "llama4")
    assert isinstance(config, dict), config
    config["max_position_embeddings"] = 4096  # no RoPE scaling: vLLM's length is this
    config.pop("rope_scaling", None)
    config.pop("rope_parameters", None)
    model = tmp_path / "llama4"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    short = tmp_path / "short.yaml"
    short.write_text(f"model: {model}\nblock-size: 16\nmax-model-len: 4096\n", encoding="utf-8")
    long = tmp_path / "long.yaml"
    long.write_text(f"model: {model}\nblock-size: 16\nmax-model-len: 8192\n", encoding="utf-8")
    h100 = parse_platform("h100")
    cases = (
        (short, {"VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": "0"}),
        (long, {}),
        (long, {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}),
    )
    targets = [engine.serve_config_target(str(p), h100, env=env) for p, env in cases]
    answers = engine.plans(targets, timeout=900)
    for (path, env), answer in zip(cases, answers, strict=True):
        try:
            offline = resolve(load_deployment(str(path), env=env, platform="h100"))
        except InputError as err:  # refused offline: vLLM must refuse too
            assert "max-model-len" in str(err) and not env, err
            assert isinstance(answer, InputError) or answer.to_json()["verdict"] == "reject"
            continue
        assert not isinstance(answer, Exception), answer
        vllm = answer.to_json()
        assert differences(offline.model_dump(mode="json", by_alias=True), vllm) == [], env
        if "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE" in env:
            assert [g["kind"] for g in vllm["groups"]] == ["full_attention"]
