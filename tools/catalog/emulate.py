"""Run vLLM's own backend code as if on a given GPU, on a machine without one.

vLLM resolves ``current_platform`` lazily; on a GPU-less host it becomes
``UnspecifiedPlatform``. We install a subclass whose capability and vendor we
control *before* anything resolves the platform, import the backend modules
under it, and then switch capability and vendor per case by patching that one
object's class (every module holds a reference to the same object).

The pieces of vLLM that only a real GPU answers are emulated the way a CUDA
install of vLLM answers them:

* FlashAttention versions: the wheel ships FA2, FA3 and FA4; FA2 needs SM80+,
  FA3 SM9x, FA4 SM9x/10x/11x (``vllm/vllm_flash_attn/flash_attn_interface.py``).
* FlashInfer's TRTLLM cubins: ``has_nvidia_artifactory`` answers ``cubins``.
* The current vLLM config: a small stand-in with the fields backends read.

Only this module (and the tests and ``python -m tools.catalog``) imports vLLM.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_INSTALLED: dict[str, Any] = {}


@dataclass
class Emulation:
    """What the emulated machine and deployment look like."""

    vendor: str = "cuda"
    capability: tuple[int, int] | None = (9, 0)
    num_heads: int = 32
    num_kv_heads: int = 8
    head_size: int = 128
    cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    use_trtllm_attention: bool | None = None
    flash_attn_version: int | None = None
    cubins: bool = True
    batch_invariant: bool = False
    fa_available: bool = True
    use_mla: bool = False
    hf_extra: dict[str, Any] = field(default_factory=dict)
    strict_hf: bool = False
    """The model config has only ``hf_extra`` (missing keys raise, as in a real config)."""


def _fake_fa_interface() -> types.ModuleType:
    mod = types.ModuleType("vllm.vllm_flash_attn.flash_attn_interface")

    def _family(major: int) -> bool:
        from vllm.platforms import current_platform

        return bool(current_platform.is_device_capability_family(major * 10))

    def is_fa_version_supported(fa_version: int) -> bool:
        from vllm.platforms import current_platform

        if not _INSTALLED.get("fa_available", True) or not current_platform.is_cuda():
            return False
        if fa_version == 2:
            return bool(current_platform.has_device_capability(80))
        if fa_version == 3:
            return _family(9)
        if fa_version == 4:
            return _family(9) or _family(10) or _family(11)
        raise ValueError(f"Unsupported FA version: {fa_version}")

    def fa_version_unsupported_reason(fa_version: int) -> str | None:
        return None if is_fa_version_supported(fa_version) else "emulated: unsupported"

    mod.is_fa_version_supported = is_fa_version_supported  # type: ignore[attr-defined]
    mod.fa_version_unsupported_reason = fa_version_unsupported_reason  # type: ignore[attr-defined]
    return mod


def install() -> None:
    """Install the emulated platform; call before anything imports ``vllm.platforms`` users."""
    if _INSTALLED.get("done"):
        return
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    from vllm.platforms.interface import DeviceCapability, UnspecifiedPlatform

    from kvconfig.engine.emulate import take_platform

    class EmulatedPlatform(UnspecifiedPlatform):  # type: ignore[misc]
        """A GPU-less platform whose vendor and capability kvconfig sets per case."""

        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> DeviceCapability | None:
            if not _INSTALLED.get("active", False):
                return None  # neutral while importing, like a GPU-less host
            cap = _INSTALLED.get("capability")
            return None if cap is None else DeviceCapability(*cap)

        def is_cuda(self) -> bool:
            return _INSTALLED.get("vendor") == "cuda" and _INSTALLED.get("active", False)

        def is_rocm(self) -> bool:
            return _INSTALLED.get("vendor") == "rocm" and _INSTALLED.get("active", False)

        def is_xpu(self) -> bool:
            return _INSTALLED.get("vendor") == "xpu" and _INSTALLED.get("active", False)

        def is_cpu(self) -> bool:
            return _INSTALLED.get("vendor") == "cpu" and _INSTALLED.get("active", False)

        @classmethod
        def get_cuda_runtime_major(cls) -> int:
            """The CUDA runtime of vLLM's wheels (torch cu130)."""
            return int(_INSTALLED.get("cuda_runtime", 13))

        def is_cuda_alike(self) -> bool:
            return self.is_cuda() or self.is_rocm()

        def is_unspecified(self) -> bool:
            active = _INSTALLED.get("active", False)
            return not active or _INSTALLED.get("vendor") == "unspecified"

    take_platform(EmulatedPlatform())
    _INSTALLED["capability"] = (9, 0)
    _INSTALLED["vendor"] = "cuda"
    if "vllm.vllm_flash_attn" not in sys.modules:
        pkg = types.ModuleType("vllm.vllm_flash_attn")
        pkg.__path__ = []  # a package with no files: only the stand-in below
        sys.modules["vllm.vllm_flash_attn"] = pkg
    sys.modules["vllm.vllm_flash_attn.flash_attn_interface"] = _fake_fa_interface()
    _INSTALLED["done"] = True


class _FakeHF:
    def __init__(self, extra: dict[str, Any], strict: bool = False) -> None:
        self.__dict__.update(extra)
        self.__dict__["_strict"] = strict

    def __getattr__(self, name: str) -> Any:
        if self.__dict__.get("_strict"):
            raise AttributeError(name)
        return None


class _FakeModelConfig:
    def __init__(self, emu: Emulation) -> None:
        self._emu = emu
        self.hf_text_config = _FakeHF(emu.hf_extra, emu.strict_hf)
        self.hf_config = self.hf_text_config
        self.is_mm_prefix_lm = False
        self.rswa_window = None
        self.is_diffusion = False
        self.use_mla = emu.use_mla
        self.dtype = None

    def get_num_attention_heads(self, parallel_config: Any, arch_config: Any = None) -> int:
        return self._emu.num_heads // self._emu.tensor_parallel_size

    def get_num_kv_heads(self, parallel_config: Any, arch_config: Any = None) -> int:
        if self._emu.use_mla:
            return 1
        return max(1, self._emu.num_kv_heads // self._emu.tensor_parallel_size)

    def get_head_size(self) -> int:
        return self._emu.head_size


def fake_vllm_config(emu: Emulation) -> Any:
    """A stand-in for the fields of ``VllmConfig`` that backends read while voting."""
    return types.SimpleNamespace(
        model_config=_FakeModelConfig(emu),
        parallel_config=types.SimpleNamespace(
            tensor_parallel_size=emu.tensor_parallel_size,
            decode_context_parallel_size=1,
            prefill_context_parallel_size=1,
        ),
        cache_config=types.SimpleNamespace(cache_dtype=emu.cache_dtype, block_size=16),
        attention_config=types.SimpleNamespace(
            backend=None,
            backend_per_kind={},
            use_trtllm_attention=emu.use_trtllm_attention,
            flash_attn_version=emu.flash_attn_version,
            use_non_causal=False,
        ),
        compilation_config=types.SimpleNamespace(static_forward_context={}),
        speculative_config=None,
    )


@contextlib.contextmanager
def emulated(emu: Emulation, *, with_config: bool = True) -> Iterator[Any]:
    """Within the block, vLLM sees ``emu``'s platform, environment and config."""
    install()
    import vllm.utils.flashinfer as fi_utils
    from vllm.config.vllm import set_current_vllm_config

    saved = dict(_INSTALLED)
    saved_env = os.environ.get("VLLM_BATCH_INVARIANT")
    saved_artifactory = fi_utils.has_nvidia_artifactory
    _INSTALLED.update(
        vendor=emu.vendor, capability=emu.capability, active=True, fa_available=emu.fa_available
    )
    if emu.batch_invariant:
        os.environ["VLLM_BATCH_INVARIANT"] = "1"
    else:
        os.environ.pop("VLLM_BATCH_INVARIANT", None)
    cubins = emu.cubins
    fi_utils.has_nvidia_artifactory = lambda: cubins
    fi_utils.supports_trtllm_attention.cache_clear()
    config = fake_vllm_config(emu)
    try:
        if with_config:
            with set_current_vllm_config(config):
                yield config
        else:
            yield config
    finally:
        _INSTALLED.clear()
        _INSTALLED.update(saved)
        fi_utils.has_nvidia_artifactory = saved_artifactory
        fi_utils.supports_trtllm_attention.cache_clear()
        if saved_env is None:
            os.environ.pop("VLLM_BATCH_INVARIANT", None)
        else:
            os.environ["VLLM_BATCH_INVARIANT"] = saved_env


def import_module(name: str) -> types.ModuleType:
    """Import one module under the neutral platform; its own import error propagates.

    ``python -m tools.catalog`` walks vLLM's packages with this and records
    the modules that cannot be imported without a GPU.
    """
    install()
    import importlib

    active = _INSTALLED.get("active", False)
    _INSTALLED["active"] = False
    try:
        return importlib.import_module(name)
    finally:
        _INSTALLED["active"] = active


def load(path: str) -> Any:
    """Import ``module.QualName`` with the vendor switched off, as on a GPU-less host.

    Backend modules branch on ``current_platform.is_cuda()`` at import time to load
    CUDA-only kernels; importing them under a neutral platform keeps that off.
    """
    install()
    import importlib

    active = _INSTALLED.get("active", False)
    _INSTALLED["active"] = False
    try:
        parts = path.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj: Any = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            _complete_cuda_imports()
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            return obj
        raise ModuleNotFoundError(path)
    finally:
        _INSTALLED["active"] = active


def _complete_cuda_imports() -> None:
    """Bind the names ``flash_attn.py`` imports only when FlashAttention kernels load.

    On a CUDA host ``flash_attn_supports_sinks`` is imported from ``fa_utils`` at module
    import; under the neutral platform it is skipped, so ``supports_sink()`` would fail.
    The function itself is platform-agnostic and reads the (emulated) FA version.
    """
    module = sys.modules.get("vllm.v1.attention.backends.flash_attn")
    if module is None or hasattr(module, "flash_attn_supports_sinks"):
        return
    from vllm.v1.attention.backends import fa_utils

    module.flash_attn_supports_sinks = fa_utils.flash_attn_supports_sinks  # type: ignore[attr-defined]
