"""The offloading connector's ``build_offloading_config`` and its file tiers' folders."""

from __future__ import annotations

import json
import types
from typing import Any

from kvconfig.engine.connectors.common import _error, _with_transfer


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
