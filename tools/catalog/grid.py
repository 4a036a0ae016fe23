"""The grid of emulated platforms and deployments every backend class is evaluated on.

Each point fixes what vLLM's backend code can read while it declares kernel-page
sizes: the platform (vendor, compute capability), the layer's spec (its family, head
sizes, KV-cache dtype and so its ``KVQuantMode``, tokens per state) and the current
vLLM config (the target's heads, ``attention_config.use_trtllm_attention`` and
``flash_attn_version``, TRTLLM cubins, ``VLLM_BATCH_INVARIANT``).

For every point the facts kvconfig computes itself (:mod:`kvconfig.mirror.platform`: the
FlashAttention version, TRTLLM usability, the KV quantization mode) are checked
against what vLLM computes under the same emulation, so the rules learned over
those facts mean the same thing at run time.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kvconfig.mirror.catalog import SizeContext, size_context
from kvconfig.schemas.sizes import KernelSize, MultipleOf
from tools.catalog import emulate

PLATFORMS: tuple[tuple[str, tuple[int, int] | None], ...] = (
    *(
        ("cuda", cap)
        for cap in (
            (7, 5),
            (8, 0),
            (8, 6),
            (8, 9),
            (9, 0),
            (10, 0),
            (10, 3),
            (11, 0),
            (12, 0),
            (12, 1),
        )
    ),
    ("rocm", (9, 4)),
    ("rocm", (9, 5)),
    ("xpu", None),
    ("cpu", None),
    ("unspecified", None),
)
"""Vendors and capabilities; XPU and CPU report no capability in vLLM."""

HEADS = ((32, 8), (16, 16))
"""The target's per-rank (query, KV) heads: GQA and MHA."""

ATTENTION_HEADS = (
    (64, 64),
    (80, 80),
    (128, 128),
    (192, 128),
    (256, 256),
    (256, 128),
    (512, 512),
    (576, 576),
)
"""(head_size, head_size_v) for standard attention; 80 stands for any other size."""

MLA_HEADS = ((80, 0), (128, 0), (512, 0), (576, 0))
"""MLA latent head sizes (``MLAAttentionSpec.head_size_v`` is 0)."""

SWITCHES: tuple[tuple[bool | None, bool, int | None, bool], ...] = (
    (False, True, None, False),
    (None, False, None, False),
    (None, True, 2, False),
    (None, True, 3, False),
    (None, True, 4, False),
    (None, True, None, True),
)
"""(use_trtllm_attention, cubins installed, forced flash_attn_version, batch invariant)."""

BASE_SWITCH: tuple[bool | None, bool, int | None, bool] = (None, True, None, False)

TOKENS_PER_STATE = (4, 16)
"""Compressed-cache ratios tried besides 1 (the Glm5Next indexer scales by it)."""


@dataclass(frozen=True)
class Point:
    """One emulated platform, layer and deployment."""

    vendor: str
    capability: tuple[int, int] | None
    cache_dtype: str
    head_size: int
    head_size_v: int
    heads: tuple[int, int]
    use_trtllm_attention: bool | None
    cubins: bool
    flash_attn_version: int | None
    batch_invariant: bool
    tokens_per_state: int = 1


def _mla(family: str) -> bool:
    return family in ("mla", "sparse_mla", "indexer", "sliding_window_mla")


def cache_dtypes() -> list[str]:
    """vLLM's ``CacheDType`` values (``vllm/config/cache.py``)."""
    from typing import get_args

    from vllm.config.cache import CacheDType

    return list(get_args(CacheDType))


def points(family: str) -> Iterator[Point]:
    """The grid for the backends of one layer family, in a fixed order."""
    heads_hv: tuple[tuple[int, int], ...] = MLA_HEADS if _mla(family) else ATTENTION_HEADS
    if family == "state":
        heads_hv = ((128, 128),)
    dtypes = cache_dtypes()
    seen: set[Point] = set()

    def emit(p: Point) -> Iterator[Point]:
        if p not in seen:
            seen.add(p)
            yield p

    for (vendor, cap), dtype, (hs, hv), heads in itertools.product(
        PLATFORMS, dtypes, heads_hv, HEADS
    ):
        yield from emit(Point(vendor, cap, dtype, hs, hv, heads, *BASE_SWITCH))
    for (vendor, cap), dtype, (hs, hv), heads, sw in itertools.product(
        PLATFORMS, ("auto", "fp8"), heads_hv, HEADS, SWITCHES
    ):
        yield from emit(Point(vendor, cap, dtype, hs, hv, heads, *sw))
    for (vendor, cap), dtype, (hs, hv), tps in itertools.product(
        PLATFORMS, ("auto", "fp8"), heads_hv, TOKENS_PER_STATE
    ):
        yield from emit(Point(vendor, cap, dtype, hs, hv, HEADS[0], *BASE_SWITCH, tps))


def emulation(p: Point, family: str) -> emulate.Emulation:
    """The emulator settings of a point (the config the backends may read)."""
    q, kv = p.heads
    return emulate.Emulation(
        vendor=p.vendor,
        capability=p.capability,
        num_heads=q,
        num_kv_heads=kv,
        head_size=p.head_size,
        cache_dtype=p.cache_dtype,
        use_trtllm_attention=p.use_trtllm_attention,
        flash_attn_version=p.flash_attn_version,
        cubins=p.cubins,
        batch_invariant=p.batch_invariant,
        use_mla=_mla(family),
        hf_extra={"index_kpool": p.tokens_per_state},
    )


def context(p: Point, family: str) -> SizeContext:
    """The facts kvconfig computes for a point, with kvconfig's own mirrors: the layer's,
    or where the release's vote asks without a spec, the target model's (its head size,
    no value head size, one token per state)."""
    q, kv = p.heads
    specs = vote_passes_specs()
    return size_context(
        vendor=p.vendor,
        capability=p.capability,
        layer_cache_dtype=p.cache_dtype,
        model_cache_dtype=p.cache_dtype,
        head_size=p.head_size,
        head_size_v=(p.head_size_v or None) if specs else None,
        target_heads=(q, 1 if _mla(family) else kv),
        use_trtllm_attention=p.use_trtllm_attention,
        cubins=p.cubins,
        batch_invariant=p.batch_invariant,
        flash_attn_version=p.flash_attn_version,
        tokens_per_state=p.tokens_per_state if specs else 1,
        release=installed_release(),
    )


@functools.cache
def installed_release() -> str | None:
    """The installed vLLM as a release kvconfig knows (None: another; the newest rules)."""
    import vllm

    from kvconfig.mirror import versions

    version = str(vllm.__version__).split("+")[0]
    return version if version in versions.KNOWN else None


def vllm_facts(p: Point, family: str) -> tuple[str, bool, int | None]:
    """(kv_quant, trtllm, fa_version) as vLLM computes them (inside the emulation)."""
    from vllm.utils.flashinfer import can_use_trtllm_attention
    from vllm.v1.attention.backends.fa_utils import get_flash_attn_version
    from vllm.v1.kv_cache_interface import get_kv_quant_mode

    q, kv = p.heads
    if _mla(family):
        kv = 1
    return (
        get_kv_quant_mode(p.cache_dtype).name.lower(),
        bool(can_use_trtllm_attention(q, kv)),
        get_flash_attn_version(
            head_size=p.head_size,
            head_size_v=(p.head_size_v or None) if vote_passes_specs() else None,
            supports_fa4_hd256=True,
        ),
    )


def spec(p: Point, family: str) -> Any:
    """A real vLLM spec of the layers the backend serves."""
    import torch
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        MambaSpec,
        MLAAttentionSpec,
        SlidingWindowMLASpec,
        get_kv_quant_mode,
    )

    mode = get_kv_quant_mode(p.cache_dtype)
    common: dict[str, Any] = {
        "block_size": 256,
        "head_size": p.head_size,
        "dtype": torch.bfloat16,
        "kv_quant_mode": mode,
        "tokens_per_state": p.tokens_per_state,
    }
    if family == "state":
        return MambaSpec(block_size=256, shapes=((4, 16),), dtypes=(torch.bfloat16,))
    if family == "sliding_window_mla":
        return SlidingWindowMLASpec(
            num_kv_heads=1, sliding_window=128, cache_dtype_str=p.cache_dtype, **common
        )
    if _mla(family):
        return MLAAttentionSpec(num_kv_heads=1, cache_dtype_str=p.cache_dtype, **common)
    return FullAttentionSpec(num_kv_heads=p.heads[1], head_size_v=p.head_size_v, **common)


def to_sizes(raw: Any) -> tuple[KernelSize, ...]:
    """vLLM's list of ints and ``MultipleOf(base)`` as kvconfig sizes."""
    out: list[KernelSize] = []
    for s in raw:
        if isinstance(s, bool):
            raise ValueError(f"unexpected size {s!r}")
        out.append(s if isinstance(s, int) else MultipleOf(int(s.base)))
    return tuple(out)


Sample = tuple[SizeContext, tuple[KernelSize, ...] | None]
"""A context and the sizes vLLM declared there (None: the layer was rejected)."""


@functools.cache
def vote_passes_specs() -> bool:
    """Whether the installed vLLM's vote (``select_common_block_size``) hands each backend
    its layers' spec; releases before it was added ask every backend without one."""
    from vllm.v1.worker.utils import select_common_block_size

    return "kv_cache_specs" in inspect.signature(select_common_block_size).parameters


def sizes_for(backend: Any, layer_spec: Any) -> tuple[KernelSize, ...] | None:
    """What vLLM's vote sees: sizes on the backend-customized spec (without a spec where
    the release's vote passes none); None if it rejects it."""
    from vllm.v1.kv_cache_interface import AttentionSpec

    try:
        if isinstance(layer_spec, AttentionSpec):
            layer_spec = backend.customize_spec(layer_spec)
        if not vote_passes_specs():
            return to_sizes(backend.get_supported_kernel_block_sizes())
        return to_sizes(backend.get_supported_kernel_block_sizes(layer_spec))
    except (ValueError, AssertionError, KeyError, NotImplementedError):
        return None


def evaluate_all(classes: Mapping[str, Any], serves: Mapping[str, str]) -> dict[str, list[Sample]]:
    """Every class on every point of the grid of the layers it serves."""
    out: dict[str, list[Sample]] = {path: [] for path in classes}
    mismatches: list[str] = []
    for family in sorted(set(serves.values())):
        members = sorted(p for p in classes if serves[p] == family)
        for p in points(family):
            ctx = context(p, family)
            with emulate.emulated(emulation(p, family)):
                real = vllm_facts(p, family)
                mine = (ctx.kv_quant, ctx.trtllm, ctx.fa_version)
                if real != mine and len(mismatches) < 20:
                    mismatches.append(f"{p}: vLLM {real}, kvconfig {mine}")
                layer_spec = spec(p, family)
                for path in members:
                    out[path].append((ctx, sizes_for(classes[path], layer_spec)))
    if mismatches:
        raise RuntimeError(
            "kvconfig's facts differ from vLLM's (kvconfig/mirror/platform.py):\n  "
            + "\n  ".join(mismatches)
        )
    return out
