"""The plan digest written beside each exported plan (``<plan>.digest.json``) and logged."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from kvconfig.hooks._connectors.sync import RECORDS
from kvconfig.hooks._log import logger


def _ranks() -> dict[str, int]:
    out = {"rank": 0, "pipeline_stage": 0, "tensor_rank": 0, "data_parallel_rank": 0}
    with contextlib.suppress(Exception):
        from vllm.distributed import parallel_state as ps

        out["rank"] = int(ps.get_world_group().rank)
        out["pipeline_stage"] = int(ps.get_pp_group().rank_in_group)
        out["tensor_rank"] = int(ps.get_tp_group().rank_in_group)
    with contextlib.suppress(Exception):
        from vllm.config import get_current_vllm_config

        out["data_parallel_rank"] = int(
            get_current_vllm_config().parallel_config.data_parallel_rank
        )
    return out


def export_digest(path: str, plan: dict[str, Any]) -> str:
    """Write ``<plan>.digest.json`` beside an exported plan and log the digest."""
    from kvconfig.fleet.diff import digest
    from kvconfig.report.export import atomic_write

    ranks = _ranks()
    doc: dict[str, Any] = {
        "kvconfig_digest": 1,
        **ranks,
        "plan": plan,
        "connectors": [
            {
                "name": r.connector,
                "kernel_block_size": r.used,
                "pages_per_block": r.logical // r.used if r.used else None,
                "logical_block_size": r.logical,
                "own_vote": r.own,
            }
            for r in RECORDS
        ],
    }
    doc["digest"] = digest(doc)
    target = path[: -len(".json")] if path.endswith(".json") else path
    out = f"{target}.digest.json"
    try:
        atomic_write(Path(out), json.dumps(doc, indent=2) + "\n")
    except OSError as err:
        logger.error("kvconfig: cannot write the plan digest to %s: %s", out, err)
    logger.info(
        "kvconfig: plan digest %s (rank %d, pipeline stage %d, tensor rank %d, data-parallel "
        "rank %d)%s",
        doc["digest"],
        ranks["rank"],
        ranks["pipeline_stage"],
        ranks["tensor_rank"],
        ranks["data_parallel_rank"],
        f", written to {out}" if os.path.exists(out) else "",
    )
    return str(doc["digest"])
