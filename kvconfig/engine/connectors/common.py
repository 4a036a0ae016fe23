"""What the connector readouts share: vLLM's error as a record, a MultiConnector's
children, a config holding one connector."""

from __future__ import annotations

import contextlib
import copy
import os
import traceback
from collections.abc import Iterator
from typing import Any


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
def hooks_log() -> Iterator[list[str]]:
    """The ERROR and WARNING lines the kvconfig hooks log meanwhile (logger
    ``vllm.kvconfig``)."""
    import logging

    lines: list[str] = []

    class _Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(f"{record.levelname} {record.getMessage()}")

    handler = _Lines(logging.WARNING)
    logger = logging.getLogger("vllm.kvconfig")
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)


def hooks_record(worker: Any) -> dict[str, Any] | None:
    """What the kvconfig hooks decided at the worker's block-size sync (None: they did not
    run): its own vote, what it uses, the runner's per group, whether it was handed over."""
    record = worker.__dict__.get("_kvconfig_record")
    if record is None:
        return None
    return {
        "own": record.own,
        "used": record.used,
        "runner": {str(g): k for g, k in record.runner.items()},
        "handed": record.handed,
    }


def own_vote(worker: Any) -> int:
    """The connector's own vote: the kvconfig hooks' record of it when they handed the
    worker the runner's value (``hooks/_connectors/sync.py``), else the value it uses."""
    record = worker.__dict__.get("_kvconfig_record")
    return int(record.own if record is not None else worker.block_size)
