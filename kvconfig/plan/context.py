"""What every step of one plan shares: the deployment, the platform, the catalog, the
platform facts the backends' checks read, and what is computed once per plan.

A model repeats the same layer many times; backend selection, size rules and size
contexts are computed once per distinct layer and looked up afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kvconfig.errors import InputError
from kvconfig.mirror.catalog import CatalogData, Entry, SizeContext, load_catalog, size_context
from kvconfig.mirror.platform import PlatformId, is_quantized
from kvconfig.mirror.selection import Selection, select
from kvconfig.mirror.specs import MLA_KINDS, per_rank
from kvconfig.mirror.traits import Machine, Request
from kvconfig.plan.result import Found
from schemas.deployment import Deployment, LayerSet
from schemas.sizes import KernelSize


@dataclass
class PlanContext:
    """Deployment-wide facts shared by every step of one plan."""

    deployment: Deployment
    platform: PlatformId
    catalog: CatalogData
    machine: Machine
    target_heads: tuple[int, int]
    """The target model's per-rank (query, KV) heads: FlashInfer reads them from the
    current vLLM config even for draft layers."""
    custom: Mapping[str, tuple[KernelSize, ...]]
    """The sizes of the deployment's own (out-of-tree) backends, by name."""
    findings: list[Found] = field(default_factory=list)
    selections: dict[tuple[object, ...], Selection] = field(default_factory=dict)
    """Backend selections already made in this plan: a model repeats the same layer."""
    declared: dict[tuple[object, ...], tuple[KernelSize, ...]] = field(default_factory=dict)
    """Sizes already evaluated, per backend class and layer geometry."""
    contexts: dict[tuple[object, ...], SizeContext] = field(default_factory=dict)
    """Size contexts already derived, per layer geometry and cache dtype."""

    def select(self, requested: str | None, request: Request, source: str) -> Selection:
        """``kvconfig.mirror.selection.select``, computed once per distinct request."""
        key = (requested, request, source)
        hit = self.selections.get(key)
        if hit is None:
            hit = self.selections[key] = select(requested, request, self.machine, source)
        return hit

    def sizes(self, entry: Entry, layer: LayerSet, cache: str) -> tuple[KernelSize, ...]:
        """A catalog entry's sizes for a layer, computed once per distinct geometry."""
        key = (
            entry.class_path,
            cache,
            layer.head_size,
            layer.head_size_v,
            layer.tokens_per_state,
            layer.kind,
        )
        hit = self.declared.get(key)
        if hit is None:
            hit = self.declared[key] = entry.sizes(self.size_context(layer, cache))
        return hit

    def size_context(self, layer: LayerSet, kv_dtype: str) -> SizeContext:
        """The facts the layer's backend reads when it declares its sizes."""
        key = (kv_dtype, layer.head_size, layer.head_size_v, layer.tokens_per_state)
        hit = self.contexts.get(key)
        if hit is None:
            hit = self.contexts[key] = layer_context(
                self.deployment, self.platform, self.machine, layer, kv_dtype, self.target_heads
            )
        return hit

    def declared_without_spec(self, name: str) -> tuple[KernelSize, ...]:
        """A backend's sizes asked without a spec (``block_size`` checks read these)."""
        if name in self.custom:
            return self.custom[name]
        return self.machine.declared_without_spec(name)

    def request(self, layer: LayerSet, kv_dtype: str, heads: int) -> Request:
        """What the layer asks of its backend (vLLM's ``AttentionSelectorConfig``)."""
        return Request(
            head_size=layer.head_size,
            dtype=layer.dtype,
            kv_cache_dtype=kv_dtype,
            block_size=self.deployment.block_size,
            use_mla=layer.kind in MLA_KINDS,
            use_sparse=layer.kind == "sparse_mla",
            has_sink=layer.has_sink,
            has_sliding_window=layer.kind in ("sliding_window", "sliding_window_mla"),
            use_non_causal=layer.non_causal,
            use_mm_prefix=layer.mm_prefix,
            num_heads=heads,
        )


def new_context(dep: Deployment, platform: PlatformId) -> PlanContext:
    """The context of one plan: the catalog of the deployment's vLLM and the machine."""
    catalog = load_catalog(dep.vllm_version)
    batch_invariant = env_flag(dep, "VLLM_BATCH_INVARIANT")
    machine = Machine(
        vendor=platform.vendor,
        capability=platform.capability,
        batch_invariant=batch_invariant,
        use_trtllm_attention=dep.attention.use_trtllm_attention,
        cubins=dep.trtllm_cubins,
        flash_attn_version=dep.attention.flash_attn_version,
        quantized_cache=is_quantized(dep.kv_cache_dtype),
        facts=dep.model_facts,
        catalog=catalog,
    )
    heads = model_heads(dep)
    target = layer_context(dep, platform, machine, model_layer(dep), dep.kv_cache_dtype, heads)
    machine = replace(machine, target=target)
    custom = {name: tuple(b.sizes) for name, b in dep.backends.items()}
    return PlanContext(dep, platform, catalog, machine, heads, custom)


def model_layer(dep: Deployment) -> LayerSet:
    """The target's first attention layer: what ``model_config`` says about attention."""
    targets = [l for l in dep.layers if l.role == "target"]
    attention = ("full_attention", "sliding_window", *MLA_KINDS)
    return next((l for l in targets if l.kind in attention), targets[0])


def model_heads(dep: Deployment) -> tuple[int, int]:
    """The target model's per-rank (query, KV) heads (``get_num_attention_heads``,
    ``get_num_kv_heads``); MLA models have one KV head."""
    layer = model_layer(dep)
    q = per_rank(layer.num_heads, dep.tensor_parallel_size)
    kv = 1 if layer.kind in MLA_KINDS else per_rank(layer.num_kv_heads, dep.tensor_parallel_size)
    return q, kv


def layer_context(  # noqa: PLR0917 (the facts, in the order vLLM reads them)
    dep: Deployment,
    platform: PlatformId,
    m: Machine,
    layer: LayerSet,
    kv_dtype: str,
    target_heads: tuple[int, int],
) -> SizeContext:
    """The facts a layer's backend reads when it declares its sizes."""
    return size_context(
        vendor=platform.vendor,
        capability=platform.capability,
        layer_cache_dtype=kv_dtype,
        model_cache_dtype=dep.kv_cache_dtype,
        head_size=layer.head_size,
        head_size_v=layer.head_size_v,
        target_heads=target_heads,
        use_trtllm_attention=dep.attention.use_trtllm_attention,
        cubins=dep.trtllm_cubins,
        batch_invariant=m.batch_invariant,
        flash_attn_version=dep.attention.flash_attn_version,
        tokens_per_state=layer.tokens_per_state,
        softcap=bool(dep.model_facts.get("attn_logit_softcapping")),
    )


def env_flag(dep: Deployment, name: str) -> bool:
    """An integer flag of the vLLM environment, read as vLLM reads it (``int()``)."""
    value = dep.env.get(name)
    if value is None:
        return False
    try:
        return bool(int(value))
    except ValueError as err:
        raise InputError(
            f"{name}={value!r} is not an integer", key="--env", hint=f"use {name}=0 or {name}=1"
        ) from err
