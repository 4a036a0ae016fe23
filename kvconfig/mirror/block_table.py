"""Manager block tables and attention-kernel pages.

The KV-cache manager hands out blocks of ``B`` tokens (the *manager block size*).  An attention
backend may only accept smaller pages of ``k`` tokens (the *kernel block size*).  vLLM then views
every manager block as ``f = B // k`` consecutive kernel pages, and rewrites each block table just
before attention metadata is built: manager block id ``b`` at column ``c`` becomes the kernel page
ids ``b*S + j`` at columns ``c*f + j`` for ``j`` in ``range(f)``, with ``S = f`` for ordinary caches
and ``S`` = the packed stride for packed, compressed caches.

This module mirrors that rewrite in plain Python, so that the rule can be checked without a GPU:

* :func:`expand_block_table` follows ``AttentionGroup.map_to_kernel_block_table`` in
  ``vllm/v1/worker/utils.py``, including ``kernel_block_stride`` for packed caches.
* :func:`kernel_slot` shows why slot mappings, which ``vllm/v1/worker/gpu/block_table.py``
  (``BlockTables``) computes in manager units as ``slot = block*B + offset``, need no rewrite:
  ``b*B + o == (b*f + o//k)*k + o%k``.

Nothing here imports torch or numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["expand_block_table", "kernel_blocks_per_block", "kernel_slot"]


def kernel_blocks_per_block(block_size: int, kernel_block_size: int) -> int:
    """Return ``f = block_size // kernel_block_size`` after checking that the split is exact.

    Raises:
        ValueError: if either size is below 1 or ``kernel_block_size`` does not divide
            ``block_size``.
    """
    if block_size < 1:
        raise ValueError(f"block_size must be a positive number of tokens, got {block_size}")
    if kernel_block_size < 1:
        raise ValueError(
            f"kernel_block_size must be a positive number of tokens, got {kernel_block_size}"
        )
    if block_size % kernel_block_size != 0:
        raise ValueError(
            f"kernel_block_size {kernel_block_size} does not divide block_size {block_size}: "
            f"a {block_size}-token manager block cannot be split into whole "
            f"{kernel_block_size}-token kernel pages"
        )
    return block_size // kernel_block_size


def expand_block_table(
    table: Sequence[Sequence[int]],
    block_size: int,
    kernel_block_size: int,
    stride: int | None = None,
) -> list[list[int]]:
    """Rewrite a manager block table into a kernel-page table.

    Args:
        table: one row per request, each a sequence of manager block ids (``0`` is the null
            block, used for padding and for blocks that fell out of a sliding window).
        block_size: manager block size ``B`` in tokens.
        kernel_block_size: kernel page size ``k`` in tokens; must divide ``B``.
        stride: kernel pages between the starts of two consecutive manager blocks.  ``None``
            means ``f = B // k`` (dense pages); packed, compressed caches pass their
            ``kernel_block_stride``, which must be at least ``f``.

    Returns:
        A new table with ``f`` times as many columns: entry ``c*f + j`` of a row is
        ``row[c] * S + j``.  With ``f == 1`` (and no stride) the result is a copy of ``table``.

    Raises:
        ValueError: on a size that does not split, a stride below ``f``, or a negative block id.
    """
    f = kernel_blocks_per_block(block_size, kernel_block_size)
    if stride is None:
        step = f
    elif stride < f:
        raise ValueError(
            f"stride {stride} is smaller than the {f} kernel pages of each "
            f"{block_size}-token block: consecutive manager blocks would overlap"
        )
    else:
        step = stride
    out: list[list[int]] = []
    for r, row in enumerate(table):
        new_row: list[int] = []
        for c, block in enumerate(row):
            if block < 0:
                raise ValueError(f"block id {block} at row {r}, column {c} is negative")
            first = block * step
            new_row.extend(range(first, first + f))
        out.append(new_row)
    return out


def kernel_slot(slot: int, block_size: int, kernel_block_size: int) -> tuple[int, int]:
    """Map a flat token slot to ``(kernel page id, offset in that page)``.

    vLLM writes KV through flat slots, ``slot = block*B + offset``.  Decomposing the slot in
    manager units and re-expressing it in kernel pages gives page ``block*f + offset // k`` and
    offset ``offset % k``, which is exactly ``divmod(slot, k)``: a cache writer that works on the
    split view with the unchanged slot lands every token where the expanded table will look for it.

    Raises:
        ValueError: on a negative slot or sizes that do not split.
    """
    f = kernel_blocks_per_block(block_size, kernel_block_size)
    if slot < 0:
        raise ValueError(f"slot must be non-negative, got {slot}")
    block, offset = divmod(slot, block_size)
    return block * f + offset // kernel_block_size, offset % kernel_block_size
