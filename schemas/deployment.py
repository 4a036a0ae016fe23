"""A deployment: which layers a vLLM engine serves, on which platform, with which settings.

``Deployment`` is the one model of a deployment: the loaders of ``vllm serve`` configs,
pasted commands and native files all produce it, the resolver reads it, and it is the
native kvconfig file format, for layouts kvconfig cannot derive from a Hugging Face
``config.json``.

The classes are frozen dataclasses, importable without pydantic (``kvconfig lint`` reads
serve configs without it). Constructing one runs its checks (``__post_init__``): the
contradictions between fields, and the names that depend on the vLLM release (speculative
methods, ``backend_per_kind`` keys, KV-cache dtypes), taken from that release's facts in
kvconfig's version registry. Documents (native files, dicts) are validated with pydantic
by ``kvconfig.load.validate``, which reads the field types and constraints below and
reports every problem as one ``kvconfig.InputError`` line.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from kvconfig._suggest import did_you_mean, same_first_word
from kvconfig.errors import DeploymentError
from kvconfig.mirror import speculative, versions
from kvconfig.schemas._fields import CONFIG, MinItems, StrictInt
from kvconfig.schemas.sizes import MultipleOf

Role = Literal["target", "draft"]
"""Whether a layer belongs to the served (target) model or to the speculator's drafter."""

LayerKind = Literal[
    "full_attention",
    "sliding_window",
    "chunked_local",
    "mla_attention",
    "sliding_window_mla",
    "sparse_mla",
    "indexer",
    "mamba",
    "encoder_only_attention",
    "cross_attention",
]
"""The KV-cache spec kind of a layer, as vLLM groups it."""

MambaType = Literal["mamba1", "mamba2", "gdn_attention", "linear_attention", "short_conv"]
"""The state-space mixer of a ``mamba`` layer (vLLM's ``MambaAttentionBackendEnum``)."""

Runner = Literal["v1", "v2"]
"""vLLM's model runner: V1 (``VLLM_USE_V2_MODEL_RUNNER=0``) or V2 (the default)."""

HooksMode = Literal["none", "enforce"]
"""``enforce``: the kvconfig vLLM hooks are installed and hand the runner's plan to the
speculator."""

PositiveInt = Annotated[int, StrictInt(ge=1)]
"""An integer of at least 1 (never a boolean or a string)."""

Count = Annotated[int, StrictInt(ge=0)]
"""An integer of at least 0 (never a boolean or a string)."""

KernelSize = Annotated[int, StrictInt(ge=1)] | MultipleOf
"""A kernel size: a positive int (an exact size) or ``{multiple_of: n}``."""

BYTE_CACHE_DTYPES = ("uint8",)
"""Cache dtypes a layer may have beyond ``--kv-cache-dtype``'s: caches a model stores as
raw bytes (``DeepseekV32IndexerCache``)."""

MAX_LAYERS = 10_000
"""Most layers one deployment may list (real models have a few hundred)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionSettings:
    """vLLM's ``--attention-config`` fields that change the plan."""

    __pydantic_config__: ClassVar[dict[str, Any]] = CONFIG

    backend: str | None = None
    """``--attention-backend`` / ``attention-config.backend``: the backend every layer asks for."""
    backend_per_kind: dict[str, str] = field(default_factory=dict)
    """``attention-config.backend_per_kind``: a backend per vLLM KV-cache spec kind
    (``KVCacheSpecKind``: ``full_attention``, ``sliding_window``, ...), overriding ``backend``."""
    use_trtllm_attention: bool | None = None
    """``attention-config.use_trtllm_attention``: ``false`` turns FlashInfer's TRTLLM
    kernels off."""
    flash_attn_version: Literal[2, 3, 4] | None = None
    """``attention-config.flash_attn_version``: forces a FlashAttention version."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomBackend:
    """A backend kvconfig's catalog does not know (out of tree), with its declared sizes."""

    __pydantic_config__: ClassVar[dict[str, Any]] = CONFIG

    sizes: Annotated[list[KernelSize], MinItems(1)]
    """What its ``get_supported_kernel_block_sizes`` returns."""
    serves: Literal["attention", "mla", "sparse_mla", "indexer", "state"] = "attention"
    """The layers it serves, as a catalog entry says (informative: the plan reads the sizes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerSet:
    """``count`` layers with the same geometry, role and backend."""

    __pydantic_config__: ClassVar[dict[str, Any]] = CONFIG

    name: str = "layers.{i}"
    """Layer names; ``{i}`` is replaced by 0..count-1 (plus ``first_index``)."""
    count: PositiveInt = 1
    """How many such layers."""
    first_index: Count = 0
    """The index of the first layer in ``name``."""
    role: Role = "target"
    """Target (served model) or draft (speculator) layers."""
    kind: LayerKind = "full_attention"
    """The layer's KV-cache spec kind."""
    backend: str | None = None
    """The backend the layer asks for (vLLM name, or a class path); null: vLLM's
    automatic choice."""
    num_heads: PositiveInt = 32
    """Query heads of the whole model (before tensor parallelism)."""
    num_kv_heads: PositiveInt = 8
    """KV heads of the whole model (before tensor parallelism)."""
    head_size: PositiveInt = 128
    """Head size (for MLA: the latent size plus the rope size, e.g. 576)."""
    head_size_v: PositiveInt | None = None
    """Value head size when it differs from ``head_size``."""
    dtype: Literal["float16", "bfloat16", "float32"] = "bfloat16"
    """Activation dtype."""
    kv_cache_dtype: str | None = None
    """This layer's ``--kv-cache-dtype`` if it differs from the deployment's; ``uint8`` for
    a cache the model stores as bytes (DeepSeek-V3.2's indexer keys)."""
    sliding_window: PositiveInt | None = None
    """Sliding window in tokens, for ``sliding_window`` layers."""
    has_sink: bool = False
    """Attention sinks (GPT-OSS)."""
    non_causal: bool = False
    """Non-causal attention (DFlash drafters)."""
    mm_prefix: bool = False
    """Bidirectional attention over the multimodal prefix (vLLM's ``Attention.use_mm_prefix``:
    the model is a multimodal prefix LM serving multimodal input, ``is_mm_prefix_lm``, e.g.
    Gemma 3): the layer's backend must support it."""
    tokens_per_state: PositiveInt = 1
    """Tokens folded into one cache state (compressed caches); 1 otherwise."""
    state_bytes: PositiveInt | None = None
    """``mamba`` layers: bytes of one request's recurrent state on one rank (all state
    tensors together, before vLLM pads it to the attention page)."""
    mamba_type: MambaType | None = None
    """``mamba`` layers: which state-space mixer (it picks the layer's vLLM backend)."""
    prefill_checkpoints: bool = True
    """``gdn_attention`` layers: the mixer can export states from inside a prefill
    (Qwen's gated delta net, ``get_prefill_checkpoint_alignment``), which aligns B to the
    checkpoint grid where FlashInfer runs the prefill; false for mixers that export none
    (OLMo-Hybrid's)."""
    group: Count | None = None
    """Explicit KV-cache group id; when any layer has one, all must, and kvconfig does not
    regroup."""

    def names(self) -> tuple[str, ...]:
        """The expanded layer names."""
        return expand_names(self.name, self.count, self.first_index)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSettings:
    """Settings of one explicitly numbered KV-cache group."""

    __pydantic_config__: ClassVar[dict[str, Any]] = CONFIG

    id: Count
    """The group id the layers refer to."""
    block_size: PositiveInt | None = None
    """The manager block size B of this group, when it differs from the deployment's."""
    packed: bool = False
    """Its KV-cache tensors are block-outermost with several layers (never split)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Deployment:
    """Everything the plan depends on. Also the native kvconfig file."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {
        **CONFIG,
        "alias_generator": lambda name: "$schema" if name == "schema_" else name,
        "validate_by_name": True,
        "validate_by_alias": True,
    }

    schema_: str | None = None
    """Editor hint: the JSON Schema of this file."""
    kvconfig: Literal[1] = 1
    """Format version of this file."""
    source: str = ""
    """Where the deployment was read from (filled in by the loader)."""
    vllm_version: str = versions.DEFAULT
    """The vLLM release to plan for."""
    platform: str | None = None
    """The device: a GPU name (``H200``), ``smXY`` or ``X.Y``; ``--platform`` overrides it."""
    runner: Runner = "v2"
    """Model runner (``VLLM_USE_V2_MODEL_RUNNER``)."""
    hooks: HooksMode = "none"
    """Whether the kvconfig vLLM hooks are installed."""
    block_size: PositiveInt | None = None
    """``--block-size`` (manager block size B); null: vLLM's default for the backends."""
    kv_cache_dtype: str = "auto"
    """``--kv-cache-dtype``."""
    tensor_parallel_size: PositiveInt = 1
    """``--tensor-parallel-size``; heads per rank are what backends see."""
    attention: AttentionSettings = field(default_factory=AttentionSettings)
    """``--attention-backend`` and ``--attention-config``."""
    speculative_method: str | None = None
    """``speculative-config.method`` (one of the vLLM release's ``SpeculativeMethod``
    values); null without a speculator."""
    num_speculative_tokens: Count = 0
    """``speculative-config.num_speculative_tokens``: Mamba states keep room for them."""
    prefix_caching: bool = True
    """``--enable-prefix-caching`` (vLLM's default); hybrid models then align Mamba
    blocks with attention blocks."""
    disable_hybrid_kv_cache_manager: bool = False
    """``--disable-hybrid-kv-cache-manager``: sliding-window layers are allocated as full
    attention and share its groups."""
    max_model_len: PositiveInt | None = None
    """``--max-model-len`` (or the model's context length): the block size of Mamba
    groups without prefix caching."""
    model_facts: dict[str, int] = field(default_factory=dict)
    """Target ``config.json`` values backends check when they validate a layer
    (``qk_nope_head_dim``, ``kv_lora_rank``, ``index_topk``, ``sparse_topk_blocks``, ...)."""
    draft_attention_backend: str | None = None
    """``speculative-config.attention_backend``."""
    kv_cache_layout: str | None = None
    """``VLLM_KV_CACHE_LAYOUT`` when set."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables that change the outcome (``VLLM_BATCH_INVARIANT``, ...)."""
    trtllm_cubins: bool = True
    """FlashInfer's TRTLLM cubins are available (``flashinfer-cubin`` installed or NVIDIA's
    artifactory reachable at start-up)."""
    backends: dict[str, CustomBackend] = field(default_factory=dict)
    """Out-of-tree backends referenced by name in ``layers``."""
    groups: list[GroupSettings] = field(default_factory=list)
    """Per-group settings for explicitly grouped layers."""
    layers: Annotated[list[LayerSet], MinItems(1)]
    """The model's attention layers, target and draft."""

    def __post_init__(self) -> None:
        facts = versions.facts(self.vllm_version) if self.vllm_version in versions.KNOWN else None
        if facts is None:
            raise DeploymentError(
                f"kvconfig does not plan for vLLM {self.vllm_version}",
                ("vllm_version",),
                f"known: {', '.join(versions.KNOWN)}",
            )
        if not self.layers:
            raise DeploymentError("needs at least one entry", ("layers",), "add one")
        total = sum(s.count for s in self.layers)
        if total > MAX_LAYERS:
            raise DeploymentError(
                f"{total} layers in all; kvconfig plans at most {MAX_LAYERS}",
                ("layers",),
                "check the 'count' of each layer set",
            )
        explicit = [s.group is not None for s in self.layers]
        if any(explicit) and not all(explicit):
            i = explicit.index(False)
            raise DeploymentError(
                "this layer set has no 'group', but others have one",
                ("layers", i),
                "give every layer set a 'group' id, or none",
            )
        self._check_names(facts)
        roles = [s.role for s in self.layers]
        method = speculative.canonical(self.speculative_method, facts.mtp_methods)
        if (
            method is not None
            and method not in speculative.WITHOUT_DRAFT_MODEL
            and "draft" not in roles
        ):
            raise DeploymentError(
                f"speculative method {self.speculative_method!r} needs draft layers",
                ("speculative_method",),
                "add the drafter's layers with 'role: draft'",
            )
        if "draft" in roles and self.speculative_method is None:
            raise DeploymentError(
                "draft layers need a speculative_method",
                ("layers", roles.index("draft"), "role"),
                "set speculative_method: eagle, eagle3, mtp, draft_model, dflash or dspark",
            )
        if "draft" in roles and "target" not in roles:
            raise DeploymentError(
                "draft layers without target layers",
                ("layers",),
                "add the served model's layers; role: target is the default",
            )
        for i, s in enumerate(self.layers):
            if s.kind == "mamba" and (s.state_bytes is None or s.mamba_type is None):
                raise DeploymentError(
                    "mamba layers need state_bytes and mamba_type",
                    ("layers", i, "kind"),
                    "give the mixer's per-rank state size in bytes and its type (mamba2, ...)",
                )
        seen: dict[str, int] = {}
        for i, s in enumerate(self.layers):
            for n in s.names():
                if n in seen:
                    j = seen[n]
                    other = self.layers[j]
                    groups = (
                        f", in group {other.group} there and group {s.group} here"
                        if s.group is not None and other.group != s.group
                        else ""
                    )
                    raise DeploymentError(
                        f"layer {n!r} is also in layers[{j}]{groups}",
                        ("layers", i, "name"),
                        "list each layer once: a layer belongs to one KV-cache group",
                    )
                seen[n] = i
        ids = [g.id for g in self.groups]
        for i, gid in enumerate(ids):
            if gid in ids[:i]:
                raise DeploymentError(
                    f"group id {gid} appears twice",
                    ("groups", i, "id"),
                    "give each group one entry",
                )

    def _check_names(self, facts: versions.Facts) -> None:
        """The names whose valid values are the vLLM release's: the speculative method,
        the ``backend_per_kind`` keys and the KV-cache dtypes."""
        method = self.speculative_method
        if method is not None and method not in facts.speculative_methods:
            raise DeploymentError(
                f"unknown speculative method {method!r} for vLLM {facts.version}",
                ("speculative_method",),
                did_you_mean(method, facts.speculative_methods)
                or "e.g. eagle3, mtp, draft_model, ngram",
            )
        for kind in self.attention.backend_per_kind:
            if kind not in facts.spec_kinds:
                raise DeploymentError(
                    f"unknown KV-cache group kind {kind!r}",
                    ("attention", "backend_per_kind", kind),
                    same_first_word(kind, facts.spec_kinds)
                    or f"use one of {', '.join(facts.spec_kinds)}",
                )
        dtypes: list[tuple[tuple[str | int, ...], str | None, tuple[str, ...]]] = [
            (("kv_cache_dtype",), self.kv_cache_dtype, ()),
            *(
                (("layers", i, "kv_cache_dtype"), s.kv_cache_dtype, BYTE_CACHE_DTYPES)
                for i, s in enumerate(self.layers)
            ),
        ]
        for loc, dtype, extra in dtypes:
            if dtype is not None and dtype not in facts.kv_cache_dtypes and dtype not in extra:
                raise DeploymentError(
                    f"unknown KV-cache dtype {dtype!r} for vLLM {facts.version}",
                    loc,
                    did_you_mean(dtype, facts.kv_cache_dtypes) or "e.g. auto, fp8",
                )


@functools.lru_cache(maxsize=4096)
def expand_names(pattern: str, count: int, first_index: int) -> tuple[str, ...]:
    """``pattern`` with ``{i}`` replaced by first_index .. first_index+count-1; without
    ``{i}``, ``pattern.i`` (just ``pattern`` for a single layer)."""
    if "{i}" not in pattern:
        if count == 1:
            return (pattern,)
        return tuple(f"{pattern}.{i}" for i in range(first_index, first_index + count))
    head, _, tail = pattern.partition("{i}")
    if "{i}" in tail:
        return tuple(pattern.replace("{i}", str(first_index + i)) for i in range(count))
    return tuple(f"{head}{i}{tail}" for i in range(first_index, first_index + count))
