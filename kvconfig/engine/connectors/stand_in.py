"""Stand-ins that keep vLLM's start-up from instantiating KV connectors: an inert NIXL
agent, an inert scheduler connector, ``stand_in()``."""

from __future__ import annotations

from typing import Any

STOOD_IN = (
    "KV connectors: not instantiated during start-up (the worker creates none, the "
    "scheduler gets an inert one); their code runs on the built engine afterwards",
    "NIXL: an inert agent stands in for nixl_agent; register_kv_caches does not run "
    "(meta tensors have no addresses); the handshake payload carries the worker's block "
    "size, ratio, layout, backend and per-region page lengths with stand-in addresses",
    "Mooncake: only the block-size sync and block-id expansion run (no transfer engine)",
)


class _InertAgent:
    """Stands in for ``nixl._api.nixl_agent``: nothing is registered or transferred."""

    def __init__(self, name: str, config: Any = None) -> None:
        self.name = name
        self._handles = 0

    def create_backend(self, *args: Any, **kwargs: Any) -> None:
        return None

    def get_agent_metadata(self) -> bytes:
        return f"kvconfig-stand-in:{self.name}".encode()

    def add_remote_agent(self, metadata: bytes) -> str:
        return metadata.decode(errors="replace")

    def get_reg_descs(self, descs: Any, mem_type: str = "") -> Any:
        return descs

    def get_xfer_descs(self, descs: Any, mem_type: str = "") -> Any:
        return descs

    def register_memory(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prep_xfer_dlist(self, *args: Any, **kwargs: Any) -> int:
        self._handles += 1
        return self._handles

    def __getattr__(self, name: str) -> Any:
        """Every other agent call (releases, deregistrations at shutdown) does nothing."""
        return lambda *args, **kwargs: None


class _InertConnector:
    """The scheduler's connector during start-up: holds nothing, does nothing."""

    requires_kv_delivery = False

    def bind_kv_cache_manager(self, manager: Any) -> None:
        return None

    def get_finished_count(self) -> int | None:
        return None

    def set_xfer_handshake_metadata_pp_aware(self, metadata: Any) -> None:
        return None

    def shutdown(self) -> None:
        return None


_INSTALLED: list[bool] = []


def stand_in() -> None:
    """Keep vLLM's start-up from instantiating KV connectors (kvconfig.engine.connectors)."""
    if _INSTALLED:
        return
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
    from vllm.v1.core.sched import scheduler
    from vllm.v1.worker import gpu_worker

    gpu_any: Any = gpu_worker
    gpu_any.ensure_kv_transfer_initialized = lambda vllm_config, kv_cache_config: None

    class _Factory:
        """The scheduler's view of ``KVConnectorFactory``: an inert connector."""

        @staticmethod
        def create_connector(config: Any, role: Any, kv_cache_config: Any = None) -> Any:
            return _InertConnector()

        def __getattr__(self, name: str) -> Any:
            return getattr(KVConnectorFactory, name)

    sched_any: Any = scheduler
    sched_any.KVConnectorFactory = _Factory()
    _INSTALLED.append(True)
