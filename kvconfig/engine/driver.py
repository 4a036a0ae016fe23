"""The stub CUDA driver an engine child loads: ``libcuda.so.1`` with no devices.

vLLM's compiled extensions (``vllm._C``, its FlashAttention and FlashMLA extensions) and
the CUDA libraries they pull in link against the CUDA driver. A shared library that
exports the driver's entry points, each returning ``CUDA_ERROR_NO_DEVICE``, is enough
for them to load and register their ops; nothing ever calls into it for work. It is
built with the system C compiler into the pool's scratch folder, once per pool.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

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


def driver_source() -> str:
    """C source of the stub driver."""
    lines = ["/* A CUDA driver with no devices: every entry point reports no device. */"]
    for name in DRIVER_SYMBOLS:
        for symbol in (name, f"{name}_v2"):
            lines.append(f"int {symbol}(void) {{ return {CUDA_ERROR_NO_DEVICE}; }}")
    return "\n".join(lines) + "\n"


def stub_driver(cache: Path) -> Path:
    """The stub ``libcuda.so.1``, built once into ``cache`` with the system C compiler
    (the pool passes its scratch folder)."""
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
