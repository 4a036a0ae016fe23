"""What vLLM's KV-connector code computes on the objects the engine mode builds.

Runs in the engine child (imports vLLM). Two steps, around vLLM's start-up:

* ``stand_in()``, before the engine is built: the connectors' *instances* are not
  created during start-up (the worker's ``ensure_kv_transfer_initialized`` does nothing,
  the scheduler gets an inert connector). Their native transfer libraries (NIXL's agent,
  Mooncake's transfer engine) are not installed, and their memory registration needs
  device addresses the meta tensors do not have. ``vllm_config.kv_transfer_config``
  stays set, so everything the configuration decides is vLLM's own: the hybrid
  KV-cache manager, the KV-cache layout the connector classes ask for
  (``get_required_kvcache_layout``, MultiConnector's check), the hash block sizes.
* ``read(runner, vllm_config)``, once the engine is built: vLLM's connector code runs on
  the built engine's objects.

  - NIXL: the real ``NixlPullConnectorWorker`` / ``NixlPushConnectorWorker.__init__``
    (its transfer-group block size, ``_sync_block_size_with_kernel`` with
    ``get_current_attn_backends_and_specs`` and ``select_common_block_size``, its
    start-up checks), with an inert agent in place of ``nixl_agent``; then
    ``compute_nixl_compatibility_hash`` (its factors captured from ``hash_factors``),
    the ``TransferTopology`` ``register_kv_caches`` builds, and the
    ``NixlHandshakePayload`` the worker would serve. With peers given
    (``KVCONFIG_FLEET_PEERS``), the real ``_nixl_handshake`` runs against a local
    socket that serves each peer's payload: the compatibility check, the metadata
    decoding, ``_validate_remote_parallel_config`` and ``add_remote_agent`` up to and
    including ``_validate_remote_agent_handshake`` (the descriptor lists after it need
    registered memory).
  - Mooncake: ``MooncakeConnectorWorker._sync_block_size_with_kernel`` and
    ``_logical_to_kernel_block_ids`` on a worker holding only what they read.
  - Offloading: ``build_offloading_config`` and ``FileMapper.from_offloading_spec``.
  - The engine core's reports: ``cache_config.effective_attention_block_size``,
    ``resolve_dcp_kv_block_size``, ``resolve_kv_cache_block_sizes``,
    ``resolve_none_hash_seed``; ``_align_hybrid_block_size`` of the platform at TP 1, 2,
    4 and 8 for hybrid models.

``stand_in`` holds the first step; ``read`` here runs the second through ``nixl``,
``mooncake``, ``offloading`` and ``engine_core``.
"""

from __future__ import annotations

from typing import Any

from kvconfig.engine.connectors.common import _entries, _with_transfer
from kvconfig.engine.connectors.engine_core import _aligned, _routing
from kvconfig.engine.connectors.mooncake import _mooncake
from kvconfig.engine.connectors.nixl import _nixl
from kvconfig.engine.connectors.offloading import _offload


def read(runner: Any, vllm_config: Any, requested_block_size: int | None = None) -> dict[str, Any]:
    """What the connectors compute on a built engine (see the package docstring)."""
    kv_cache_config = getattr(runner, "kv_cache_config", None)
    out: dict[str, Any] = {"nixl": [], "mooncake": [], "offload": []}
    if kv_cache_config is None:
        return out
    try:
        out["layout"] = vllm_config.cache_config.get_resolved_kv_cache_layout().name
    except Exception:
        out["layout"] = None
    out["routing"] = _routing(vllm_config, kv_cache_config)
    out["aligned"] = _aligned(vllm_config, requested_block_size)
    kv = vllm_config.kv_transfer_config
    if kv is None:
        return out
    for entry in _entries(kv):
        name = entry.kv_connector
        with _with_transfer(vllm_config, entry) as cfg:
            if name in ("NixlConnector", "NixlPullConnector", "NixlPushConnector"):
                out["nixl"].append(_nixl(cfg, kv_cache_config, entry))
            elif name == "MooncakeConnector":
                out["mooncake"].append(_mooncake(cfg, kv_cache_config, entry))
            elif name == "OffloadingConnector":
                out["offload"].append(_offload(cfg, kv_cache_config, entry))
    return out
