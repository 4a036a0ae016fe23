"""What each component of one engine computes on its own, from the engine's plan.

The runner's and the speculator's kernel block sizes are the plan's. Beside them, the
KV connectors of ``--kv-transfer-config`` vote again (NIXL and Mooncake, one vote for all
transfer groups), the offloading connector sizes its chunks and names its file tier, and
the engine core reports a block size to KV-aware routers. Every number comes from the
thin mirrors in ``kvconfig.mirror.connectors``.

``components(engine)`` gathers them: ``groups`` (the plan's groups and voters), ``facts``
(one record per component), ``connectors`` (layout, NIXL, Mooncake) and ``routing``
(routers, offloading, pipeline stages).
"""

from __future__ import annotations

from kvconfig.fleet.components.connectors import _layout, _mooncake, _nixl
from kvconfig.fleet.components.facts import Components
from kvconfig.fleet.components.groups import entries, groups_of, kind_of
from kvconfig.fleet.components.routing import _offload, _routing, _stages
from kvconfig.fleet.model import Engine


def components(engine: Engine) -> Components:
    """Every component of an engine (computed once per engine)."""
    cached: Components | None = engine.cache.get("components")
    if cached is not None:
        return cached
    groups = groups_of(engine.plan)
    kv = engine.loaded.options.get("kv-transfer-config")
    from kvconfig.fleet._load import kv_transfer_of

    kv_map = kv_transfer_of(engine.loaded.options, engine.spec.source) if kv is not None else None
    layout, layout_refusal = _layout(engine, kv_map)
    routing = _routing(engine, groups, kv_map is not None)
    nixl, mooncake, offload, others = [], [], [], []
    for entry in entries(kv_map):
        name = str(entry.get("kv_connector"))
        kind = kind_of(name)
        if not groups:
            others.append(entry)
        elif kind == "nixl":
            nixl.append(_nixl(engine, entry, groups, layout))
        elif kind == "mooncake":
            mooncake.append(_mooncake(engine, entry, groups))
        elif kind == "offloading":
            offload.append(_offload(engine, entry, groups, routing))
        else:
            others.append(entry)
    out = Components(
        groups, nixl, mooncake, offload, others, layout, layout_refusal, routing,
        _stages(engine, groups),
    )  # fmt: skip
    engine.cache["components"] = out
    return out
