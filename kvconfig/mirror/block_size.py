"""The manager block size B, as vLLM settles it after loading the model.

Mirrors ``Platform.update_block_size_for_backend`` (``vllm/platforms/interface.py``):

1. without ``--block-size``, ``_preferred_block_size_for_backends`` over the distinct
   non-SSM backends in layer order: a single backend's ``get_preferred_block_size(16)``;
   16 when every backend ``supports_block_size(16)``; else the smallest LCM of one
   declared size per backend that all accept;
2. hybrid models (``_align_hybrid_block_size``, even over ``--block-size``): the
   attention page must hold a Mamba state. B becomes the smallest multiple of the
   first backend's smallest kernel block (at least the current B; 128 for MLA; with
   prefix caching also of the gated-delta-net prefill checkpoint grid) whose page is at
   least the state, rounded up to every backend's smallest kernel block; Mamba pages
   pad to that attention page, and with prefix caching Mamba blocks take B too;
3. ``_check_aligned_block_size``: an aligned B some backend rejects fails start-up.

Steps 1 to 3 differ between releases (``kvconfig.mirror.versions.Rules``: in the oldest
step 1 asks the first backend alone, ``preferred_over_backends``; in older ones step 2
rounds by the first backend's kernel block only and step 3 does not exist,
``hybrid_over_backends``; the checkpoint grid is the newest's, ``checkpoint_grid``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from kvconfig.errors import AlignedBlockSizeUnsupported, NoCommonBlockSize
from kvconfig.mirror.platform import PlatformId
from kvconfig.mirror.selection import supports_block_size
from kvconfig.mirror.specs import MLA_KINDS, BlockPlan, dtype_bytes, per_rank, torch_dtype
from kvconfig.mirror.traits import Machine
from kvconfig.schemas.deployment import Deployment
from kvconfig.schemas.sizes import KernelSize, MultipleOf

DEFAULT_BLOCK_SIZE = 16
"""``CacheConfig.DEFAULT_BLOCK_SIZE``."""

CUDA_RUNTIME_MAJOR = 13
"""The CUDA runtime vLLM's wheels are built against (torch cu130)."""

GDN_CHECKPOINT_ALIGNMENT = 64
"""``FLASHINFER_GDN_CHECKPOINT_ALIGNMENT`` (``v1/attention/backends/gdn_attn.py``)."""

#: ``get_preferred_block_size`` overrides, by backend name: default -> preferred.
PREFERRED_BLOCK_SIZE: dict[str, Callable[[int], int]] = {
    "B12X": lambda d: d if d in (64, 128) else 128,
    "DEEPSEEK_SPARSE_SWA": lambda d: 256,
    "ROCM_AITER_UNIFIED_ATTN": lambda d: 64,
    "ULTRAQUANT": lambda d: 64,
}


class Backend(NamedTuple):
    """A distinct non-SSM backend: its vLLM name and class."""

    name: str
    class_path: str


SizesOf = Callable[[Backend], tuple[KernelSize, ...]]
"""A backend's sizes when asked without a spec (``get_supported_kernel_block_sizes()``)."""


def _base(s: KernelSize) -> int:
    return s.multiple_of if isinstance(s, MultipleOf) else s


def preferred(names: Sequence[Backend], m: Machine, sizes_of: SizesOf) -> tuple[int, str]:
    """``_preferred_block_size_for_backends`` and why."""
    d = DEFAULT_BLOCK_SIZE
    if not names:
        return d, "vLLM's default"

    def everyone(block: int) -> bool:
        return all(supports_block_size(bk.name, block, m, sizes_of(bk)) for bk in names)

    if len(names) == 1 or not m.rules.preferred_over_backends:
        # one backend, or a release that asks only the first (``_find_non_ssm_backend``)
        bk = names[0]
        if bk.name in PREFERRED_BLOCK_SIZE:
            return PREFERRED_BLOCK_SIZE[bk.name](d), f"{bk.name}'s preferred block size"
        declared = sizes_of(bk)
        if not declared or supports_block_size(bk.name, d, m, declared):
            return d, "vLLM's default"
        return min(_base(s) for s in declared), f"{bk.name}'s smallest supported block size"
    if everyone(d):
        return d, "vLLM's default"
    candidates: set[int] = {1}
    for bk in names:
        bases = [_base(s) for s in sizes_of(bk)] or [1]
        candidates = {math.lcm(c, b) for c in candidates for b in bases}
    for c in sorted(candidates):
        if everyone(c):
            label = "/".join(dict.fromkeys(b.name for b in names))
            return c, f"the smallest block size {label} all support"
    raise NoCommonBlockSize([b.name for b in names])


def checkpoint_alignment(s: Deployment, p: PlatformId) -> int | None:
    """``get_mamba_prefill_checkpoint_alignment``: the lcm of every Mamba layer's grid, or
    None unless all have one. Only gated-delta-net layers that export checkpoints
    (``prefill_checkpoints``) on FlashInfer's prefill kernel
    (CUDA SM 9.0; SM10x/12x with 128-wide keys and CUDA 13) export checkpoints, and only
    with prefix caching (``mamba_cache_mode == "align"``)."""
    mamba = [layer for layer in s.layers if layer.kind == "mamba"]
    if not mamba or not s.prefix_caching:
        return None
    if p.vendor != "cuda" or p.capability is None:
        return None
    alignment = 1
    for layer in mamba:
        if layer.mamba_type != "gdn_attention" or not layer.prefill_checkpoints:
            return None
        wide = layer.head_size == 128 and CUDA_RUNTIME_MAJOR >= 13
        if not (p.capability == (9, 0) or (p.capability[0] in (10, 12) and wide)):
            return None
        alignment = math.lcm(alignment, GDN_CHECKPOINT_ALIGNMENT)
    return alignment


def attention_page_per_token(s: Deployment) -> int:
    """One token's attention page as ``_align_hybrid_block_size`` computes it: the target
    model's per-rank KV heads and head size (``model_config``), the cache dtype."""
    target = next(
        layer
        for layer in s.layers
        if layer.role == "target" and layer.kind in ("full_attention", "sliding_window", *MLA_KINDS)
    )
    kv = s.kv_cache_dtype
    dtype = torch_dtype(target.kind, kv, target.dtype)
    if target.kind in MLA_KINDS:
        return target.head_size * dtype_bytes(dtype)
    heads = per_rank(target.num_kv_heads, s.tensor_parallel_size)
    return heads * 2 * target.head_size * dtype_bytes(dtype)


def plan_block_size(
    s: Deployment, p: PlatformId, names: Sequence[Backend], m: Machine, sizes_of: SizesOf
) -> tuple[BlockPlan, bool]:
    """B (and the Mamba block and padding) vLLM uses, and whether alignment changed B.

    ``names`` are the distinct non-SSM backends in layer order (``_find_non_ssm_backends``).
    Raises NoCommonBlockSize or AlignedBlockSizeUnsupported where vLLM fails.
    """
    if s.block_size is not None:
        block, reason = s.block_size, "--block-size"
    else:
        block, reason = preferred(names, m, sizes_of)
    mamba = [layer for layer in s.layers if layer.kind == "mamba"]
    if mamba and not names:
        # attention-free: no alignment; the Mamba block follows B with prefix caching and
        # holds a whole request without it (``MambaModelConfig.verify_and_update_config``)
        mamba_block = block if s.prefix_caching else s.max_model_len or block
        why = "prefix caching" if s.prefix_caching else "mamba_block_size = max_model_len"
        return BlockPlan(block, reason, mamba_block, why), False
    if not mamba or not names:
        return BlockPlan(block, reason), False
    state = max(layer.state_bytes or 0 for layer in mamba)
    per_token = attention_page_per_token(s)
    first = min(_base(x) for x in sizes_of(names[0]))
    kernel = max(first, block)
    rules = m.rules
    backend_align = 1
    if rules.hybrid_over_backends:
        backend_align = math.lcm(*(min(_base(x) for x in d) for b in names if (d := sizes_of(b))))
    if any(layer.kind in MLA_KINDS for layer in s.layers if layer.role == "target"):
        kernel = max(kernel, 128)
    grid = checkpoint_alignment(s, p) if rules.checkpoint_grid else None
    if s.prefix_caching:
        kernel = math.lcm(kernel, grid or 1)
    aligned = kernel * -(-state // (kernel * per_token))
    aligned = backend_align * -(-aligned // backend_align)
    adjusted = block < aligned
    before = block
    if adjusted:
        block = aligned
        reason = (
            f"hybrid alignment (_align_hybrid_block_size): {block} tokens x {per_token} B "
            f"per token is the smallest attention page that holds a {state}-byte Mamba "
            f"state in multiples of {kernel} tokens"
            + (f" (prefill checkpoint grid {grid})" if grid else "")
            + f"; {reason} gave {before}"
        )
        rejecting = [
            b.name for b in names if not supports_block_size(b.name, block, m, sizes_of(b))
        ]
        if rejecting and rules.hybrid_over_backends:
            raise AlignedBlockSizeUnsupported(block, rejecting)
    page = block * per_token
    padded = page if page != state else None
    if s.prefix_caching:
        mamba_block = block
        mamba_reason = (
            f"Mamba blocks follow B with prefix caching (mamba_cache_mode=align): {block}"
        )
    else:
        mamba_block = s.max_model_len or block
        mamba_reason = (
            f"without prefix caching a Mamba block holds a whole request "
            f"(mamba_block_size = max_model_len = {mamba_block})"
        )
    plan = BlockPlan(
        block_size=block,
        reason=reason,
        mamba_block_size=mamba_block,
        mamba_reason=mamba_reason,
        mamba_page_padded=padded,
        checkpoint_alignment=grid,
    )
    return plan, adjusted
