"""KV-cache groups: which layers share block tables, as vLLM forms them.

Each layer gets the spec vLLM's layer would report (``_specs``), then the engine
core's grouping runs on those specs (``_grouping``): one group for uniform models,
several for hybrid ones (sliding window + full attention, Mamba + attention), with
the block size each group ends up with. Native files may number the groups
themselves instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kvconfig.derive.common import per_rank
from kvconfig.errors import InputError
from kvconfig.mirror.catalog import Entry
from kvconfig.mirror.grouping import SpecGroup, bytes_per_block, group_specs
from kvconfig.mirror.platform import kv_quant
from kvconfig.mirror.selection import Selection
from kvconfig.mirror.specs import (
    DS_MLA_BYTES,
    Spec,
    customize,
    dtype_bytes,
    largest_kernel_block_within,
    mla_cache_dtype,
    torch_dtype,
)
from kvconfig.plan.setup import LayerSet, Setup, expand_names
from schemas.sizes import KernelSize

#: Spec kinds that ``UniformTypeKVCacheSpecs`` treats as one base type (FullAttentionSpec).
FULL_FAMILY = frozenset({"full_attention", "mla_attention", "sparse_mla", "indexer"})

#: kvconfig layer kinds whose vLLM layer is an ``MLAAttention``.
MLA_KINDS = frozenset({"mla_attention", "sliding_window_mla", "sparse_mla"})

V32_INDEXER_NAME = "DEEPSEEK_V32_INDEXER"

#: ``VLLM_KV_CACHE_LAYOUT`` legacy names (``_layout_from_name``).
LAYOUT_ALIASES = {"NHD": "LBNHC", "HND": "LBHNC"}


@dataclass(frozen=True, slots=True)
class LayerInfo:
    """A layer set with its backend and declared sizes."""

    index: int
    layer: LayerSet
    selection: Selection
    entry: Entry | None
    backend_name: str | None
    class_path: str
    sizes: tuple[KernelSize, ...]
    heads_per_rank: int
    cache_dtype: str = "auto"
    """The cache dtype the layer uses (sparse MLA may canonicalise ``fp8`` to ``fp8_ds_mla``)."""

    def spec_key(self) -> tuple[object, ...]:
        """What makes two layers' KV-cache specs equal."""
        l = self.layer
        return (
            l.kind,
            l.num_kv_heads,
            l.head_size,
            l.head_size_v,
            l.dtype,
            self.cache_dtype,
            l.sliding_window,
            l.tokens_per_state,
            l.state_bytes,
        )

    def display_name(self) -> str:
        """The backend's vLLM name (``get_name()``)."""
        if self.entry is not None:
            return self.entry.name
        return self.backend_name or "?"


@dataclass(frozen=True, slots=True)
class BlockPlan:
    """The block sizes vLLM settles on before it builds the specs."""

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


@dataclass(frozen=True, slots=True)
class Group:
    """A KV-cache group before the vote."""

    id: int
    kind: str
    block_size: int
    block_size_reason: str
    runs: tuple[tuple[LayerInfo, tuple[str, ...]], ...]
    """The group's layers in vLLM's order, as runs of consecutive layers of one layer set."""
    packed: bool = False
    has_layer_views: bool = True
    specs: Mapping[str, Spec] = field(default_factory=dict, compare=False)

    @property
    def members(self) -> list[tuple[LayerInfo, str]]:
        """Every layer with its layer set."""
        return [(info, name) for info, names in self.runs for name in names]


def runs_of(
    members: Sequence[tuple[LayerInfo, str]],
) -> tuple[tuple[LayerInfo, tuple[str, ...]], ...]:
    """Consecutive layers of the same layer set, merged into runs."""
    runs: list[tuple[LayerInfo, list[str]]] = []
    for info, name in members:
        if runs and runs[-1][0] is info:
            runs[-1][1].append(name)
        else:
            runs.append((info, [name]))
    return tuple((info, tuple(names)) for info, names in runs)


def _base_type(layer: LayerSet) -> tuple[object, ...]:
    if layer.kind in FULL_FAMILY:
        return ("full",)
    if layer.kind == "sliding_window":
        return ("sliding_window", layer.sliding_window)
    return (layer.kind,)


def layer_spec(info: LayerInfo, setup: Setup, plan: BlockPlan) -> Spec:
    """The spec vLLM's layer reports, after ``customize_attention_spec``."""
    l = info.layer
    p = setup.platform
    major = p.major if p is not None else None
    B = plan.block_size
    if l.kind == "mamba":
        checkpoint = (1, 1) if l.mamba_type == "mamba2" else (0, None)
        if l.mamba_type == "gdn_attention" and plan.checkpoint_alignment is not None:
            checkpoint = (1, plan.checkpoint_alignment)
        mode = "align" if setup.prefix_caching else "none"
        return Spec(
            "mamba",
            plan.mamba_block_size or B,
            content=l.state_bytes or 0,
            padded=plan.mamba_page_padded,
            fields=(l.mamba_type, mode, setup.num_speculative_tokens, *checkpoint),
        )
    name = info.display_name()
    kv = info.cache_dtype
    if l.kind in MLA_KINDS:
        dtype = torch_dtype(l.kind, kv, l.dtype)
        content = DS_MLA_BYTES.get(kv) or l.head_size * dtype_bytes(dtype)
        sparse = l.kind == "sparse_mla"
        topk = setup.model_facts.get("index_topk") if sparse else None
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
        heads = per_rank(l.num_kv_heads, setup.tensor_parallel_size)
        hv = l.head_size_v or l.head_size
        dtype = torch_dtype(l.kind, kv, l.dtype)
        content = (l.head_size + hv) * dtype_bytes(dtype)
        fields = (l.head_size, hv, dtype, kv_quant(kv), None)
        if l.kind == "sliding_window":
            per_token = heads * content
            block = largest_kernel_block_within(info.sizes, per_token, per_token * B, B)
            spec = Spec(
                "sliding_window", block, heads, content, window=l.sliding_window, fields=fields
            )
        else:
            spec = Spec("full", B, heads, content, l.tokens_per_state, fields=fields)
    return customize(spec, name, info.sizes, major, kv_quant(kv) != "none")


def canonical_cache_dtype(layer: LayerSet, backend: str, setup: Setup) -> str:
    """The cache dtype a layer ends with on ``backend``."""
    kv = layer.kv_cache_dtype or setup.kv_cache_dtype
    if layer.kind == "sparse_mla":
        major = setup.platform.major if setup.platform is not None else None
        return mla_cache_dtype(backend, kv, major)
    return kv


def block_outermost(setup: Setup) -> bool:
    """Whether ``VLLM_KV_CACHE_LAYOUT`` puts blocks outermost (vLLM's default never does)."""
    layout = setup.kv_cache_layout
    if not layout:
        return False
    return LAYOUT_ALIASES.get(layout.upper(), layout.upper()).startswith("B")


def make_groups(setup: Setup, layers: Sequence[LayerInfo], plan: BlockPlan) -> list[Group]:
    """The KV-cache groups of a deployment; raises GroupingError where vLLM fails."""
    if any(info.layer.group is not None for info in layers):
        return _explicit(setup, layers, plan.block_size, plan.reason)
    members = [(info, name) for info in layers for name in info.layer.names()]
    by_name = {name: info for info, name in members}
    specs = {
        name: layer_spec(info, setup, plan)
        for info, name in members
        if info.layer.kind != "encoder_only_attention"
    }
    outer = block_outermost(setup)
    spec_groups = group_specs(
        specs, disable_hybrid=setup.disable_hybrid_kv_cache_manager, block_outermost=outer
    )
    packed_bytes = bytes_per_block(spec_groups) if outer and spec_groups else 0
    groups = []
    for gid, sg in enumerate(spec_groups):
        groups.append(_group(gid, sg, by_name, plan, packed_bytes))
    return groups


def _group(
    gid: int, sg: SpecGroup, by_name: Mapping[str, LayerInfo], plan: BlockPlan, packed_bytes: int
) -> Group:
    first = sg.specs[sg.layers[0]]
    if first.cls == "mamba":
        reason = plan.mamba_reason or plan.reason
    elif sg.block_size != plan.block_size:
        reason = (
            f"{plan.reason}; this group's pages are scaled to the largest page "
            f"(unify_kv_cache_spec_page_size): {sg.block_size} tokens"
        )
    else:
        reason = plan.reason
    packed = packed_bytes > 0 and any(packed_bytes > sg.specs[n].page for n in sg.layers)
    return Group(
        gid,
        sg.kind,
        sg.block_size,
        reason,
        runs_of([(by_name[n], n) for n in sg.layers]),
        packed=packed,
        has_layer_views=True,
        specs=dict(sg.specs),
    )


def _explicit(
    setup: Setup,
    layers: Sequence[LayerInfo],
    block_size: int,
    reason: str,
) -> list[Group]:
    by_id: dict[int, list[tuple[LayerInfo, tuple[str, ...]]]] = {}
    for info in layers:
        l = info.layer
        assert l.group is not None
        by_id.setdefault(l.group, []).append((info, expand_names(l.name, l.count, l.first_index)))
    settings = {g.id: g for g in setup.groups}
    unknown = sorted(set(settings) - set(by_id))
    if unknown:
        raise InputError(
            f"group {unknown[0]} has settings but no layers",
            source=setup.source,
            key="groups",
            hint="remove it or give layers that group id",
        )
    ids = sorted(by_id)
    if ids != list(range(len(ids))):
        raise InputError(
            f"group ids must be 0..{len(ids) - 1} without gaps, got {ids}",
            source=setup.source,
            key="layers.group",
            hint="number the groups 0, 1, 2, ... as vLLM does",
        )
    groups = []
    for gid in ids:
        rows = by_id[gid]
        kinds = sorted({i.layer.kind for i, _ in rows})
        bases = {_base_type(i.layer) for i, _ in rows}
        if len(bases) != 1:
            raise InputError(
                f"group {gid} mixes spec kinds {kinds}",
                source=setup.source,
                key="layers.group",
                hint="vLLM never puts different spec types in one group; split it",
            )
        cfg = settings.get(gid)
        b = cfg.block_size if cfg is not None and cfg.block_size is not None else block_size
        why = f"groups[{gid}].block_size" if cfg is not None and cfg.block_size else reason
        groups.append(
            Group(
                gid,
                rows[0][0].layer.kind,
                b,
                why,
                tuple(rows),
                packed=cfg.packed if cfg is not None else False,
                has_layer_views=True,
            )
        )
    return groups
