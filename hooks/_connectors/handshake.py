"""``NixlBaseConnectorWorker.add_remote_agent`` wrapped: a pair whose block-size plans
disagree is refused (``HandshakeRefused``) before vLLM registers the peer."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kvconfig.errors import HandshakeRefused
from kvconfig.hooks._connectors.sync import Record
from kvconfig.hooks._log import logger
from kvconfig.hooks._state import STATE, machinery_failed


def _local_side(worker: Any) -> Any:
    from kvconfig.mirror.connectors.nixl import NixlSide

    topo = worker.transfer_topo
    return NixlSide(
        engine=str(worker.engine_id),
        block_size=int(worker.block_size),
        pages_per_block=int(worker._physical_blocks_per_logical_kv_block),
        tp=int(topo.tp_size),
        dcp=int(worker.dcp_size),
        pcp=int(worker.pcp_size),
        total_kv_heads=int(topo.total_num_kv_heads),
        use_mla=bool(worker.use_mla),
        has_mamba=bool(worker._has_mamba),
        hma=bool(worker._is_hma_required),
        prefix_caching=bool(worker.vllm_config.cache_config.enable_prefix_caching),
        use_host_buffer=bool(worker.use_host_buffer),
        kv_cache_layout=str(
            worker.host_buffer_kv_cache_layout if worker.use_host_buffer else worker.kv_cache_layout
        ),
        region_mapped=bool(getattr(worker, "_uses_region_group_mapping", False)),
        enable_permute_local_kv=bool(worker.kv_transfer_config.enable_permute_local_kv),
        transfer_mode=str(worker._TRANSFER_MODE),
        pp=int(worker.pp_size),
        vllm_version=str(STATE.vllm_version),
    )


def _remote_side(local: Any, meta: Any, tp: int, dcp: int) -> Any:
    import dataclasses

    groups = set(meta.region_group_ids or ())
    return dataclasses.replace(
        local,
        engine=str(meta.engine_id),
        block_size=int(meta.block_size),
        pages_per_block=int(meta.physical_blocks_per_logical_kv_block),
        tp=int(tp),
        dcp=int(dcp),
        pcp=int(getattr(meta, "pcp_size", 1)),
        kv_cache_layout=str(meta.kv_cache_layout),
        region_mapped=len(groups) > 1,
        use_host_buffer=False,
    )


def _plan(side: Any, backend: str) -> dict[str, Any]:
    return {
        "block_size": side.block_size * side.pages_per_block,
        "kernel_block_size": side.block_size,
        "pages_per_block": side.pages_per_block,
        "tp": side.tp,
        "dcp": side.dcp,
        "backend": backend,
        "layout": side.kv_cache_layout,
        "host_buffer": side.use_host_buffer,
    }


#: What each mirrored check means, in the refusal.
_CHECK_TEXT = {
    "block-size": "page sizes that are no multiple of each other",
    "tp-split": "different page sizes while the remote TP is larger",
    "host-buffer": "different page sizes with a host buffer",
    "region-mapped": "different page sizes for a region-mapped (hybrid) cache",
    "mamba-pages": "different pages per block for a Mamba hybrid with prefix caching",
    "layout": "different KV-cache layouts",
    "head-split": "pages split by heads across TP sizes in a layout that is not block-contiguous",
    "tp": "tensor-parallel sizes that do not divide",
    "dcp": "decode-context-parallel sizes that do not divide",
}


def _mismatched_pages(worker: Any, ratio: int, local_tp: int, remote_tp: int) -> str:
    """A group whose runner pages differ from this worker's, when the pair transfers
    across block ratios or TP sizes (re-laid pages): empty when none."""
    if ratio == 1 and local_tp == remote_tp:
        return ""
    record = worker.__dict__.get("_kvconfig_record")
    if not isinstance(record, Record):
        return ""
    bad = {g: k for g, k in record.runner.items() if k != record.used}
    if not bad:
        return ""
    g, k = next(iter(bad.items()))
    return f"group {g} is read in {k}-token pages, the connector transfers {record.used}"


def _refusal(
    worker: Any, meta: Any, remote_tp_size: int, remote_dcp_size: int, mode: str
) -> HandshakeRefused | None:
    """kvconfig's refusal of this handshake, or None when it lets vLLM decide."""
    from kvconfig.mirror.connectors.nixl import nixl_handshake

    if worker.transfer_topo is None:
        return None  # vLLM's add_remote_agent asserts it: vLLM's error, as vLLM's
    local = _local_side(worker)
    remote = _remote_side(local, meta, remote_tp_size, remote_dcp_size)
    out = nixl_handshake(local, remote)
    check, error, consequence = out.check, "", ""
    if out.refusal is not None:
        error = str(out.refusal)
        if out.check == "region-mapped":
            consequence = "the handshake passes and the first transfer raises"
    elif (pages := _mismatched_pages(worker, out.ratio, local.tp, remote.tp)) != "":
        check = "connector pages"
        consequence = (
            f"silently wrong KV after every transfer ({pages}; the receive side "
            "re-lays pages that group does not have)"
        )
    if not (error or consequence):
        return None
    return HandshakeRefused(
        local_engine=local.engine,
        remote_engine=remote.engine,
        local_plan=_plan(local, str(worker.backend_name)),
        remote_plan=_plan(remote, str(meta.attn_backend_name)),
        check=_CHECK_TEXT.get(check, check),
        vllm_error=error,
        consequence=consequence,
        fixes=_fixes(check, local, remote),
        mode=mode,
    )


def wrap_handshake(original: Callable[..., Any], module: Any) -> Callable[..., Any]:
    """``add_remote_agent``: refuse a pair whose block-size plans disagree."""

    @functools.wraps(original)
    def add_remote_agent(
        self: Any,
        nixl_agent_meta: Any,
        remote_tp_rank: int = 0,
        remote_tp_size: int = 1,
        remote_dcp_size: int = 1,
    ) -> Any:
        mode = STATE.mode
        if mode != "off":
            try:
                err = _refusal(self, nixl_agent_meta, remote_tp_size, remote_dcp_size, mode)
            except Exception as failure:
                machinery_failed(
                    "reading the NIXL handshake's state (this worker and the peer's "
                    "NixlAgentMetadata)",
                    f"the block-size plans of the NIXL handshake with engine "
                    f"{getattr(nixl_agent_meta, 'engine_id', '?')}",
                    failure,
                )
                err = None
            if err is not None:
                if mode in ("enforce", "strict"):
                    raise err
                logger.error("%s", err)
        return original(self, nixl_agent_meta, remote_tp_rank, remote_tp_size, remote_dcp_size)

    return add_remote_agent


def _fixes(check: str, local: Any, remote: Any) -> list[str]:
    if check == "layout":
        return ["the same VLLM_KV_CACHE_LAYOUT on both engines (or none)"]
    if check == "head-split":
        return ["VLLM_KV_CACHE_LAYOUT=LBHNC on both engines (or none)", "equal tensor parallelism"]
    if check in ("tp", "dcp"):
        return ["tensor- and context-parallel sizes that divide each other"]
    if check == "mamba-pages":
        return ["the same attention backend on both engines", "--disable-prefix-caching"]
    small = min(local.block_size, remote.block_size)
    fixes = [
        f"--block-size {small} on both engines (run 'kvconfig lint --fleet' for the sizes "
        "both accept)",
        "the same --attention-backend on both engines",
    ]
    if check == "tp-split":
        fixes.append("equal tensor parallelism")
    if check == "host-buffer":
        fixes.append("kv_buffer_device: cuda")
    return fixes
