"""``torch.cuda`` as an engine child's torch sees it: probes that answer, work that is meta.

Every property, memory, RNG, stream and event probe answers for the emulated GPU (streams
and events are inert); no call initialises CUDA. ``meta_device`` is the torch function
mode under which a tensor asked for on ``cuda`` is created on the ``meta`` device.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kvconfig.engine.pool import Gpu


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


def patch_torch(gpu: Gpu) -> None:
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
