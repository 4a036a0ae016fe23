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
