"""What vLLM's ``ModelConfig`` says about attention that the backends check.

Mirrors ``ModelConfig.is_mm_prefix_lm`` (``vllm/config/model.py``), which
``Attention.__init__`` (``model_executor/layers/attention/attention.py``) reads into
``use_mm_prefix``: the backend must then support bidirectional attention over the
multimodal prefix (``supports_mm_prefix()``), or ``CudaPlatform.get_attn_backend_cls``
refuses it ("partial multimodal token full attention not supported"). The rule is the
model-architecture convertors' ``is_mm_prefix_lm``
(``vllm/transformers_utils/model_arch_config_convertor.py``), switched off when the
deployment serves no multimodal input (``_supports_multimodal_for_mm_prefix``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

MM_PREFIX_LM_MODELS = ("bagel", "gemma3", "molmo2", "moondream3", "paligemma")
"""``ModelArchConfigConvertorBase.is_mm_prefix_lm``'s known models (``model_type``)."""

DEFAULT_MODEL = "Qwen/Qwen3-0.6B"
"""The model vLLM serves when its command names none: ``ModelConfig.model``'s default
(``vllm/config/model.py``), which ``EngineArgs.model`` takes (``vllm/engine/arg_utils.py``);
``vllm serve`` replaces it only with a positional model tag (``ServeSubcommand.cmd``,
``vllm/entrypoints/cli/serve.py``). The same in every release kvconfig mirrors."""

UNLIMITED = 999
"""``MultiModalConfig.get_limit_per_prompt`` of a modality the deployment does not limit."""


def is_mm_prefix_lm(config: Mapping[str, Any]) -> bool:
    """The convertors' ``is_mm_prefix_lm`` for a ``config.json`` (multimodal inputs served)."""
    model_type = config.get("model_type")
    text = config.get("text_config")
    text = text if isinstance(text, Mapping) else config
    if model_type in ("gemma4", "gemma4_text", "gemma4_unified", "gemma4_unified_text"):
        return text.get("use_bidirectional_attention") == "vision"
    if model_type in ("diffusion_gemma", "diffusion_gemma_text"):
        return text.get("use_bidirectional_attention") == "vision"
    if model_type == "deepseek_v4":
        vision = config.get("vision_n_layers", 0)
        return isinstance(vision, int) and vision > 0
    if "is_mm_prefix_lm" in config:
        return bool(config["is_mm_prefix_lm"])
    return model_type in MM_PREFIX_LM_MODELS


def serves_multimodal(
    modalities: Collection[str],
    *,
    language_model_only: bool = False,
    limits: Mapping[str, int] | None = None,
    mm_embeds: bool = False,
) -> bool:
    """``ModelConfig._supports_multimodal_inputs`` for a multimodal model supporting
    ``modalities``: false only when every one is limited to 0 per prompt
    (``--limit-mm-per-prompt``, or ``--language-model-only``) and precomputed embeddings
    are not enabled (``--enable-mm-embeds``)."""
    limit = dict(limits or {})
    counts = [0 if language_model_only else limit.get(m, UNLIMITED) for m in modalities]
    if all(c == 0 for c in counts):
        return mm_embeds
    return True


KV_HEADS_ALIASES = (
    "n_head_kv",
    "num_kv_heads",
    "num_key_value_heads",
    "multi_query_group_num",
    "num_attention_groups",
)
"""``CONFIG_FIELD_ALIASES["total_num_kv_heads"]`` (``vllm/transformers_utils/config.py``)."""


def total_num_kv_heads(text_config: Mapping[str, Any]) -> int | None:
    """``ModelConfig.get_total_num_kv_heads`` of the base convertor
    (``model_arch_config_convertor.py``): the first alias the config sets, else the
    attention heads. MLA models keep their config's value (DeepSeek-V3: 128), although
    their cache holds one latent vector; NIXL's compatibility hash hashes this number."""
    for name in KV_HEADS_ALIASES:
        value = text_config.get(name)
        if value is not None:
            return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
    heads = text_config.get("num_attention_heads")
    return heads if isinstance(heads, int) and not isinstance(heads, bool) else None
