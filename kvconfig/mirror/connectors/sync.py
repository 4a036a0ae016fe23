"""The connectors' own kernel block-size vote and their block-id expansion.

Mirrors ``_sync_block_size_with_kernel`` and ``_logical_to_kernel_block_ids`` of
``vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py`` and
``.../mooncake/mooncake_connector.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kvconfig.errors import ConnectorRefusal, NoCommonKernelBlockSize
from kvconfig.mirror.vote import Declared, select_common


def transfer_block_size(groups: Sequence[tuple[int, bool]], default: int) -> int:
    """The block size NIXL starts from: the LCM of the transfer groups' B, Mamba groups
    left out; ``default`` (``cache_config.block_size``) when none is left.

    ``groups`` holds ``(B, is_state)`` per transfer group (``is_state``: a Mamba or
    circular-buffer group). Mirrors ``NixlBaseConnectorWorker.__init__``
    (``nixl/base_worker.py``).
    """
    sizes = [b for b, is_state in groups if not is_state]
    return math.lcm(*sizes) if sizes else default


@dataclass(frozen=True, slots=True)
class Sync:
    """What ``_sync_block_size_with_kernel`` leaves on a connector worker."""

    logical: int
    """The block size it started from."""
    kernel: int
    """``self.block_size`` afterwards: the page size the connector transfers."""
    pages_per_block: int
    """``_physical_blocks_per_logical_kv_block``."""


def sync_block_size(block_size: int, voters: Sequence[Declared]) -> Sync:
    """One ``select_common_block_size`` over every transfer layer's (backend, spec), for all
    groups at once, and one pages-per-block ratio.

    Mirrors ``_sync_block_size_with_kernel`` of ``NixlBaseConnectorWorker``
    (``nixl/base_worker.py``) and of ``MooncakeConnectorWorker``
    (``mooncake/mooncake_connector.py``), with the voters
    ``get_current_attn_backends_and_specs`` (``kv_connector/utils.py``) collects
    (compressed caches left out). Raises ``NoCommonKernelBlockSize`` as vLLM raises
    ``ValueError: No common block size for ...``.
    """
    kernel = select_common(block_size, voters)
    return Sync(block_size, kernel, block_size // kernel)


def logical_to_kernel_block_ids(
    block_ids: Sequence[Sequence[int]], ratio: int, state_groups: frozenset[int] = frozenset()
) -> list[list[int]]:
    """Logical block ids expanded to kernel page ids, ``b -> b*ratio + j``; state (Mamba)
    groups are left as they are.

    Mirrors ``_logical_to_kernel_block_ids`` of both connector workers.
    """
    if ratio == 1:
        return [list(g) for g in block_ids]
    return [
        list(g) if i in state_groups else [b * ratio + j for b in g for j in range(ratio)]
        for i, g in enumerate(block_ids)
    ]


def connector_error(err: NoCommonKernelBlockSize) -> ConnectorRefusal:
    """vLLM's error when a connector's own vote finds no size."""
    return ConnectorRefusal("ValueError", str(err))
