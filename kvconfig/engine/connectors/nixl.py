"""vLLM's own NIXL worker built with the inert agent, its handshake payload, and the real
``_nixl_handshake`` against each peer (``KVCONFIG_FLEET_PEERS``)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from kvconfig.engine.connectors.common import _error, hooks_log, hooks_record, own_vote
from kvconfig.engine.connectors.stand_in import _InertAgent
from kvconfig.errors import HandshakeChecked

PEERS_ENV = "KVCONFIG_FLEET_PEERS"
"""A JSON file: local NIXL engine id -> the peers (``name``, ``engine_id``, ``tp``,
``dcp``, ``payload``) that engine handshakes with after start-up. It is read at every
start-up, so the parent can fill it in between rounds and keep its children."""


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
    from vllm.v1.kv_cache_interface import MambaSpec, MLAAttentionSpec, SlidingWindowMLASpec

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
    # per region, as register_kv_caches sets them: REPLICATE for MLA specs, and the
    # head-sharded regions of a non-MLA draft under an MLA target
    worker._region_is_mla = [
        isinstance(worker._layer_specs[n], (MLAAttentionSpec, SlidingWindowMLASpec)) for n in names
    ]
    worker._head_sharded_draft_regions = worker._get_head_sharded_draft_regions()
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
        raise HandshakeChecked

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
    except HandshakeChecked:
        return {"peer": peer.get("name"), "status": "ok", "validated": True}
    except Exception as err:
        return {"peer": peer.get("name"), "status": "refused", **_error(err)}
    finally:
        del worker._validate_remote_agent_handshake


def _nixl(vllm_config: Any, kv_cache_config: Any, kv: Any) -> dict[str, Any]:
    with hooks_log() as logged:
        try:
            worker = _nixl_worker(vllm_config, kv_cache_config, kv)
        except Exception as err:
            return {"name": kv.kv_connector, "refusal": _error(err), "hooks_log": logged}
    out: dict[str, Any] = {
        "name": kv.kv_connector,
        "role": kv.kv_role,
        "engine_id": worker.engine_id,
        "transfer_mode": worker._TRANSFER_MODE,
        "logical_block_size": int(worker.block_size * worker._physical_blocks_per_logical_kv_block),
        "kernel_block_size": int(worker.block_size),
        "own_block_size": own_vote(worker),
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
        "hooks": hooks_record(worker),
        "hooks_log": logged,
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
