"""The GPU proof's shapes, tolerances and case list, shared by every step.

Plain Python (no torch, no vLLM): ``hooked_tables.py`` builds the same cases on the CPU to run
vLLM's ``AttentionGroup.map_to_kernel_block_table`` over their block tables, ``run.py`` fills and
reads them on the GPU, and ``tests/test_gpu_proof_results.py`` checks the recorded figures against
the thresholds defined here.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass

# Qwen3-8B attention shapes (examples/models/qwen3-8b/config.json) and the seed's sizes.
NUM_Q_HEADS = 32
NUM_KV_HEADS = 8
HEAD_DIM = 128
DTYPE_NAME = "bfloat16"
BLOCK_SIZE = 128  # manager block size B (--block-size 128)
KERNEL_BLOCK_SIZE = 64  # FlashInfer's largest kernel page below SM100: what the runner votes
SPLIT = BLOCK_SIZE // KERNEL_BLOCK_SIZE
DRAFT_LAYER = "draft_model.model.layers.0.self_attn.attn"
NUM_SPECULATIVE_TOKENS = 3  # examples/qwen3-8b-eagle3-gh200-triton-128.yaml

# An output element is "off" when |out - ref| > ATOL + RTOL * |ref| or it is not finite.
# A run "matches" when no element is off and ||out - ref|| / ||ref|| < MAX_REL_FRO.
ATOL = 2e-2
RTOL = 2e-2
MAX_REL_FRO = 1e-2
# (b) must be far from matching, not just past the line: at least this share of elements off.
MIN_FRAC_OFF_B = 0.5

FULL_SEQ_LENS = (1, 63, 64, 65, 127, 128, 129, 1000, 4096, 8191)
FULL_BATCHES = (1, 8, 64)
SMALL_SEQ_LENS = (1, 63, 64, 65, 129, 300)
SMALL_BATCHES = (1, 8)
Q_LENS = (1, 3)  # 1: a draft decode step; 3: three query tokens per sequence, causal
SPARE_BLOCKS = 8  # blocks nobody owns: they keep the random fill

TIMING_BATCHES = (1, 8, 64)
TIMING_CONTEXTS = (1024, 4096, 16384)
SMALL_TIMING = ((8, 1024),)


@dataclass(frozen=True)
class Case:
    """One batch: its sequences' lengths, query tokens per sequence and manager block table."""

    name: str
    batch: int
    label: str  # the length, or "mixed 3..N"
    lens: tuple[int, ...]
    q_len: int
    num_blocks: int  # including the null block 0 and the spare blocks
    manager_table: tuple[tuple[int, ...], ...]  # one row per sequence, ceil(L / B) ids each

    @property
    def width(self) -> int:
        """Columns of the manager table buffer: ceil(max L / B)."""
        return math.ceil(max(self.lens) / BLOCK_SIZE)

    def padded_manager_rows(self) -> list[list[int]]:
        """The manager table zero-padded to ``width`` columns, as vLLM's table buffer holds it."""
        return [list(row) + [0] * (self.width - len(row)) for row in self.manager_table]

    def fingerprint(self) -> str:
        """A digest of the lengths and the manager table, to pair CPU and GPU cases."""
        blob = json.dumps([self.lens, self.q_len, self.manager_table]).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def allocate(lens: tuple[int, ...], rng: random.Random) -> tuple[int, tuple[tuple[int, ...], ...]]:
    """Hand out shuffled block ids (block 0 stays the null block), ceil(L / B) per sequence."""
    per_seq = [math.ceil(n / BLOCK_SIZE) for n in lens]
    num_blocks = 1 + sum(per_seq) + SPARE_BLOCKS
    ids = list(range(1, num_blocks))
    rng.shuffle(ids)
    rows: list[tuple[int, ...]] = []
    for n in per_seq:
        rows.append(tuple(ids[:n]))
        ids = ids[n:]
    return num_blocks, tuple(rows)


def build_plan(seed: int, small: bool) -> list[Case]:
    """Every (batch, length, q_len) case, plus one batch of mixed lengths in the full plan."""
    rng = random.Random(seed)
    lens_list, batches = (SMALL_SEQ_LENS, SMALL_BATCHES) if small else (FULL_SEQ_LENS, FULL_BATCHES)
    shapes: list[tuple[tuple[int, ...], str]] = [
        ((n,) * b, str(n)) for b in batches for n in lens_list
    ]
    if not small:
        top = max(lens_list)
        mixed = tuple(rng.randint(3, top) for _ in range(max(batches)))
        shapes.append((mixed, f"mixed 3..{top}"))
    cases: list[Case] = []
    for lens, label in shapes:
        for q_len in Q_LENS:
            if min(lens) < q_len:
                continue
            num_blocks, table = allocate(lens, rng)
            name = f"b{len(lens)}-L{label.replace(' ', '').replace('..', '-')}-q{q_len}"
            cases.append(Case(name, len(lens), label, lens, q_len, num_blocks, table))
    return cases


def plan_key(seed: int, small: bool) -> str:
    return f"seed{seed}-{'small' if small else 'full'}"


def timing_shapes(small: bool) -> list[tuple[int, int]]:
    if small:
        return list(SMALL_TIMING)
    return [(b, n) for b in TIMING_BATCHES for n in TIMING_CONTEXTS]
