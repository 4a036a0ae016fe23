"""The KV connectors vLLM registers and the layouts they ask for.

Mirrors ``vllm/distributed/kv_transfer/kv_connector/factory.py`` (the names),
``kv_connector/v1/base.py`` (``SupportsHMA``) and each connector's
``get_required_kvcache_layout`` (``multi_connector.py`` for MultiConnector's check).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from kvconfig.errors import ConnectorRefusal

NIXL_CONNECTORS = {
    "NixlConnector": "pull",
    "NixlPullConnector": "pull",
    "NixlPushConnector": "push",
}
"""NIXL's connector names and their ``_TRANSFER_MODE`` (``nixl/connector.py``)."""

MOONCAKE_CONNECTORS = frozenset({"MooncakeConnector"})
"""The Mooncake P/D connector (``mooncake/mooncake_connector.py``)."""

OFFLOADING_CONNECTORS = frozenset({"OffloadingConnector"})
"""The native offloading connector (``offloading_connector.py``)."""

EXTRA_CONFIG_READ = frozenset(
    {*NIXL_CONNECTORS, *MOONCAKE_CONNECTORS, *OFFLOADING_CONNECTORS, "MultiConnector"}
    | {"PdConnector", "SimpleCPUOffloadConnector"}
)
"""Connectors whose ``kv_connector_extra_config`` kvconfig's rules read (the chained
connectors, the offloading block size and tiers, NIXL's handshake settings); the others'
extra configuration (LMCache's, P2P NCCL's) changes no page size, group or layout."""

ADDRESSES = frozenset({"kv_ip", "kv_port", "kv_rank", "kv_parallel_size", "kv_buffer_size"})
"""``KVTransferConfig`` fields no plan or fleet rule reads: where a connector listens and
its transfer buffer's size (a pod's ``$(POD_IP)`` in ``kv_ip``)."""


def read_part(data: Any) -> dict[str, Any]:
    """The keys of a kv-transfer config a plan or fleet rule reads (none: not a mapping):
    of the offloading connector's extra configuration, its block size, blocks per chunk
    and each secondary tier's type and folder (``kvconfig.fleet.components.routing``). A
    word only known at run time anywhere else does not change the plan
    (``kvconfig.load.engine_options``)."""
    if not isinstance(data, dict):
        return {}
    unread = set(ADDRESSES)
    if data.get("kv_connector") not in EXTRA_CONFIG_READ:
        unread.add("kv_connector_extra_config")
    out = {k: v for k, v in data.items() if k not in unread}
    extra = out.get("kv_connector_extra_config")
    if data.get("kv_connector") in OFFLOADING_CONNECTORS and isinstance(extra, dict):
        read = {k: extra[k] for k in ("block_size", "blocks_per_chunk") if k in extra}
        tiers = extra.get("secondary_tiers")
        if "secondary_tiers" in extra:
            read["secondary_tiers"] = [
                {k: t.get(k) for k in ("type", "root_dir")} if isinstance(t, dict) else t
                for t in (tiers if isinstance(tiers, list) else [tiers])
            ]
        out["kv_connector_extra_config"] = read
    return out


SUPPORTS_HMA = frozenset(
    {
        "DecodeBenchConnector",
        "ExampleHiddenStatesConnector",
        "HiSparseConnector",
        "MoRIIOConnector",
        "MooncakeConnector",
        "MooncakeStoreConnector",
        "MultiConnector",
        "NixlConnector",
        "NixlPullConnector",
        "NixlPushConnector",
        "OffloadingConnector",
        "SimpleCPUOffloadConnector",
        "UMBPStoreConnector",
    }
)
"""Connectors that subclass ``SupportsHMA`` (``kv_connector/v1/base.py``); with any other,
``VllmConfig`` turns the hybrid KV-cache manager off (``config/vllm.py``)."""

KNOWN_CONNECTORS = frozenset(
    {
        "ExampleConnector",
        "FlexKVConnectorV1",
        "HF3FSKVConnector",
        "LMCacheConnectorV1",
        "LMCacheMPConnector",
        *SUPPORTS_HMA,
    }
)
"""The connector names ``KVConnectorFactory`` registers (``kv_connector/factory.py``)."""


def supports_hma(kv: Mapping[str, Any]) -> bool:
    """``KVConnectorFactory.supports_hma_config`` (``kv_connector/factory.py``): a
    MultiConnector supports HMA when every connector it chains does."""
    if kv.get("kv_connector") == "MultiConnector":
        extra = kv.get("kv_connector_extra_config")
        children = extra.get("connectors") if isinstance(extra, Mapping) else None
        chained = (
            [c for c in children if isinstance(c, Mapping)] if isinstance(children, list) else []
        )
        return bool(chained) and all(supports_hma(c) for c in chained)
    return str(kv.get("kv_connector")) in SUPPORTS_HMA


def hma_disabled(kv: Mapping[str, Any] | None, disable: Any) -> bool:
    """Whether vLLM runs without the hybrid KV-cache manager: as asked
    (``--disable-hybrid-kv-cache-manager``), else when the KV connector does not support
    HMA (``VllmConfig.__post_init__`` in ``config/vllm.py`` turns it off then)."""
    if disable is not None:
        return bool(disable)
    return kv is not None and not supports_hma(kv)


def effective_kv_transfer(
    kv: Mapping[str, Any] | None, values: Mapping[str, Any], env: Mapping[str, str]
) -> dict[str, Any] | None:
    """The KV-transfer config vLLM runs with: ``VllmConfig._post_init_kv_transfer_config``
    (``config/vllm.py``, the same in every release kvconfig knows). ``--kv-offloading-size``
    turns KV offloading on, replacing the connector of ``--kv-transfer-config`` (or making
    one): ``--kv-offloading-backend native`` (the default) is ``OffloadingConnector``
    (``SimpleCPUOffloadConnector`` with ``VLLM_USE_SIMPLE_KV_OFFLOAD``, an ``int``) with
    ``cpu_bytes_to_use`` the size in GiB, ``lmcache`` is ``LMCacheMPConnector``; the role
    is ``kv_both`` either way. ``values`` are the serve options (``kv-offloading-size``,
    ``kv-offloading-backend``) and ``env`` the engine's environment."""
    size = values.get("kv-offloading-size")
    if size is None:
        return dict(kv) if kv is not None else None
    out = dict(kv or {})
    backend = values.get("kv-offloading-backend") or "native"
    if backend == "native":
        try:
            simple = bool(int(env.get("VLLM_USE_SIMPLE_KV_OFFLOAD", "0")))
        except ValueError:
            simple = False
        out["kv_connector"] = "SimpleCPUOffloadConnector" if simple else "OffloadingConnector"
        extra = dict(out.get("kv_connector_extra_config") or {})
        # a word only known at run time leaves the size out: it does not change the plan
        with contextlib.suppress(TypeError, ValueError):
            extra["cpu_bytes_to_use"] = float(size) * (1 << 30)
        out["kv_connector_extra_config"] = extra
    elif backend == "lmcache":
        out["kv_connector"] = "LMCacheMPConnector"
    out["kv_role"] = "kv_both"
    return out


def required_kv_cache_layout(connector: str, *, use_mla: bool, hisparse: bool) -> str | None:
    """A connector class's ``get_required_kvcache_layout`` (each connector's module)."""
    if connector in NIXL_CONNECTORS or connector in MOONCAKE_CONNECTORS:
        return None if use_mla else "LBHNC"
    if connector in OFFLOADING_CONNECTORS:
        return "BLHNC" if hisparse else "LBHNC"
    if connector == "HiSparseConnector":
        return "BLHNC"
    if connector == "ExampleHiddenStatesConnector":
        return "LBNHC"
    return None


def multi_connector_layout(layouts: Sequence[str | None]) -> str | None:
    """``MultiConnector.get_required_kvcache_layout`` (``multi_connector.py``)."""
    found = sorted({x for x in layouts if x is not None})
    if len(found) > 1:
        raise ConnectorRefusal(
            "ValueError",
            f"KV cache layout mismatch: found {len(found)} different layouts "
            f"({', '.join(found)}).All connectors must use the same layout.",
        )
    return found[0] if found else None
