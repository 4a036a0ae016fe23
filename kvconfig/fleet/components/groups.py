"""The plan's KV-cache groups and their voters, the model's facts, and the connector entries
of ``--kv-transfer-config``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kvconfig.fleet.model import Engine
from kvconfig.mirror import versions
from kvconfig.mirror.connectors.registry import (
    MOONCAKE_CONNECTORS,
    NIXL_CONNECTORS,
    OFFLOADING_CONNECTORS,
)
from kvconfig.mirror.connectors.stages import layer_index
from kvconfig.mirror.vote import Declared
from kvconfig.schemas.sizes import KernelSize, size_from_json

FULL_ATTENTION_KINDS = frozenset({"full_attention", "mla_attention", "sparse_mla", "indexer"})
"""Plan kinds whose vLLM specs are ``FullAttentionSpec`` (``is_full_attention_spec``)."""

MLA_KINDS = frozenset({"mla_attention", "sparse_mla", "sliding_window_mla", "indexer"})

LAYOUT_ALIASES = {"NHD": "LBNHC", "HND": "LBHNC"}
"""``VLLM_KV_CACHE_LAYOUT``'s legacy names (``v1/attention/backends/utils.py``)."""

DEFAULT_LAYOUT = "LBNHC"
"""The layout kvconfig assumes when neither the environment nor a connector asks for one."""

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


def kind_of(connector: str) -> str:
    """nixl, mooncake, offloading or other."""
    if connector in NIXL_CONNECTORS:
        return "nixl"
    if connector in MOONCAKE_CONNECTORS:
        return "mooncake"
    if connector in OFFLOADING_CONNECTORS:
        return "offloading"
    return "other"


def entries(kv: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The connectors of a ``--kv-transfer-config``; a MultiConnector's children in order
    (each a full config of its own, ``MultiConnector._get_connector_classes_and_configs``)."""
    if kv is None:
        return []
    if kv.get("kv_connector") == "MultiConnector":
        extra = kv.get("kv_connector_extra_config")
        chained = extra.get("connectors") if isinstance(extra, Mapping) else None
        return (
            [dict(c) for c in chained if isinstance(c, Mapping)]
            if isinstance(chained, list)
            else []
        )
    return [dict(kv)]


@dataclass(frozen=True)
class Group:
    """A KV-cache group of an engine's plan."""

    id: int
    kind: str
    block_size: int
    runner: int | None
    speculator: int | None
    packed: bool
    voters: tuple[tuple[str, tuple[KernelSize, ...], tuple[str, ...], str], ...]
    """(backend, declared sizes, layers, role) per attention group."""

    @property
    def state(self) -> bool:
        """A Mamba group: never split, transferred 1:1."""
        return self.kind == "mamba"

    @property
    def layers(self) -> list[str]:
        return [n for v in self.voters for n in v[2]]


def groups_of(plan: Mapping[str, Any]) -> list[Group]:
    """The groups of a plan JSON."""
    out = []
    for g in plan.get("groups") or ():
        voters = tuple(
            (
                str(b["name"]),
                tuple(size_from_json(s) for s in b.get("sizes") or ()),
                tuple(b.get("layers") or ()),
                str(b.get("role", "target")),
            )
            for b in g.get("backends") or ()
        )
        comps = g.get("components") or {}
        out.append(
            Group(
                int(g["id"]),
                str(g["kind"]),
                int(g["block_size"]),
                comps.get("runner", g.get("kernel_block_size")),
                comps.get("speculator"),
                bool(g.get("packed")),
                voters,
            )
        )
    return out


def _compressed(engine: Engine) -> frozenset[str]:
    """Layers whose caches are compressed (``tokens_per_state > 1``): the connectors'
    votes leave them out (``get_current_attn_backends_and_specs``)."""
    return frozenset(
        n for s in engine.deployment.layers if s.tokens_per_state > 1 for n in s.names()
    )


def connector_voters(engine: Engine, groups: Sequence[Group]) -> list[Declared]:
    """The (backend, sizes) pairs a connector's vote runs over, in layer order (every
    attention layer's where the release's connectors do not skip compressed caches)."""
    rules = versions.rules(engine.deployment.vllm_version)
    skip = _compressed(engine) if rules.connector_transfer_layers else frozenset()
    seen: dict[tuple[str, tuple[KernelSize, ...]], None] = {}
    for g in groups:
        for name, sizes, layers, _ in g.voters:
            if layers and all(n in skip for n in layers):
                continue
            seen[(name, sizes)] = None
    return list(seen)


def cache_block_size(engine: Engine, groups: Sequence[Group]) -> int:
    """``cache_config.block_size`` once the engine core has set it: the smallest
    prefix-cacheable group block size (``EngineCore._initialize_kv_caches``)."""
    sizes = [g.block_size for g in groups]
    if sizes:
        return min(sizes)
    return int(engine.deployment.block_size or 16)


def _model_facts(engine: Engine) -> tuple[int, int, str, int]:
    """(total KV heads, head size, dtype, hidden layers) of the target model."""
    layers = [s for s in engine.deployment.layers if s.role == "target" and s.kind != "mamba"]
    first = layers[0] if layers else engine.deployment.layers[0]
    config = engine.loaded.model_config
    hidden = config.get("num_hidden_layers")
    n_layers = int(hidden) if isinstance(hidden, int) else sum(s.count for s in layers)
    return int(first.num_kv_heads), int(first.head_size), str(first.dtype), n_layers


def _first_backend(groups: Sequence[Group]) -> str:
    """The backend of the model's first attention layer: ``get_current_attn_backends``
    lists layers in model order and NIXL names the first (``NixlBaseConnectorWorker``)."""
    best: tuple[int, str] | None = None
    for g in groups:
        for name, _, layers, role in g.voters:
            if role == "draft":
                continue
            for layer in layers:
                idx = layer_index(layer)
                key = (idx if idx is not None else 1 << 30, name)
                if best is None or key < best:
                    best = key
    if best is None:
        return groups[0].voters[0][0] if groups and groups[0].voters else "-"
    return best[1]
