"""GPU proof: an unsplit block table over split kernel pages reads the wrong KV.

The KV cache is filled the way vLLM writes it (flat slots, ``slot = block*B + offset``, physical
blocks from a shuffled manager block table), then viewed as kernel pages of ``k`` tokens.  One
Triton paged-attention kernel reads it twice:

(a) with the block table expanded by ``kvconfig._blocktable.expand_block_table`` (page size k),
(b) with the unexpanded manager table, which is what vLLM 0.33.0's Model Runner V2 speculator hands
    the kernel when its own vote keeps ``k == B`` while the cache view was split.

Both are compared with dense float32 attention over the original K/V.  (a) must match, (b) must
not.  FlashInfer's paged decode runs the same pair when it can be imported.  Finally (a) is timed
against the same kernel over the unsplit cache (page size B, manager table).

Usage (from the repository root, on a CUDA machine)::

    python3 bench/gpu_proof/run.py --json gpu_proof.json

Exit status: 0 when every (a) run matches and every (b) run differs, 1 otherwise.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def load_file(name: str, path: Path) -> ModuleType:
    """Import one source file as module ``name`` (works however this script was started)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


paged_attention = load_file("gpu_proof_triton_paged", HERE / "triton_paged.py").paged_attention

# Qwen3-8B attention shapes (examples/models/qwen3-8b/config.json) and the seed's sizes.
NUM_Q_HEADS = 32
NUM_KV_HEADS = 8
HEAD_DIM = 128
DTYPE = torch.bfloat16
BLOCK_SIZE = 128  # manager block size B (--block-size)
KERNEL_BLOCK_SIZE = 64  # FlashInfer's largest kernel page below SM100

ATOL = 2e-2
RTOL = 2e-2
MAX_REL_FRO = 1e-2

FULL_SEQ_LENS = (1, 63, 64, 65, 127, 128, 129, 1000, 4096, 8191)
FULL_BATCHES = (1, 8, 64)
SMALL_SEQ_LENS = (1, 63, 64, 65, 129, 300)
SMALL_BATCHES = (1, 8)
Q_LENS = (1, 3)
TIMING_SHAPES = ((64, 4096), (64, 8191), (64, 1000), (8, 8191), (1, 8191))


def load_blocktable() -> tuple[ModuleType, str]:
    """Import ``kvconfig._blocktable``; fall back to loading the file when the package won't."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    try:
        import kvconfig._blocktable as mod

        return mod, "import kvconfig._blocktable"
    except ImportError as exc:  # the package's __init__ may need deps this machine lacks
        path = REPO / "kvconfig" / "_blocktable.py"
        mod = load_file("gpu_proof_blocktable", path)
        return mod, f"loaded {path.relative_to(REPO)} by path ({exc})"


BT, BT_HOW = load_blocktable()


@dataclass
class Errors:
    """How far one kernel output is from the dense reference."""

    max_abs: float
    rel_fro: float
    frac_off: float
    finite: bool

    def matches(self) -> bool:
        return self.finite and self.frac_off == 0.0 and self.rel_fro < MAX_REL_FRO


@dataclass
class CaseResult:
    batch: int
    seq_len: str
    q_len: int
    tokens: int
    ok_a: bool
    ok_b: bool
    a: Errors
    b: Errors
    gather_a_exact: bool
    gather_b_misread: float
    flashinfer: dict[str, Any] = field(default_factory=dict)


@dataclass
class PagedCache:
    """One filled cache plus every table and reference the checks need."""

    lens: list[int]
    manager_table: list[list[int]]
    k_flat: torch.Tensor  # [num_blocks*B, H_kv, D]: what slots index
    v_flat: torch.Tensor
    k_tokens: list[torch.Tensor]  # per sequence, [L, H_kv, D], the unpaged originals
    v_tokens: list[torch.Tensor]
    num_blocks: int

    def pages(self, page: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The same memory viewed as ``[num_blocks*B/page, page, H_kv, D]``: a pure view."""
        shape = (self.num_blocks * BLOCK_SIZE // page, page, NUM_KV_HEADS, HEAD_DIM)
        return self.k_flat.view(shape), self.v_flat.view(shape)


def build_cache(
    lens: Sequence[int], rng: random.Random, device: torch.device, dtype: torch.dtype
) -> PagedCache:
    """Allocate blocks in shuffled order and write every token through its flat slot."""
    per_seq = [math.ceil(n / BLOCK_SIZE) for n in lens]
    spare = 8  # blocks nobody owns: they keep their random garbage
    num_blocks = 1 + sum(per_seq) + spare  # block 0 is vLLM's null block
    ids = list(range(1, num_blocks))
    rng.shuffle(ids)
    table: list[list[int]] = []
    for n in per_seq:
        table.append(ids[:n])
        ids = ids[n:]
    # Garbage everywhere first, so a wrong read returns plausible but wrong numbers.
    shape = (num_blocks * BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM)
    k_flat = torch.randn(shape, device=device).to(dtype)
    v_flat = torch.randn(shape, device=device).to(dtype)
    k_tokens: list[torch.Tensor] = []
    v_tokens: list[torch.Tensor] = []
    for row, n in zip(table, lens, strict=True):
        k = torch.randn((n, NUM_KV_HEADS, HEAD_DIM), device=device).to(dtype)
        v = torch.randn((n, NUM_KV_HEADS, HEAD_DIM), device=device).to(dtype)
        pos = torch.arange(n, device=device)
        blocks = torch.tensor(row, device=device, dtype=torch.int64)[pos // BLOCK_SIZE]
        slots = blocks * BLOCK_SIZE + pos % BLOCK_SIZE  # vLLM's slot mapping, manager units
        k_flat[slots] = k
        v_flat[slots] = v
        k_tokens.append(k)
        v_tokens.append(v)
    return PagedCache(list(lens), table, k_flat, v_flat, k_tokens, v_tokens, num_blocks)


def table_tensor(rows: list[list[int]], width: int, device: torch.device) -> torch.Tensor:
    """Zero-padded int32 table, like vLLM's persistent block-table buffer."""
    out = torch.zeros((len(rows), width), dtype=torch.int32)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row, dtype=torch.int32)
    return out.to(device)


def check_slot_identity(cache: PagedCache, rng: random.Random, samples: int = 2000) -> None:
    """``kernel_slot`` puts each written slot on the page the expanded table names."""
    k_pages, _ = cache.pages(KERNEL_BLOCK_SIZE)
    expanded = BT.expand_block_table(cache.manager_table, BLOCK_SIZE, KERNEL_BLOCK_SIZE)
    for _ in range(samples):
        s = rng.randrange(len(cache.lens))
        if cache.lens[s] == 0:
            continue
        p = rng.randrange(cache.lens[s])
        slot = cache.manager_table[s][p // BLOCK_SIZE] * BLOCK_SIZE + p % BLOCK_SIZE
        page, off = BT.kernel_slot(slot, BLOCK_SIZE, KERNEL_BLOCK_SIZE)
        if (page, off) != (expanded[s][p // KERNEL_BLOCK_SIZE], p % KERNEL_BLOCK_SIZE):
            raise AssertionError(f"slot {slot} of seq {s} pos {p} maps to page {page}/{off}")
        if not torch.equal(k_pages[page, off], cache.k_tokens[s][p]):
            raise AssertionError(f"page {page} offset {off} does not hold seq {s} pos {p}")


def gather_tokens(
    pages: torch.Tensor, table: torch.Tensor, s: int, n: int, page: int
) -> torch.Tensor:
    """What a paged kernel would read for positions ``0..n-1`` of sequence ``s``."""
    pos = torch.arange(n, device=pages.device)
    return pages[table[s, pos // page].long(), pos % page]


def reference(cache: PagedCache, q: torch.Tensor, q_len: int) -> torch.Tensor:
    """Dense float32 causal GQA attention from the unpaged K/V."""
    group = NUM_Q_HEADS // NUM_KV_HEADS
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    for s, n in enumerate(cache.lens):
        k = cache.k_tokens[s].float().repeat_interleave(group, dim=1)  # [L, Hq, D]
        v = cache.v_tokens[s].float().repeat_interleave(group, dim=1)
        qs = q[s * q_len : (s + 1) * q_len].float()  # [q_len, Hq, D]
        scores = torch.einsum("qhd,lhd->hql", qs, k) * HEAD_DIM**-0.5
        qpos = torch.arange(n - q_len, n, device=q.device)[:, None]
        mask = torch.arange(n, device=q.device)[None, :] > qpos
        scores = scores.masked_fill(mask[None], float("-inf"))
        out[s * q_len : (s + 1) * q_len] = torch.einsum("hql,lhd->qhd", scores.softmax(-1), v)
    return out


def compare(out: torch.Tensor, ref: torch.Tensor) -> Errors:
    diff = (out.float() - ref).abs()
    finite = bool(torch.isfinite(out).all())
    off = ~(diff <= ATOL + RTOL * ref.abs())  # NaN counts as off
    return Errors(
        max_abs=float(diff.nan_to_num(nan=float("inf")).max()),
        rel_fro=float(torch.linalg.vector_norm(out.float() - ref) / torch.linalg.vector_norm(ref)),
        frac_off=float(off.float().mean()),
        finite=finite,
    )


def run_flashinfer(
    cache: PagedCache,
    q: torch.Tensor,
    ref: torch.Tensor,
    expanded: list[list[int]],
    state: dict[str, Any],
) -> dict[str, Any]:
    """FlashInfer paged decode (NHD, page_size=k) with the (a) and (b) page lists."""
    if state.get("unavailable"):
        return {"skipped": state["unavailable"]}
    try:
        flashinfer = importlib.import_module("flashinfer")

        device = q.device
        if "wrapper" not in state:
            workspace = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=device)
            state["wrapper"] = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD")
            state["version"] = getattr(flashinfer, "__version__", "?")
        wrapper = state["wrapper"]
        k_pages, v_pages = cache.pages(KERNEL_BLOCK_SIZE)
        result: dict[str, Any] = {"version": state["version"]}
        for label, rows in (("a", expanded), ("b", cache.manager_table)):
            indices: list[int] = []
            indptr = [0]
            last: list[int] = []
            for row, n in zip(rows, cache.lens, strict=True):
                count = math.ceil(n / KERNEL_BLOCK_SIZE)
                padded = list(row) + [0] * max(0, count - len(row))  # zero-filled buffer
                indices.extend(padded[:count])
                indptr.append(len(indices))
                last.append(n - (count - 1) * KERNEL_BLOCK_SIZE)
            wrapper.plan(
                torch.tensor(indptr, dtype=torch.int32, device=device),
                torch.tensor(indices, dtype=torch.int32, device=device),
                torch.tensor(last, dtype=torch.int32, device=device),
                NUM_Q_HEADS,
                NUM_KV_HEADS,
                HEAD_DIM,
                KERNEL_BLOCK_SIZE,
                q_data_type=q.dtype,
                kv_data_type=q.dtype,
            )
            out = wrapper.run(q, (k_pages, v_pages))
            result[label] = asdict(compare(out, ref))
        return result
    except Exception as exc:  # any import or JIT failure only skips FlashInfer
        state["unavailable"] = f"{type(exc).__name__}: {exc}"[:400]
        return {"skipped": state["unavailable"]}


def run_case(
    lens: list[int],
    *,
    label: str,
    q_len: int,
    rng: random.Random,
    device: torch.device,
    fi_state: dict[str, Any] | None,
    dtype: torch.dtype = DTYPE,
) -> CaseResult:
    cache = build_cache(lens, rng, device, dtype)
    check_slot_identity(cache, rng, samples=200)
    batch = len(lens)
    max_len = max(lens)
    # vLLM sizes its kernel table buffer as (manager columns) * f; both tables get that width.
    width = math.ceil(max_len / BLOCK_SIZE) * (BLOCK_SIZE // KERNEL_BLOCK_SIZE)
    expanded = BT.expand_block_table(cache.manager_table, BLOCK_SIZE, KERNEL_BLOCK_SIZE)
    table_a = table_tensor(expanded, width, device)
    table_b = table_tensor(cache.manager_table, width, device)
    seq_lens = torch.tensor(lens, dtype=torch.int32, device=device)
    k_pages, v_pages = cache.pages(KERNEL_BLOCK_SIZE)

    # Data path alone: do the two tables fetch the tokens that were written?
    gather_exact = True
    misread = 0
    for s, n in enumerate(lens):
        got_a = gather_tokens(k_pages, table_a, s, n, KERNEL_BLOCK_SIZE)
        got_b = gather_tokens(k_pages, table_b, s, n, KERNEL_BLOCK_SIZE)
        gather_exact &= bool(torch.equal(got_a, cache.k_tokens[s]))
        misread += int((got_b != cache.k_tokens[s]).flatten(1).any(1).sum())

    q = torch.randn((batch * q_len, NUM_Q_HEADS, HEAD_DIM), device=device).to(dtype)
    ref = reference(cache, q, q_len)
    errors: list[Errors] = []
    for table in (table_a, table_b):
        out = torch.full_like(q, float("nan"))  # poison: every element must be written
        paged_attention(q, k_pages, v_pages, table, seq_lens, q_len=q_len, out=out)
        errors.append(compare(out, ref))
    fi: dict[str, Any] = {}
    if fi_state is not None and q_len == 1:
        fi = run_flashinfer(cache, q, ref, expanded, fi_state)
    return CaseResult(
        batch=batch,
        seq_len=label,
        q_len=q_len,
        tokens=sum(lens),
        ok_a=errors[0].matches() and gather_exact,
        ok_b=not errors[1].matches(),
        a=errors[0],
        b=errors[1],
        gather_a_exact=gather_exact,
        gather_b_misread=misread / sum(lens),
        flashinfer=fi,
    )


def correctness(
    seq_lens: Sequence[int],
    batches: Sequence[int],
    device: torch.device,
    *,
    seed: int = 0,
    mixed: bool = True,
    flashinfer: bool = True,
    dtype: torch.dtype = DTYPE,
) -> list[CaseResult]:
    """Every (batch, length, q_len) case; plus one batch of mixed lengths when ``mixed``."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    fi_state: dict[str, Any] | None = {} if flashinfer else None
    results: list[CaseResult] = []
    shapes: list[tuple[list[int], str]] = [([n] * b, str(n)) for b in batches for n in seq_lens]
    if mixed:
        top = max(seq_lens)
        shapes.append(([rng.randint(3, top) for _ in range(max(batches))], f"mixed 3..{top}"))
    for lens, label in shapes:
        for q_len in Q_LENS:
            if min(lens) < q_len:
                continue
            results.append(
                run_case(
                    lens,
                    label=label,
                    q_len=q_len,
                    rng=rng,
                    device=device,
                    fi_state=fi_state,
                    dtype=dtype,
                )
            )
    return results


@dataclass
class Timing:
    batch: int
    seq_len: int
    split_ms: list[float]
    unsplit_ms: list[float]
    control_ms: list[float]
    split_median_ms: float
    unsplit_median_ms: float
    ratio: float
    control_ratio: float
    split_tb_s: float
    max_abs_split_vs_unsplit: float


def timing(shapes: Sequence[tuple[int, int]], device: torch.device, rounds: int) -> list[Timing]:
    """Median time of (a) against the same kernel over unsplit pages, interleaved rounds."""
    from triton.testing import do_bench  # type: ignore[import-untyped, unused-ignore]

    rng = random.Random(1)
    results: list[Timing] = []
    for batch, n in shapes:
        cache = build_cache([n] * batch, rng, device, DTYPE)
        expanded = BT.expand_block_table(cache.manager_table, BLOCK_SIZE, KERNEL_BLOCK_SIZE)
        table_a = table_tensor(expanded, len(expanded[0]), device)
        table_u = table_tensor(cache.manager_table, math.ceil(n / BLOCK_SIZE), device)
        seq_lens = torch.full((batch,), n, dtype=torch.int32, device=device)
        q = torch.randn((batch, NUM_Q_HEADS, HEAD_DIM), device=device).to(DTYPE)
        out_a = torch.empty_like(q)
        out_u = torch.empty_like(q)
        ka, va = cache.pages(KERNEL_BLOCK_SIZE)
        ku, vu = cache.pages(BLOCK_SIZE)

        split = functools.partial(paged_attention, q, ka, va, table_a, seq_lens, q_len=1, out=out_a)
        unsplit = functools.partial(
            paged_attention, q, ku, vu, table_u, seq_lens, q_len=1, out=out_u
        )
        split()
        unsplit()
        torch.cuda.synchronize()
        same = float((out_a.float() - out_u.float()).abs().max())
        # "control" times the unsplit kernel a second time: its ratio to "unsplit" is the noise.
        fns: dict[str, Callable[[], object]] = {
            "split": split,
            "unsplit": unsplit,
            "control": unsplit,
        }
        runs: dict[str, list[float]] = {name: [] for name in fns}
        names = list(fns)
        for r in range(rounds):
            for name in names[r % 3 :] + names[: r % 3]:  # rotate the order every round
                runs[name].append(
                    float(do_bench(fns[name], warmup=25, rep=200, return_mode="median"))
                )
        med_a = statistics.median(runs["split"])
        med_u = statistics.median(runs["unsplit"])
        med_c = statistics.median(runs["control"])
        kv_bytes = 2 * batch * n * NUM_KV_HEADS * HEAD_DIM * 2
        results.append(
            Timing(
                batch=batch,
                seq_len=n,
                split_ms=runs["split"],
                unsplit_ms=runs["unsplit"],
                control_ms=runs["control"],
                split_median_ms=med_a,
                unsplit_median_ms=med_u,
                ratio=med_a / med_u,
                control_ratio=med_c / med_u,
                split_tb_s=kv_bytes / (med_a * 1e-3) / 1e12,
                max_abs_split_vs_unsplit=same,
            )
        )
        del cache
        torch.cuda.empty_cache()
    return results


def device_info(device: torch.device) -> dict[str, Any]:
    import triton  # type: ignore[import-untyped, unused-ignore]

    info: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "triton": triton.__version__,
        "blocktable_source": BT_HOW,
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(
            name=props.name,
            capability=f"{props.major}.{props.minor}",
            sms=props.multi_processor_count,
            memory_gib=round(props.total_memory / 2**30, 1),
        )
        try:
            smi = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
            info["nvidia_smi"] = smi.stdout.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            info["nvidia_smi"] = f"unavailable: {exc}"
    else:
        info["name"] = "cpu (TRITON_INTERPRET)"
    return info


def fmt_err(e: Errors) -> str:
    return f"{e.max_abs:9.2e} {e.rel_fro:8.1e} {100 * e.frac_off:6.1f}%"


def report(
    info: dict[str, Any], cases: list[CaseResult], times: list[Timing], elapsed: float
) -> None:
    print(
        f"device: {info.get('name')} cc {info.get('capability', '-')} | "
        f"driver/max SM clock: {info.get('nvidia_smi', '-')}"
    )
    print(
        f"torch {info['torch']} (CUDA {info['torch_cuda']}), triton {info['triton']}, "
        f"python {info['python']}; blocktable: {info['blocktable_source']}"
    )
    print(
        f"B={BLOCK_SIZE} k={KERNEL_BLOCK_SIZE} f={BLOCK_SIZE // KERNEL_BLOCK_SIZE}; "
        f"Hq={NUM_Q_HEADS} Hkv={NUM_KV_HEADS} D={HEAD_DIM} {info.get('dtype', 'bfloat16')}; "
        f"tolerance |err| <= {ATOL} + {RTOL}*|ref|, rel Frobenius < {MAX_REL_FRO}"
    )
    print()
    print(
        "batch  seq_len        q | (a) expanded: max_abs  rel_fro   off | "
        "(b) manager: max_abs  rel_fro   off | b misread | verdict"
    )
    for c in cases:
        verdict = "ok" if c.ok_a and c.ok_b else "FAIL"
        print(
            f"{c.batch:5d}  {c.seq_len:>13s} {c.q_len:1d} |          {fmt_err(c.a)} | "
            f"        {fmt_err(c.b)} | {100 * c.gather_b_misread:8.1f}% | {verdict}"
        )
    fi = [c for c in cases if c.flashinfer]
    if fi:
        print()
        skipped = [c.flashinfer["skipped"] for c in fi if "skipped" in c.flashinfer]
        ran = [c for c in fi if "a" in c.flashinfer]
        if ran:
            print(
                f"FlashInfer {ran[0].flashinfer['version']} BatchDecodeWithPagedKVCacheWrapper "
                f"(NHD, page_size={KERNEL_BLOCK_SIZE}):"
            )
            for c in ran:
                a, b = Errors(**c.flashinfer["a"]), Errors(**c.flashinfer["b"])
                print(
                    f"  batch {c.batch:3d} L {c.seq_len:>13s}: (a) {fmt_err(a)} | (b) {fmt_err(b)}"
                )
        if skipped:
            print(f"FlashInfer not run: {skipped[0]}")
    if times:
        print()
        print(
            "timing, q_len 1 (ms, median of per-round medians [min..max over rounds]); "
            "control = unsplit timed again / unsplit"
        )
        print(
            "batch seq_len | split k=64, expanded table | unsplit B=128, manager table | ratio | "
            "control ratio | split TB/s | max|a-u|"
        )
        for t in times:
            print(
                f"{t.batch:5d} {t.seq_len:7d} | {t.split_median_ms:8.4f} "
                f"[{min(t.split_ms):.4f}..{max(t.split_ms):.4f}] | "
                f"{t.unsplit_median_ms:8.4f} [{min(t.unsplit_ms):.4f}..{max(t.unsplit_ms):.4f}] | "
                f"{t.ratio:5.3f} | {t.control_ratio:5.3f} | {t.split_tb_s:5.2f} | "
                f"{t.max_abs_split_vs_unsplit:.1e}"
            )
    n_a = sum(c.ok_a for c in cases)
    n_b = sum(c.ok_b for c in cases)
    print()
    print(
        f"(a) matched in {n_a}/{len(cases)} cases; (b) differed in {n_b}/{len(cases)} cases; "
        f"{elapsed:.1f} s"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", type=Path, help="write all figures here (default: $OUT/...)")
    parser.add_argument("--small", action="store_true", help="small correctness cases only")
    parser.add_argument("--no-timing", action="store_true", help="skip the timing part")
    parser.add_argument("--no-flashinfer", action="store_true", help="do not try FlashInfer")
    parser.add_argument("--rounds", type=int, default=5, help="timing rounds per shape")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--dtype",
        choices=("bfloat16", "float32"),
        default="bfloat16",
        help="KV/query dtype of the correctness part (timing is always bfloat16)",
    )
    parser.add_argument(
        "--device",
        default="cuda",
        help="torch device; 'cpu' only works under TRITON_INTERPRET=1 (slow, for development)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    start = time.perf_counter()
    info = device_info(device)
    dtype: torch.dtype = getattr(torch, args.dtype)
    info["dtype"] = args.dtype
    lens, batches = (SMALL_SEQ_LENS, SMALL_BATCHES) if args.small else (FULL_SEQ_LENS, FULL_BATCHES)
    cases = correctness(
        lens, batches, device, seed=args.seed, flashinfer=not args.no_flashinfer, dtype=dtype
    )
    times: list[Timing] = []
    if not args.no_timing and device.type == "cuda":
        shapes = TIMING_SHAPES[:1] if args.small else TIMING_SHAPES
        times = timing(shapes, device, args.rounds)
    elapsed = time.perf_counter() - start
    report(info, cases, times, elapsed)
    ok = all(c.ok_a and c.ok_b for c in cases)
    ok &= all(t.max_abs_split_vs_unsplit <= ATOL for t in times)
    out_path = args.json
    if out_path is None and os.environ.get("OUT"):
        out_path = Path(os.environ["OUT"]) / "gpu_proof.json"
    if out_path is not None:
        payload = {
            "ok": ok,
            "device": info,
            "config": {
                "block_size": BLOCK_SIZE,
                "kernel_block_size": KERNEL_BLOCK_SIZE,
                "num_q_heads": NUM_Q_HEADS,
                "num_kv_heads": NUM_KV_HEADS,
                "head_dim": HEAD_DIM,
                "dtype": args.dtype,
                "atol": ATOL,
                "rtol": RTOL,
                "max_rel_fro": MAX_REL_FRO,
                "seed": args.seed,
                "argv": list(argv) if argv is not None else sys.argv[1:],
            },
            "cases": [asdict(c) for c in cases],
            "timing": [asdict(t) for t in times],
            "elapsed_s": elapsed,
        }
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(payload, indent=1))
        print(f"wrote {out_path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
