"""KV-cache layers of a model, derived offline from its Hugging Face ``config.json``.

Each architecture maps to a *deriver* that returns layer sets in the shape of
``schemas.deployment.LayerSet`` (without ``role``), in the order vLLM registers the
layers. Layer names follow vLLM's module names (``model.layers.{i}.self_attn.attn``);
draft layers continue the target's numbering, as vLLM's EAGLE drafters do. One module
per family: ``derive.dense``, ``derive.window`` (sliding window), ``derive.mla`` (MLA,
sparse MLA and indexers), ``derive.minimax``, ``derive.mamba`` and ``derive.mamba2``
(hybrids), ``derive.loops`` (layers run more than once); the other architectures of
the release's registry whose layers are one attention layer per hidden layer take
``derive.generic``, as the release's data says (``kvconfig.mirror.architectures``);
what they all read is ``derive.inputs``.
docs/layouts.md says how each is derived and grouped.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from kvconfig._suggest import did_you_mean
from kvconfig.derive.dense import dense
from kvconfig.derive.inputs import Context, Model, pos_int
from kvconfig.errors import InputError, UnsupportedArchitecture
from kvconfig.mirror.model_config import is_mm_prefix_lm, serves_multimodal


def model_dtype(cfg: Mapping[str, Any], override: str | None) -> str:
    """vLLM's ``--dtype auto`` choice: the checkpoint's dtype, float32 served as bfloat16."""
    if override and override != "auto":
        return {"half": "float16", "float": "float32"}.get(override, override)
    raw = cfg.get("dtype") or cfg.get("torch_dtype") or "bfloat16"
    raw = str(raw).removeprefix("torch.")
    if raw in ("float32", "float"):
        return "bfloat16"
    return raw if raw in ("float16", "bfloat16") else "bfloat16"


Deriver = Callable[[Model, Context], list[dict[str, Any]]]


def _lazy(module: str, name: str) -> Deriver:
    """A deriver of a family module, imported on first use (dense models never pay for it)."""

    def deriver(model: Model, ctx: Context) -> list[dict[str, Any]]:
        found: Deriver = getattr(importlib.import_module(f"kvconfig.{module}"), name)
        return found(model, ctx)

    deriver.__name__ = deriver.__qualname__ = name
    return deriver


#: Architectures kvconfig derives, and how.
DERIVERS: dict[str, Deriver] = {
    **{
        name: dense
        for name in (
            "LlamaForCausalLM",
            "MistralForCausalLM",
            "Qwen2ForCausalLM",
            "Qwen3ForCausalLM",
            "Qwen2MoeForCausalLM",
            "Qwen3MoeForCausalLM",
            "MixtralForCausalLM",
        )
    },
    "Gemma2ForCausalLM": _lazy("derive.window", "gemma2"),
    "Gemma3ForCausalLM": _lazy("derive.window", "gemma3"),
    "Gemma3ForConditionalGeneration": _lazy("derive.window", "gemma3_mm"),
    "GptOssForCausalLM": _lazy("derive.window", "gpt_oss"),
    "DeepseekV2ForCausalLM": _lazy("derive.mla", "deepseek"),
    "DeepseekV3ForCausalLM": _lazy("derive.mla", "deepseek"),
    "DeepseekV32ForCausalLM": _lazy("derive.mla", "deepseek"),
    "GlmMoeDsaForCausalLM": _lazy("derive.mla", "deepseek"),
    "MiniMaxM3SparseForCausalLM": _lazy("derive.minimax", "minimax_m3"),
    "MiniMaxM3SparseForConditionalGeneration": _lazy("derive.minimax", "minimax_m3_mm"),
    "Qwen3NextForCausalLM": _lazy("derive.mamba", "qwen3_next"),
    "Qwen3_5ForCausalLM": _lazy("derive.mamba", "qwen3_5"),
    "Qwen3_5MoeForCausalLM": _lazy("derive.mamba", "qwen3_5"),
    "Qwen3_5ForConditionalGeneration": _lazy("derive.mamba", "qwen3_5_mm"),
    "Qwen3_5MoeForConditionalGeneration": _lazy("derive.mamba", "qwen3_5_mm"),
    "NemotronHForCausalLM": _lazy("derive.mamba2", "nemotron_h"),
    "NemotronHPuzzleForCausalLM": _lazy("derive.mamba2", "nemotron_h"),
    "FalconH1ForCausalLM": _lazy("derive.mamba2", "falcon_h1"),
    "GraniteMoeHybridForCausalLM": _lazy("derive.mamba2", "granite_hybrid"),
    "Zamba2ForCausalLM": _lazy("derive.mamba2", "zamba2"),
    "OlmoHybridForCausalLM": _lazy("derive.mamba", "olmo_hybrid"),
    "BeamForCausalLM": _lazy("derive.window", "beam"),
    "DoryForCausalLM": _lazy("derive.loops", "dory"),
    "HrmTextForCausalLM": _lazy("derive.loops", "hrm_text"),
    "JambaForCausalLM": _lazy("derive.mamba", "jamba"),
    "MambaForCausalLM": _lazy("derive.mamba", "mamba1"),
    "FalconMambaForCausalLM": _lazy("derive.mamba", "mamba1"),
    "AXK1ForCausalLM": _lazy("derive.mla", "deepseek"),
}

#: Drafter architectures whose attention layers are dense (EAGLE and EAGLE3 heads).
DRAFT_DERIVERS: dict[str, Deriver] = {
    name: dense
    for name in (
        "EagleLlamaForCausalLM",
        "LlamaForCausalLMEagle",
        "EagleMistralForCausalLM",
        "Eagle3LlamaForCausalLM",
        "LlamaForCausalLMEagle3",
        "Eagle3Qwen3ForCausalLM",
        "Eagle3Qwen2_5vlForCausalLM",
        "Eagle3Qwen3vlForCausalLM",
        "Eagle3MiniMaxM2ForCausalLM",
        "PeagleLlamaForCausalLM",
        "PeagleQwen3ForCausalLM",
        "PEagleDraftModel",
        "LlamaForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen3ForCausalLM",
        "MistralForCausalLM",
    )
}

#: Targets whose own MTP layers serve ``speculative-config: {method: mtp}`` (no model).
MTP_DERIVERS: dict[str, Deriver] = {
    "DeepseekV3ForCausalLM": _lazy("derive.mla", "deepseek_mtp"),
    "DeepseekV32ForCausalLM": _lazy("derive.mla", "deepseek_mtp"),
    "Qwen3NextForCausalLM": _lazy("derive.mamba", "qwen3_next_mtp"),
    "Qwen3_5ForCausalLM": _lazy("derive.mamba", "qwen3_5_mtp"),
    "Qwen3_5MoeForCausalLM": _lazy("derive.mamba", "qwen3_5_mtp"),
    "Qwen3_5ForConditionalGeneration": _lazy("derive.mamba", "qwen3_5_mtp"),
    "Qwen3_5MoeForConditionalGeneration": _lazy("derive.mamba", "qwen3_5_mtp"),
}

#: The multimodal architectures kvconfig derives (vLLM's registry: ``SupportsMultiModal``)
#: and the modalities their processors take (``supported_mm_limits``).
MULTIMODAL: dict[str, tuple[str, ...]] = {
    "Gemma3ForConditionalGeneration": ("image",),
    "MiniMaxM3SparseForConditionalGeneration": ("image",),
    "Qwen3_5ForConditionalGeneration": ("image", "video"),
    "Qwen3_5MoeForConditionalGeneration": ("image", "video"),
}

#: vLLM's ``IsAttentionFree`` text generators (``models/mamba.py``, ``models/mamba2.py``):
#: prefix caching is off by default for them (``ModelConfig.is_prefix_caching_supported``),
#: whatever their config lists.
ATTENTION_FREE = frozenset({"MambaForCausalLM", "FalconMambaForCausalLM", "Mamba2ForCausalLM"})

#: Target ``config.json`` keys that backends read when they validate a layer.
FACT_KEYS = (
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "kv_lora_rank",
    "index_topk",
    "linear_key_head_dim",
)


#: Config keys vLLM's ``_get_and_verify_max_len`` reads for the context length.
CONTEXT_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)


def model_context_length(model: Model) -> int | None:
    """The smallest context length the config declares (vLLM's default max_model_len)."""
    values = [
        v
        for k in CONTEXT_KEYS
        if isinstance(v := model.text.get(k), int) and not isinstance(v, bool) and v > 0
    ]
    return min(values) if values else None


def model_facts(model: Model) -> dict[str, int]:
    """The integers of ``FACT_KEYS`` the target config has, MiniMax's sparse top-k, and
    whether attention logits are soft-capped."""
    cfg = model.text
    facts = {
        k: v for k in FACT_KEYS if isinstance(v := cfg.get(k), int) and not isinstance(v, bool)
    }
    if cfg.get("attn_logit_softcapping"):
        # FlashAttention's FA4 head-size-256 kernel falls back to FA2 for soft-capped models
        facts["attn_logit_softcapping"] = 1
    sparse = cfg.get("sparse_attention_config")
    if isinstance(sparse, Mapping) and isinstance(sparse.get("sparse_topk_blocks"), int):
        facts["sparse_topk_blocks"] = int(sparse["sparse_topk_blocks"])
    return facts


def derive(
    model: Model,
    dtype: str,
    *,
    first_index: int = 0,
    draft: bool = False,
    known: frozenset[str] = frozenset(),
    context: Context | None = None,
) -> list[dict[str, Any]]:
    """Layer sets of ``model``; raises UnsupportedArchitecture or InputError."""
    arch = model.architecture
    table = DRAFT_DERIVERS if draft else DERIVERS
    deriver = table.get(arch)
    if deriver is None and not draft:
        deriver = _generic(arch)
    if deriver is None:
        if known and arch not in known:
            raise InputError(
                f"unknown architecture {arch!r}: vLLM does not serve it",
                source=model.path,
                key="architectures",
                hint=did_you_mean(arch, known, key=str) or "check the model's config.json",
            )
        # no sketch of a native file: a layout kvconfig cannot derive is one it cannot
        # guess either (module names, local layers, cross-attention differ per family)
        raise UnsupportedArchitecture(arch, model.path)
    ctx = (context or Context())._replace(dtype=dtype, first_index=first_index)
    sets = deriver(model, ctx)
    if _mm_prefix(model, ctx):
        for s in sets:
            if s["kind"] in ("full_attention", "sliding_window", "chunked_local"):
                s["mm_prefix"] = True
    return sets


def _generic(arch: str) -> Deriver | None:
    """The generic decoder rule, when the release's registry data puts ``arch`` on it."""
    from kvconfig.mirror.architectures import decoder_rules

    rule = decoder_rules().get(arch)
    if rule is None:
        return None

    def deriver(model: Model, ctx: Context) -> list[dict[str, Any]]:
        from kvconfig.derive.generic import decoder

        return decoder(model, ctx, rule)

    return deriver


def _mm_prefix(model: Model, ctx: Context) -> bool:
    """``ModelConfig.is_mm_prefix_lm``: a multimodal prefix LM serving multimodal input."""
    modalities = MULTIMODAL.get(model.architecture)
    if modalities is None or not is_mm_prefix_lm(model.config):
        return False
    return serves_multimodal(
        modalities,
        language_model_only=ctx.language_model_only,
        limits=ctx.mm_limits,
        mm_embeds=ctx.mm_embeds,
    )


def derive_mtp(model: Model, dtype: str, context: Context | None = None) -> list[dict[str, Any]]:
    """The MTP layers a target brings along for ``method: mtp`` without a draft model
    (an MTP drafter's model config is no multimodal prefix LM)."""
    deriver = MTP_DERIVERS.get(model.architecture)
    if deriver is None:
        raise InputError(
            f"{model.architecture} has no MTP layers kvconfig knows",
            source=model.path,
            key="speculative-config.model",
            hint="set speculative-config.model to the drafter's folder",
        )
    return deriver(model, (context or Context())._replace(dtype=dtype, first_index=0))


__all__ = [
    "ATTENTION_FREE",
    "DERIVERS",
    "DRAFT_DERIVERS",
    "MTP_DERIVERS",
    "Context",
    "Model",
    "derive",
    "derive_mtp",
    "model_context_length",
    "model_facts",
    "pos_int",
]
