"""The offloading connector's chunks and its file tier's folder.

Mirrors ``vllm/distributed/kv_transfer/kv_connector/v1/offloading/config.py``
(``build_offloading_config``) and ``vllm/v1/kv_offload/file_mapper.py`` (``FileMapper``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from kvconfig.errors import ConnectorRefusal


def offload_blocks_per_chunk(
    extra_config: Mapping[str, Any], group_tokens_per_block: Sequence[int]
) -> int:
    """``blocks_per_chunk`` of ``build_offloading_config``
    (``kv_connector/v1/offloading/config.py``), or the ConnectorRefusal vLLM raises."""
    if not group_tokens_per_block:
        raise ConnectorRefusal("ValueError", "KV offloading found no eligible cache groups.")
    per_chunk = extra_config.get("blocks_per_chunk")
    tokens = extra_config.get("block_size")
    if per_chunk is not None and tokens is not None:
        raise ConnectorRefusal(
            "ValueError",
            "Specify only one of 'block_size' or 'blocks_per_chunk' in kv_connector_extra_config.",
        )
    if per_chunk is not None:
        if _int(per_chunk) <= 0:
            raise ConnectorRefusal("ValueError", "'blocks_per_chunk' must be greater than 0.")
        return _int(per_chunk)
    if tokens is None:
        return 1
    unique = set(group_tokens_per_block)
    if len(unique) != 1:
        raise ConnectorRefusal(
            "AssertionError",
            "If 'block_size' is specified in kv_connector_extra_config, there must be at "
            "least one KV cache group, and all groups must have the same block size.",
        )
    block = unique.pop()
    value = _int(tokens)
    if value % block:
        rounded = math.ceil(value / block) * block
        raise ConnectorRefusal(
            "ValueError",
            f"'block_size'={value} in kv_connector_extra_config must be a multiple of the "
            f"GPU KV cache block size ({block} tokens). Use {rounded} instead, or set "
            "'blocks_per_chunk' to express the chunk size in blocks.",
        )
    return value // block


def _int(value: Any) -> int:
    """``int(value)`` as vLLM calls it on the extra config: its error is vLLM's refusal."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError) as err:
        raise ConnectorRefusal(type(err).__name__, str(err)) from None


def file_mapper_fields(
    *,
    model_name: str,
    tokens_per_hash: int,
    blocks_per_file: int,
    tp: int,
    pp: int,
    pcp: int,
    dcp: int,
    dtype: str,
    groups: Sequence[tuple[int, Sequence[str]]],
    parallel_agnostic: bool = False,
    replicated_layout: bool = False,
) -> dict[str, Any]:
    """The fields a file tier namespaces its folder by: ``FileMapper.__init__`` with
    ``from_offloading_spec``'s groups (``v1/kv_offload/file_mapper.py``)."""
    if parallel_agnostic:
        tp = pp = pcp = dcp = 1
    fields: dict[str, Any] = {
        "model_name": model_name,
        "tokens_per_hash": tokens_per_hash,
        "blocks_per_file": blocks_per_file,
        "tp_size": tp,
        "pp_size": pp,
        "pcp_size": pcp,
        "dcp_size": dcp,
        "dtype": dtype,
        "kv_cache_groups": [
            {"tokens_per_block": tokens, "layer_names": list(names)} for tokens, names in groups
        ],
        "inference_engine": "vllm",
    }
    if not parallel_agnostic:
        fields["parallel_agnostic"] = False
    if replicated_layout:
        fields["replicated_layout"] = True
    return fields


def file_mapper_base_path(root_dir: str, fields: Mapping[str, Any]) -> str:
    """``FileMapper._compute_base_path`` (``v1/kv_offload/file_mapper.py``)."""
    canonical = json.dumps(dict(fields), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
    return f"{root_dir}/{str(fields['model_name']).replace('/', '_')}_{digest}"
