"""GPU proof with vLLM 0.33.0's own kernels: which KV pages each block table makes them read.

The subject is vLLM's Triton unified attention kernel (``unified_attention`` in
``vllm/v1/attention/ops/triton_unified_attention.py``), the kernel of the ``TRITON_ATTN`` backend
that the seed's EAGLE3 drafter runs, loaded from the files of the released wheel (see
``extract.py``).  The KV cache is allocated and viewed by vLLM's own code
(``compute_layout_strides`` and ``create_kv_cache_views`` in ``vllm/v1/kv_cache_interface.py``,
layout as vLLM resolves it for FLASHINFER + TRITON_ATTN), written by vLLM's own cache-writer
kernel (``reshape_and_cache_kernel_flash``) through manager-unit slots, and read three ways:

(a) through the table expanded by the runner's rule (``b -> 2b, 2b+1``, computed by
    ``kvconfig/mirror/block_table.py``), over the 64-token kernel pages the runner split it into;
(b) through the unexpanded manager table that vLLM 0.33.0's Model Runner V2 speculator passes;
(c) through the table vLLM's ``AttentionGroup.map_to_kernel_block_table`` builds once the hooks
    hand the speculator the runner's kernel block size (computed on the CPU by
    ``hooked_tables.py`` and carried here).

Each is compared with dense float32 attention over the original K/V: (a) and (c) must match,
(b) must not.  FlashInfer's paged decode (``BatchDecodeWithPagedKVCacheWrapper`` as vLLM's
FLASHINFER backend builds it) runs (a) and (b) when its JIT build works.  Finally the split cache
(64-token pages, expanded table) is timed against the unsplit one (128-token pages, manager table)
through vLLM's kernel, under CUDA graph replay.

Usage (from the repository root, on a CUDA machine, after the CPU steps in docs/gpu-proof.md)::

    python3 bench/gpu_proof/run.py --carry bench/gpu_proof/_carry --json h200.json

Exit status: 0 when every (a) and (c) run matches and every (b) run differs, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_CARRY = HERE / "_carry"


def load_file(name: str, path: Path) -> ModuleType:
    """Import one source file as module ``name`` (works however this script was started)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


P = load_file("gpu_proof_plan", HERE / "plan.py")
DTYPE = getattr(torch, P.DTYPE_NAME)


def load_blocktable() -> tuple[ModuleType, str]:
    """kvconfig's mirror of vLLM's table rewrite; by path when the package's deps are missing."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    try:
        import kvconfig.mirror.block_table as mod

        return mod, "import kvconfig.mirror.block_table"
    except ImportError as exc:  # kvconfig/__init__ needs pydantic, which a GPU image may lack
        path = REPO / "kvconfig" / "mirror" / "block_table.py"
        return load_file("gpu_proof_blocktable", path), f"loaded {path.relative_to(REPO)} ({exc})"


BT, BT_HOW = load_blocktable()


# --------------------------------------------------------------------------------------------
# vLLM's files, from the carried extract


def unpack(zip_path: Path, dest: Path) -> dict[str, str]:
    """Extract ``zip_path`` into ``dest``; return member -> SHA-256."""
    digests: dict[str, str] = {}
    with zipfile.ZipFile(zip_path) as zf:
        for name in zf.namelist():
            data = zf.read(name)
            digests[name] = hashlib.sha256(data).hexdigest()
        zf.extractall(dest)
    return digests


class LaunchRecorder:
    """Wraps ``reduce_segments`` in the kernel module to see whether the split-K path ran."""

    def __init__(self, module: ModuleType):
        self.module = module
        self.inner = module.reduce_segments
        self.count = 0
        module.reduce_segments = self

    def __getitem__(self, grid: Any) -> Any:
        self.count += 1
        return self.inner[grid]


@dataclass
class Vllm:
    """The vLLM functions the proof calls, and where they came from."""

    src: Path
    unified_attention: Callable[..., Any]
    writer_kernel: Any  # reshape_and_cache_kernel_flash
    kv: ModuleType  # vllm.v1.kv_cache_interface
    layout_enum: Any  # vllm.v1.kv_cache_layout.KVCacheLayout
    module: ModuleType  # vllm.v1.attention.ops.triton_unified_attention
    provenance: dict[str, Any]
    recorder: LaunchRecorder


def make_stand_in_platform(interface: ModuleType) -> Any:
    """The one stand-in: vLLM's CUDA platform class imports ``vllm._C_stable_libtorch``."""

    class StandInCuda(interface.Platform):  # type: ignore[misc, name-defined]
        """What the loaded modules ask of ``current_platform`` on an NVIDIA GPU."""

        _enum = interface.PlatformEnum.CUDA
        device_name = "cuda"
        device_type = "cuda"
        dispatch_key = "CUDA"
        ray_device_key = "GPU"
        dist_backend = "nccl"
        device_control_env_var = "CUDA_VISIBLE_DEVICES"

        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> Any:
            major, minor = torch.cuda.get_device_capability(device_id)
            return interface.DeviceCapability(major=major, minor=minor)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return str(torch.cuda.get_device_name(device_id))

    return StandInCuda()


def load_vllm(carry: Path, workdir: Path) -> Vllm:
    manifest = json.loads((carry / "manifest.json").read_text())
    src = workdir / "vllm_src"
    got = unpack(carry / "vllm.zip", src)
    expected = manifest["vllm"]["files"]
    if got != expected:
        raise SystemExit("vllm.zip does not match manifest.json: rerun extract.py")
    sys.path.insert(0, str(src))
    os.environ.setdefault("VLLM_PLUGINS", "")  # no plugin discovery
    platforms = importlib.import_module("vllm.platforms")
    interface = importlib.import_module("vllm.platforms.interface")
    stand_in = make_stand_in_platform(interface)
    platforms._current_platform = stand_in  # resolved: the plugins' probe never runs
    if not importlib.import_module("vllm.triton_utils").HAS_TRITON:
        raise SystemExit("vllm.triton_utils found no active Triton driver")
    tua = importlib.import_module("vllm.v1.attention.ops.triton_unified_attention")
    rc = importlib.import_module("vllm.v1.attention.ops.triton_reshape_and_cache_flash")
    kv = importlib.import_module("vllm.v1.kv_cache_interface")
    layout = importlib.import_module("vllm.v1.kv_cache_layout")
    loaded = sorted(k for k in sys.modules if k == "vllm" or k.startswith("vllm."))
    outside = [
        k
        for k in loaded
        if getattr(sys.modules[k], "__file__", None)
        and not str(Path(sys.modules[k].__file__).resolve()).startswith(str(src.resolve()))
    ]
    if outside:
        raise SystemExit(f"vLLM modules loaded from elsewhere: {outside}")
    vllm = sys.modules["vllm"]
    provenance = {
        "version": getattr(vllm, "__version__", "?"),
        "wheel": manifest["vllm"]["wheel"],
        "wheel_sha256": manifest["vllm"]["sha256"],
        "modules_loaded": len(loaded),
        "files_carried": len(expected),
        "kernel_sha256": expected["vllm/v1/attention/ops/triton_unified_attention.py"],
        "stand_ins": {
            "vllm.platforms.current_platform": (
                "StandInCuda (run.py), a vllm.platforms.interface.Platform with the CUDA enum and "
                "torch's device capability, set before first use; vLLM's CudaPlatform "
                "(vllm/platforms/cuda.py) imports the compiled vllm._C_stable_libtorch, and "
                "resolving the platform probes NVML and the platform plugins"
            ),
        },
    }
    return Vllm(
        src,
        tua.unified_attention,
        rc.reshape_and_cache_kernel_flash,
        kv,
        layout.KVCacheLayout,
        tua,
        provenance,
        LaunchRecorder(tua),
    )


# --------------------------------------------------------------------------------------------
# The KV cache, as vLLM 0.33.0 allocates, views and writes it


@dataclass
class Cache:
    case_lens: list[int]
    manager_table: list[list[int]]
    num_blocks: int
    raw: torch.Tensor  # the int8 backing allocation
    split: tuple[torch.Tensor, torch.Tensor]  # K, V: [num_blocks*2, 64, H_kv, D]
    unsplit: tuple[torch.Tensor, torch.Tensor]  # K, V: [num_blocks, 128, H_kv, D]
    k_tokens: list[torch.Tensor]  # per sequence, [L, H_kv, D]
    v_tokens: list[torch.Tensor]
    layout: dict[str, Any]


def triton_kv_views(view: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``TritonAttentionImpl.forward``: (B, H, N, 2*hs) -> K, V of (B, N, H, hs)."""
    key_cache, value_cache = view.transpose(1, 2).split(P.HEAD_DIM, dim=-1)
    return key_cache, value_cache


def write_kv(
    vllm: Vllm,
    key: torch.Tensor,
    value: torch.Tensor,
    cache: tuple[torch.Tensor, torch.Tensor],
    slot_mapping: torch.Tensor,
) -> None:
    """vLLM's cache-writer kernel, launched as ``triton_reshape_and_cache_flash`` launches it.

    The arguments are the ones that wrapper computes for a bf16 cache (``kv_cache_dtype
    "auto"``) in the NHD view on CUDA.  The wrapper itself is not called: its dtype check
    (``is_quantized_kv_cache``) imports ``vllm.config``, which needs pydantic, openai and more.
    """
    import triton  # type: ignore[import-untyped, unused-ignore]

    key_cache, value_cache = cache
    num_heads, head_size = key.shape[1], key.shape[2]
    n = num_heads * head_size
    tile = min(2048, triton.next_power_of_2(n))
    if torch.cuda.get_device_capability(key.device)[0] < 9:
        tile = min(512, tile)
    one = torch.ones((), dtype=torch.float32, device=key.device)
    vllm.writer_kernel[(slot_mapping.shape[0], triton.cdiv(n, tile))](
        key_ptr=key,
        value_ptr=value,
        key_cache_ptr=key_cache,
        value_cache_ptr=value_cache,
        slot_mapping_ptr=slot_mapping,
        k_scale=one,
        v_scale=one,
        key_stride=key.stride()[0],
        value_stride=value.stride()[0],
        block_stride=key_cache.stride()[0],
        head_stride=key_cache.stride()[2],
        dim_stride_k=0,
        dim_stride_v=0,
        page_stride=key_cache.stride()[1],
        num_heads=num_heads,
        head_size=head_size,
        block_size=key_cache.shape[1],
        x=1,
        USE_HEAD_MAJOR_LAYOUT=False,
        INTERLEAVED_V_PACK_FACTOR=0,
        FP8_KV_CACHE=False,
        TILE_SIZE=tile,
        num_warps=16,
        num_stages=10,
    )


def build_cache(
    vllm: Vllm,
    layout_name: str,
    *,
    lens: Sequence[int],
    manager_table: Sequence[Sequence[int]],
    num_blocks: int,
    gen: torch.Generator,
    device: torch.device,
) -> Cache:
    kv = vllm.kv
    layout = vllm.layout_enum[layout_name]
    spec = kv.FullAttentionSpec(
        block_size=P.BLOCK_SIZE,
        num_kv_heads=P.NUM_KV_HEADS,
        head_size=P.HEAD_DIM,
        dtype=DTYPE,
        is_draft=True,
    )
    # get_kv_cache_config_from_groups (vllm/v1/core/kv_cache_planning.py): the draft layer's spec
    # differs from the target layers', so it gets a KVCacheTensor of its own.
    layer_stride, block_stride, *_ = kv.compute_layout_strides(spec, num_blocks, 1, layout)
    tensor = kv.KVCacheTensor(
        size=layer_stride,
        layers=[P.DRAFT_LAYER],
        layer_stride=layer_stride,
        block_stride=block_stride,
    )
    raw = torch.zeros(tensor.size, dtype=torch.int8, device=device)  # allocate_kv_cache
    raw.view(DTYPE).normal_(generator=gen)  # garbage: a wrong read returns plausible numbers
    (split_view,) = kv.create_kv_cache_views(
        raw, spec, num_blocks, layout, tensor, kernel_block_size=P.KERNEL_BLOCK_SIZE
    )
    (unsplit_view,) = kv.create_kv_cache_views(
        raw, spec, num_blocks, layout, tensor, kernel_block_size=None
    )
    split = triton_kv_views(split_view)
    unsplit = triton_kv_views(unsplit_view)

    # do_kv_cache_update: vLLM's writer on the split view, slots in manager units (b*B + o).
    k_tokens: list[torch.Tensor] = []
    v_tokens: list[torch.Tensor] = []
    slots: list[torch.Tensor] = []
    for row, n in zip(manager_table, lens, strict=True):
        shape = (n, P.NUM_KV_HEADS, P.HEAD_DIM)
        k_tokens.append(torch.randn(shape, device=device, generator=gen).to(DTYPE))
        v_tokens.append(torch.randn(shape, device=device, generator=gen).to(DTYPE))
        pos = torch.arange(n, device=device)
        blocks = torch.tensor(row, device=device, dtype=torch.int64)[pos // P.BLOCK_SIZE]
        slots.append(blocks * P.BLOCK_SIZE + pos % P.BLOCK_SIZE)
    write_kv(vllm, torch.cat(k_tokens), torch.cat(v_tokens), split, torch.cat(slots))
    layout_info = {
        "layout": layout_name,
        "raw_bytes": tensor.size,
        "block_stride_bytes": block_stride,
        "split_view": {"shape": list(split_view.shape), "stride": list(split_view.stride())},
        "unsplit_view": {"shape": list(unsplit_view.shape), "stride": list(unsplit_view.stride())},
        "key_cache_split": {"shape": list(split[0].shape), "stride": list(split[0].stride())},
        "value_cache_offset_elements": split[1].storage_offset() - split[0].storage_offset(),
    }
    return Cache(
        list(lens),
        [list(r) for r in manager_table],
        num_blocks,
        raw,
        split,
        unsplit,
        k_tokens,
        v_tokens,
        layout_info,
    )


def check_writes(cache: Cache, rng: random.Random, samples: int = 200) -> bool:
    """Every token sits at (block b, offset o) of the unsplit view and, per ``kernel_slot``,
    at page 2b + o//64, offset o%64 of the split view."""
    ok = True
    ku, vu = cache.unsplit
    for s, (row, n) in enumerate(zip(cache.manager_table, cache.case_lens, strict=True)):
        pos = torch.arange(n, device=ku.device)
        blocks = torch.tensor(row, device=ku.device, dtype=torch.int64)[pos // P.BLOCK_SIZE]
        ok &= bool(torch.equal(ku[blocks, pos % P.BLOCK_SIZE], cache.k_tokens[s]))
        ok &= bool(torch.equal(vu[blocks, pos % P.BLOCK_SIZE], cache.v_tokens[s]))
    ks, _ = cache.split
    for _ in range(samples):
        s = rng.randrange(len(cache.case_lens))
        p = rng.randrange(cache.case_lens[s])
        slot = cache.manager_table[s][p // P.BLOCK_SIZE] * P.BLOCK_SIZE + p % P.BLOCK_SIZE
        page, off = BT.kernel_slot(slot, P.BLOCK_SIZE, P.KERNEL_BLOCK_SIZE)
        ok &= bool(torch.equal(ks[page, off], cache.k_tokens[s][p]))
    return ok


def table_tensor(rows: Sequence[Sequence[int]], width: int, device: torch.device) -> torch.Tensor:
    """Zero-padded int32 table, like vLLM's persistent block-table buffer."""
    out = torch.zeros((len(rows), width), dtype=torch.int32)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(list(row), dtype=torch.int32)
    return out.to(device)


def misread_rows(cache: Cache, table: torch.Tensor) -> float:
    """Share of (sequence, position) key rows a 64-token-page reader fetches from elsewhere."""
    k_pages = cache.split[0]
    bad = 0
    for s, n in enumerate(cache.case_lens):
        pos = torch.arange(n, device=k_pages.device)
        page = table[s, pos // P.KERNEL_BLOCK_SIZE].long()
        got = k_pages[page, pos % P.KERNEL_BLOCK_SIZE]
        bad += int((got != cache.k_tokens[s]).flatten(1).any(1).sum())
    return bad / sum(cache.case_lens)


def reference(cache: Cache, q: torch.Tensor, q_len: int) -> torch.Tensor:
    """Dense float32 causal GQA attention from the unpaged K/V."""
    group = P.NUM_Q_HEADS // P.NUM_KV_HEADS
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    for s, n in enumerate(cache.case_lens):
        k = cache.k_tokens[s].float().repeat_interleave(group, dim=1)  # [L, Hq, D]
        v = cache.v_tokens[s].float().repeat_interleave(group, dim=1)
        qs = q[s * q_len : (s + 1) * q_len].float()
        scores = torch.einsum("qhd,lhd->hql", qs, k) * P.HEAD_DIM**-0.5
        qpos = torch.arange(n - q_len, n, device=q.device)[:, None]
        mask = torch.arange(n, device=q.device)[None, :] > qpos
        scores = scores.masked_fill(mask[None], float("-inf"))
        out[s * q_len : (s + 1) * q_len] = torch.einsum("hql,lhd->qhd", scores.softmax(-1), v)
    return out


@dataclass
class Errors:
    """How far one kernel output is from the dense reference."""

    max_abs: float
    rel_fro: float
    frac_off: float
    finite: bool

    def matches(self) -> bool:
        return self.finite and self.frac_off == 0.0 and self.rel_fro < P.MAX_REL_FRO


def compare(out: torch.Tensor, ref: torch.Tensor) -> Errors:
    diff = (out.float() - ref).abs()
    off = ~(diff <= P.ATOL + P.RTOL * ref.abs())  # NaN counts as off
    return Errors(
        max_abs=float(diff.nan_to_num(nan=float("inf")).max()),
        rel_fro=float(torch.linalg.vector_norm(out.float() - ref) / torch.linalg.vector_norm(ref)),
        frac_off=float(off.float().mean()),
        finite=bool(torch.isfinite(out).all()),
    )


# --------------------------------------------------------------------------------------------
# vLLM's kernel, called as TritonAttentionImpl.forward calls it


@dataclass
class Scratch:
    """``TritonAttentionMetadataBuilder.__init__``'s split-K buffers for the seed."""

    seq_threshold_3d: int
    segments: int
    output: torch.Tensor
    max: torch.Tensor
    expsum: torch.Tensor

    @classmethod
    def for_seed(cls, constants: dict[str, int], device: torch.device) -> Scratch:
        # seq_threshold_3D = MIN_LAUNCH_GRID_SIZE_2D // num_kv_heads = 16; with CUDA graphs it
        # becomes the capture size closest to that, which is 16 itself.  Rows: min(threshold,
        # max_num_seqs) * min(1 + num_speculative_tokens, MAX_3D_QUERY_LEN).
        threshold = constants["MIN_LAUNCH_GRID_SIZE_2D"] // P.NUM_KV_HEADS
        segments = constants["NUM_PAR_SOFTMAX_SEGMENTS"]
        rows = threshold * min(1 + P.NUM_SPECULATIVE_TOKENS, constants["MAX_3D_QUERY_LEN"])
        head_padded = 1 << (P.HEAD_DIM - 1).bit_length()
        f32 = torch.float32
        return cls(
            threshold,
            segments,
            torch.empty((rows, P.NUM_Q_HEADS, segments, head_padded), dtype=f32, device=device),
            torch.empty((rows, P.NUM_Q_HEADS, segments), dtype=f32, device=device),
            torch.empty((rows, P.NUM_Q_HEADS, segments), dtype=f32, device=device),
        )


def attention_call(
    vllm: Vllm,
    scratch: Scratch,
    *,
    q: torch.Tensor,
    kv_cache: tuple[torch.Tensor, torch.Tensor],
    table: torch.Tensor,
    seq_lens: torch.Tensor,
    q_len: int,
    out: torch.Tensor,
) -> Callable[[], None]:
    """A closure over every argument, so that a CUDA graph can capture the call."""
    num_seqs = seq_lens.shape[0]
    cu_seqlens_q = torch.arange(
        0, (num_seqs + 1) * q_len, q_len, dtype=torch.int32, device=q.device
    )
    descale = torch.ones((), dtype=torch.float32, device=q.device).expand(
        num_seqs, kv_cache[0].shape[2]
    )
    kwargs = dict(
        q=q,
        k=kv_cache[0],
        v=kv_cache[1],
        out=out,
        cu_seqlens_q=cu_seqlens_q,
        max_seqlen_q=q_len,
        seqused_k=seq_lens,
        max_seqlen_k=int(seq_lens.max()),
        softmax_scale=P.HEAD_DIM**-0.5,
        causal=True,
        alibi_slopes=None,
        use_alibi_sqrt=False,
        window_size=(-1, -1),
        block_table=table,
        softcap=0,
        q_descale=None,
        k_descale=descale,
        v_descale=descale,
        seq_threshold_3D=scratch.seq_threshold_3d,
        num_par_softmax_segments=scratch.segments,
        softmax_segm_output=scratch.output,
        softmax_segm_max=scratch.max,
        softmax_segm_expsum=scratch.expsum,
        sinks=None,
        output_scale=None,
        mm_prefix_range=None,
        rswa_prefix_lens=None,
        rswa_window=None,
        k_scale_cache=None,
        v_scale_cache=None,
        chunk_lookback=-1,
        use_td=False,
        mm_prefix_clamp_sliding_window=False,
    )

    def call() -> None:
        vllm.unified_attention(**kwargs)

    return call


def run_kernel(vllm: Vllm, call: Callable[[], None], out: torch.Tensor) -> tuple[torch.Tensor, str]:
    out.fill_(float("nan"))  # poison: every element must be written
    before = vllm.recorder.count
    call()
    torch.cuda.synchronize()
    return out.clone(), ("3D split-K" if vllm.recorder.count > before else "2D")


# --------------------------------------------------------------------------------------------
# FlashInfer


@dataclass
class FlashInfer:
    status: str  # "ran", "failed"
    detail: dict[str, Any] = field(default_factory=dict)
    wrapper: Any = None


def setup_flashinfer(carry: Path, workdir: Path, device: torch.device) -> FlashInfer:
    """Unpack the carried FlashInfer subset, import it and build the workspace wrapper."""
    zip_path = carry / "flashinfer.zip"
    if not zip_path.exists():
        return FlashInfer("failed", {"stage": "carry", "error": f"{zip_path} missing"})
    detail: dict[str, Any] = {}
    try:
        src = workdir / "flashinfer_src"
        unpack(zip_path, src)
        sys.path.insert(0, str(src))
        # The JIT build lands there; a fixed folder lets a second run reuse it.
        os.environ.setdefault("FLASHINFER_WORKSPACE_BASE", str(workdir / "fi_ws"))
        detail["carried_zip_mb"] = round(zip_path.stat().st_size / 1e6, 1)
        nvcc = shutil.which("nvcc")
        if nvcc and not os.environ.get("CUDA_HOME"):
            os.environ["CUDA_HOME"] = str(Path(nvcc).resolve().parents[1])
        os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 8))
        detail["nvcc"] = nvcc
        if nvcc:
            ver = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False)
            detail["nvcc_version"] = ver.stdout.strip().splitlines()[-1] if ver.stdout else ""
        detail["cuda_home"] = os.environ.get("CUDA_HOME")
        t0 = time.perf_counter()
        fi = importlib.import_module("flashinfer")
        detail["import_s"] = round(time.perf_counter() - t0, 2)
        detail["version"] = getattr(fi, "__version__", "?")
        detail["module_file"] = str(Path(fi.__file__).relative_to(src))
        workspace = torch.zeros(256 * 1024 * 1024, dtype=torch.uint8, device=device)
        # FlashInferMetadataBuilder (vllm/v1/attention/backends/flashinfer.py) on SM90, bf16:
        # NHD for LBNHC, tensor cores on, backend "auto" (which plans FlashInfer's fa2 path).
        wrapper = fi.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD", use_tensor_cores=True)
        return FlashInfer("ran", detail, wrapper)
    except Exception as exc:
        detail.update(stage="import", error=f"{type(exc).__name__}: {exc}"[:2000])
        detail["traceback"] = traceback.format_exc()[-4000:]
        return FlashInfer("failed", detail)


def page_lists(rows: Sequence[Sequence[int]], lens: Sequence[int]) -> tuple[list[int], ...]:
    """indptr, indices and last-page lengths for 64-token pages, rows zero-padded."""
    indices: list[int] = []
    indptr = [0]
    last: list[int] = []
    for row, n in zip(rows, lens, strict=True):
        count = math.ceil(n / P.KERNEL_BLOCK_SIZE)
        padded = list(row) + [0] * max(0, count - len(row))  # the zero-filled buffer
        indices.extend(padded[:count])
        indptr.append(len(indices))
        last.append(n - (count - 1) * P.KERNEL_BLOCK_SIZE)
    return indptr, indices, last


def run_flashinfer(
    fi: FlashInfer, cache: Cache, q: torch.Tensor, ref: torch.Tensor, expanded: list[list[int]]
) -> dict[str, Any]:
    if fi.status != "ran":
        return {}
    result: dict[str, Any] = {}
    device = q.device
    try:
        for label, rows in (("a", expanded), ("b", cache.manager_table)):
            indptr, indices, last = page_lists(rows, cache.case_lens)
            t0 = time.perf_counter()
            fi.wrapper.plan(
                torch.tensor(indptr, dtype=torch.int32, device=device),
                torch.tensor(indices, dtype=torch.int32, device=device),
                torch.tensor(last, dtype=torch.int32, device=device),
                P.NUM_Q_HEADS,
                P.NUM_KV_HEADS,
                P.HEAD_DIM,
                P.KERNEL_BLOCK_SIZE,
                pos_encoding_mode="NONE",
                q_data_type=q.dtype,
                kv_data_type=q.dtype,
            )
            plan_s = time.perf_counter() - t0
            if "first_plan_s" not in fi.detail:
                fi.detail["first_plan_s"] = round(plan_s, 1)  # includes the JIT build
                fi.detail["backend"] = getattr(fi.wrapper, "_backend", "?")
            out = torch.full_like(q, float("nan"))
            fi.wrapper.run(q, cache.split, out=out)
            torch.cuda.synchronize()
            result[label] = asdict(compare(out, ref))
    except Exception as exc:
        fi.status = "failed"
        fi.detail.update(stage="plan/run", error=f"{type(exc).__name__}: {exc}"[:2000])
        fi.detail["traceback"] = traceback.format_exc()[-4000:]
        log = Path(os.environ.get("FLASHINFER_WORKSPACE_BASE", "/nonexistent"))
        logs = sorted(log.glob(".cache/flashinfer/**/flashinfer_jit.log"))
        if logs:
            fi.detail["jit_log_tail"] = logs[-1].read_text(errors="replace")[-4000:]
        return {}
    return result


# --------------------------------------------------------------------------------------------
# Correctness


@dataclass
class CaseResult:
    name: str
    batch: int
    seq_len: str
    q_len: int
    tokens: int
    path: str  # which launch unified_attention chose: "2D" or "3D split-K"
    writes_ok: bool
    a: Errors
    b: Errors
    c: Errors
    c_table_equals_a: bool  # on every column the kernel reads
    c_bitwise_equals_a: bool
    misread_a: float
    misread_b: float
    ok_a: bool
    ok_b: bool
    ok_c: bool
    flashinfer: dict[str, Any] = field(default_factory=dict)


def read_columns_equal(t1: torch.Tensor, t2: torch.Tensor, lens: Sequence[int]) -> bool:
    for s, n in enumerate(lens):
        cols = math.ceil(n / P.KERNEL_BLOCK_SIZE)
        if not torch.equal(t1[s, :cols], t2[s, :cols]):
            return False
    return True


def correctness(
    vllm: Vllm,
    tables: dict[str, Any],
    *,
    seed: int,
    small: bool,
    device: torch.device,
    fi: FlashInfer | None,
) -> tuple[list[CaseResult], dict[str, Any]]:
    key = P.plan_key(seed, small)
    if key not in tables["plans"]:
        raise SystemExit(f"hooked_tables.json has no plan {key}: rerun hooked_tables.py")
    hooked = tables["plans"][key]["cases"]
    scratch = Scratch.for_seed(tables["triton_attn"], device)
    rng = random.Random(seed)
    results: list[CaseResult] = []
    layout: dict[str, Any] = {}
    for index, case in enumerate(P.build_plan(seed, small)):
        entry = hooked[case.name]
        if entry["fingerprint"] != case.fingerprint():
            raise SystemExit(f"{case.name}: hooked table built for another case; rerun it")
        gen = torch.Generator(device=device).manual_seed(seed * 100_003 + index)
        cache = build_cache(
            vllm,
            tables["layout"],
            lens=case.lens,
            manager_table=case.manager_table,
            num_blocks=case.num_blocks,
            gen=gen,
            device=device,
        )
        layout = cache.layout
        writes_ok = check_writes(cache, rng)
        width = case.width * P.SPLIT  # the kernel-table buffer's width
        expanded = BT.expand_block_table(case.manager_table, P.BLOCK_SIZE, P.KERNEL_BLOCK_SIZE)
        table_a = table_tensor(expanded, width, device)
        table_b = table_tensor(case.manager_table, width, device)
        table_c = torch.tensor(entry["hooked"], dtype=torch.int32, device=device)
        seq_lens = torch.tensor(case.lens, dtype=torch.int32, device=device)
        q = torch.randn(
            (case.batch * case.q_len, P.NUM_Q_HEADS, P.HEAD_DIM), device=device, generator=gen
        ).to(DTYPE)
        ref = reference(cache, q, case.q_len)
        out = torch.empty_like(q)
        outputs: dict[str, torch.Tensor] = {}
        path = ""
        for label, table in (("a", table_a), ("b", table_b), ("c", table_c)):
            call = attention_call(
                vllm,
                scratch,
                q=q,
                kv_cache=cache.split,
                table=table,
                seq_lens=seq_lens,
                q_len=case.q_len,
                out=out,
            )
            outputs[label], path = run_kernel(vllm, call, out)
        errs = {label: compare(o, ref) for label, o in outputs.items()}
        misread_a = misread_rows(cache, table_a)
        fi_result: dict[str, Any] = {}
        if fi is not None and case.q_len == 1:
            fi_result = run_flashinfer(fi, cache, q, ref, expanded)
        c_table_ok = read_columns_equal(table_c, table_a, case.lens)
        results.append(
            CaseResult(
                name=case.name,
                batch=case.batch,
                seq_len=case.label,
                q_len=case.q_len,
                tokens=sum(case.lens),
                path=path,
                writes_ok=writes_ok,
                a=errs["a"],
                b=errs["b"],
                c=errs["c"],
                c_table_equals_a=c_table_ok,
                c_bitwise_equals_a=bool(torch.equal(outputs["c"], outputs["a"])),
                misread_a=misread_a,
                misread_b=misread_rows(cache, table_b),
                ok_a=errs["a"].matches() and writes_ok and misread_a == 0.0,
                ok_b=not errs["b"].matches(),
                ok_c=errs["c"].matches() and c_table_ok,
                flashinfer=fi_result,
            )
        )
        del cache, outputs
        torch.cuda.empty_cache()
    return results, layout


# --------------------------------------------------------------------------------------------
# Timing


@dataclass
class Timing:
    batch: int
    seq_len: int
    path: str
    calls_per_graph: int
    split_us: list[float]
    unsplit_us: list[float]
    control_us: list[float]
    split_median_us: float
    unsplit_median_us: float
    ratio: float
    control_ratio: float
    kv_bytes: int
    split_tb_s: float
    max_abs_split_vs_unsplit: float
    bitwise_equal: bool


def graph_of(call: Callable[[], None], n: int) -> torch.cuda.CUDAGraph:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(n):
            call()
    torch.cuda.synchronize()
    return graph


def replay_us(graph: torch.cuda.CUDAGraph, n: int, repeats: int = 5) -> float:
    """Median over ``repeats`` replays of the graph's time per captured call, in µs."""
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / n)
    return statistics.median(times)


def timing(
    vllm: Vllm,
    tables: dict[str, Any],
    shapes: Sequence[tuple[int, int]],
    rounds: int,
    device: torch.device,
) -> list[Timing]:
    """vLLM's kernel over the split cache (expanded table) against the unsplit cache."""
    scratch = Scratch.for_seed(tables["triton_attn"], device)
    rng = random.Random(12345)
    results: list[Timing] = []
    for index, (batch, n) in enumerate(shapes):
        lens = (n,) * batch
        num_blocks, manager = P.allocate(lens, rng)
        gen = torch.Generator(device=device).manual_seed(777 + index)
        cache = build_cache(
            vllm,
            tables["layout"],
            lens=lens,
            manager_table=manager,
            num_blocks=num_blocks,
            gen=gen,
            device=device,
        )
        expanded = BT.expand_block_table(manager, P.BLOCK_SIZE, P.KERNEL_BLOCK_SIZE)
        table_split = table_tensor(expanded, len(expanded[0]), device)
        table_unsplit = table_tensor(manager, len(manager[0]), device)
        seq_lens = torch.full((batch,), n, dtype=torch.int32, device=device)
        q = torch.randn((batch, P.NUM_Q_HEADS, P.HEAD_DIM), device=device, generator=gen).to(DTYPE)
        out_s, out_u = torch.empty_like(q), torch.empty_like(q)
        split = attention_call(
            vllm,
            scratch,
            q=q,
            kv_cache=cache.split,
            table=table_split,
            seq_lens=seq_lens,
            q_len=1,
            out=out_s,
        )
        unsplit = attention_call(
            vllm,
            scratch,
            q=q,
            kv_cache=cache.unsplit,
            table=table_unsplit,
            seq_lens=seq_lens,
            q_len=1,
            out=out_u,
        )
        a, path = run_kernel(vllm, split, out_s)
        u, _ = run_kernel(vllm, unsplit, out_u)
        # Calls per graph: enough for ~20 ms of work, from a first 10-call graph.
        probe = graph_of(split, 10)
        per_call = replay_us(probe, 10, repeats=3)
        calls = max(10, min(4000, int(20_000 / max(per_call, 1.0))))
        del probe
        graphs = {"split": graph_of(split, calls), "unsplit": graph_of(unsplit, calls)}
        graphs["control"] = graph_of(unsplit, calls)  # the unsplit kernel again: the noise
        runs: dict[str, list[float]] = {name: [] for name in graphs}
        names = list(graphs)
        for r in range(rounds):
            for name in names[r % 3 :] + names[: r % 3]:  # rotate the order every round
                runs[name].append(replay_us(graphs[name], calls))
        med = {name: statistics.median(v) for name, v in runs.items()}
        kv_bytes = 2 * batch * n * P.NUM_KV_HEADS * P.HEAD_DIM * DTYPE.itemsize
        results.append(
            Timing(
                batch=batch,
                seq_len=n,
                path=path,
                calls_per_graph=calls,
                split_us=runs["split"],
                unsplit_us=runs["unsplit"],
                control_us=runs["control"],
                split_median_us=med["split"],
                unsplit_median_us=med["unsplit"],
                ratio=med["split"] / med["unsplit"],
                control_ratio=med["control"] / med["unsplit"],
                kv_bytes=kv_bytes,
                split_tb_s=kv_bytes / (med["split"] * 1e-6) / 1e12,
                max_abs_split_vs_unsplit=float((a.float() - u.float()).abs().max()),
                bitwise_equal=bool(torch.equal(a, u)),
            )
        )
        del graphs, cache
        torch.cuda.empty_cache()
    return results


# --------------------------------------------------------------------------------------------
# Report


def device_info(device: torch.device) -> dict[str, Any]:
    import triton  # type: ignore[import-untyped, unused-ignore]

    props = torch.cuda.get_device_properties(device)
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "triton": triton.__version__,
        "blocktable_source": BT_HOW,
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "sms": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2**30, 1),
    }
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
    return info


def fmt(e: Errors) -> str:
    return f"{e.max_abs:9.2e} {e.rel_fro:8.1e} {100 * e.frac_off:6.1f}%"


def report(
    info: dict[str, Any],
    vllm: Vllm,
    *,
    cases: list[CaseResult],
    fi: FlashInfer | None,
    times: list[Timing],
    elapsed: float,
) -> None:
    print(
        f"device: {info['name']} cc {info['capability']}, {info['sms']} SMs | "
        f"driver, max SM clock: {info['nvidia_smi']}"
    )
    print(
        f"torch {info['torch']} (CUDA {info['torch_cuda']}), triton {info['triton']}, "
        f"python {info['python']}"
    )
    prov = vllm.provenance
    print(
        f"vLLM {prov['version']} from {prov['wheel']}: {prov['modules_loaded']} modules loaded "
        f"from the extract; stand-in: {', '.join(prov['stand_ins'])}"
    )
    print(
        f"B={P.BLOCK_SIZE} k={P.KERNEL_BLOCK_SIZE}; Hq={P.NUM_Q_HEADS} Hkv={P.NUM_KV_HEADS} "
        f"D={P.HEAD_DIM} {P.DTYPE_NAME}; off: |err| > {P.ATOL} + {P.RTOL}*|ref|; "
        f"match: none off and rel Frobenius < {P.MAX_REL_FRO}"
    )
    print()
    print(
        "case                 path        | (a) expanded: max_abs  rel_fro   off | "
        "(b) manager: max_abs  rel_fro   off | (c) hooked: max_abs  rel_fro   off | "
        "c==a | b misread | verdict"
    )
    for c in cases:
        verdict = "ok" if c.ok_a and c.ok_b and c.ok_c else "FAIL"
        print(
            f"{c.name:20s} {c.path:11s} | {fmt(c.a)} | {fmt(c.b)} | {fmt(c.c)} | "
            f"{'bit' if c.c_bitwise_equals_a else 'no':>4s} | {100 * c.misread_b:8.1f}% | "
            f"{verdict}"
        )
    if fi is not None:
        print()
        ran = [c for c in cases if "a" in c.flashinfer]
        if ran:
            print(
                f"FlashInfer {fi.detail.get('version')} BatchDecodeWithPagedKVCacheWrapper "
                f"(NHD, page_size={P.KERNEL_BLOCK_SIZE}, use_tensor_cores=True, backend "
                f"{fi.detail.get('backend')}; first plan incl. JIT build "
                f"{fi.detail.get('first_plan_s')} s):"
            )
            for c in ran:
                a, b = Errors(**c.flashinfer["a"]), Errors(**c.flashinfer["b"])
                print(f"  {c.name:20s} (a) {fmt(a)} | (b) {fmt(b)}")
        if fi.status != "ran":
            print(f"FlashInfer not run: {fi.detail.get('stage')}: {fi.detail.get('error')}")
            if fi.detail.get("jit_log_tail"):
                print(fi.detail["jit_log_tail"][-1500:])
    if times:
        print()
        print(
            "timing, q_len 1, CUDA graph replay (µs per call: median over rounds "
            "[min..max]); control = unsplit again / unsplit"
        )
        print(
            "batch context path        | split k=64, expanded | unsplit B=128, manager | "
            "ratio | control | split TB/s | bitwise"
        )
        for t in times:
            print(
                f"{t.batch:5d} {t.seq_len:7d} {t.path:11s} | {t.split_median_us:9.2f} "
                f"[{min(t.split_us):.2f}..{max(t.split_us):.2f}] | {t.unsplit_median_us:9.2f} "
                f"[{min(t.unsplit_us):.2f}..{max(t.unsplit_us):.2f}] | {t.ratio:5.3f} | "
                f"{t.control_ratio:5.3f} | {t.split_tb_s:5.2f} | {t.bitwise_equal}"
            )
    n = len(cases)
    print()
    print(
        f"(a) matched in {sum(c.ok_a for c in cases)}/{n}; (b) differed in "
        f"{sum(c.ok_b for c in cases)}/{n}; (c) matched in {sum(c.ok_c for c in cases)}/{n} "
        f"(bit-identical to (a) in {sum(c.c_bitwise_equals_a for c in cases)}/{n}); "
        f"{elapsed:.1f} s"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--carry",
        type=Path,
        default=DEFAULT_CARRY,
        help="the folder extract.py and hooked_tables.py wrote",
    )
    parser.add_argument("--tables", type=Path, help="default: CARRY/hooked_tables.json")
    parser.add_argument("--json", type=Path, help="write all figures here (default: $OUT/...)")
    parser.add_argument("--small", action="store_true", help="small correctness cases only")
    parser.add_argument("--no-timing", action="store_true", help="skip the timing part")
    parser.add_argument("--no-flashinfer", action="store_true", help="do not try FlashInfer")
    parser.add_argument("--rounds", type=int, default=5, help="timing rounds per shape")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    device = torch.device("cuda")
    start = time.perf_counter()
    tables = json.loads((args.tables or args.carry / "hooked_tables.json").read_text())
    with tempfile.TemporaryDirectory(prefix="gpu_proof_") as tmp:
        workdir = Path(tmp)
        vllm = load_vllm(args.carry, workdir)
        info = device_info(device)
        fi = None if args.no_flashinfer else setup_flashinfer(args.carry, workdir, device)
        cases, layout = correctness(
            vllm, tables, seed=args.seed, small=args.small, device=device, fi=fi
        )
        times: list[Timing] = []
        if not args.no_timing:
            times = timing(vllm, tables, P.timing_shapes(args.small), args.rounds, device)
    elapsed = time.perf_counter() - start
    report(info, vllm, cases=cases, fi=fi, times=times, elapsed=elapsed)
    ok = all(c.ok_a and c.ok_b and c.ok_c for c in cases)
    ok &= all(t.max_abs_split_vs_unsplit <= P.ATOL for t in times)
    out_path = args.json
    if out_path is None and os.environ.get("OUT"):
        out_path = Path(os.environ["OUT"]) / "gpu_proof.json"
    if out_path is not None:
        fi_record: dict[str, Any] = {"status": "not tried"}
        if fi is not None:
            fi_record = {"status": fi.status, **fi.detail}
        payload = {
            "ok": ok,
            "device": info,
            "vllm": vllm.provenance,
            "vllm_votes": {
                k: tables[k]
                for k in (
                    "vllm",
                    "runner_kernel_block_size",
                    "speculator_kernel_block_size",
                    "layout",
                    "layout_candidates",
                    "triton_attn",
                    "source",
                )
            },
            "cache_layout": layout,
            "config": {
                "block_size": P.BLOCK_SIZE,
                "kernel_block_size": P.KERNEL_BLOCK_SIZE,
                "num_q_heads": P.NUM_Q_HEADS,
                "num_kv_heads": P.NUM_KV_HEADS,
                "head_dim": P.HEAD_DIM,
                "dtype": P.DTYPE_NAME,
                "atol": P.ATOL,
                "rtol": P.RTOL,
                "max_rel_fro": P.MAX_REL_FRO,
                "seed": args.seed,
                "small": args.small,
                "rounds": args.rounds,
                "argv": list(argv) if argv is not None else sys.argv[1:],
            },
            "cases": [asdict(c) for c in cases],
            "flashinfer": fi_record,
            "timing": [asdict(t) for t in times],
            "elapsed_s": elapsed,
        }
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(payload, indent=1))
        print(f"wrote {out_path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
