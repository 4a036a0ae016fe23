"""What each attention backend's ``validate_configuration`` checks, on CUDA.

Mirrors ``AttentionBackend.validate_configuration`` (``vllm/v1/attention/backend.py``)
and the ``supports_*`` overrides of the CUDA backends under
``vllm/v1/attention/backends/`` (``flash_attn.py``, ``flashinfer.py``, ``triton_attn.py``,
``flex_attention.py``, ``turboquant_attn.py``, ``b12x.py``, ``hpc_attn.py``, the
composites of ``triton_flashinfer.py`` and ``triton_flash_attn.py``): a ``Traits`` per
backend name, read by ``kvconfig.mirror.selection``. The MLA backends are in
``kvconfig.mirror.traits_mla``. ``Request`` is vLLM's ``AttentionSelectorConfig``;
``Machine`` the deployment-wide facts the checks read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from kvconfig.mirror import versions
from kvconfig.mirror.catalog import CatalogData, SizeContext
from kvconfig.mirror.platform import fa_supported, fa_version, is_quantized, supports_trtllm
from kvconfig.mirror.versions import Rules
from kvconfig.schemas.sizes import KernelSize, MultipleOf

_EMPTY: Mapping[str, int] = MappingProxyType({})


class Request(NamedTuple):
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
    """Query heads on this rank (the MLA priorities and FA4 sparse MLA read them)."""


class Machine(NamedTuple):
    """Deployment-wide facts the checks read."""

    vendor: str
    capability: tuple[int, int] | None
    batch_invariant: bool = False
    use_trtllm_attention: bool | None = None
    cubins: bool = True
    flash_attn_version: int | None = None
    quantized_cache: bool = False
    """``--kv-cache-dtype`` is quantized (FA4's head-size-256 kernel then falls back)."""
    facts: Mapping[str, int] = _EMPTY
    """Target ``config.json`` values MLA backends check (``hf_text_config``)."""
    catalog: CatalogData | None = None
    """The release's backend catalog: what each backend declares without a layer spec."""
    target: SizeContext | None = None
    """What a backend asked without a spec reads: the target model's config."""

    @property
    def release(self) -> str | None:
        """The vLLM release whose rules apply (its catalog's; None: the newest)."""
        return self.catalog.vllm_version if self.catalog is not None else None

    @property
    def rules(self) -> Rules:
        """The differing rules of that release."""
        return versions.rules(self.release or versions.DEFAULT)

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
        return supports_trtllm(
            self.capability,
            cubins=self.cubins,
            batch_invariant=self.batch_invariant,
            prefill=prefill,
        )

    def declared_without_spec(self, name: str) -> tuple[KernelSize, ...]:
        """``get_supported_kernel_block_sizes()`` of backend ``name`` asked without a spec
        (FlashInfer then reads the target model's config)."""
        if self.catalog is None or self.target is None:
            return (MultipleOf(1),)
        return self.catalog.declared_by_name(name, self.target)


_FP = ("float16", "bfloat16")
_FP32 = ("float16", "bfloat16", "float32")
_ALL_TYPES = ("decoder", "encoder", "encoder_only", "encoder_decoder")


class Traits(NamedTuple):
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
    sm90_ok = version == 3 or (m.rules.fa4_sm90_fp8 and version == 4 and head in (None, 512))
    return (sm90_ok and m.major == 9) or (version == 4 and m.major == 10)


def _fa_combination(r: Request, m: Machine) -> str | None:
    if r.has_sink and m.capability is not None and m.capability < (9, 0):
        return "sink not supported on compute capability < 9.0"
    quantized = is_quantized(r.kv_cache_dtype, m.release)
    if r.use_mm_prefix and quantized and m.capability == (9, 0) and m.rules.fa4_sm90_fp8:
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
        return (
            "mm_prefix (PrefixLM bidirectional attention) requires FlashAttention v4, "
            "which does not resolve for this head_size"
        )
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
        if m.major in (8, 9, 12) and m.rules.flashinfer_nvfp4_fa2:
            # SM80/90/120 read NVFP4 through FA2; only plain "nvfp4" has a writer there.
            return kv == "nvfp4"
        return m.major == 10 and m.trtllm(prefill=True) and m.trtllm(prefill=False)
    return True


def _fi_combination(r: Request, m: Machine) -> str | None:
    if not m.rules.flashinfer_nvfp4_fa2:
        return None
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
    if is_quantized(r.kv_cache_dtype, m.release) and r.kv_cache_dtype not in ("fp8", "fp8_e4m3"):
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
            why = member.combination(r._replace(use_mm_prefix=r.use_mm_prefix and variant == 0), m)
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


#: ``validate_configuration`` of the CUDA backends that are not MLA.
DENSE_TRAITS: dict[str, Traits] = {
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
        kv_check=lambda kv, m: not is_quantized(kv, m.release) or _fa_kv(kv, m),
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
}
DENSE_TRAITS["TRITON_FLASHINFER"] = _composite(
    DENSE_TRAITS["TRITON_ATTN"],
    DENSE_TRAITS["FLASHINFER"],
    head_sizes=(256, 512),
    device_major=10,
    names=("TRITON_ATTN", "FLASHINFER"),
)
DENSE_TRAITS["TRITON_FLASH_ATTN"] = _composite(
    DENSE_TRAITS["TRITON_ATTN"],
    DENSE_TRAITS["FLASH_ATTN"]._replace(
        capability=lambda m: m.vendor == "xpu" or (m.major == 9 and m.capability is not None),
        combination=_fa_route_combination,
    ),
    head_sizes=(256, 512),
    device_major=None,
    names=("TRITON_ATTN", "FLASH_ATTN"),
)


#: Backends whose ``supports_block_size`` accepts exact sizes only (backend.py overrides).
