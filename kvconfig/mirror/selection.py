"""Which backend each layer gets, as vLLM decides it on CUDA.

Mirrors ``vllm/platforms/cuda.py`` (``_get_backend_priorities``,
``CudaPlatform.get_attn_backend_cls``) over the ``validate_configuration`` traits of
``kvconfig.mirror.traits`` and ``kvconfig.mirror.traits_mla``: an explicitly requested
backend is validated and refused when invalid; otherwise the first valid backend of the
platform's priority list wins. Models that wire their own backend (MiniMax-M3's sparse
attention and indexer, the Mamba mixers) are here too.
"""

from __future__ import annotations

from typing import NamedTuple

from kvconfig.mirror.platform import is_quantized
from kvconfig.mirror.traits import DENSE_TRAITS, Machine, Request, Traits
from kvconfig.mirror.traits_mla import MLA_TRAITS
from kvconfig.schemas.sizes import KernelSize, MultipleOf

TRAITS: dict[str, Traits] = {**DENSE_TRAITS, **MLA_TRAITS}
"""``validate_configuration`` of every CUDA backend kvconfig models, by vLLM name."""

#: Backends whose ``supports_block_size`` accepts exact sizes only (backend.py overrides).
EXACT_BLOCK_SIZES: dict[str, tuple[int, ...]] = {"CPU_MLA": (16,), "B12X": (64, 128)}


def supports_block_size(
    name: str, block_size: int | None, m: Machine, sizes: tuple[KernelSize, ...] | None = None
) -> bool:
    """``supports_block_size``: the manager block is a multiple of a declared size.

    ``sizes`` are the backend's sizes without a spec (default: what the catalog says).
    """
    if block_size is None:
        return True
    if name in EXACT_BLOCK_SIZES:
        return block_size in EXACT_BLOCK_SIZES[name]
    if sizes is None:
        sizes = m.declared_without_spec(name)
    if not sizes:
        return True
    return any(block_size % (s.multiple_of if isinstance(s, MultipleOf) else s) == 0 for s in sizes)


def invalid_reasons(name: str, r: Request, m: Machine) -> list[str]:
    """vLLM's ``validate_configuration`` reasons for backend ``name`` (empty: valid)."""
    t = TRAITS.get(name)
    if t is None:
        return []
    reasons = []
    if not t.head_sizes(r.head_size, m):
        reasons.append("head_size not supported")
    if r.dtype not in t.dtypes:
        reasons.append("dtype not supported")
    if (t.kv_dtypes and r.kv_cache_dtype not in t.kv_dtypes) or not t.kv_check(r.kv_cache_dtype, m):
        reasons.append("kv_cache_dtype not supported")
    if not supports_block_size(name, r.block_size, m):
        reasons.append("block_size not supported")
    if r.use_mm_prefix and not t.mm_prefix(m):
        reasons.append("partial multimodal token full attention not supported")
    if r.use_mla != t.mla:
        reasons.append("MLA not supported" if r.use_mla else "non-MLA not supported")
    if r.has_sink and not t.sink(m):
        reasons.append("attention sinks not supported")
    if r.use_sparse != t.sparse:
        reasons.append("sparse not supported" if r.use_sparse else "non-sparse not supported")
    if m.capability is not None and not t.capability(m):
        reasons.append("compute capability not supported")
    if r.attn_type not in t.attn_types:
        reasons.append(f"attention type {r.attn_type} not supported")
    if r.has_sliding_window and not t.sliding_window:
        reasons.append("sliding window not supported")
    if r.use_non_causal and not t.non_causal:
        reasons.append("non-causal attention not supported")
    if m.batch_invariant and not t.batch_invariant:
        reasons.append("batch invariance not supported")
    if (why := t.combination(r, m)) is not None:
        reasons.append(why)
    return reasons


def priorities(r: Request, m: Machine) -> list[str]:
    """``_get_backend_priorities`` for CUDA (non-MLA and MLA), of the release whose catalog
    ``m`` carries: the known releases' lists differ only in the backends each release has
    (``kvconfig.mirror.versions.Rules``), so the list is the newest release's, less the
    names the release's registry does not have."""
    names = _priorities(r, m)
    if m.catalog is None or not m.catalog.registry:
        return names
    return [n for n in names if n in m.catalog.registry]


def _priorities(r: Request, m: Machine) -> list[str]:
    if r.use_mla:
        if m.major == 10:
            if is_quantized(r.kv_cache_dtype, m.release):
                sparse = ["FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"]
            elif r.num_heads is not None and r.num_heads <= 16:
                sparse = ["FLASH_ATTN_MLA_SPARSE_FA4", "FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"]
            else:
                sparse = ["FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE"]
            return [
                "FLASHINFER_MLA",
                "TOKENSPEED_MLA",
                "CUTLASS_MLA",
                "FLASH_ATTN_MLA",
                "FLASHMLA",
                "TRITON_MLA",
                *sparse,
            ]
        if m.major == 12:
            return ["TRITON_MLA", "FLASHINFER_MLA_SPARSE_SM120"]
        tail = ["FLASH_ATTN_MLA_SPARSE", "FLASHMLA_SPARSE"]
        if r.head_size == 512:
            tail.insert(0, "FLASHINFER_MLA_SPARSE_SM90")
        else:
            tail.append("FLASHINFER_MLA_SPARSE_SM90")
        return ["FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA", *tail]
    if m.major == 10 and not r.use_non_causal:
        head = ["TRITON_FLASHINFER"] if r.use_mm_prefix else []
        return [*head, "FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT"]
    head = ["TRITON_FLASH_ATTN"] if m.major == 9 and r.use_mm_prefix else []
    return [*head, "FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT"]


#: Backends of vLLM's other platforms, by name: the platform and the vLLM file that uses
#: them. ``CudaPlatform.get_attn_backend_cls`` accepts one when its
#: ``validate_configuration`` finds nothing wrong, but a CUDA build of vLLM has none of
#: their kernels: the engine fails when the layers first run.
OTHER_PLATFORM_BACKENDS: dict[str, tuple[str, str]] = {
    "CPU_ATTN": ("CPU", "vllm/platforms/cpu.py"),
    "CPU_MLA": ("CPU", "vllm/platforms/cpu.py"),
    "AMX_MLA": ("CPU", "vllm/platforms/cpu.py"),
    "ROCM_ATTN": ("ROCm", "vllm/platforms/rocm.py"),
    "ROCM_AITER_FA": ("ROCm", "vllm/platforms/rocm.py"),
    "ROCM_AITER_MLA": ("ROCm", "vllm/platforms/rocm.py"),
    "ROCM_AITER_MLA_SPARSE": ("ROCm", "vllm/platforms/rocm.py"),
    "ROCM_AITER_TRITON_MLA": ("ROCm", "vllm/platforms/rocm.py"),
    "ROCM_AITER_UNIFIED_ATTN": ("ROCm", "vllm/platforms/rocm.py"),
    "ROCM_OCTAVE": ("ROCm", "vllm/platforms/rocm.py"),
    "ROCM_SEGMENTED_ATTN": ("ROCm", "vllm/v1/attention/backends/rocm_segmented_attn.py"),
    "ROCM_FLASHMLA_SPARSE_DSV4": ("ROCm", "vllm/models/deepseek_v4/amd/rocm.py"),
    "ROCM_FLASHMLA_SPARSE_DSV41": ("ROCm", "vllm/models/deepseek_v41/amd/rocm.py"),
    "XPU_MLA_SPARSE": ("XPU", "vllm/platforms/xpu.py"),
}


class Selection(NamedTuple):
    """The outcome of backend selection for one layer."""

    backend: str | None
    reason: str
    error: str | None = None
    rejected: tuple[tuple[str, tuple[str, ...]], ...] = ()
    unknown: bool = False
    """The requested backend is one kvconfig has no ``validate_configuration`` rules for on
    this platform: it cannot tell what vLLM does with the request."""


def select(requested: str | None, r: Request, m: Machine, source: str) -> Selection:
    """The backend vLLM picks for a layer, or why it refuses to start.

    ``requested`` is a vLLM backend name (``AttentionBackendEnum``) the deployment asks
    for; a name kvconfig has no rules for on the platform is refused as unknown.
    """
    if requested is not None:
        if m.vendor != "cuda":
            why = f"kvconfig has no rules for the backend checks of vLLM's {m.vendor} platform"
            return Selection(None, source, error=why, rejected=((requested, (why,)),), unknown=True)
        if requested not in TRAITS:
            return _not_modelled(requested, source)
        reasons = invalid_reasons(requested, r, m)
        if reasons:
            return Selection(
                None,
                source,
                error=f"{requested} cannot run here: {', '.join(reasons)}",
                rejected=((requested, tuple(reasons)),),
            )
        return Selection(requested, source)
    if m.vendor != "cuda":
        return Selection(
            None,
            "automatic",
            error=(
                f"kvconfig derives vLLM's automatic backend choice on CUDA only; "
                f"set --attention-backend for {m.vendor}"
            ),
        )
    rejected: list[tuple[str, tuple[str, ...]]] = []
    for name in priorities(r, m):
        reasons = invalid_reasons(name, r, m)
        if not reasons:
            return Selection(
                name, f"{source}: first valid in vLLM's priority order", rejected=tuple(rejected)
            )
        rejected.append((name, tuple(reasons)))
    return Selection(
        None,
        source,
        error="no valid attention backend: "
        + "; ".join(f"{n} ({', '.join(why)})" for n, why in rejected),
        rejected=tuple(rejected),
    )


def _not_modelled(requested: str, source: str) -> Selection:
    """A requested CUDA name outside kvconfig's trait tables: another platform's backend
    (it cannot run), or one kvconfig has no rules for (unknown)."""
    other = OTHER_PLATFORM_BACKENDS.get(requested)
    if other is not None:
        platform, where = other
        why = f"a backend of vLLM's {platform} platform ({where}), with no CUDA kernels"
        return Selection(None, source, error=why, rejected=((requested, (why,)),))
    why = "kvconfig has no rules for its validate_configuration"
    return Selection(None, source, error=why, rejected=((requested, (why,)),), unknown=True)


_M3 = "vllm.models.minimax_m3"

#: The backend class each Mamba mixer uses (``MambaAttentionBackendEnum``).
MAMBA_BACKENDS: dict[str, str] = {
    "mamba1": "vllm.v1.attention.backends.mamba1_attn.Mamba1AttentionBackend",
    "mamba2": "vllm.v1.attention.backends.mamba2_attn.Mamba2AttentionBackend",
    "gdn_attention": "vllm.v1.attention.backends.gdn_attn.GDNAttentionBackend",
    "linear_attention": "vllm.v1.attention.backends.linear_attn.LinearAttentionBackend",
    "short_conv": "vllm.v1.attention.backends.short_conv_attn.ShortConvAttentionBackend",
}


def model_backend(requested: str, m: Machine, kv_cache_dtype: str) -> Selection | None:
    """Backends a model wires itself instead of asking vLLM's selector (None: not one).

    * ``MINIMAX_M3_SPARSE``: ``select_main_backend_and_impl_cls``
      (``models/minimax_m3/common/sparse_attention.py``): the MSA backend on CUDA SM10x
      for 4/8/16/32 top-k blocks and any cache but fp8_e5m2 (the NVFP4 variant for
      ``nvfp4``), else the base backend with the Triton kernels.
    * ``MINIMAX_M3_SPARSE_INDEXER``: ``select_indexer_impl_cls``
      (``models/minimax_m3/common/indexer.py``): the MSA indexer on CUDA SM10x with 16
      top-k blocks, else the base (Triton) one.
    """
    topk = m.facts.get("sparse_topk_blocks")
    sm100 = m.vendor == "cuda" and m.major == 10
    if requested == "MINIMAX_M3_SPARSE":
        msa = sm100 and topk in (4, 8, 16, 32) and kv_cache_dtype != "fp8_e5m2"
        if kv_cache_dtype.startswith("nvfp4"):
            if not msa or kv_cache_dtype != "nvfp4":
                return Selection(
                    None,
                    "MiniMax-M3's own choice",
                    error="MiniMax M3 sparse attention supports an NVFP4 KV cache only "
                    "with the SM100 MSA backend",
                    rejected=(("MINIMAX_M3_SPARSE", ("nvfp4 KV cache needs SM100 MSA",)),),
                )
            path = f"{_M3}.nvidia.sparse_attention_msa.MiniMaxM3SparseMSANvfp4Backend"
        elif msa:
            path = f"{_M3}.nvidia.sparse_attention_msa.MiniMaxM3SparseMSABackend"
        else:
            path = f"{_M3}.common.sparse_attention.MiniMaxM3SparseBackend"
        why = "MiniMax-M3's own choice (select_main_backend_and_impl_cls)"
        return Selection(path, why)
    if requested == "MINIMAX_M3_SPARSE_INDEXER":
        if sm100 and topk == 16:
            path = f"{_M3}.nvidia.indexer_msa.MiniMaxM3IndexerMSABackend"
        else:
            path = f"{_M3}.common.indexer.MiniMaxM3IndexerBackend"
        return Selection(path, "MiniMax-M3's own choice (select_indexer_impl_cls)")
    return None
