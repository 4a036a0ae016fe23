"""Exhaustive CPU checks of manager-block to kernel-page expansion.

Every expansion is compared with a brute-force model of the memory: tokens are written through
flat slots into a simulated cache, and then read back through the expanded table, page by page.
No torch or numpy is needed.
"""

from __future__ import annotations

import random

import pytest

from kvconfig.mirror.block_table import expand_block_table, kernel_blocks_per_block, kernel_slot

NULL = 0
"""vLLM's null block: padding and sliding-window holes point at it."""


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def sample_tables(rng: random.Random, num_blocks: int) -> list[list[list[int]]]:
    """A few small tables: identity, reversed, shuffled, with null-block holes, ragged rows."""
    ids = list(range(1, num_blocks))
    shuffled = ids[:]
    rng.shuffle(shuffled)
    return [
        [[1, 2, 3]],
        [[5, 4, 3, 2, 1]],
        [shuffled[:4], shuffled[4:7]],
        [[NULL, NULL, 7, 3], [2, NULL, 6, 1]],
        [[NULL]],
        [[], [9]],
    ]


def token_at_kernel_page(page: int, offset: int, k: int, block_size: int, stride: int) -> int:
    """Flat manager slot that kernel page ``page`` at ``offset`` addresses in memory.

    A manager block ``b`` starts ``stride`` kernel pages after block ``b - 1``; only its first
    ``f`` pages hold tokens.  Pages in the gap (packed layouts) address no slot: -1.
    """
    f = block_size // k
    block, sub = divmod(page, stride)
    if sub >= f:
        return -1
    return block * block_size + sub * k + offset


def read_through_table(
    row: list[int], page_size: int, length: int, *, k: int, block_size: int, stride: int
) -> list[int]:
    """Which flat slot a paged kernel reads for each of ``length`` token positions."""
    return [
        token_at_kernel_page(row[p // page_size], p % page_size, k, block_size, stride)
        for p in range(length)
    ]


def written_slots(row: list[int], block_size: int, length: int) -> list[int]:
    """Flat slots the cache writer used for each token position (``slot = block*B + offset``)."""
    return [row[p // block_size] * block_size + p % block_size for p in range(length)]


@pytest.mark.parametrize("block_size", range(1, 65))
def test_expanded_table_reads_every_token_where_it_was_written(block_size: int) -> None:
    rng = random.Random(block_size)
    for k in divisors(block_size):
        f = block_size // k
        for table in sample_tables(rng, num_blocks=12):
            expanded = expand_block_table(table, block_size, k)
            assert len(expanded) == len(table)
            for row, kernel_row in zip(table, expanded, strict=True):
                assert len(kernel_row) == len(row) * f
                length = len(row) * block_size
                want = written_slots(row, block_size, length)
                got = read_through_table(
                    kernel_row, k, length, k=k, block_size=block_size, stride=f
                )
                assert got == want, (block_size, k, row)


@pytest.mark.parametrize("block_size", range(1, 65))
def test_packed_stride_expansion(block_size: int) -> None:
    rng = random.Random(1000 + block_size)
    for k in divisors(block_size):
        f = block_size // k
        for stride in (f, f + 1, 2 * f + 3):
            for table in sample_tables(rng, num_blocks=10):
                expanded = expand_block_table(table, block_size, k, stride=stride)
                for row, kernel_row in zip(table, expanded, strict=True):
                    length = len(row) * block_size
                    want = written_slots(row, block_size, length)
                    got = read_through_table(
                        kernel_row, k, length, k=k, block_size=block_size, stride=stride
                    )
                    assert got == want, (block_size, k, stride, row)
                    # Never a page in the gap between packed blocks.
                    assert all(page % stride < f for page in kernel_row)


def test_expansion_formula_matches_vllm_description() -> None:
    # B=128, k=64 (the FlashInfer-on-SM90 case): block b -> pages 2b, 2b+1; null 0 -> 0, 1.
    assert expand_block_table([[3, 0, 7]], 128, 64) == [[6, 7, 0, 1, 14, 15]]
    # B=256, k=64: four pages per block.
    assert expand_block_table([[2]], 256, 64) == [[8, 9, 10, 11]]
    # Packed stride 5 with f=2: b*5 + j.
    assert expand_block_table([[3, 1]], 128, 64, stride=5) == [[15, 16, 5, 6]]


def test_unexpanded_table_reads_wrong_tokens_once_split() -> None:
    """The speculator bug: a table of manager ids read as if it held k-token pages."""
    rng = random.Random(7)
    for block_size in range(2, 65):
        for k in divisors(block_size)[:-1]:  # every proper split, f >= 2
            ids = list(range(1, 40))
            rng.shuffle(ids)
            row = ids[:3]
            length = len(row) * block_size
            # The kernel indexes column p // k; vLLM's table buffer is zero past the real blocks.
            padded = row + [NULL] * (length // k - len(row))
            want = written_slots(row, block_size, length)
            got = read_through_table(
                padded, k, length, k=k, block_size=block_size, stride=block_size // k
            )
            wrong = sum(g != w for g, w in zip(got, want, strict=True))
            assert wrong > 0, (block_size, k, row)
            # Block ids are never 0 here, so even the first page is misread.
            assert got[0] != want[0]


def test_f1_returns_an_unchanged_copy() -> None:
    table = [[4, 0, 2], [1]]
    out = expand_block_table(table, 16, 16)
    assert out == table
    assert out is not table
    assert all(o is not t for o, t in zip(out, table, strict=True))
    out[0][0] = 99
    assert table[0][0] == 4


def test_accepts_tuples_and_empty_tables() -> None:
    assert expand_block_table((), 64, 32) == []
    assert expand_block_table(((1, 2),), 64, 32) == [[2, 3, 4, 5]]
    assert expand_block_table([[]], 64, 32) == [[]]


@pytest.mark.parametrize("block_size", range(1, 65))
def test_kernel_slot_identity(block_size: int) -> None:
    for k in divisors(block_size):
        f = block_size // k
        for slot in range(5 * block_size):
            page, offset = kernel_slot(slot, block_size, k)
            b, o = divmod(slot, block_size)
            assert (page, offset) == (b * f + o // k, o % k)
            assert page * k + offset == slot
            assert 0 <= offset < k
            # The page is one of those the expansion gives for block b.
            assert page in expand_block_table([[b]], block_size, k)[0]


@pytest.mark.parametrize(
    ("block_size", "kernel_block_size", "match"),
    [
        (128, 48, "does not divide"),
        (64, 128, "does not divide"),
        (16, 0, "kernel_block_size must be a positive"),
        (16, -4, "kernel_block_size must be a positive"),
        (0, 16, "block_size must be a positive"),
    ],
)
def test_bad_sizes_raise(block_size: int, kernel_block_size: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        expand_block_table([[1]], block_size, kernel_block_size)
    with pytest.raises(ValueError, match=match):
        kernel_slot(0, block_size, kernel_block_size)
    with pytest.raises(ValueError, match=match):
        kernel_blocks_per_block(block_size, kernel_block_size)


def test_stride_below_split_factor_raises() -> None:
    with pytest.raises(ValueError, match="stride 1 is smaller than the 2 kernel pages"):
        expand_block_table([[1]], 128, 64, stride=1)
    with pytest.raises(ValueError, match="stride 0"):
        expand_block_table([[1]], 128, 32, stride=0)
    # The boundary value is allowed and equals the default.
    assert expand_block_table([[1]], 128, 32, stride=4) == expand_block_table([[1]], 128, 32)


def test_negative_ids_and_slots_raise() -> None:
    with pytest.raises(ValueError, match="row 1, column 0 is negative"):
        expand_block_table([[1], [-1]], 128, 64)
    with pytest.raises(ValueError, match="slot must be non-negative"):
        kernel_slot(-1, 128, 64)
