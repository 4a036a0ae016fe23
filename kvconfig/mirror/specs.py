"""Each layer's KV-cache spec, as vLLM's layers report it to the engine core.

A ``Spec`` carries exactly what grouping reads: the spec class, the block size, the
page size in bytes, the ``block_stride_alignment`` that ``customize_attention_spec``
sets, and the other fields that make two specs equal. Sources:

* attention: ``Attention.get_kv_cache_spec``
  (``vllm/model_executor/layers/attention/attention.py``); sliding-window layers pick
  their own block size with ``_largest_kernel_block_within``;
* MLA: ``MLAAttention.get_kv_cache_spec`` (``mla_attention.py``), ``fp8_ds_mla`` /
  ``nvfp4_ds_mla`` pages of 656 / 352 bytes per token; sparse MLA backends canonicalise
  a quantized cache to ``fp8_ds_mla`` (``_canonicalize_sparse_mla_kv_cache_dtype``);
* indexers: ``DeepseekV32IndexerCache`` / ``MiniMaxM3IndexerCache`` (``MLAAttentionSpec``
  with the indexer role);
* Mamba: ``MambaBase.get_kv_cache_spec``; block size ``mamba_block_size`` (B with prefix
  caching, else ``max_model_len``), page padded to the attention page;
* ``customize_attention_spec`` (``v1/worker/utils.py``): the backend's ``customize_spec``
  first (sparse MLA backends align blocks to rows), then ``MultipleOf(max)`` when every
  declared size is an exact int.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from kvconfig.mirror import versions
from kvconfig.mirror.platform import kv_quant
from kvconfig.schemas.deployment import Deployment, LayerSet
from kvconfig.schemas.sizes import KernelSize, MultipleOf

#: kvconfig layer kinds whose vLLM layer is an ``MLAAttention``.
MLA_KINDS = frozenset({"mla_attention", "sliding_window_mla", "sparse_mla"})

V32_INDEXER_NAME = "DEEPSEEK_V32_INDEXER"
"""DeepSeek-V3.2's lightning-indexer backend: its key cache is stored as bytes."""


def per_rank(total: int, tp: int) -> int:
    """Heads one rank holds (``ModelConfig.get_num_kv_heads``): split over the
    tensor-parallel ranks, replicated when there are fewer heads than ranks."""
    return max(1, total // tp)


#: Spec classes by vLLM name: what grouping and ``prepare_kernel_block_sizes`` dispatch on.
SPEC_CLASS = {
    "full": "FullAttentionSpec",
    "sliding_window": "SlidingWindowSpec",
    "mla": "MLAAttentionSpec",
    "mamba": "MambaSpec",
}

#: vLLM's ``KVCacheSpecKind`` of each spec class (``get_kv_cache_spec_kind``).
SPEC_KIND = {
    "full": "full_attention",
    "sliding_window": "sliding_window",
    "chunked_local": "chunked_local",
    "mla": "mla_attention",
    "mamba": "mamba",
}

_TORCH_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "uint8": 1, "float8_e4m3fn": 1}

#: ``mla_attention.py:get_kv_cache_spec``: opaque per-token bytes of the DeepSeek layouts.
DS_MLA_BYTES = {"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}

#: Backends whose ``customize_spec`` aligns blocks to whole rows (``align_blocks_to_rows``),
#: and how many rows: ``v1/attention/backends/mla/*sparse*.py``.
ROW_ALIGNED = {
    "FLASH_ATTN_MLA_SPARSE": 1,
    "FLASHINFER_MLA_SPARSE_SM90": 1,
    "FLASHINFER_MLA_SPARSE": 32,
    "FLASH_ATTN_MLA_SPARSE_FA4": 64,
    "FLASHINFER_MLA_SPARSE_SM120": 64,
}


class Spec(NamedTuple):
    """One layer's KV-cache spec (equality as vLLM compares specs; ``is_draft`` excluded)."""

    cls: str
    """``full``, ``sliding_window``, ``chunked_local`` (``ChunkedLocalAttentionSpec``),
    ``mla`` or ``mamba``."""
    block_size: int
    """Tokens per block."""
    heads: int = 1
    """Head slots of a page (KV heads on this rank; 1 for MLA, indexers and Mamba)."""
    content: int = 0
    """Bytes per (head slot, state) cell; Mamba: bytes of the whole state."""
    tokens_per_state: int = 1
    """Tokens folded into one state (compressed caches)."""
    padded: int | None = None
    """``page_size_padded``."""
    alignment: tuple[str, int] | None = None
    """``block_stride_alignment``: ``("multiple_of", n)`` or ``("bytes", n)``."""
    window: int | None = None
    """Sliding window (``SlidingWindowSpec``, or a promoted ``FullAttentionSpec``)."""
    fields: tuple[object, ...] = ()
    """The other compared fields (head sizes, dtype, quantization, MLA and Mamba extras)."""

    @property
    def page(self) -> int:
        """``page_size_bytes``."""
        if self.padded is not None:
            return self.padded
        return self.unpadded(self.block_size)

    def unpadded(self, block_size: int) -> int:
        """The natural page of ``block_size`` tokens."""
        if self.cls == "mamba":
            return self.content
        return self.heads * (block_size // self.tokens_per_state) * self.content

    @property
    def kind(self) -> str:
        """vLLM's ``KVCacheSpecKind`` value."""
        return SPEC_KIND[self.cls]

    @property
    def family(self) -> str:
        """The registered ``uniform_type_base_spec``: MLA counts as full attention."""
        return "full" if self.cls in ("full", "mla") else self.cls

    def stride_alignment(self) -> int:
        """``get_block_stride_alignment``: bytes the block stride must be a multiple of."""
        if self.alignment is None:
            return 1
        how, n = self.alignment
        if how == "bytes":
            return n
        k = math.gcd(n, self.block_size)
        if k == self.block_size:
            return 1
        return self.padded if self.padded is not None else self.unpadded(k)


def torch_dtype(kind: str, kv_cache_dtype: str, model_dtype: str) -> str:
    """The torch storage dtype of a layer's cache (``kv_cache_dtype_str_to_dtype``)."""
    if kv_cache_dtype in ("auto", ""):
        return model_dtype
    if kv_cache_dtype in ("float16", "bfloat16", "float32"):
        return kv_cache_dtype
    return "uint8"


def mla_cache_dtype(backend: str, kv_cache_dtype: str, major: int | None) -> str:
    """``_canonicalize_sparse_mla_kv_cache_dtype``: the cache dtype a sparse MLA layer uses."""
    quantized = kv_quant(kv_cache_dtype) != "none"
    if backend == "FLASHMLA_SPARSE" and quantized:
        return kv_cache_dtype if kv_cache_dtype == "nvfp4_ds_mla" else "fp8_ds_mla"
    if backend == "FLASHINFER_MLA_SPARSE_SM120" and kv_cache_dtype in ("auto", "fp8", "fp8_e4m3"):
        return "fp8_ds_mla"
    return kv_cache_dtype


def customize(
    spec: Spec, backend: str, sizes: tuple[KernelSize, ...], major: int | None, quantized: bool
) -> Spec:
    """``customize_attention_spec``: the backend's own alignment, else ``MultipleOf(max)``."""
    if backend == "FLASHMLA_SPARSE":
        if quantized and major != 10:
            return spec._replace(alignment=("multiple_of", 64))
        return spec._replace(alignment=("bytes", spec.content))
    rows = ROW_ALIGNED.get(backend)
    if rows is not None:
        return spec._replace(alignment=("bytes", rows * spec.content))
    fixed = [s for s in sizes if isinstance(s, int)]
    if sizes and len(fixed) == len(sizes):
        return spec._replace(alignment=("multiple_of", max(fixed)))
    return spec


def largest_kernel_block_within(
    sizes: tuple[KernelSize, ...], per_token: int, budget: int, fallback: int
) -> int:
    """``_largest_kernel_block_within``: the block a sliding-window layer picks for itself."""
    most = budget // per_token
    candidates = [s for s in sizes if isinstance(s, int)]
    candidates += [
        max(s.multiple_of, most // s.multiple_of * s.multiple_of)
        for s in sizes
        if isinstance(s, MultipleOf)
    ]
    if not candidates:
        return fallback
    fitting = [b for b in candidates if b * per_token <= budget]
    return max(fitting) if fitting else min(candidates)


def dtype_bytes(name: str) -> int:
    """Bytes of a torch dtype name."""
    return _TORCH_BYTES.get(name, 2)


class BlockPlan(NamedTuple):
    """The cache config's block sizes the layers read when they report their specs
    (``kvconfig.mirror.block_size`` settles them)."""

    block_size: int
    """``cache_config.block_size``: B of attention layers."""
    reason: str
    """Why B is what it is."""
    mamba_block_size: int | None = None
    """``cache_config.mamba_block_size`` (hybrid models)."""
    mamba_reason: str = ""
    """Why the Mamba block size is what it is."""
    mamba_page_padded: int | None = None
    """``cache_config.mamba_page_size_padded``: the attention page Mamba pads to."""
    checkpoint_alignment: int | None = None
    """Prefill checkpoint grid of gated-delta-net layers (align mode, FlashInfer prefill)."""


def layer_spec(  # noqa: PLR0917 (what a layer and its backend are)
    l: LayerSet,
    backend: str,
    cache_dtype: str,
    sizes: tuple[KernelSize, ...],
    dep: Deployment,
    major: int | None,
    plan: BlockPlan,
) -> Spec:
    """The spec a layer reports on ``backend`` (its vLLM name), after
    ``customize_attention_spec``; ``sizes`` are what the backend declares for it."""
    B = plan.block_size
    if l.kind == "mamba":
        checkpoint = (1, 1) if l.mamba_type == "mamba2" else (0, None)
        if l.mamba_type == "gdn_attention" and plan.checkpoint_alignment is not None:
            checkpoint = (1, plan.checkpoint_alignment)
        mode = "align" if dep.prefix_caching else "none"
        return Spec(
            "mamba",
            plan.mamba_block_size or B,
            content=l.state_bytes or 0,
            padded=plan.mamba_page_padded,
            fields=(l.mamba_type, mode, dep.num_speculative_tokens, *checkpoint),
        )
    name = backend
    kv = cache_dtype
    if l.kind in MLA_KINDS:
        dtype = torch_dtype(l.kind, kv, l.dtype)
        content = DS_MLA_BYTES.get(kv) or l.head_size * dtype_bytes(dtype)
        sparse = l.kind == "sparse_mla"
        topk = dep.model_facts.get("index_topk") if sparse else None
        fields: tuple[object, ...] = (
            l.head_size,
            0,
            dtype,
            kv_quant(kv),
            1,
            kv,
            topk,
            "sparse",
            sparse,
        )
        spec = Spec("mla", B, 1, content, l.tokens_per_state, fields=fields)
    elif l.kind == "indexer":
        v32 = name == V32_INDEXER_NAME
        dtype = "uint8" if v32 else torch_dtype(l.kind, kv, l.dtype)
        fields = (l.head_size, 0, dtype, "none", 1 if v32 else None, None, None, "indexer", False)
        spec = Spec("mla", B, 1, l.head_size * dtype_bytes(dtype), fields=fields)
    else:
        heads = per_rank(l.num_kv_heads, dep.tensor_parallel_size)
        hv = l.head_size_v or l.head_size
        dtype = torch_dtype(l.kind, kv, l.dtype)
        content = (l.head_size + hv) * dtype_bytes(dtype)
        fields = (l.head_size, hv, dtype, kv_quant(kv), None)
        if l.kind == "sliding_window":
            per_token = heads * content
            block = largest_kernel_block_within(sizes, per_token, per_token * B, B)
            spec = Spec(
                "sliding_window", block, heads, content, window=l.sliding_window, fields=fields
            )
        elif l.kind == "chunked_local":
            spec = Spec("chunked_local", B, heads, content, fields=fields)
        else:
            spec = Spec("full", B, heads, content, l.tokens_per_state, fields=fields)
    how = versions.rules(dep.vllm_version).spec_alignment
    if how == "runner":
        return customize(spec, name, sizes, major, kv_quant(kv) != "none")
    if how == "mla" and l.kind in ("mla_attention", "sparse_mla") and _flat_mla(name, kv, major):
        return spec._replace(alignment=("bytes", spec.content))
    return spec


def _flat_mla(backend: str, kv_cache_dtype: str, major: int | None) -> bool:
    """Whether ``MLAAttention.get_kv_cache_spec`` aligns the block stride to the state
    bytes, in the releases whose spec alignment is ``mla`` (``versions.Rules.spec_alignment``:
    ``_uses_flat_kv_cache``, or FlashMLA's SM100 token-row kernels)."""
    ds_mla = kv_cache_dtype in ("fp8_ds_mla", "nvfp4_ds_mla")
    if backend == "FLASHMLA_SPARSE":
        return not ds_mla or major == 10
    return backend == "FLASHINFER_MLA_SPARSE"
