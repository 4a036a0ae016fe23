"""The GPU that vLLM's start-up sees in an engine child: every probe answered, nothing run.

vLLM's start-up needs a CUDA device in a few places only: loading its compiled
extensions, probing the device, allocating tensors, and initialising NCCL. This module
stands in for exactly those, and for nothing that decides the KV-cache plan:

* a stub ``libcuda.so.1`` whose every entry point reports no device
  (``kvconfig.engine.driver``): ``vllm._C`` and its FlashAttention and FlashMLA
  extensions load and register their ops against it;
* ``vllm.platforms.current_platform`` is an instance of a subclass of vLLM's own
  ``NonNvmlCudaPlatform`` that answers the device probes (capability, name, memory,
  count, NUMA, pinned memory) for the emulated GPU, and ``torch.cuda``'s property,
  memory, stream and event probes answer for the same GPU (``kvconfig.engine.cuda``);
* Triton's NVIDIA driver reports itself active (it asks ``torch.cuda.is_available()``),
  which is what makes Model Runner V2 vLLM's default;
* every tensor asked for on ``cuda`` is created on the ``meta`` device
  (``kvconfig.engine.cuda.meta_device``);
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
import importlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kvconfig.engine.cuda import patch_torch
from kvconfig.engine.pool import Gpu

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
        _workspace_and_runner(self)

    def determine_available_memory(self: Any) -> int:
        return int(gpu.memory_bytes * self.cache_config.gpu_memory_utilization)

    def compile_or_warm_up_model(self: Any) -> Any:
        return CompilationTimes(0.0, 0.0)

    worker_cls.init_device = init_device
    worker_cls.determine_available_memory = determine_available_memory
    worker_cls.compile_or_warm_up_model = compile_or_warm_up_model


def _workspace_and_runner(worker: Any) -> None:
    """What ``Worker.init_device`` does after the device: the release's own
    ``_init_workspace_and_model_runner`` where it has one; in the older releases, which
    do it inline at the end of ``init_device`` (``vllm/v1/worker/gpu_worker.py``), the
    same steps with their functions: the workspace manager, the model runner (V2, its
    encoder-only variant, or V1), the usage report."""
    own = getattr(worker, "_init_workspace_and_model_runner", None)
    if own is not None:
        own()
        return
    from vllm.v1.worker import gpu_worker

    config = worker.vllm_config
    gpu_worker.init_workspace_manager(
        worker.device,
        2 if config.parallel_config.enable_dbo else 1,
        gpu_worker._num_workspace_lanes(config, worker.use_v2_model_runner),
    )
    if not worker.use_v2_model_runner:
        where = ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner")
    elif config.is_mm_encoder_only:
        where = ("vllm.v1.worker.mm_encoder_model_runner", "MMEncoderModelRunner")
    else:
        where = ("vllm.v1.worker.gpu.model_runner", "GPUModelRunner")
    runner_cls = getattr(importlib.import_module(where[0]), where[1])
    worker.model_runner = runner_cls(config, worker.device)
    if worker.rank == 0:
        gpu_worker.report_usage_stats(config)


def take_platform(platform: Any) -> None:
    """Make ``platform`` vLLM's ``current_platform``; call before anything uses vLLM's.

    Older releases resolve their platform while ``import vllm`` runs
    (``vllm/utils/torch_utils.py`` computes ``PIN_MEMORY`` at import), before this can run:
    what they resolve there (vLLM's choice for a host without a GPU) is replaced, and any
    module that bound it is rebound. A platform not of vLLM's own is an error.
    """
    import sys

    from vllm import platforms

    old = getattr(platforms, "_current_platform", None)
    if old is not None and not type(old).__module__.startswith("vllm.platforms"):
        raise RuntimeError("vLLM's current platform was resolved before the emulation")
    platforms._current_platform = platform
    if old is None:
        return
    for name, module in list(sys.modules.items()):
        if name != "vllm.platforms" and getattr(module, "current_platform", None) is old:
            setattr(module, "current_platform", platform)  # noqa: B010 - any module
    utils = sys.modules.get("vllm.utils.platform_utils")
    clear = getattr(getattr(utils, "is_pin_memory_available", None), "cache_clear", None)
    if clear is not None:
        clear()


def install(gpu: Gpu, *, cubins: bool, driver: Path, scratch: Path) -> None:
    """Make this process's vLLM see ``gpu`` (with the stub CUDA driver at ``driver``); call
    before anything imports vLLM's platform."""
    ctypes.CDLL(str(driver), mode=ctypes.RTLD_GLOBAL)
    # Triton links its driver helpers against the driver it finds here
    os.environ["TRITON_LIBCUDA_PATH"] = str(driver.parent)
    patch_torch(gpu)
    take_platform(_platform(gpu))
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
