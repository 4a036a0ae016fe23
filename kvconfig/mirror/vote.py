"""The kernel block-size vote, exactly as vLLM runs it.

Mirrors ``_block_size_is_supported`` and ``select_common_block_size`` in
``vllm/v1/worker/utils.py``: B wins when every backend accepts it; otherwise the
largest exact size that divides B and every backend accepts; otherwise an error.
A ``MultipleOf`` accepts multiples of its base but never proposes a candidate.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvconfig.errors import NoCommonKernelBlockSize
from kvconfig.schemas.sizes import KernelSize, accepts, format_sizes

Declared = tuple[str, Sequence[KernelSize]]
"""A voter: the backend's vLLM name and the sizes it declares for its layers."""


def all_accept(voters: Sequence[Declared], block: int) -> bool:
    """Every voter accepts ``block``-token kernel pages (an empty list accepts anything)."""
    return all(accepts(list(sizes), block) for _, sizes in voters)


def select_common(block_size: int, voters: Sequence[Declared]) -> int:
    """The kernel block size vLLM picks for a group with manager block size ``block_size``."""
    if all_accept(voters, block_size):
        return block_size
    candidates = sorted(
        {s for _, sizes in voters for s in sizes if isinstance(s, int) and block_size % s == 0},
        reverse=True,
    )
    for size in candidates:
        if all_accept(voters, size):
            return size
    raise NoCommonKernelBlockSize(
        block_size, [(name, format_sizes(list(sizes))) for name, sizes in voters]
    )


def narrow(kernel_block_size: int, voter: Declared) -> int:
    """``AttentionGroup.create_metadata_builders``: a group's k narrowed for one backend
    (the vote over that backend alone, with k as the block size); k when it has none."""
    if accepts(list(voter[1]), kernel_block_size):
        return kernel_block_size
    try:
        return select_common(kernel_block_size, [voter])
    except NoCommonKernelBlockSize:
        return kernel_block_size
