"""What each attention backend of one vLLM version accepts as kernel pages, and when."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kvconfig.schemas._base import KernelSizeField as KernelSize
from kvconfig.schemas._base import Strict

Vendor = Literal["cuda", "rocm", "xpu", "cpu", "unspecified"]
"""The platform family vLLM detects: CUDA, ROCm, XPU, CPU, or none (a GPU-less host)."""

LayerFamily = Literal[
    "attention", "mla", "sparse_mla", "sliding_window_mla", "indexer", "state", "other"
]
"""The layers a backend serves; ``state`` covers Mamba and linear attention."""


class Conditions(Strict):
    """A conjunction of facts about the platform, the layer and the deployment.

    An absent field matches anything. Every present field must match.
    """

    vendor: list[Vendor] | None = None
    """The platform vendor is one of these."""
    capability_major: list[int | None] | None = None
    """The device's compute capability major (its *family*: 9 for 9.0, 10 for 10.0 and 10.3);
    ``null`` stands for a platform that reports none (XPU, CPU)."""
    kv_quant: list[str] | None = None
    """The layer's KV quantization mode is one of these (``none``, ``fp8_per_tensor``, ...)."""
    kv_quant_not: list[str] | None = None
    """The layer's KV quantization mode is none of these."""
    cache_dtype: list[str] | None = None
    """The cache dtype's name is one of these (``fp8``, ``fp8_e4m3``, ...): the layer's,
    or the model's ``--kv-cache-dtype`` where the release's vote asks without a spec. Only
    where the quantization mode cannot tell the answers apart (a release's FlashAttention
    that reads the name: ``_get_sm90_fa4_fp8_kv_block_size``)."""
    head_size: list[int] | None = None
    """The layer's head size is one of these."""
    head_size_not: list[int] | None = None
    """The layer's head size is none of these."""
    head_size_v: list[int] | None = None
    """The layer's value head size is one of these."""
    gqa: bool | None = None
    """The target model's per-rank query heads per KV head exceed 1 (GQA or MQA, not MHA)."""
    trtllm: bool | None = None
    """FlashInfer's TRTLLM attention kernels are usable (vLLM's ``can_use_trtllm_attention``)."""
    fa_version: list[int | None] | None = None
    """The FlashAttention version FlashAttention's size helpers compute for this layer,
    ``get_flash_attn_version(head_size, head_size_v, supports_fa4_hd256=True)``: without
    sinks, softcapping or block size (``null``: none available)."""


class SizeRule(Strict):
    """Sizes a backend declares when its conditions hold. A backend's rules are tried in order."""

    when: Conditions = Field(default_factory=Conditions)
    """The facts under which this rule applies; an empty mapping always applies."""
    sizes: list[KernelSize]
    """The supported kernel block sizes, exactly as ``get_supported_kernel_block_sizes`` returns."""
    scale: Literal["tokens_per_state"] | None = None
    """Multiply every exact size by the layer's tokens per state (compressed caches)."""
    because: str = ""
    """Why, in a few words, with the vLLM source that says so."""


class BackendEntry(Strict):
    """One attention backend class of a vLLM version."""

    name: str
    """What ``get_name()`` returns; not unique (several classes report ``FLASH_ATTN``)."""
    class_path: str = Field(alias="class")
    """The class, ``module.QualName``: the unique key."""
    serves: LayerFamily = "attention"
    """The layers the backend serves."""
    rules: list[SizeRule] = Field(min_length=1)
    """Size rules, first match wins; the last one has no conditions."""
    source: str
    """The vLLM file and line that declares the sizes."""
    introspected: bool = True
    """``true`` when the sizes were read from the real class under emulated platforms;
    ``false`` for a hand-written entry of a class that cannot be imported without a GPU."""
    note: str = ""
    """Anything a reader should know (why it is hand-written, name collisions, ...)."""


class Catalog(Strict):
    """Every attention backend one vLLM version ships, with its kernel-page rules."""

    vllm_version: str
    """The vLLM release the catalog describes."""
    generated_by: str = ""
    """How the file was produced (command and environment)."""
    registry: dict[str, str] = Field(default_factory=dict)
    """``--attention-backend`` names (vLLM's ``AttentionBackendEnum``) and their classes."""
    mamba_registry: dict[str, str] = Field(default_factory=dict)
    """vLLM's ``MambaAttentionBackendEnum``: state-space backend names and their classes."""
    unimportable_modules: dict[str, str] = Field(default_factory=dict)
    """Modules of the walked packages that cannot be imported on a CPU host, with the error."""
    backends: list[BackendEntry]
    """All backend classes, sorted by class path."""
