"""What the hooks read off vLLM's objects, and the vLLM functions they ask.

The only module of the hooks that knows vLLM's internal attributes: attention groups
(``vllm/v1/worker/utils.py:AttentionGroup``), KV-cache configs and specs
(``vllm/v1/kv_cache_interface.py``), the runners' kernel block sizes and speculators
(``vllm/v1/worker/gpu/model_runner.py``, ``vllm/v1/worker/gpu_model_runner.py``). Every
import of vLLM is inside a function: importing ``hooks`` stays free.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kvconfig.hooks._session import Session
from kvconfig.mirror.catalog import SizeContext
from kvconfig.mirror.dispatch import SpecClass, held_kernel_block_size
from kvconfig.mirror.platform import PlatformId, trtllm_capable, trtllm_usable
from kvconfig.schemas.sizes import KernelSize, MultipleOf


def real_prepare(kv_cache_config: Any, attn_groups: Any) -> list[int]:
    """vLLM's own ``prepare_kernel_block_sizes`` (``vllm/v1/worker/utils.py``)."""
    from vllm.v1.worker import utils

    return list(utils.prepare_kernel_block_sizes(kv_cache_config, attn_groups))


def flat(groups: Iterable[Any]) -> list[Any]:
    """Attention groups given per KV-cache group (lists) or flat (a V1 drafter's)."""
    out: list[Any] = []
    for g in groups:
        if isinstance(g, list | tuple):
            out.extend(g)
        else:
            out.append(g)
    return out


def actual_k(group: Any) -> int:
    """The kernel block size an attention group reads with (None in vLLM means B)."""
    k = held_kernel_block_size(group)
    return k if k is not None else int(group.kv_cache_spec.block_size)


def narrows() -> bool:
    """Whether ``create_metadata_builders`` narrows the runner's value per backend (the
    releases whose vote takes the layers' specs); in older ones every builder of a group
    takes the group's value."""
    import inspect

    from vllm.v1.worker import utils

    return "kv_cache_specs" in inspect.signature(utils.select_common_block_size).parameters


def expected_k(group: Any, sizes: Sequence[int]) -> int:
    """What ``AttentionGroup.create_metadata_builders`` makes of the runner's value."""
    from vllm.v1.kv_cache_interface import AttentionSpec
    from vllm.v1.worker import utils

    spec = group.kv_cache_spec
    gid = group.kv_cache_group_id
    if gid >= len(sizes) or not isinstance(spec, AttentionSpec):
        return int(spec.block_size)
    if not narrows():
        return int(sizes[gid])
    try:
        return int(utils.select_common_block_size(sizes[gid], [group.backend], [spec]))
    except ValueError:
        return int(sizes[gid])


def declared(group: Any) -> list[Any]:
    """The sizes a group's backend declares as the runner's vote asks: for its layer spec,
    or without one where the vote passes none (:func:`narrows`: the older releases, some
    of whose backends take no argument)."""
    try:
        if narrows():
            return list(group.backend.get_supported_kernel_block_sizes(group.kv_cache_spec))
        return list(group.backend.get_supported_kernel_block_sizes())
    except Exception:
        return []


def backend_text(group: Any) -> str:
    """``FLASHINFER [16, 32, 64]``."""
    sizes = ", ".join(repr(s) for s in declared(group))
    return f"{group.backend.get_name()} [{sizes}]"


def describe(kv_cache_config: Any, gid: int, groups: Iterable[Any]) -> tuple[list[str], list[str]]:
    """A KV-cache group's layers, and its backends with their sizes, for a message."""
    layers = list(kv_cache_config.kv_cache_groups[gid].layer_names)
    backends = dict.fromkeys(backend_text(g) for g in groups if g.kv_cache_group_id == gid)
    return layers, list(backends)


#: vLLM spec class -> kvconfig layer kind (the most specific class in the MRO wins).
KIND_BY_SPEC = {
    "EncoderOnlyAttentionSpec": "encoder_only_attention",
    "CrossAttentionSpec": "cross_attention",
    "SlidingWindowMLASpec": "sliding_window_mla",
    "MLAAttentionSpec": "mla_attention",
    "SlidingWindowSpec": "sliding_window",
    "ChunkedLocalAttentionSpec": "chunked_local",
    "MambaSpec": "mamba",
    "FullAttentionSpec": "full_attention",
}


def spec_kind(spec: Any) -> str:
    """The ``schemas.deployment.LayerKind`` of a vLLM KV-cache spec."""
    for cls in type(spec).__mro__:
        if cls.__name__ in KIND_BY_SPEC:
            return KIND_BY_SPEC[cls.__name__]
    return "full_attention"


def class_path(cls: type) -> str:
    """``module.QualName`` (vLLM's ``full_cls_name`` joined)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def lookup_chain(cls: type) -> tuple[str, ...]:
    """The class, then its bases up to the one that defines its size method: they all
    declare the same sizes (dynamic subclasses such as FastPrefill inherit them)."""
    chain = []
    for base in cls.__mro__:
        chain.append(class_path(base))
        if "get_supported_kernel_block_sizes" in base.__dict__:
            break
    return tuple(chain)


def to_sizes(raw: Sequence[Any]) -> tuple[KernelSize, ...]:
    """vLLM's ``[16, MultipleOf(64)]`` as kvconfig sizes."""
    out: list[KernelSize] = []
    for s in raw:
        if isinstance(s, int) and not isinstance(s, bool):
            out.append(s)
        elif isinstance(getattr(s, "base", None), int):
            out.append(MultipleOf(int(s.base)))
    return tuple(out)


class Facts:
    """Platform and model facts the catalog's size rules read, asked of vLLM once."""

    def __init__(self, vllm_config: Any) -> None:
        from vllm.platforms import current_platform as p

        self._fa: dict[tuple[int, int], int | None] = {}
        self.vendor = next(
            (
                name
                for name, probe in (
                    ("cuda", p.is_cuda),
                    ("rocm", p.is_rocm),
                    ("xpu", p.is_xpu),
                    ("cpu", p.is_cpu),
                )
                if probe()
            ),
            "unknown",
        )
        cap = p.get_device_capability()
        self.capability = None if cap is None else (int(cap.major), int(cap.minor))
        self.gqa, self.heads = False, (0, 0)
        try:
            mc, pc = vllm_config.model_config, vllm_config.parallel_config
            q, kv = int(mc.get_num_attention_heads(pc)), int(mc.get_num_kv_heads(pc))
            self.gqa, self.heads = kv > 0 and q // kv > 1, (q, kv)
        except Exception:
            pass
        self.trtllm = _trtllm(vllm_config, self.capability, self.heads)
        cache = getattr(getattr(vllm_config, "cache_config", None), "cache_dtype", None)
        self.cache_dtype = str(cache) if cache is not None else "auto"
        """``--kv-cache-dtype``: the name a catalog rule's ``cache_dtype`` tests (only
        releases whose vote asks without a spec have such rules, and there every backend
        reads the model's cache dtype)."""

    @property
    def platform(self) -> PlatformId:
        """The platform as kvconfig names it."""
        if self.capability is None:
            return PlatformId(self.vendor, self.vendor, None)
        return PlatformId(
            f"sm{self.capability[0]}{self.capability[1]}", self.vendor, self.capability
        )

    def fa_version(self, head_size: int, head_size_v: int) -> int | None:
        """vLLM's ``get_flash_attn_version`` for this head geometry."""
        key = (head_size, head_size_v)
        if key not in self._fa:
            self._fa[key] = self._ask_fa_version(head_size, head_size_v)
        return self._fa[key]

    def _ask_fa_version(self, head_size: int, head_size_v: int) -> int | None:
        if self.vendor not in ("cuda", "xpu"):
            return None
        try:
            from vllm.v1.attention.backends.fa_utils import get_flash_attn_version

            v = get_flash_attn_version(
                head_size=head_size, head_size_v=head_size_v, supports_fa4_hd256=True
            )
        except Exception:
            return None
        return None if v is None else int(v)

    def context(self, spec: Any) -> SizeContext:
        """The size rules' facts for one layer spec."""
        head = int(getattr(spec, "head_size", 0) or 0)
        head_v = getattr(spec, "head_size_v", None)
        head_v = head if head_v is None else int(head_v)
        quant = getattr(spec, "kv_quant_mode", None)
        tps = getattr(spec, "tokens_per_state", 1)
        return SizeContext(
            vendor=self.vendor,
            capability_major=None if self.capability is None else self.capability[0],
            kv_quant="none" if quant is None else str(quant.name).lower(),
            head_size=head,
            head_size_v=head_v,
            gqa=self.gqa,
            trtllm=self.trtllm,
            fa_version=self.fa_version(head, head_v),
            tokens_per_state=int(tps) if isinstance(tps, int) and tps > 1 else 1,
            cache_dtype=self.cache_dtype,
        )


def _trtllm(vllm_config: Any, capability: tuple[int, int] | None, heads: tuple[int, int]) -> bool:
    """``can_use_trtllm_attention`` as kvconfig's resolver computes it
    (``kvconfig.mirror.platform.trtllm_usable``), from what this engine runs with:
    ``attention-config.use_trtllm_attention``, ``VLLM_BATCH_INVARIANT`` and whether
    FlashInfer's cubins can be fetched (``has_nvidia_artifactory``, asked only on a
    device that has TRTLLM kernels)."""
    try:
        from vllm import envs

        batch_invariant = bool(envs.VLLM_BATCH_INVARIANT)
        use = getattr(getattr(vllm_config, "attention_config", None), "use_trtllm_attention", None)
        cubins = False
        if trtllm_capable(capability):
            from vllm.utils.flashinfer import has_nvidia_artifactory

            cubins = bool(has_nvidia_artifactory())
    except Exception:
        return False
    return trtllm_usable(
        capability=capability,
        num_heads=heads[0],
        num_kv_heads=heads[1],
        use_trtllm_attention=use,
        cubins=cubins,
        batch_invariant=batch_invariant,
    )


def spec_class(group_spec: Any) -> tuple[Any, SpecClass, bool]:
    """The spec ``prepare_kernel_block_sizes`` dispatches on (the first layer spec of a
    ``UniformTypeKVCacheSpecs``), its class as ``kvconfig.mirror.dispatch`` names it, and
    whether it has per-layer views."""
    from vllm.v1.kv_cache_interface import (
        AttentionSpec,
        EncoderOnlyAttentionSpec,
        MambaSpec,
        UniformTypeKVCacheSpecs,
    )

    spec = group_spec
    if isinstance(spec, UniformTypeKVCacheSpecs):
        spec = next(iter(spec.kv_cache_specs.values()))
    views = bool(getattr(spec, "has_layer_views", True))
    if isinstance(spec, EncoderOnlyAttentionSpec):
        return spec, "encoder_only", views
    if isinstance(spec, AttentionSpec):
        return spec, "attention", views
    if isinstance(spec, MambaSpec):
        return spec, "mamba", views
    return spec, "other", views


def packed(kv_cache_config: Any, layer_names: Sequence[str]) -> bool:
    names = set(layer_names)
    return any(
        t.block_stride > t.layer_stride
        for t in kv_cache_config.kv_cache_tensors
        if names.intersection(t.layers)
    )


def speculator_of(session: Session) -> tuple[Any, list[Any], set[str], str]:
    """(speculator or drafter, its attention groups, its layer names, how to name it)."""
    runner = session.runner
    if session.version == "v2":
        from vllm.v1.worker.gpu.spec_decode.speculator import DraftModelSpeculator

        sp = getattr(runner, "speculator", None)
        if not isinstance(sp, DraftModelSpeculator):
            return None, [], set(), ""
        return (
            sp,
            flat(getattr(sp, "attn_groups", None) or []),
            set(getattr(sp, "draft_attn_layer_names", set())),
            f"speculator {type(sp).__name__}",
        )
    dr = getattr(runner, "drafter", None)
    groups = getattr(dr, "draft_attn_groups", None)
    if dr is None or groups is None:
        return None, [], set(), ""
    names = set(getattr(dr, "_draft_attn_layer_names", set()) or set())
    return dr, flat(groups), names, f"Model Runner V1 drafter {type(dr).__name__}"


def held_sizes(session: Session) -> list[int]:
    """The kernel block sizes the runner holds (it allocated the KV cache with them)."""
    runner = session.runner
    held = getattr(
        runner, "kernel_block_sizes" if session.version == "v2" else "_kernel_block_sizes", None
    )
    if held is None:
        return real_prepare(runner.kv_cache_config, runner.attn_groups)
    return [int(k) for k in held]
