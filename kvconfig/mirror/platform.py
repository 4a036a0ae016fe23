"""The platform, and the facts vLLM derives from it before any backend votes.

* ``PlatformId`` is what vLLM's ``current_platform`` answers: the vendor and the device
  capability (``vllm/platforms/interface.py``).
* ``fa_version`` mirrors ``get_flash_attn_version`` in
  ``vllm/v1/attention/backends/fa_utils.py`` for a CUDA install of vLLM (the wheel
  ships FA2, FA3 and FA4: FA2 needs SM80+, FA3 SM9x, FA4 SM9x/10x/11x).
* ``kv_quant`` mirrors ``get_kv_quant_mode`` in ``vllm/v1/kv_cache_interface.py``.
* ``supports_trtllm`` and ``trtllm_usable`` mirror ``supports_trtllm_attention`` and
  ``can_use_trtllm_attention`` in ``vllm/utils/flashinfer.py``; the resolver and the
  hooks both ask these.
"""

from __future__ import annotations

from typing import NamedTuple


class PlatformId(NamedTuple):
    """A resolved platform: canonical name, vendor, capability."""

    name: str
    vendor: str
    capability: tuple[int, int] | None

    @property
    def major(self) -> int | None:
        """Capability major, the device *family*."""
        return None if self.capability is None else self.capability[0]

    def label(self) -> str:
        """``H200 (sm90)``."""
        if self.capability is None:
            return self.name
        return f"{self.name} (sm{self.capability[0]}{self.capability[1]})"

    def capability_text(self) -> str | None:
        """``"9.0"`` or None."""
        return None if self.capability is None else f"{self.capability[0]}.{self.capability[1]}"


def fa_supported(vendor: str, major: int | None, minor: int, version: int) -> bool:
    """``is_fa_version_supported`` on a CUDA install with every FA build present."""
    if vendor != "cuda" or major is None:
        return False
    if version == 2:
        return (major, minor) >= (8, 0)
    if version == 3:
        return major == 9
    if version == 4:
        return major in (9, 10, 11)
    return False


def kv_quant(kv_cache_dtype: str) -> str:
    """The KV quantization mode vLLM derives from a ``--kv-cache-dtype`` value."""
    d = kv_cache_dtype
    if d in ("int4_per_token_head", "int8_per_token_head", "fp8_per_token_head"):
        return d
    if d == "nvfp4_ds_mla":
        return "nvfp4_ds_mla"
    if d.startswith("nvfp4"):
        return "nvfp4"
    if d.startswith(("turboquant_", "octave_")):
        return d
    if d == "ultraquant_4bit":
        return d
    if d.startswith("fp8"):
        return "fp8_per_tensor"
    return "none"


def is_quantized(kv_cache_dtype: str, release: str | None = None) -> bool:
    """``is_quantized_kv_cache`` of ``release`` (default: the newest known release's)."""
    from kvconfig.mirror import versions

    if versions.rules(release or versions.KNOWN[-1]).quantized_by_name:
        return kv_cache_dtype.startswith(("fp8", "nvfp4")) or kv_cache_dtype.endswith(
            "per_token_head"
        )
    return kv_quant(kv_cache_dtype) != "none"


def fa_version(
    *,
    vendor: str,
    capability: tuple[int, int] | None,
    head_size: int | None = None,
    head_size_v: int | None = None,
    has_sinks: bool = False,
    requires_softcap: bool = False,
    supports_fa4_hd256: bool = False,
    forced: int | None = None,
    batch_invariant: bool = False,
    quantized_kv: bool = False,
    softcap_model: bool = False,
    dcp: bool = False,
    kv_cache_block_size: int | None = None,
) -> int | None:
    """The FlashAttention version vLLM uses, or None when none is available."""
    if vendor == "xpu":
        return 2
    if vendor != "cuda" or capability is None:
        return None
    major, minor = capability

    def ok(v: int) -> bool:
        return fa_supported(vendor, major, minor, v)

    if major == 9 and ok(3):
        version = 3
    elif major == 10 and ok(4):
        version = 4
    else:
        version = 2
    if forced is not None:
        version = forced
    if major >= 10 and version == 3:
        version = 4 if ok(4) else 2
    # SM90 cases FA3 cannot run are upgraded to FA4.
    wide = head_size is not None and head_size > 256
    diff_kv_sinks = (
        has_sinks and head_size is not None and head_size_v is not None and head_size != head_size_v
    )
    if version == 3 and major == 9 and ok(4) and (wide or diff_kv_sinks):
        version = 4
    if batch_invariant and version == 4:
        version = 2
    # FA4's head-size-256 kernel falls back to FA2 (_fa4_hd256_fallback_reason).
    hd256_fallback = (
        not supports_fa4_hd256
        or has_sinks
        or requires_softcap
        or softcap_model
        or quantized_kv
        or dcp
        or (kv_cache_block_size is not None and kv_cache_block_size % 128 != 0)
    )
    if version == 4 and _hd256(major, head_size, head_size_v) and hd256_fallback:
        version = 2
    if (
        version == 4
        and major >= 10
        and head_size is not None
        and head_size > 128
        and not (
            (head_size == 256 and head_size_v in (None, 256))
            or (head_size == 192 and head_size_v == 128)
        )
    ):
        version = 2
    return version if ok(version) else None


def _hd256(major: int, head_size: int | None, head_size_v: int | None) -> bool:
    """``uses_fa4_hd256_kernel``."""
    if head_size != 256:
        return False
    if head_size_v is not None and head_size_v != 256:
        return False
    return major in (10, 11)


def trtllm_capable(capability: tuple[int, int] | None) -> bool:
    """Whether the device has TRTLLM attention kernels at all: SM90 and SM12x (XQA
    decode), SM10x (TRTLLM-gen prefill and decode)."""
    return capability is not None and (capability == (9, 0) or capability[0] in (10, 12))


def supports_trtllm(
    capability: tuple[int, int] | None,
    *,
    cubins: bool,
    batch_invariant: bool,
    prefill: bool = False,
) -> bool:
    """``supports_trtllm_attention(is_prefill)``: never under batch invariance or without
    the cubins; SM90 and SM12x decode only; SM10x both phases."""
    if batch_invariant or not cubins or not trtllm_capable(capability):
        return False
    assert capability is not None
    if capability == (9, 0) or capability[0] == 12:
        return not prefill
    return True


def trtllm_usable(
    *,
    capability: tuple[int, int] | None,
    num_heads: int,
    num_kv_heads: int,
    use_trtllm_attention: bool | None,
    cubins: bool,
    batch_invariant: bool,
) -> bool:
    """``can_use_trtllm_attention`` for decode: not turned off by
    ``attention-config.use_trtllm_attention: false``, supported on the device, and the
    query heads a whole multiple of the KV heads."""
    if use_trtllm_attention is False:
        return False
    if not supports_trtllm(capability, cubins=cubins, batch_invariant=batch_invariant):
        return False
    return num_kv_heads > 0 and num_heads % num_kv_heads == 0
