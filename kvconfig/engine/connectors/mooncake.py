"""``MooncakeConnectorWorker``'s block-size sync and block-id expansion on a built engine."""

from __future__ import annotations

from typing import Any

from kvconfig.engine.connectors.common import _error, hooks_log, hooks_record, own_vote


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
    with hooks_log() as logged:
        try:
            worker._sync_block_size_with_kernel()
        except Exception as err:
            return {"name": kv.kv_connector, "refusal": _error(err), "hooks_log": logged}
    ratio = int(worker._physical_blocks_per_logical_kv_block)
    sample = [[0, 1, 2] for _ in kv_cache_config.transfer_groups]
    return {
        "name": kv.kv_connector,
        "role": kv.kv_role,
        "logical_block_size": logical,
        "kernel_block_size": int(worker.block_size),
        "own_block_size": own_vote(worker),
        "pages_per_block": ratio,
        "expanded": worker._logical_to_kernel_block_ids(sample),
        "refusal": None,
        "hooks": hooks_record(worker),
        "hooks_log": logged,
    }
