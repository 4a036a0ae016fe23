"""Which backend each layer gets, as vLLM decides it on CUDA.

Mirrors ``platforms/cuda.py`` (``_get_backend_priorities``, ``get_attn_backend_cls``)
and the backends' ``validate_configuration`` checks: an explicitly requested
backend is validated and refused when invalid; otherwise the first valid backend
of the platform's priority list wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from kvconfig.mirror.platform import fa_supported, fa_version, is_quantized
from schemas.sizes import KernelSize, MultipleOf


@dataclass(frozen=True, slots=True)
class Request:
    """What a layer asks of its backend (vLLM's ``AttentionSelectorConfig``)."""

    head_size: int
    dtype: str
    kv_cache_dtype: str
    block_size: int | None
    use_mla: bool = False
    use_sparse: bool = False
    has_sink: bool = False
    has_sliding_window: bool = False
    use_non_causal: bool = False
    use_mm_prefix: bool = False
    attn_type: str = "decoder"
    num_heads: int | None = None


@dataclass(frozen=True, slots=True)
class Machine:
    """Deployment-wide facts the checks read."""

    vendor: str
    capability: tuple[int, int] | None
    batch_invariant: bool = False
    use_trtllm_attention: bool | None = None
    cubins: bool = True
    flash_attn_version: int | None = None
    quantized_cache: bool = False
    block_sizes_nospec: Callable[[str], tuple[KernelSize, ...]] = field(
        default=lambda name: (MultipleOf(1),)
    )
    facts: Mapping[str, int] = field(default_factory=dict)
    """Target ``config.json`` values MLA backends check (``hf_text_config``)."""

    @property
    def major(self) -> int:
        """Capability major (0 without a capability)."""
        return 0 if self.capability is None else self.capability[0]

    def fa(self, **kw: object) -> int | None:
        """The FlashAttention version vLLM resolves for these arguments."""
        return fa_version(
            vendor=self.vendor,
            capability=self.capability,
            forced=self.flash_attn_version,
            batch_invariant=self.batch_invariant,
            quantized_kv=self.quantized_cache,
            softcap_model=bool(self.facts.get("attn_logit_softcapping")),
            **kw,  # type: ignore[arg-type]
        )

    def fa_ok(self, version: int) -> bool:
        """``is_fa_version_supported``."""
        cap = self.capability or (0, 0)
        return fa_supported(self.vendor, cap[0] if self.capability else None, cap[1], version)

    def trtllm(self, prefill: bool) -> bool:
        """``supports_trtllm_attention(is_prefill)``."""
        if self.batch_invariant or not self.cubins or self.capability is None:
            return False
        if self.capability == (9, 0) or self.major == 12:
            return not prefill
        return self.major == 10


_FP = ("float16", "bfloat16")
_FP32 = ("float16", "bfloat16", "float32")
_ALL_TYPES = ("decoder", "encoder", "encoder_only", "encoder_decoder")


@dataclass(frozen=True, slots=True)
class Traits:
    """What ``validate_configuration`` checks for one backend."""

    dtypes: tuple[str, ...] = _FP
    kv_dtypes: tuple[str, ...] = ("auto", "float16", "bfloat16")
    head_sizes: Callable[[int, Machine], bool] = lambda h, m: True
    capability: Callable[[Machine], bool] = lambda m: True
    mla: bool = False
    sparse: bool = False
    sink: Callable[[Machine], bool] = lambda m: False
    sliding_window: bool = False
    non_causal: bool = False
    mm_prefix: Callable[[Machine], bool] = lambda m: False
    batch_invariant: bool = False
    attn_types: tuple[str, ...] = ("decoder",)
    kv_check: Callable[[str, Machine], bool] = lambda kv, m: True
    combination: Callable[[Request, Machine], str | None] = lambda r, m: None


def _fa_kv(kv: str, m: Machine, **kw: object) -> bool:
    """``flash_attn_supports_kv_cache_dtype``."""
    if kv == "fp8_e5m2":
        return False
    if m.vendor == "xpu":
        return True
    version = m.fa(**kw)
    head = kw.get("head_size")
    sm90_ok = version == 3 or (version == 4 and head in (None, 512))
    return (sm90_ok and m.major == 9) or (version == 4 and m.major == 10)


def _fa_combination(r: Request, m: Machine) -> str | None:
    if r.has_sink and m.capability is not None and m.capability < (9, 0):
        return "sink not supported on compute capability < 9.0"
    quantized = is_quantized(r.kv_cache_dtype)
    if r.use_mm_prefix and quantized and m.capability == (9, 0):
        return "SM90 FP8 KV with mm_prefix requires Triton"
    if quantized and not _fa_kv(
        r.kv_cache_dtype,
        m,
        head_size=r.head_size,
        head_size_v=r.head_size,
        has_sinks=r.has_sink,
        supports_fa4_hd256=True,
        kv_cache_block_size=r.block_size,
    ):
        return "FP8 KV cache requires FA3 on SM90, FA4 with head_size=512 on SM90, or FA4 on SM100"
    if (
        r.use_mm_prefix
        and m.fa(
            head_size=r.head_size,
            has_sinks=r.has_sink,
            kv_cache_block_size=r.block_size,
            supports_fa4_hd256=True,
        )
        != 4
    ):
        return "mm_prefix (PrefixLM bidirectional attention) requires FlashAttention v4"
    return None


def _fi_sink(m: Machine) -> bool:
    if m.use_trtllm_attention is False:
        return False
    if m.capability == (9, 0) or m.major == 12:
        return m.trtllm(prefill=False)
    if m.major != 10:
        return False
    return m.trtllm(prefill=False) and m.trtllm(prefill=True)


def _fi_kv(kv: str, m: Machine) -> bool:
    if kv.startswith("nvfp4"):
        if m.major in (8, 9, 12):
            # SM80/90/120 read NVFP4 through FA2; only plain "nvfp4" has a writer there.
            return kv == "nvfp4"
        return m.major == 10 and m.trtllm(prefill=True) and m.trtllm(prefill=False)
    return True


def _fi_combination(r: Request, m: Machine) -> str | None:
    if r.kv_cache_dtype.startswith("nvfp4") and m.major in (8, 9, 12):
        if r.head_size == 64:
            return "fa2 prefill misreads an NVFP4 KV cache at head_size 64"
        if r.has_sink:
            return "the sink prefill wrapper cannot read an NVFP4 KV cache"
    return None


def _b12x_combination(r: Request, m: Machine) -> str | None:
    """``B12xPagedAttentionBackend.supports_combination`` (the kernel probe needs a GPU)."""
    if r.dtype != "bfloat16":
        return "b12x currently requires bfloat16 queries"
    if r.kv_cache_dtype == "float16":
        return "b12x does not support float16 KV cache"
    if is_quantized(r.kv_cache_dtype) and r.kv_cache_dtype not in ("fp8", "fp8_e4m3"):
        return "b12x currently supports only fp8/fp8_e4m3 quantized KV cache dtypes"
    return None


def _composite(
    general: Traits,
    causal: Traits,
    *,
    head_sizes: tuple[int, ...],
    device_major: int | None,
    names: tuple[str, str],
) -> Traits:
    """``create_composite_attention_backend``: both members must accept (composite.py)."""

    def combination(r: Request, m: Machine) -> str | None:
        for variant, (member, name) in enumerate(zip((general, causal), names, strict=True)):
            why = member.combination(replace(r, use_mm_prefix=r.use_mm_prefix and variant == 0), m)
            if why:
                return f"{name}: {why}"
        return None

    return Traits(
        dtypes=tuple(d for d in general.dtypes if d in causal.dtypes),
        kv_dtypes=(),
        kv_check=lambda kv, m: all(
            (not t.kv_dtypes or kv in t.kv_dtypes) and t.kv_check(kv, m) for t in (general, causal)
        ),
        head_sizes=lambda h, m: (
            h in head_sizes and general.head_sizes(h, m) and causal.head_sizes(h, m)
        ),
        capability=lambda m: (
            (device_major is None or m.major == device_major)
            and general.capability(m)
            and causal.capability(m)
        ),
        sliding_window=general.sliding_window and causal.sliding_window,
        mm_prefix=general.mm_prefix,
        combination=combination,
    )


def _fa_route_combination(r: Request, m: Machine) -> str | None:
    """``triton_flash_attn._FABackend.supports_combination``."""
    why = _fa_combination(r, m)
    if why is not None or m.vendor == "xpu":
        return why
    if m.fa(
        head_size=r.head_size,
        has_sinks=r.has_sink,
        kv_cache_block_size=r.block_size,
        supports_fa4_hd256=True,
    ) not in (3, 4):
        return "causal route requires FlashAttention v3 or v4"
    return None


_MLA_KV = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3")
_MLA_HEADS = (320, 512, 576)


def _fact(m: Machine, key: str, default: int | None = None) -> int | None:
    return m.facts.get(key, default)


def _fi_mla(r: Request, m: Machine) -> str | None:
    nope = _fact(m, "qk_nope_head_dim", 1)
    if nope not in (64, 128, 192):
        return f"FlashInfer MLA kernel requires qk_nope_head_dim in [64, 128, 192], but got {nope}"
    return None


def _flashmla(r: Request, m: Machine) -> str | None:
    if r.use_sparse:
        return None if m.major in (9, 10) else "FlashMLA Sparse needs Hopper or Blackwell DC"
    return None if m.major == 9 else "FlashMLA Dense is only supported on Hopper devices."


def _fa_mla(r: Request, m: Machine) -> str | None:
    if not (m.fa_ok(3) and m.major == 9):
        return "FlashAttention MLA not supported on this device"
    return None


def _fa_mla_sparse(r: Request, m: Machine) -> str | None:
    if r.kv_cache_dtype not in ("auto", "float16", "bfloat16"):
        return "FlashAttention MLA Sparse currently supports only FP16/BF16 KV cache"
    if (why := _fa_mla(r, m)) is not None:
        return why
    if "index_topk" not in m.facts:
        return "FlashAttention MLA Sparse requires model with index_topk"
    return None


def _fi_mla_sparse(r: Request, m: Machine) -> str | None:
    if r.kv_cache_dtype == "fp8_ds_mla":
        return "FLASHINFER_MLA_SPARSE SM10 does not support fp8_ds_mla kv-cache dtype"
    nope, rope = _fact(m, "qk_nope_head_dim"), _fact(m, "qk_rope_head_dim")
    if rope == 0:
        if nope != 256 or _fact(m, "kv_lora_rank") != 512:
            return "FlashInfer native no-rope MLA requires qk_nope_head_dim=256, kv_lora_rank=512"
    elif nope not in (128, 192):
        return f"FlashInfer MLA Sparse kernel requires qk_nope_head_dim in [128, 192], got {nope}"
    if "index_topk" not in m.facts:
        return "FlashInfer MLA Sparse requires model with index_topk config"
    return None


def _fa4_mla_sparse(r: Request, m: Machine) -> str | None:
    topk = _fact(m, "index_topk")
    if topk is None or topk % 128:
        return f"FA4 sparse MLA requires index_topk % 128 == 0, got {topk}"
    dims = (_fact(m, "kv_lora_rank"), _fact(m, "qk_rope_head_dim"))
    if dims != (512, 64):
        return f"FA4 sparse MLA requires (kv_lora_rank, qk_rope_head_dim) == (512, 64), got {dims}"
    if r.num_heads not in (8, 16, 32, 64, 128):
        return f"FA4 sparse MLA requires 8, 16, 32, 64 or 128 query heads, got {r.num_heads}"
    return None


def _flashmla_sparse(r: Request, m: Machine) -> str | None:
    if r.head_size == 512:
        ok = r.kv_cache_dtype in ("auto", "bfloat16", "float16", "fp8_ds_mla") and m.major == 9
        if not ok or _fact(m, "qk_rope_head_dim", 64) != 0:
            return "FLASHMLA_SPARSE supports head_size 512 only for rope-free models on SM90"
    if r.kv_cache_dtype == "nvfp4_ds_mla" and m.major != 10:
        return "FLASHMLA_SPARSE only supports the nvfp4_ds_mla kv-cache dtype on SM100"
    return None


def _fi_mla_sparse_sm90(r: Request, m: Machine) -> str | None:
    if _fact(m, "kv_lora_rank") != 512:
        return "FLASHINFER_MLA_SPARSE_SM90 requires kv_lora_rank=512"
    if _fact(m, "qk_rope_head_dim") not in (0, 64):
        return "FLASHINFER_MLA_SPARSE_SM90 requires qk_rope_head_dim in (0, 64)"
    return None


def _fi_mla_sparse_sm120(r: Request, m: Machine) -> str | None:
    topk = _fact(m, "index_topk")
    if topk is None:
        return "FLASHINFER_MLA_SPARSE_SM120 requires a model with index_topk config"
    if topk != 2048:
        return f"FLASHINFER_MLA_SPARSE_SM120 requires index_topk=2048; got {topk}"
    return None


def _tokenspeed(r: Request, m: Machine) -> str | None:
    dims = tuple(_fact(m, k, 0) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    if dims != (128, 64, 128):
        return f"tokenspeed_mla requires DeepSeek R1 MLA dimensions (128, 64, 128), got {dims}"
    return None


#: ``validate_configuration`` of the CUDA MLA backends (``v1/attention/backends/mla/*``);
#: vLLM's Linux wheel depends on ``tokenspeed-mla``, so TOKENSPEED_MLA's import check passes.
MLA_TRAITS: dict[str, Traits] = {
    "FLASHINFER_MLA": Traits(
        kv_dtypes=_MLA_KV,
        head_sizes=lambda h, m: h in _MLA_HEADS,
        capability=lambda m: m.major == 10,
        mla=True,
        non_causal=True,
        combination=_fi_mla,
    ),
    "TOKENSPEED_MLA": Traits(
        kv_dtypes=("fp8", "fp8_e4m3"),
        head_sizes=lambda h, m: h in _MLA_HEADS,
        capability=lambda m: m.major == 10,
        mla=True,
        non_causal=True,
        combination=_tokenspeed,
    ),
    "CUTLASS_MLA": Traits(
        kv_dtypes=_MLA_KV,
        head_sizes=lambda h, m: h in _MLA_HEADS,
        capability=lambda m: m.major == 10,
        mla=True,
    ),
    "FLASH_ATTN_MLA": Traits(
        kv_dtypes=("auto", "float16", "bfloat16"),
        head_sizes=lambda h, m: h in _MLA_HEADS,
        capability=lambda m: m.major == 9,
        mla=True,
        batch_invariant=True,
        combination=_fa_mla,
    ),
    "FLASHMLA": Traits(
        kv_dtypes=_MLA_KV,
        head_sizes=lambda h, m: h in _MLA_HEADS,
        capability=lambda m: m.major in (9, 10),
        mla=True,
        combination=_flashmla,
    ),
    "TRITON_MLA": Traits(kv_dtypes=_MLA_KV, mla=True, non_causal=True, batch_invariant=True),
    "FLASHMLA_SPARSE": Traits(
        dtypes=("bfloat16",),
        kv_dtypes=("auto", "bfloat16", "fp8_ds_mla", "fp8", "nvfp4_ds_mla"),
        head_sizes=lambda h, m: h in (576, 512),
        capability=lambda m: m.major in (9, 10),
        mla=True,
        sparse=True,
        combination=_flashmla_sparse,
    ),
    "FLASHINFER_MLA_SPARSE": Traits(
        kv_dtypes=_MLA_KV,
        head_sizes=lambda h, m: h in (512, 576),
        capability=lambda m: m.major == 10,
        mla=True,
        sparse=True,
        combination=_fi_mla_sparse,
    ),
    "FLASH_ATTN_MLA_SPARSE": Traits(
        kv_dtypes=("auto", "float16", "bfloat16"),
        capability=lambda m: m.major == 9,
        mla=True,
        sparse=True,
        combination=_fa_mla_sparse,
    ),
    "FLASH_ATTN_MLA_SPARSE_FA4": Traits(
        dtypes=("bfloat16",),
        kv_dtypes=("auto", "bfloat16"),
        head_sizes=lambda h, m: h == 576,
        capability=lambda m: m.major == 10,
        mla=True,
        sparse=True,
        combination=_fa4_mla_sparse,
    ),
    "FLASHINFER_MLA_SPARSE_SM90": Traits(
        dtypes=("bfloat16",),
        kv_dtypes=("auto", "bfloat16", "fp8", "fp8_e4m3"),
        head_sizes=lambda h, m: h in (512, 576),
        capability=lambda m: m.major == 9,
        mla=True,
        sparse=True,
        combination=_fi_mla_sparse_sm90,
    ),
    "FLASHINFER_MLA_SPARSE_SM120": Traits(
        dtypes=("bfloat16",),
        kv_dtypes=("auto", "fp8", "fp8_e4m3", "fp8_ds_mla"),
        head_sizes=lambda h, m: h in (512, 576),
        capability=lambda m: m.major == 12,
        mla=True,
        sparse=True,
        combination=_fi_mla_sparse_sm120,
    ),
}


TRAITS: dict[str, Traits] = {
    "FLASH_ATTN": Traits(
        kv_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
        head_sizes=lambda h, m: (
            h % 8 == 0
            and (h <= 256 or (m.vendor == "xpu" and h <= 512) or (m.fa_ok(4) and h <= 512))
        ),
        capability=lambda m: m.capability is not None and m.capability >= (8, 0),
        sink=lambda m: m.vendor == "xpu" or m.fa() in (3, 4),
        sliding_window=True,
        non_causal=True,
        mm_prefix=lambda m: m.fa_ok(4),
        batch_invariant=True,
        attn_types=_ALL_TYPES,
        kv_check=lambda kv, m: not is_quantized(kv) or _fa_kv(kv, m),
        combination=_fa_combination,
    ),
    "FLASHINFER": Traits(
        kv_dtypes=(
            "auto",
            "float16",
            "bfloat16",
            "fp8",
            "fp8_e4m3",
            "fp8_e5m2",
            "nvfp4",
            "nvfp4_4over6",
        ),
        head_sizes=lambda h, m: h in (64, 128, 256, 512),
        capability=lambda m: m.capability is not None and (8, 0) <= m.capability <= (12, 1),
        sink=_fi_sink,
        sliding_window=True,
        non_causal=True,
        kv_check=_fi_kv,
        combination=_fi_combination,
    ),
    "TRITON_ATTN": Traits(
        dtypes=_FP32,
        kv_dtypes=(
            "auto",
            "float16",
            "bfloat16",
            "fp8",
            "fp8_e4m3",
            "fp8_e5m2",
            "int4_per_token_head",
            "int8_per_token_head",
            "fp8_per_token_head",
        ),
        head_sizes=lambda h, m: h >= 32,
        sink=lambda m: True,
        sliding_window=True,
        non_causal=True,
        mm_prefix=lambda m: True,
        batch_invariant=True,
        attn_types=_ALL_TYPES,
    ),
    "FLEX_ATTENTION": Traits(
        dtypes=_FP32,
        sliding_window=True,
        non_causal=True,
        mm_prefix=lambda m: True,
        batch_invariant=True,
        attn_types=("decoder", "encoder_only"),
    ),
    "TURBOQUANT": Traits(
        kv_dtypes=(
            "turboquant_k8v4",
            "turboquant_4bit_nc",
            "turboquant_k3v4_nc",
            "turboquant_3bit_nc",
        ),
    ),
    "B12X": Traits(
        dtypes=("bfloat16",),
        kv_dtypes=("auto", "bfloat16", "fp8", "fp8_e4m3"),
        head_sizes=lambda h, m: h in (64, 128, 192, 256),
        capability=lambda m: m.capability in ((12, 0), (12, 1)),
        sink=lambda m: True,
        sliding_window=True,
        combination=_b12x_combination,
    ),
    "HPC_ATTN": Traits(
        kv_dtypes=("auto", "bfloat16", "fp8_e4m3"),
        head_sizes=lambda h, m: h == 128,
        capability=lambda m: m.capability == (9, 0),
    ),
    **MLA_TRAITS,
}
TRAITS["TRITON_FLASHINFER"] = _composite(
    TRAITS["TRITON_ATTN"],
    TRAITS["FLASHINFER"],
    head_sizes=(256, 512),
    device_major=10,
    names=("TRITON_ATTN", "FLASHINFER"),
)
TRAITS["TRITON_FLASH_ATTN"] = _composite(
    TRAITS["TRITON_ATTN"],
    replace(
        TRAITS["FLASH_ATTN"],
        capability=lambda m: m.vendor == "xpu" or (m.major == 9 and m.capability is not None),
        combination=_fa_route_combination,
    ),
    head_sizes=(256, 512),
    device_major=None,
    names=("TRITON_ATTN", "FLASH_ATTN"),
)


#: Backends whose ``supports_block_size`` accepts exact sizes only (backend.py overrides).
EXACT_BLOCK_SIZES: dict[str, tuple[int, ...]] = {"CPU_MLA": (16,), "B12X": (64, 128)}

#: ``get_preferred_block_size`` overrides, by backend name: default -> preferred.
PREFERRED_BLOCK_SIZE: dict[str, Callable[[int], int]] = {
    "B12X": lambda d: d if d in (64, 128) else 128,
    "DEEPSEEK_SPARSE_SWA": lambda d: 256,
    "ROCM_AITER_UNIFIED_ATTN": lambda d: 64,
    "ULTRAQUANT": lambda d: 64,
}


def supports_block_size(
    name: str, block_size: int | None, m: Machine, sizes: tuple[KernelSize, ...] | None = None
) -> bool:
    """``supports_block_size``: the manager block is a multiple of a declared size.

    ``sizes`` are the backend's sizes without a spec (default: ``m.block_sizes_nospec``).
    """
    if block_size is None:
        return True
    if name in EXACT_BLOCK_SIZES:
        return block_size in EXACT_BLOCK_SIZES[name]
    if sizes is None:
        sizes = m.block_sizes_nospec(name)
    if not sizes:
        return True
    return any(block_size % (s.multiple_of if isinstance(s, MultipleOf) else s) == 0 for s in sizes)


def invalid_reasons(name: str, r: Request, m: Machine) -> list[str]:
    """vLLM's ``validate_configuration`` reasons for backend ``name`` (empty: valid)."""
    t = TRAITS.get(name)
    if t is None:
        return []
    reasons = []
    if not t.head_sizes(r.head_size, m):
        reasons.append("head_size not supported")
    if r.dtype not in t.dtypes:
        reasons.append("dtype not supported")
    if (t.kv_dtypes and r.kv_cache_dtype not in t.kv_dtypes) or not t.kv_check(r.kv_cache_dtype, m):
        reasons.append("kv_cache_dtype not supported")
    if not supports_block_size(name, r.block_size, m):
        reasons.append("block_size not supported")
    if r.use_mm_prefix and not t.mm_prefix(m):
        reasons.append("partial multimodal token full attention not supported")
    if r.use_mla != t.mla:
        reasons.append("MLA not supported" if r.use_mla else "non-MLA not supported")
    if r.has_sink and not t.sink(m):
        reasons.append("attention sinks not supported")
    if r.use_sparse != t.sparse:
        reasons.append("sparse not supported" if r.use_sparse else "non-sparse not supported")
    if m.capability is not None and not t.capability(m):
        reasons.append("compute capability not supported")
    if r.attn_type not in t.attn_types:
        reasons.append(f"attention type {r.attn_type} not supported")
    if r.has_sliding_window and not t.sliding_window:
        reasons.append("sliding window not supported")
    if r.use_non_causal and not t.non_causal:
        reasons.append("non-causal attention not supported")
    if m.batch_invariant and not t.batch_invariant:
        reasons.append("batch invariance not supported")
    if (why := t.combination(r, m)) is not None:
        reasons.append(why)
    return reasons


def priorities(r: Request, m: Machine) -> list[str]:
    """``_get_backend_priorities`` for CUDA (non-MLA and MLA)."""
    if r.use_mla:
        if m.major == 10:
            if is_quantized(r.kv_cache_dtype):
                sparse = ["FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"]
            elif r.num_heads is not None and r.num_heads <= 16:
                sparse = ["FLASH_ATTN_MLA_SPARSE_FA4", "FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"]
            else:
                sparse = ["FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE"]
            return [
                "FLASHINFER_MLA",
                "TOKENSPEED_MLA",
                "CUTLASS_MLA",
                "FLASH_ATTN_MLA",
                "FLASHMLA",
                "TRITON_MLA",
                *sparse,
            ]
        if m.major == 12:
            return ["TRITON_MLA", "FLASHINFER_MLA_SPARSE_SM120"]
        tail = ["FLASH_ATTN_MLA_SPARSE", "FLASHMLA_SPARSE"]
        if r.head_size == 512:
            tail.insert(0, "FLASHINFER_MLA_SPARSE_SM90")
        else:
            tail.append("FLASHINFER_MLA_SPARSE_SM90")
        return ["FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA", *tail]
    if m.major == 10 and not r.use_non_causal:
        head = ["TRITON_FLASHINFER"] if r.use_mm_prefix else []
        return [*head, "FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT"]
    head = ["TRITON_FLASH_ATTN"] if m.major == 9 and r.use_mm_prefix else []
    return [*head, "FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT"]


@dataclass(frozen=True, slots=True)
class Selection:
    """The outcome of backend selection for one layer."""

    backend: str | None
    reason: str
    error: str | None = None
    rejected: tuple[tuple[str, tuple[str, ...]], ...] = ()


def select(requested: str | None, r: Request, m: Machine, source: str) -> Selection:
    """The backend vLLM picks for a layer, or why it refuses to start."""
    if requested is not None:
        reasons = invalid_reasons(requested, r, m)
        if reasons:
            return Selection(
                None,
                source,
                error=f"{requested} cannot run here: {', '.join(reasons)}",
                rejected=((requested, tuple(reasons)),),
            )
        return Selection(requested, source)
    if m.vendor != "cuda":
        return Selection(
            None,
            "automatic",
            error=(
                f"kvconfig derives vLLM's automatic backend choice on CUDA only; "
                f"set --attention-backend for {m.vendor}"
            ),
        )
    rejected: list[tuple[str, tuple[str, ...]]] = []
    for name in priorities(r, m):
        reasons = invalid_reasons(name, r, m)
        if not reasons:
            return Selection(
                name, f"{source}: first valid in vLLM's priority order", rejected=tuple(rejected)
            )
        rejected.append((name, tuple(reasons)))
    return Selection(
        None,
        source,
        error="no valid attention backend: "
        + "; ".join(f"{n} ({', '.join(why)})" for n, why in rejected),
        rejected=tuple(rejected),
    )


_M3 = "vllm.models.minimax_m3"

#: The backend class each Mamba mixer uses (``MambaAttentionBackendEnum``).
MAMBA_BACKENDS: dict[str, str] = {
    "mamba1": "vllm.v1.attention.backends.mamba1_attn.Mamba1AttentionBackend",
    "mamba2": "vllm.v1.attention.backends.mamba2_attn.Mamba2AttentionBackend",
    "gdn_attention": "vllm.v1.attention.backends.gdn_attn.GDNAttentionBackend",
    "linear_attention": "vllm.v1.attention.backends.linear_attn.LinearAttentionBackend",
    "short_conv": "vllm.v1.attention.backends.short_conv_attn.ShortConvAttentionBackend",
}


def model_backend(requested: str, m: Machine, kv_cache_dtype: str) -> Selection | None:
    """Backends a model wires itself instead of asking vLLM's selector (None: not one).

    * ``MINIMAX_M3_SPARSE``: ``select_main_backend_and_impl_cls``
      (``models/minimax_m3/common/sparse_attention.py``): the MSA backend on CUDA SM10x
      for 4/8/16/32 top-k blocks and any cache but fp8_e5m2 (the NVFP4 variant for
      ``nvfp4``), else the base backend with the Triton kernels.
    * ``MINIMAX_M3_SPARSE_INDEXER``: ``select_indexer_impl_cls``
      (``models/minimax_m3/common/indexer.py``): the MSA indexer on CUDA SM10x with 16
      top-k blocks, else the base (Triton) one.
    """
    topk = m.facts.get("sparse_topk_blocks")
    sm100 = m.vendor == "cuda" and m.major == 10
    if requested == "MINIMAX_M3_SPARSE":
        msa = sm100 and topk in (4, 8, 16, 32) and kv_cache_dtype != "fp8_e5m2"
        if kv_cache_dtype.startswith("nvfp4"):
            if not msa or kv_cache_dtype != "nvfp4":
                return Selection(
                    None,
                    "MiniMax-M3's own choice",
                    error="MiniMax M3 sparse attention supports an NVFP4 KV cache only "
                    "with the SM100 MSA backend",
                    rejected=(("MINIMAX_M3_SPARSE", ("nvfp4 KV cache needs SM100 MSA",)),),
                )
            path = f"{_M3}.nvidia.sparse_attention_msa.MiniMaxM3SparseMSANvfp4Backend"
        elif msa:
            path = f"{_M3}.nvidia.sparse_attention_msa.MiniMaxM3SparseMSABackend"
        else:
            path = f"{_M3}.common.sparse_attention.MiniMaxM3SparseBackend"
        why = "MiniMax-M3's own choice (select_main_backend_and_impl_cls)"
        return Selection(path, why)
    if requested == "MINIMAX_M3_SPARSE_INDEXER":
        if sm100 and topk == 16:
            path = f"{_M3}.nvidia.indexer_msa.MiniMaxM3IndexerMSABackend"
        else:
            path = f"{_M3}.common.indexer.MiniMaxM3IndexerBackend"
        return Selection(path, "MiniMax-M3's own choice (select_indexer_impl_cls)")
    return None
