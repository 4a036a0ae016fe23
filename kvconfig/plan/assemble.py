"""Assembling a deployment's layers into KV-cache groups.

Each layer set, once its backend is chosen, is a ``LayerInfo``; each layer then gets the
spec vLLM's layer would report (``kvconfig.mirror.specs.layer_spec``) and the engine
core's grouping runs on those specs (``kvconfig.mirror.grouping``): one group for
uniform models, several for hybrid ones (sliding window + full attention, Mamba +
attention), with the block size each group ends up with. Native files may number the
groups themselves instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from kvconfig.errors import InputError
from kvconfig.mirror.grouping import SpecGroup, bytes_per_block, group_specs
from kvconfig.mirror.platform import PlatformId
from kvconfig.mirror.specs import BlockPlan, layer_spec, mla_cache_dtype
from kvconfig.mirror.vote import Declared
from kvconfig.plan.result import LayerInfo, Voter
from kvconfig.schemas.deployment import Deployment, LayerSet

#: Spec kinds that ``UniformTypeKVCacheSpecs`` treats as one base type (FullAttentionSpec).
FULL_FAMILY = frozenset({"full_attention", "mla_attention", "sparse_mla", "indexer"})

#: ``VLLM_KV_CACHE_LAYOUT`` legacy names (``_layout_from_name``).
LAYOUT_ALIASES = {"NHD": "LBNHC", "HND": "LBHNC"}


class Group(NamedTuple):
    """A KV-cache group before the vote."""

    id: int
    kind: str
    block_size: int
    block_size_reason: str
    runs: tuple[tuple[LayerInfo, tuple[str, ...]], ...]
    """The group's layers in vLLM's order, as runs of consecutive layers of one layer set."""
    packed: bool = False


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


def canonical_cache_dtype(layer: LayerSet, backend: str, dep: Deployment, major: int | None) -> str:
    """The cache dtype a layer ends with on ``backend``."""
    kv = layer.kv_cache_dtype or dep.kv_cache_dtype
    if layer.kind == "sparse_mla":
        return mla_cache_dtype(backend, kv, major)
    return kv


def block_outermost(dep: Deployment) -> bool:
    """Whether ``VLLM_KV_CACHE_LAYOUT`` puts blocks outermost (vLLM's default never does)."""
    layout = dep.kv_cache_layout
    if not layout:
        return False
    return LAYOUT_ALIASES.get(layout.upper(), layout.upper()).startswith("B")


def make_groups(
    dep: Deployment, platform: PlatformId, layers: Sequence[LayerInfo], plan: BlockPlan
) -> list[Group]:
    """The KV-cache groups of a deployment; raises GroupingError where vLLM fails."""
    if any(info.layer.group is not None for info in layers):
        return _explicit(dep, layers, plan.block_size, plan.reason)
    members = [(info, name) for info in layers for name in info.layer.names()]
    by_name = {name: info for info, name in members}
    specs = {}
    for info, name in members:
        if info.layer.kind == "encoder_only_attention":
            continue
        specs[name] = layer_spec(
            info.layer,
            info.display_name(),
            info.cache_dtype,
            info.spec_sizes or info.sizes,
            dep,
            platform.major,
            plan,
        )
    outer = block_outermost(dep)
    spec_groups = group_specs(
        specs, disable_hybrid=dep.disable_hybrid_kv_cache_manager, block_outermost=outer
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
    )


def _explicit(
    dep: Deployment,
    layers: Sequence[LayerInfo],
    block_size: int,
    reason: str,
) -> list[Group]:
    by_id: dict[int, list[tuple[LayerInfo, tuple[str, ...]]]] = {}
    for info in layers:
        l = info.layer
        assert l.group is not None
        by_id.setdefault(l.group, []).append((info, l.names()))
    settings = {g.id: g for g in dep.groups}
    unknown = sorted(set(settings) - set(by_id))
    if unknown:
        raise InputError(
            f"group {unknown[0]} has settings but no layers",
            source=dep.source,
            key="groups",
            hint="remove it or give layers that group id",
        )
    ids = sorted(by_id)
    if ids != list(range(len(ids))):
        raise InputError(
            f"group ids must be 0..{len(ids) - 1} without gaps, got {ids}",
            source=dep.source,
            key="layers.group",
            hint="number the groups 0, 1, 2, ... as vLLM does",
        )
    groups = []
    for gid in ids:
        rows = by_id[gid]
        if len({_base_type(i.layer) for i, _ in rows}) != 1:
            kinds = sorted({i.layer.kind for i, _ in rows})
            raise InputError(
                f"group {gid} mixes spec kinds {kinds}",
                source=dep.source,
                key="layers.group",
                hint="vLLM never puts different spec types in one group; split it",
            )
        cfg = settings.get(gid)
        if cfg is None:
            groups.append(Group(gid, rows[0][0].layer.kind, block_size, reason, tuple(rows)))
            continue
        own = cfg.block_size
        groups.append(
            Group(
                gid,
                rows[0][0].layer.kind,
                own if own is not None else block_size,
                f"groups[{gid}].block_size" if own else reason,
                tuple(rows),
                packed=cfg.packed,
            )
        )
    return groups


AttentionRun = tuple[LayerInfo, set[str], list[str]]
"""One attention group being collected: its first layer set, the roles, the layer names."""


def attention_groups(group: Group, roles: frozenset[str]) -> list[AttentionRun]:
    """vLLM's attention groups of a KV-cache group's layers of ``roles``: one per (backend
    class, layer spec, heads per rank), in layer order (``AttentionGroup``'s key in both
    runners' ``initialize_attn_backend``)."""
    found: dict[tuple[object, ...], AttentionRun] = {}
    for info, names in group.runs:
        role = info.layer.role
        if role not in roles:
            continue
        key = info.attention_key
        run = found.get(key)
        if run is None:
            found[key] = (info, {role}, list(names))
        else:
            run[1].add(role)
            run[2].extend(names)
    return list(found.values())


def declared(runs: list[AttentionRun]) -> list[Declared]:
    """The attention groups as the vote sees them: each one's backend name and sizes."""
    return [(info.display_name(), info.sizes) for info, _, _ in runs]


def voter(run: AttentionRun, kernel_block_size: int | None = None) -> Voter:
    """The plan's record of one attention group."""
    info, roles, names = run
    return Voter(
        info.display_name(),
        info.class_path,
        info.sizes,
        frozenset(roles),
        tuple(names),
        kernel_block_size,
    )


def voters_of(group: Group, roles: frozenset[str]) -> list[Voter]:
    """``attention_groups`` as the plan's records."""
    return [voter(run) for run in attention_groups(group, roles)]
