"""Mooncake's region-length check and what its sender writes
(``vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kvconfig.mirror.connectors.sync import logical_to_kernel_block_ids
from kvconfig.mirror.connectors.topology import tp_ratio


def mooncake_region_lengths(
    local_kv_block_len: int,
    remote_kv_block_len: int,
    local_tp: int,
    remote_tp: int,
    total_kv_heads: int | None,
    *,
    producer_replicated: bool = False,
) -> str | None:
    """The error ``_validate_asymmetric_region_lengths`` returns for one region type
    (``mooncake/mooncake_connector.py``), or None: it compares byte lengths only.

    ``total_kv_heads`` is None for an MLA or Mamba producer; a producer whose cache is
    replicated (``TransferTopology.local_replicates_kv_cache``: MLA, or more TP ranks
    than KV heads) is then not checked at all."""
    if total_kv_heads is not None:
        local_tp = min(local_tp, total_kv_heads)
        remote_tp = min(remote_tp, total_kv_heads)
    elif producer_replicated:
        return None
    ratio = tp_ratio(local_tp, remote_tp)
    if ratio == 1 and local_kv_block_len != remote_kv_block_len:
        return (
            "Mooncake KV region length mismatch for homogeneous TP at region 0: "
            f"local={local_kv_block_len}, remote={remote_kv_block_len}."
        )
    if ratio > 1 and remote_kv_block_len != local_kv_block_len * ratio:
        return (
            "Mooncake destination KV region length does not match the producer TP ratio at "
            f"region 0: local={local_kv_block_len}, remote={remote_kv_block_len}, "
            f"tp_ratio={ratio}."
        )
    if ratio < 0 and local_kv_block_len != remote_kv_block_len * -ratio:
        return (
            "Mooncake source KV region length does not match the consumer TP ratio at region "
            f"0: local={local_kv_block_len}, remote={remote_kv_block_len}, tp_ratio={ratio}."
        )
    return None


@dataclass(frozen=True, slots=True)
class MooncakeSend:
    """What the Mooncake sender (P) does with one request's blocks."""

    error: str | None
    """The per-request error P reports (the request fails), or None."""
    written: list[int] = field(default_factory=list)
    """D's kernel pages P writes, in order."""
    expected: list[int] = field(default_factory=list)
    """The kernel pages D reads the request from."""
    sent: tuple[int, int] = (0, 0)
    """The first and last prompt token P sends."""


def mooncake_send(
    tokens: int, p_block: int, p_ratio: int, d_block: int, d_ratio: int, *, d_first: int = 0
) -> MooncakeSend:
    """One full-attention request of ``tokens`` tokens sent from P to D.

    P's local and D's remote logical block ids are both expanded with P's ratio
    (``_logical_to_kernel_block_ids``), after P drops its leading blocks when it holds
    more than D (``_build_transfer_params``, ``mooncake/mooncake_connector.py``). D's
    blocks are ``d_first ..``.
    """
    n_p = math.ceil(tokens / p_block)
    n_d = math.ceil(tokens / d_block)
    d_ids = list(range(d_first, d_first + n_d))
    expected = logical_to_kernel_block_ids([d_ids], d_ratio)[0]
    if n_p < n_d:
        return MooncakeSend("P num blocks less than D", [], expected)
    written = logical_to_kernel_block_ids([d_ids], p_ratio)[0]
    first = (n_p - n_d) * p_block
    return MooncakeSend(None, written, expected, (first, min(tokens, n_p * p_block) - 1))
