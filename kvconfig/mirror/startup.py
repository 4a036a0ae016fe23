"""Start-up refusals after the kernel block sizes are voted, as vLLM raises them.

* **Metadata builders' constructors** (``AttentionGroup.create_metadata_builders``,
  ``vllm/v1/worker/gpu/attn_utils.py`` phase 3, with each group's kernel block size):
  ``FlexAttentionMetadataBuilder`` (``vllm/v1/attention/backends/flex_attention.py``,
  ``_get_block_sizes``) uses the kernel block size as its KV block size on torch >= 2.9
  and raises ``flex_attn_kv_block_size must be a power of 2`` when it is not one (e.g.
  k = 96, or the 576-token pages of a hybrid-aligned Qwen3.5 group).
* **The KV-cache layout** (``get_supported_kv_cache_layouts``,
  ``vllm/v1/attention/backends/utils.py``, called by the engine core over every
  attention backend of the worker): the intersection of the layouts each backend
  declares (``supported_kv_cache_layouts``; None: any) must not be empty, or vLLM raises
  ``No KV cache layout satisfies every supported set``. FlashInfer on SM10x declares
  LBHNC/BLHNC (its trtllm-gen kernels), FlexAttention and TurboQuant LBNHC.
"""

from __future__ import annotations

from collections.abc import Iterable

#: ``supported_kv_cache_layouts`` of the CUDA backends that declare one, by capability
#: major (None: every capability).
_LAYOUTS: dict[str, tuple[tuple[int | None, tuple[str, ...]], ...]] = {
    "FLASHINFER": ((10, ("LBHNC", "BLHNC")),),
    "FLEX_ATTENTION": ((None, ("LBNHC",)),),
    "TURBOQUANT": ((None, ("LBNHC",)),),
    "B12X": ((None, ("LBHNC", "BLHNC")),),
    "KPOOL_TAIL": ((None, ("BLHNC",)),),
    "DEEPSEEK_V4_INDEXER": ((None, ("BLHNC", "BLNHC")),),
}


def supported_layouts(backend: str, major: int | None) -> tuple[str, ...] | None:
    """The layouts ``backend`` declares on a GPU of capability ``major`` (None: any)."""
    for on, layouts in _LAYOUTS.get(backend, ()):
        if on is None or on == major:
            return layouts
    return None


def layout_refusal(backends: Iterable[str], major: int | None) -> str | None:
    """vLLM's error when the worker's backends share no KV-cache layout (None: they do)."""
    declared = {
        b: layouts for b in dict.fromkeys(backends) if (layouts := supported_layouts(b, major))
    }
    if len(declared) < 2:
        return None
    common = set.intersection(*(set(v) for v in declared.values()))
    if common:
        return None
    sets = [list(v) for v in declared.values()]
    return f"No KV cache layout satisfies every supported set: {sets} ({', '.join(declared)})"


def flex_refusal(kernel_block_size: int) -> str | None:
    """FlexAttention's metadata builder's error for a kernel block size (None: accepted)."""
    k = kernel_block_size
    if k & (k - 1) == 0:
        return None
    return (
        f"flex_attn_kv_block_size must be a power of 2 and divisible by flex_attn_block_n, "
        f"got {k}, None"
    )
