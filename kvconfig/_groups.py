"""KV-cache groups: which layers share block tables, as vLLM 0.33.0 forms them.

Mirrors ``get_kv_cache_groups`` in ``vllm/v1/core/kv_cache_planning.py`` for the
layouts kvconfig derives: one group when every layer has the same spec, or the
same spec *type* (``UniformTypeKVCacheSpecs``: a drafter on another backend, with
other heads or another KV dtype, still shares the target's group in a dense model).
Native files may also number the groups themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvconfig._catalog import Entry
from kvconfig._select import Selection
from kvconfig._setup import LayerSet, Setup
from kvconfig.errors import InputError
from schemas.sizes import KernelSize

#: Spec kinds that ``UniformTypeKVCacheSpecs`` treats as one base type (FullAttentionSpec).
FULL_FAMILY = frozenset({"full_attention", "mla_attention", "sparse_mla", "indexer"})


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

    def spec_key(self) -> tuple[object, ...]:
        """What makes two layers' KV-cache specs equal."""
        l = self.layer
        return (
            l.kind,
            l.num_kv_heads,
            l.head_size,
            l.head_size_v,
            l.dtype,
            l.kv_cache_dtype,
            l.sliding_window,
            l.tokens_per_state,
        )

    def display_name(self) -> str:
        """The backend's vLLM name (``get_name()``)."""
        if self.entry is not None:
            return self.entry.name
        return self.backend_name or "?"


@dataclass(frozen=True, slots=True)
class Group:
    """A KV-cache group before the vote."""

    id: int
    kind: str
    block_size: int
    block_size_reason: str
    members: tuple[tuple[LayerInfo, str], ...]
    packed: bool = False
    has_layer_views: bool = True


def _base_type(layer: LayerSet) -> tuple[object, ...]:
    if layer.kind in FULL_FAMILY:
        return ("full",)
    if layer.kind == "sliding_window":
        return ("sliding_window", layer.sliding_window)
    return (layer.kind,)


def make_groups(
    setup: Setup, layers: Sequence[LayerInfo], block_size: int, reason: str
) -> list[Group]:
    """The KV-cache groups of a deployment."""
    members = [(info, name) for info in layers for name in info.layer.names()]
    if any(info.layer.group is not None for info in layers):
        return _explicit(setup, members, block_size, reason)
    attention = [(i, n) for i, n in members if i.layer.kind not in ("encoder_only_attention",)]
    types = {_base_type(i.layer) for i, _ in attention}
    if len(types) != 1:
        raise InputError(
            "this model mixes KV-cache spec types ("
            + ", ".join(sorted({i.layer.kind for i, _ in attention}))
            + "), which needs explicit groups",
            source=setup.source,
            key="layers",
            hint="give every layer set a 'group' id in a native kvconfig file",
        )
    kind = attention[0][0].layer.kind
    return [Group(0, kind, block_size, reason, tuple(attention))]


def _explicit(
    setup: Setup,
    members: list[tuple[LayerInfo, str]],
    block_size: int,
    reason: str,
) -> list[Group]:
    by_id: dict[int, list[tuple[LayerInfo, str]]] = {}
    for info, name in members:
        assert info.layer.group is not None
        by_id.setdefault(info.layer.group, []).append((info, name))
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
