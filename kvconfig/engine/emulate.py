"""The GPU that vLLM's start-up sees in an engine child: every probe answered, nothing run.

vLLM's start-up needs a CUDA device in a few places only: loading its compiled
extensions, probing the device, allocating tensors, and initialising NCCL. This module
stands in for exactly those, and for nothing that decides the KV-cache plan:

* a stub ``libcuda.so.1`` (built once with the system C compiler into the cache folder)
  whose every entry point reports ``CUDA_ERROR_NO_DEVICE``: ``vllm._C`` and its
  FlashAttention and FlashMLA extensions load and register their ops against it;
* ``vllm.platforms.current_platform`` is an instance of a subclass of vLLM's own
  ``NonNvmlCudaPlatform`` that answers the device probes (capability, name, memory,
  count, NUMA, pinned memory) for the emulated GPU, and ``torch.cuda``'s property,
  memory, stream and event probes answer for the same GPU (streams and events are inert);
* Triton's NVIDIA driver reports itself active (it asks ``torch.cuda.is_available()``),
  which is what makes Model Runner V2 vLLM's default;
* every tensor asked for on ``cuda`` is created on the ``meta`` device (``MetaDevice``);
* the worker's device set-up runs without NCCL: one process, a gloo group, whose
  tensor-parallel (and pipeline, context-parallel) groups report rank 0 of the
  configured size, so layers see the per-rank head counts;
* the worker's memory profile (a forward pass) is replaced by the device's memory
  times ``gpu_memory_utilization``, and warm-up and CUDA-graph capture are skipped;
* FlashInfer's TRTLLM gate (``has_nvidia_artifactory``) answers what the deployment
  says about the host (cubins installed or reachable).

``STOOD_IN`` lists these pieces for the plan's JSON. This module imports torch and vLLM:
only the engine child (``kvconfig.engine.child``) imports it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kvconfig.engine.pool import Gpu

#: Entry points of the CUDA driver that vLLM's extensions, Triton's driver helpers and the
#: CUDA libraries vLLM loads reference (each is also exported with the ``_v2`` suffix).
DRIVER_SYMBOLS = (
    "cuCtxCreate", "cuCtxDestroy", "cuCtxGetCurrent", "cuCtxGetDevice", "cuCtxGetId",
    "cuCtxGetLimit", "cuCtxPopCurrent", "cuCtxPushCurrent", "cuCtxSetCurrent",
    "cuCtxSetLimit", "cuDeviceGet", "cuDeviceGetAttribute", "cuDeviceGetCount",
    "cuDeviceGetName", "cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxRelease",
    "cuDevicePrimaryCtxRetain", "cuDriverGetVersion", "cuEventCreate", "cuEventDestroy",
    "cuEventRecord", "cuEventSynchronize", "cuFuncGetAttribute", "cuFuncSetAttribute",
    "cuFuncSetCacheConfig", "cuGetErrorName", "cuGetErrorString", "cuGetExportTable",
    "cuGetProcAddress", "cuInit", "cuLaunchCooperativeKernel", "cuLaunchKernel",
    "cuLaunchKernelEx", "cuLinkAddData", "cuLinkComplete", "cuLinkCreate",
    "cuMemAddressFree", "cuMemAddressReserve", "cuMemAlloc", "cuMemAllocAsync",
    "cuMemAllocPitch", "cuMemCreate", "cuMemFree", "cuMemFreeAsync",
    "cuMemGetAllocationGranularity", "cuMemMap", "cuMemRelease", "cuMemSetAccess",
    "cuMemUnmap", "cuMemcpy2D", "cuMemcpy2DAsync", "cuMemcpyDtoH", "cuMemcpyHtoD",
    "cuModuleGetFunction", "cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx",
    "cuModuleUnload", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuOccupancyMaxActiveClusters", "cuPointerGetAttribute", "cuStreamCreate",
    "cuStreamDestroy", "cuStreamGetCtx", "cuStreamSynchronize", "cuStreamWaitEvent",
    "cuTensorMapEncodeIm2col", "cuTensorMapEncodeTiled",
)  # fmt: skip

CUDA_ERROR_NO_DEVICE = 100

STOOD_IN = (
    "CUDA driver: a stub libcuda.so.1 whose entry points report no device",
    "device probes: vLLM's NonNvmlCudaPlatform and torch.cuda answer for the emulated GPU",
    "tensors on cuda are created on the meta device; weights are neither read, filled nor "
    "post-processed (load_format dummy)",
    "tokenizer: not loaded (skip_tokenizer_init); the multimodal encoder budget, which needs "
    "it, is empty (encoders hold no KV cache)",
    "distributed: one process with a gloo group; parallel groups report rank 0 of their size",
    "executor: vLLM's in-process UniProcExecutor",
    "memory profile: KV-cache memory is the device memory times gpu_memory_utilization",
    "warm-up and CUDA-graph capture: skipped; torch.compile off (TORCHDYNAMO_DISABLE=1)",
    "FlashInfer TRTLLM cubins: has_nvidia_artifactory answers the deployment's setting",
    "Hugging Face Hub: offline (local folders and the local cache only)",
    "model class inspection: in-process (vLLM runs it in a subprocess to keep CUDA idle)",
    "gc.collect: a no-op (vLLM collects before memory snapshots, which are not taken here)",
)
"""What the engine mode stands in for, in the words the plan's JSON uses."""


def driver_source() -> str:
    """C source of the stub driver."""
    lines = ["/* A CUDA driver with no devices: every entry point reports no device. */"]
    for name in DRIVER_SYMBOLS:
        for symbol in (name, f"{name}_v2"):
            lines.append(f"int {symbol}(void) {{ return {CUDA_ERROR_NO_DEVICE}; }}")
    return "\n".join(lines) + "\n"


def stub_driver(cache: Path) -> Path:
    """The stub ``libcuda.so.1``, built once into ``cache`` with the system C compiler."""
    source = driver_source()
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    target = cache / f"libcuda-stub-{digest}" / "libcuda.so.1"
    if target.is_file():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError(
            "the engine mode builds a stub CUDA driver with a C compiler, and none was found "
            "(install gcc, or set CC)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        c_file = Path(tmp) / "stub.c"
        c_file.write_text(source)
        built = Path(tmp) / "libcuda.so.1"
        cmd = [
            compiler,
            "-shared",
            "-fPIC",
            "-Wl,-soname,libcuda.so.1",
            "-o",
            str(built),
            str(c_file),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"building the stub CUDA driver failed: {done.stderr.strip()}")
        os.replace(built, target)
    return target


class _Properties:
    """``torch.cuda.get_device_properties`` of the emulated GPU."""

    def __init__(self, gpu: Gpu) -> None:
        self.name = gpu.name
        self.major, self.minor = gpu.capability
        self.total_memory = gpu.memory_bytes
        self.multi_processor_count = 132
        self.L2_cache_size = 50 * 1024 * 1024
        self.warp_size = 32
        self.max_threads_per_multi_processor = 2048
        self.regs_per_multiprocessor = 65536
        self.shared_memory_per_block_optin = 227 * 1024
        self.uuid = "GPU-00000000-0000-0000-0000-000000000000"
        self.is_integrated = False
        self.gcnArchName = ""
        self.pci_bus_id = self.pci_device_id = self.pci_domain_id = 0


class _Event:
    """An inert CUDA event."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def record(self, stream: Any = None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, other: Any) -> float:
        return 0.0


class _Stream:
    """An inert CUDA stream."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        import torch

        self.device = torch.device("cuda:0")
        self.cuda_stream = 0

    def synchronize(self) -> None:
        pass

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> _Event:
        return event if event is not None else _Event()

    def query(self) -> bool:
        return True

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _patch_torch(gpu: Gpu) -> None:
    """torch.cuda's probes answer for ``gpu``; nothing initialises CUDA."""
    import torch

    tc: Any = torch.cuda
    count = gpu.count
    probes: dict[str, Any] = {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "_is_compiled": lambda: True,
        "_device_count_nvml": lambda: count,
        "device_count": lambda: count,
        "get_device_capability": lambda device=None: gpu.capability,
        "get_device_name": lambda device=None: gpu.name,
        "get_device_properties": lambda device=None: _Properties(gpu),
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "synchronize": lambda device=None: None,
        "empty_cache": lambda: None,
        "mem_get_info": lambda device=None: (gpu.memory_bytes, gpu.memory_bytes),
        "memory_stats": lambda device=None: {},
        "get_rng_state": lambda device="cuda": torch.zeros(16, dtype=torch.uint8),
        "Stream": _Stream,
        "Event": _Event,
        "current_stream": lambda device=None: _Stream(),
        "default_stream": lambda device=None: _Stream(),
        "stream": lambda stream: contextlib.nullcontext(),
        "set_stream": lambda stream: None,
    }
    for name in ("manual_seed", "manual_seed_all", "seed", "seed_all", "set_rng_state"):
        probes[name] = lambda *args, **kwargs: None
    for name in ("reset_peak_memory_stats", "reset_max_memory_allocated"):
        probes[name] = lambda device=None: None
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved"):
        probes[name] = lambda device=None: 0
    for name, value in probes.items():
        setattr(tc, name, value)
    torch._C._cuda_getDeviceCount = lambda: count
    acc: Any = torch.accelerator
    acc.device_count = lambda: count
    acc.is_available = lambda: True
    acc.current_device_index = lambda: 0
    acc.set_device_index = lambda *args, **kwargs: None
    acc.synchronize = lambda *args, **kwargs: None
    acc.empty_cache = lambda: None


def _platform(gpu: Gpu) -> Any:
    """vLLM's ``NonNvmlCudaPlatform``, answering the probes for ``gpu``."""
    from vllm.platforms.cuda import NonNvmlCudaPlatform
    from vllm.platforms.interface import DeviceCapability

    class EmulatedCudaPlatform(NonNvmlCudaPlatform):  # type: ignore[misc]
        """vLLM's CUDA platform on a host whose GPU is emulated."""

        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> Any:
            return DeviceCapability(*gpu.capability)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return gpu.name

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return gpu.memory_bytes

        @classmethod
        def device_count(cls) -> int:
            return gpu.count

        @classmethod
        def is_pin_memory_available(cls) -> bool:
            return False

        @classmethod
        def get_device_numa_node(cls, device_id: int = 0) -> int | None:
            return None

        @classmethod
        def get_all_device_numa_nodes(cls) -> list[int] | None:
            return None

        @classmethod
        def is_fully_connected(cls, physical_device_ids: list[int]) -> bool:
            return True

        @classmethod
        def get_device_uuid(cls, device_id: int = 0) -> str:
            return "GPU-00000000-0000-0000-0000-000000000000"

        @classmethod
        def _align_hybrid_block_size(cls, vllm_config: Any, backend_cls: Any) -> None:
            before = vllm_config.cache_config.block_size
            super()._align_hybrid_block_size(vllm_config, backend_cls)
            ALIGNED.append((int(before), int(vllm_config.cache_config.block_size)))

    return EmulatedCudaPlatform()


ALIGNED: list[tuple[int, int]] = []
"""(B before, B after) of each hybrid block-size alignment vLLM made (read, then cleared,
per start-up)."""


def _meta(device: Any) -> Any:
    import torch

    if device is None:
        return None
    if isinstance(device, int):
        return torch.device("meta")
    dev = device if isinstance(device, torch.device) else torch.device(device)
    return torch.device("meta") if dev.type == "cuda" else device


def meta_device() -> Any:
    """A torch function mode under which tensors asked for on ``cuda`` live on ``meta``."""
    import torch
    from torch.overrides import TorchFunctionMode

    tensor_to = torch.Tensor.to
    moves = (torch.Tensor.cuda,)
    pins = (torch.Tensor.pin_memory,)

    class MetaDevice(TorchFunctionMode):  # type: ignore[misc]
        def __torch_function__(
            self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
        ) -> Any:
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = _meta(kwargs["device"])
            if kwargs.get("pin_memory"):
                kwargs["pin_memory"] = False
            if func in moves:
                return args[0].to("meta")
            if func in pins:
                return args[0]
            if func is tensor_to and len(args) > 1:
                args = (
                    args[0],
                    *(_meta(a) if isinstance(a, str | torch.device) else a for a in args[1:]),
                )
            return func(*args, **kwargs)

    return MetaDevice()


@contextlib.contextmanager
def _groups_of_one(store: Path) -> Iterator[None]:
    """vLLM's distributed set-up in one process: size-1 gloo groups whose coordinators
    then report rank 0 of the configured parallel sizes."""
    from vllm.distributed import parallel_state as ps
    from vllm.v1.worker import gpu_worker

    real_init = ps.init_distributed_environment
    real_ensure = ps.ensure_model_parallel_initialized

    def init_distributed_environment(*args: Any, **kwargs: Any) -> None:
        real_init(1, 0, f"file://{store}", 0, "gloo")

    def ensure_model_parallel_initialized(
        tensor_model_parallel_size: int,
        pipeline_model_parallel_size: int,
        prefill_context_model_parallel_size: int = 1,
        decode_context_model_parallel_size: int | None = 1,
        backend: str | None = None,
    ) -> None:
        real_ensure(1, 1, 1, 1, backend="gloo")
        sizes = (
            ("_TP", tensor_model_parallel_size),
            ("_PP", pipeline_model_parallel_size),
            ("_PCP", prefill_context_model_parallel_size),
            ("_DCP", decode_context_model_parallel_size or 1),
        )
        for attr, size in sizes:
            group = getattr(ps, attr, None)
            if group is not None and size > 1:
                group.world_size = size
                group.rank_in_group = 0
                group.ranks = list(range(size))

    holders = (ps, gpu_worker)
    for holder in holders:
        holder.init_distributed_environment = init_distributed_environment
        holder.ensure_model_parallel_initialized = ensure_model_parallel_initialized
    try:
        yield
    finally:
        for holder in holders:
            holder.init_distributed_environment = real_init
            holder.ensure_model_parallel_initialized = real_ensure


def _patch_loader() -> None:
    """Weights stay meta tensors: nothing fills them, nothing post-processes them."""
    from vllm.model_executor.model_loader import base_loader, dummy_loader

    loader: Any = dummy_loader.DummyModelLoader
    loader.load_weights = lambda self, model, model_config: None
    base_loader.process_weights_after_loading = lambda model, model_config, target_device: None


class _NoEncoderBudget:
    """``MultiModalBudget`` without a tokenizer: no encoder tokens, no encoder cache."""

    encoder_compute_budget = 0
    encoder_cache_size = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.mm_max_toks_per_item: dict[str, int] = {}
        self.mm_limits: dict[str, int] = {}
        self.max_items_per_batch_by_modality: dict[str, int] = {}


def _patch_encoder_budget() -> None:
    from vllm.v1.core.sched import scheduler
    from vllm.v1.worker import gpu_model_runner

    for module in (scheduler, gpu_model_runner):
        module_any: Any = module
        module_any.MultiModalBudget = _NoEncoderBudget


def _patch_worker(gpu: Gpu, scratch: Path) -> None:
    """The GPU worker's device set-up, memory profile and warm-up, without a GPU."""
    import torch
    from vllm.v1.worker import gpu_worker
    from vllm.v1.worker.worker_base import CompilationTimes

    worker_cls: Any = gpu_worker.Worker

    def init_device(self: Any) -> None:
        from vllm.platforms import current_platform
        from vllm.utils.torch_utils import set_random_seed

        self.device = torch.device("cuda:0")
        current_platform.check_if_supports_dtype(self.model_config.dtype)
        store = Path(tempfile.mkdtemp(dir=scratch)) / "gloo"
        with _groups_of_one(store):
            gpu_worker.init_worker_distributed_environment(
                self.vllm_config, self.rank, None, self.local_rank, "gloo"
            )
        set_random_seed(self.model_config.seed)
        self._init_workspace_and_model_runner()

    def determine_available_memory(self: Any) -> int:
        return int(gpu.memory_bytes * self.cache_config.gpu_memory_utilization)

    def compile_or_warm_up_model(self: Any) -> Any:
        return CompilationTimes(0.0, 0.0)

    worker_cls.init_device = init_device
    worker_cls.determine_available_memory = determine_available_memory
    worker_cls.compile_or_warm_up_model = compile_or_warm_up_model


def install(gpu: Gpu, *, cubins: bool, cache: Path, scratch: Path) -> None:
    """Make this process's vLLM see ``gpu``; call before anything imports vLLM's platform."""
    driver = stub_driver(cache)
    ctypes.CDLL(str(driver), mode=ctypes.RTLD_GLOBAL)
    # Triton links its driver helpers against the driver it finds here
    os.environ["TRITON_LIBCUDA_PATH"] = str(driver.parent)
    _patch_torch(gpu)
    from vllm import platforms

    if getattr(platforms, "_current_platform", None) is not None:
        raise RuntimeError("vLLM's current platform was resolved before the emulation")
    platforms._current_platform = _platform(gpu)
    import vllm.utils.flashinfer as fi

    fi.has_nvidia_artifactory = lambda: cubins
    from vllm.model_executor.models import registry

    registry._run_in_subprocess = lambda fn: fn()
    _patch_loader()
    _patch_encoder_budget()
    _patch_worker(gpu, scratch)
    # a full collection walks the whole heap of torch and vLLM (half a second each, a dozen
    # times per start-up); automatic collection still runs
    gc.collect = lambda generation=2: 0
