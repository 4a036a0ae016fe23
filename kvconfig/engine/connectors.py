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
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import os
import threading
import time
import traceback
import types
from collections.abc import Iterator
from typing import Any

PEERS_ENV = "KVCONFIG_FLEET_PEERS"
"""A JSON file: local NIXL engine id -> the peers (``name``, ``engine_id``, ``tp``,
``dcp``, ``payload``) that engine handshakes with after start-up. It is read at every
start-up, so the parent can fill it in between rounds and keep its children."""

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
    """Keep vLLM's start-up from instantiating KV connectors (see the module docstring)."""
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


# ---------------------------------------------------------------- readout


def _error(err: BaseException) -> dict[str, Any]:
    frames = traceback.extract_tb(err.__traceback__)
    where = None
    for frame in reversed(frames):
        marker = f"{os.sep}vllm{os.sep}"
        if marker in frame.filename:
            where = f"vllm/{frame.filename.rsplit(marker, 1)[1]}:{frame.lineno}"
            break
    return {"error": type(err).__name__, "message": str(err), "where": where}


def _entries(kv: Any) -> list[Any]:
    """The connector configs (a MultiConnector's children), as vLLM builds them."""
    from vllm.config import KVTransferConfig

    if kv.kv_connector == "MultiConnector":
        out = []
        for child in kv.kv_connector_extra_config.get("connectors") or []:
            engine_id = child.get("engine_id", kv.engine_id)
            out.append(KVTransferConfig(**{**child, "engine_id": engine_id}))
        return out
    return [kv]


@contextlib.contextmanager
def _with_transfer(vllm_config: Any, kv: Any) -> Iterator[Any]:
    """``vllm_config`` with ``kv`` as its kv_transfer_config (a MultiConnector child)."""
    cfg = copy.copy(vllm_config)
    cfg.kv_transfer_config = kv
    yield cfg


@contextlib.contextmanager
def _captured_factors() -> Iterator[list[dict[str, Any]]]:
    """The factors ``compute_nixl_compatibility_hash`` passes to ``hash_factors``."""
    from vllm.config import utils

    seen: list[dict[str, Any]] = []
    real = utils.hash_factors

    def capture(items: dict[str, object]) -> str:
        seen.append(json.loads(json.dumps(items, default=str)))
        return str(real(items))

    utils_any: Any = utils
    utils_any.hash_factors = capture
    try:
        yield seen
    finally:
        utils_any.hash_factors = real


def _nixl_worker(vllm_config: Any, kv_cache_config: Any, kv: Any) -> Any:
    """vLLM's own NIXL worker, built with the inert agent."""
    from vllm.config import set_current_vllm_config
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl import base_worker
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl.pull_worker import (
        NixlPullConnectorWorker,
    )
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl.push_worker import (
        NixlPushConnectorWorker,
    )

    bw: Any = base_worker
    bw.NixlWrapper = _InertAgent
    bw.check_nixl_version = lambda min_version: None
    bw.nixl_agent_config = None
    cls = (
        NixlPushConnectorWorker
        if kv.kv_connector == "NixlPushConnector"
        else NixlPullConnectorWorker
    )
    with set_current_vllm_config(vllm_config):
        return cls(vllm_config, kv.engine_id, kv_cache_config)


def _register_stand_in(worker: Any, vllm_config: Any) -> tuple[bytes, list[dict[str, Any]]]:
    """What ``register_kv_caches`` sets up that the handshake reads, and the payload the
    worker serves (stand-in addresses)."""
    import msgspec
    from vllm.distributed.kv_transfer.kv_connector.utils import TransferTopology
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl import base_worker as bw
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl.metadata import (
        NixlAgentMetadata,
        NixlHandshakePayload,
        compute_nixl_compatibility_hash,
    )
    from vllm.v1.kv_cache_interface import MambaSpec

    worker.transfer_topo = TransferTopology(
        tp_rank=worker.transfer_tp_rank,
        tp_size=worker.transfer_tp_size,
        block_size=worker.block_size,
        engine_id=worker.engine_id,
        is_mla=worker.use_mla,
        total_num_kv_heads=1 if worker.use_mla else worker.model_config.get_total_num_kv_heads(),
        attn_backends=worker.attn_backends,
        dcp_size=worker.dcp_size,
        tensor_shape=None,
        is_mamba=worker._has_mamba,
    )
    backend_name = worker.backend_name
    if worker._supports_pp_hma and worker._has_packed_cache:
        backend_name = ",".join(sorted({b.get_name() for b in worker.attn_backends}))
    with _captured_factors() as factors:
        worker.compat_hash = compute_nixl_compatibility_hash(
            vllm_config, backend_name, transfer_mode=worker._TRANSFER_MODE
        )
    ratio = worker._physical_blocks_per_logical_kv_block
    kv = worker.kv_cache_config
    names = sorted(worker._layer_specs, key=bw._region_sort_key)
    block_lens, group_ids, num_blocks = [], [], []
    for name in names:
        spec = worker._layer_specs[name]
        mamba = isinstance(spec, MambaSpec)
        block_lens.append(spec.page_size_bytes if mamba else spec.page_size_bytes // ratio)
        group_ids.append(kv.transfer_group_index_by_layer[name])
        num_blocks.append(kv.num_blocks if mamba else kv.num_blocks * ratio)
    worker.block_len_per_layer = block_lens
    worker.block_stride_per_layer = list(block_lens)
    worker.region_group_ids = group_ids
    worker.region_names = names
    worker.region_num_blocks = num_blocks
    worker._region_is_mla = [worker.use_mla] * len(names)
    worker._uses_region_group_mapping = len(set(group_ids)) > 1
    worker.num_regions = len(names)
    addresses = [(i + 1) << 32 for i in range(len(names))]
    worker.kv_caches_base_addr[worker.engine_id][worker.tp_rank] = addresses
    worker.dst_region_group_ids[worker.engine_id] = group_ids
    meta = NixlAgentMetadata(
        engine_id=worker.engine_id,
        agent_metadata=worker.nixl_wrapper.get_agent_metadata(),
        kv_caches_base_addr=addresses,
        device_id=0,
        num_blocks=worker.num_blocks,
        block_lens=block_lens,
        block_strides=list(block_lens),
        kv_cache_layout=worker.kv_cache_layout
        if not worker.use_host_buffer
        else worker.host_buffer_kv_cache_layout,
        block_size=worker.block_size,
        ssm_sizes=worker._mamba_ssm_size,
        attn_backend_name=worker.backend_name,
        physical_blocks_per_logical_kv_block=ratio,
        region_num_blocks=num_blocks,
        region_group_ids=group_ids,
        region_names=names,
        region_mem_types=["VRAM"] * len(names),
        dcp_size=worker.dcp_size,
        pcp_size=worker.pcp_size,
    )
    payload = NixlHandshakePayload(
        compatibility_hash=worker.compat_hash,
        agent_metadata_bytes=msgspec.msgpack.Encoder().encode(meta),
    )
    return msgspec.msgpack.encode(payload), factors


class _Validated(Exception):
    """vLLM's handshake checks passed; the stand-in stops before the descriptor lists."""


@contextlib.contextmanager
def _serving(payload: bytes) -> Iterator[int]:
    """A local socket that answers NIXL's metadata query with ``payload``."""
    import msgspec
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    stop = threading.Event()

    def serve() -> None:
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        while not stop.is_set():
            if dict(poller.poll(100)).get(sock):
                sock.recv()
                sock.send_multipart([payload, msgspec.msgpack.encode(time.perf_counter())])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        stop.set()
        thread.join(timeout=5)
        sock.close(linger=0)
        ctx.term()


def _handshake(worker: Any, peer: dict[str, Any]) -> dict[str, Any]:
    """vLLM's ``_nixl_handshake`` with one peer, up to ``_validate_remote_agent_handshake``."""
    payload = base64.b64decode(peer["payload"])
    checked = worker._validate_remote_agent_handshake

    def validate(*args: Any, **kwargs: Any) -> None:
        checked(*args, **kwargs)
        raise _Validated

    worker._validate_remote_agent_handshake = validate
    from kvconfig.engine.cuda import meta_device

    try:
        with _serving(payload) as port, meta_device():
            worker._nixl_handshake(
                "127.0.0.1",
                port,
                int(peer.get("tp", 1)),
                str(peer["engine_id"]),
                remote_dcp_size=int(peer.get("dcp", 1)),
            )
        return {"peer": peer.get("name"), "status": "ok", "validated": False}
    except _Validated:
        return {"peer": peer.get("name"), "status": "ok", "validated": True}
    except Exception as err:
        return {"peer": peer.get("name"), "status": "refused", **_error(err)}
    finally:
        del worker._validate_remote_agent_handshake


def _nixl(vllm_config: Any, kv_cache_config: Any, kv: Any) -> dict[str, Any]:
    try:
        worker = _nixl_worker(vllm_config, kv_cache_config, kv)
    except Exception as err:
        return {"name": kv.kv_connector, "refusal": _error(err)}
    out: dict[str, Any] = {
        "name": kv.kv_connector,
        "role": kv.kv_role,
        "engine_id": worker.engine_id,
        "transfer_mode": worker._TRANSFER_MODE,
        "logical_block_size": int(worker.block_size * worker._physical_blocks_per_logical_kv_block),
        "kernel_block_size": int(worker.block_size),
        "pages_per_block": int(worker._physical_blocks_per_logical_kv_block),
        "backend_name": worker.backend_name,
        "layout": worker.kv_cache_layout,
        "hma": bool(worker._is_hma_required),
        "has_mamba": bool(worker._has_mamba),
        "use_mla": bool(worker.use_mla),
        "use_host_buffer": bool(worker.use_host_buffer),
        "tp": int(worker.transfer_tp_size),
        "dcp": int(worker.dcp_size),
        "refusal": None,
    }
    try:
        payload, factors = _register_stand_in(worker, vllm_config)
    except Exception as err:
        out["refusal"] = _error(err)
        return out
    out["compat_hash"] = worker.compat_hash
    out["compat_factors"] = factors[0] if factors else None
    out["payload"] = base64.b64encode(payload).decode()
    out["handshakes"] = [_handshake(worker, p) for p in _peers().get(str(worker.engine_id), [])]
    return out


def _peers() -> dict[str, list[dict[str, Any]]]:
    path = os.environ.get(PEERS_ENV)
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _mooncake(vllm_config: Any, kv_cache_config: Any, kv: Any) -> dict[str, Any]:
    from vllm.distributed.kv_transfer.kv_connector.v1.mooncake.mooncake_connector import (
        MooncakeConnectorWorker,
    )

    worker: Any = object.__new__(MooncakeConnectorWorker)
    worker.shutdown = lambda: None  # nothing started, nothing to stop (its __del__ calls it)
    # the attributes MooncakeConnectorWorker.__init__ sets before its block-size sync
    worker.vllm_config = vllm_config
    worker.block_size = vllm_config.cache_config.block_size
    worker.model_config = vllm_config.model_config
    worker.cache_config = vllm_config.cache_config
    worker.kv_cache_config = kv_cache_config
    worker.use_mla = vllm_config.model_config.use_mla
    worker._physical_blocks_per_logical_kv_block = 1
    logical = int(worker.block_size)
    try:
        worker._sync_block_size_with_kernel()
    except Exception as err:
        return {"name": kv.kv_connector, "refusal": _error(err)}
    ratio = int(worker._physical_blocks_per_logical_kv_block)
    sample = [[0, 1, 2] for _ in kv_cache_config.transfer_groups]
    return {
        "name": kv.kv_connector,
        "role": kv.kv_role,
        "logical_block_size": logical,
        "kernel_block_size": int(worker.block_size),
        "pages_per_block": ratio,
        "expanded": worker._logical_to_kernel_block_ids(sample),
        "refusal": None,
    }


def _offload(vllm_config: Any, kv_cache_config: Any, kv: Any) -> dict[str, Any]:
    from vllm.distributed.kv_transfer.kv_connector.v1.offloading.config import (
        build_offloading_config,
    )
    from vllm.v1.kv_offload.file_mapper import FileMapper

    with _with_transfer(vllm_config, kv) as cfg:
        try:
            config = build_offloading_config(cfg, kv_cache_config)
        except Exception as err:
            return {"name": kv.kv_connector, "refusal": _error(err)}
    tiers: list[dict[str, Any]] = [{"kind": "cpu"}]
    for tier in kv.kv_connector_extra_config.get("secondary_tiers") or []:
        kind = tier.get("type")
        item: dict[str, Any] = {"kind": kind, "root_dir": tier.get("root_dir")}
        if kind == "fs" and tier.get("root_dir"):
            mapper = FileMapper.from_offloading_spec(
                root_dir=str(tier["root_dir"]),
                offloading_spec=types.SimpleNamespace(config=config),
                blocks_per_file=config.cache.blocks_per_chunk,
                parallel_agnostic=True,
            )
            item["namespace"] = mapper.base_path
            item["namespace_fields"] = json.loads(json.dumps(mapper.get_run_config(), default=str))
        tiers.append(item)
    return {
        "name": kv.kv_connector,
        "group_tokens_per_block": [g.tokens_per_block for g in config.groups],
        "blocks_per_chunk": config.cache.blocks_per_chunk,
        "tokens_per_hash": config.cache.tokens_per_hash,
        "tiers": tiers,
        "refusal": None,
    }


def _routing(vllm_config: Any, kv_cache_config: Any) -> dict[str, Any]:
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import (
        resolve_dcp_kv_block_size,
        resolve_kv_cache_block_sizes,
        resolve_none_hash_seed,
    )

    cache = vllm_config.cache_config
    dcp = vllm_config.parallel_config.decode_context_parallel_size
    out: dict[str, Any] = {
        "effective_block_size": cache.effective_attention_block_size,
        "group_block_sizes": [
            int(resolve_dcp_kv_block_size(g.kv_cache_spec, dcp))
            for g in kv_cache_config.kv_cache_groups
        ],
        "hash_algo": cache.prefix_caching_hash_algo,
        "cache_block_size": int(cache.block_size),
    }
    try:
        scheduler, hashing = resolve_kv_cache_block_sizes(kv_cache_config, vllm_config)
        out["scheduler_block_size"], out["hash_block_size"] = int(scheduler), int(hashing)
    except Exception as err:
        out["refusal"] = _error(err)
    from vllm.v1.core import kv_cache_utils

    fn = get_hash_fn_by_name(cache.prefix_caching_hash_algo)
    random_seed = (
        fn in getattr(kv_cache_utils, "_NON_CRYPTO_HASH_FUNCTIONS", ())
        and os.getenv("PYTHONHASHSEED") is None
    )
    out["hash_seed"] = None if random_seed else resolve_none_hash_seed(fn)
    return out


def _aligned(vllm_config: Any, requested: int | None) -> dict[str, int]:
    """``_align_hybrid_block_size`` at TP 1, 2, 4, 8, from the block size asked for (vLLM's
    default 16 when none was): hybrid models only."""
    from vllm.platforms import current_platform

    from kvconfig.engine.emulate import ALIGNED

    model = vllm_config.model_config
    if not getattr(model, "is_hybrid", False):
        return {}
    heads = int(getattr(model.hf_text_config, "num_attention_heads", 1) or 1)
    backends = current_platform._find_non_ssm_backends(vllm_config)
    if not backends:
        return {}
    saved = list(ALIGNED)
    out: dict[str, int] = {}
    try:
        for tp in (1, 2, 4, 8):
            if heads % tp:
                continue
            cfg = copy.copy(vllm_config)
            cfg.cache_config = copy.copy(vllm_config.cache_config)
            cfg.cache_config.block_size = requested or 16
            cfg.cache_config.mamba_page_size_padded = None
            cfg.parallel_config = copy.copy(vllm_config.parallel_config)
            cfg.parallel_config.tensor_parallel_size = tp
            try:
                current_platform._align_hybrid_block_size(cfg, backends[0])
            except Exception:
                continue
            out[str(tp)] = int(cfg.cache_config.block_size)
    finally:
        ALIGNED[:] = saved
    return out


def read(runner: Any, vllm_config: Any, requested_block_size: int | None = None) -> dict[str, Any]:
    """What the connectors compute on a built engine (see the module docstring)."""
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
