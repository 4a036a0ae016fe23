"""The attention implementations' own refusals, made when a layer builds its impl.

A layer's backend is chosen by vLLM's selector (``kvconfig.mirror.selection``); the layer
then builds the backend's impl (``Attention.__init__`` calls ``get_impl_cls()(...)``), and
some impls refuse what the selector let through. vLLM does not fall back to another
backend then: start-up fails. Mirrors:

* ``vllm/v1/attention/backends/triton_attn.py:TritonAttentionImpl.__init__`` (TRITON_ATTN and
  the backends built on it): on CUDA, an ``fp8*`` KV cache needs compute capability 8.9
  or newer, a ``bfloat16`` one 8.0 or newer;
* ``vllm/v1/attention/backends/mla/triton_mla.py:TritonMLAImpl.__init__``: on CUDA, an
  ``fp8*`` KV cache needs 8.9 or newer;
* ``vllm/v1/attention/backends/flex_attention.py:FlexAttentionImpl.__init__``: no logits soft
  capping (``attn_logit_softcapping`` in the model's config).
"""

from __future__ import annotations

from collections.abc import Mapping

from kvconfig.mirror.platform import PlatformId

#: Backends whose impl is ``TritonAttentionImpl`` (or builds one for its general route).
TRITON_ATTENTION = frozenset(
    {"TRITON_ATTN", "TRITON_ATTN_DIFFKV", "TRITON_FLASHINFER", "TRITON_FLASH_ATTN"}
)
TRITON_MLA = frozenset({"TRITON_MLA"})


def _suggest(capability: tuple[int, int]) -> str:
    return "float16" if capability < (8, 0) else "bfloat16"


def impl_refusal(
    backend: str, kv_cache_dtype: str, platform: PlatformId, model_facts: Mapping[str, int]
) -> str | None:
    """vLLM's text when the impl of ``backend`` refuses the layer (None: it builds)."""
    cap = platform.capability
    cuda = platform.vendor == "cuda" and cap is not None
    if backend in TRITON_ATTENTION | TRITON_MLA and cuda and cap is not None:
        what = "Triton attention" if backend in TRITON_ATTENTION else "Triton MLA"
        where = f"{platform.name} (compute capability {cap[0]}.{cap[1]})"
        if kv_cache_dtype.startswith("fp8") and cap < (8, 9):
            return (
                f"FP8 KV cache is not supported by the {what} backend on {where}; native FP8 "
                f"(fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype {_suggest(cap)}."
            )
        if backend in TRITON_ATTENTION and kv_cache_dtype == "bfloat16" and cap < (8, 0):
            return (
                f"bfloat16 KV cache is not supported on {where}; bfloat16 requires SM80+. "
                "Re-run with --kv-cache-dtype float16."
            )
    if backend == "FLEX_ATTENTION" and model_facts.get("attn_logit_softcapping"):
        return "FlexAttention does not support logits soft cap yet."
    return None
