"""What every step of one plan shares: the deployment, the platform, the catalog, the
platform facts the backends' checks read, and what is computed once per engine setting.

A model repeats the same layer many times, and a fleet's deployments share their engine
setting (``Setting``): backend choices, size rules and size contexts are computed once
per distinct layer set and setting, and looked up afterwards.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from kvconfig.errors import InputError
from kvconfig.mirror import speculative, versions
from kvconfig.mirror.catalog import CatalogData, Entry, SizeContext, load_catalog, size_context
from kvconfig.mirror.platform import PlatformId, is_quantized
from kvconfig.mirror.selection import Selection, select
from kvconfig.mirror.specs import MLA_KINDS, per_rank
from kvconfig.mirror.traits import Machine, Request
from kvconfig.plan.result import Found
from kvconfig.schemas.deployment import Deployment, LayerSet
from kvconfig.schemas.sizes import KernelSize

Choice = tuple[
    Selection, str, "Entry | None", tuple[KernelSize, ...], str, tuple[object, ...],
    tuple[KernelSize, ...],
]  # fmt: skip
"""A layer set's backend selection, backend class, catalog entry, declared sizes, cache
dtype and attention-group key (vLLM's ``AttentionGroup`` key: class, spec, heads)."""


@dataclass
class Setting:
    """What every deployment planned with the same engine setting shares: the catalog, the
    machine facts the backends' checks read, and what they gave already.

    The setting is the vLLM release, the platform, the options every size rule and check
    reads (``--kv-cache-dtype``, ``use_trtllm_attention``, ``flash_attn_version``, batch
    invariance, the TRTLLM cubins) and the target model's attention (its per-rank heads,
    its first attention layer's geometry, the ``config.json`` facts MLA backends check).
    Selection and size rules are pure functions of the setting and the layer, so their
    answers are kept here and reused by every plan with this setting.
    """

    catalog: CatalogData
    machine: Machine
    target_heads: tuple[int, int]
    """The target model's per-rank (query, KV) heads: FlashInfer reads them from the
    current vLLM config even for draft layers."""
    selections: dict[tuple[object, ...], Selection] = field(default_factory=dict)
    """Backend selections made with this setting, per request."""
    declared: dict[tuple[object, ...], tuple[KernelSize, ...]] = field(default_factory=dict)
    """Sizes evaluated with this setting, per backend class and layer geometry."""
    contexts: dict[tuple[object, ...], SizeContext] = field(default_factory=dict)
    """Size contexts derived with this setting, per layer geometry and cache dtype."""
    choices: dict[tuple[object, ...], Choice] = field(default_factory=dict)
    """``kvconfig.plan.backends``' choices for layer sets, per layer set, request and
    block size."""


@dataclass
class PlanContext:
    """Deployment-wide facts shared by every step of one plan."""

    deployment: Deployment
    platform: PlatformId
    setting: Setting
    custom: Mapping[str, tuple[KernelSize, ...]]
    """The sizes of the deployment's own (out-of-tree) backends, by name."""
    drafting: bool
    """The speculator sets up attention of its own (``DraftModelSpeculator.set_attn``)."""
    findings: list[Found] = field(default_factory=list)

    @property
    def catalog(self) -> CatalogData:
        """The catalog of the deployment's vLLM."""
        return self.setting.catalog

    @property
    def machine(self) -> Machine:
        """The platform facts the backends' checks read."""
        return self.setting.machine

    def select(self, requested: str | None, request: Request, source: str) -> Selection:
        """``kvconfig.mirror.selection.select``, computed once per distinct request."""
        key = (requested, request, source)
        hit = self.setting.selections.get(key)
        if hit is None:
            hit = select(requested, request, self.setting.machine, source)
            self.setting.selections[key] = hit
        return hit

    def sizes(self, entry: Entry, layer: LayerSet, cache: str) -> tuple[KernelSize, ...]:
        """A catalog entry's sizes for a layer, computed once per distinct geometry (the
        target model's, for a release whose vote asks without a spec)."""
        if not self.machine.rules.vote_with_specs:
            key_without = ("without spec", entry.class_path)
            hit = self.setting.declared.get(key_without)
            if hit is None:
                model = model_layer(self.deployment)
                kv = self.deployment.kv_cache_dtype
                geometry = (model.head_size, None, 1)
                context = layer_context(self.machine, kv, kv, geometry, self.target_heads)
                hit = self.setting.declared[key_without] = entry.sizes(context)
            return hit
        key = (
            entry.class_path,
            cache,
            layer.head_size,
            layer.head_size_v,
            layer.tokens_per_state,
            layer.kind,
        )
        hit = self.setting.declared.get(key)
        if hit is None:
            hit = self.setting.declared[key] = entry.sizes(self.size_context(layer, cache))
        return hit

    def spec_sizes(self, entry: Entry, layer: LayerSet, cache: str) -> tuple[KernelSize, ...]:
        """A catalog entry's sizes for a layer when no vLLM config is current (spec time)."""
        key = ("spec time", entry.class_path, cache, layer.head_size, layer.head_size_v,
               layer.tokens_per_state, layer.kind)  # fmt: skip
        hit = self.setting.declared.get(key)
        if hit is None:
            geometry = (layer.head_size, layer.head_size_v, layer.tokens_per_state)
            if not self.machine.rules.backends_take_specs:
                geometry = (0, None, layer.tokens_per_state)  # neither layer nor model known
            context = layer_context(self.machine, "auto", cache, geometry, (0, 0), config=False)
            hit = self.setting.declared[key] = entry.sizes(context)
        return hit

    def size_context(self, layer: LayerSet, kv_dtype: str) -> SizeContext:
        """The facts the layer's backend reads when it declares its sizes."""
        geometry = (layer.head_size, layer.head_size_v, layer.tokens_per_state)
        key = (kv_dtype, *geometry)
        hit = self.setting.contexts.get(key)
        if hit is None:
            hit = self.setting.contexts[key] = layer_context(
                self.machine, self.deployment.kv_cache_dtype, kv_dtype, geometry, self.target_heads
            )
        return hit

    @property
    def target_heads(self) -> tuple[int, int]:
        """The target model's per-rank (query, KV) heads."""
        return self.setting.target_heads

    def declared_without_spec(self, name: str) -> tuple[KernelSize, ...]:
        """A backend's sizes asked without a spec (``block_size`` checks read these)."""
        if name in self.custom:
            return self.custom[name]
        return self.setting.machine.declared_without_spec(name)

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
    """The context of one plan: the setting it is planned with, and the deployment."""
    layer = model_layer(dep)
    heads = model_heads(dep)
    setting = _setting(
        dep.vllm_version,
        platform,
        env_flag(dep, "VLLM_BATCH_INVARIANT"),
        dep.attention.use_trtllm_attention,
        dep.trtllm_cubins,
        dep.attention.flash_attn_version,
        dep.kv_cache_dtype,
        tuple(sorted(dep.model_facts.items())),
        heads,
        (layer.head_size, layer.head_size_v, layer.tokens_per_state),
    )
    custom = {name: tuple(b.sizes) for name, b in dep.backends.items()}
    method = speculative.canonical(
        dep.speculative_method, versions.facts(dep.vllm_version).mtp_methods
    )
    drafting = method in speculative.DRAFTS_WITH_ATTENTION
    return PlanContext(dep, platform, setting, custom, drafting)


@functools.lru_cache(maxsize=128)
def _setting(  # noqa: PLR0917 (the setting's key, one argument per fact)
    vllm_version: str,
    platform: PlatformId,
    batch_invariant: bool,
    use_trtllm_attention: bool | None,
    cubins: bool,
    flash_attn_version: int | None,
    kv_cache_dtype: str,
    model_facts: tuple[tuple[str, int], ...],
    heads: tuple[int, int],
    geometry: tuple[int, int | None, int],
) -> Setting:
    catalog = load_catalog(vllm_version)
    machine = Machine(
        vendor=platform.vendor,
        capability=platform.capability,
        batch_invariant=batch_invariant,
        use_trtllm_attention=use_trtllm_attention,
        cubins=cubins,
        flash_attn_version=flash_attn_version,
        quantized_cache=is_quantized(kv_cache_dtype, vllm_version),
        facts=dict(model_facts),
        catalog=catalog,
    )
    target = layer_context(machine, kv_cache_dtype, kv_cache_dtype, geometry, heads)
    machine = machine._replace(target=target)
    return Setting(catalog, machine, heads)


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


def layer_context(
    m: Machine,
    model_cache_dtype: str,
    layer_cache_dtype: str,
    geometry: tuple[int, int | None, int],
    target_heads: tuple[int, int],
    *,
    config: bool = True,
) -> SizeContext:
    """The facts a layer's backend reads when it declares its sizes: the platform's, the
    layer's geometry (head size, value head size, tokens per state) and cache dtype.

    ``config=False``: what it reads when no vLLM config is current (no model, cache or
    attention config: no forced FlashAttention version, no softcapping fallback)."""
    head_size, head_size_v, tokens_per_state = geometry
    return size_context(
        vendor=m.vendor,
        capability=m.capability,
        layer_cache_dtype=layer_cache_dtype,
        model_cache_dtype=model_cache_dtype,
        head_size=head_size,
        head_size_v=head_size_v,
        target_heads=target_heads,
        use_trtllm_attention=m.use_trtllm_attention if config else None,
        cubins=m.cubins,
        batch_invariant=m.batch_invariant,
        flash_attn_version=m.flash_attn_version if config else None,
        tokens_per_state=tokens_per_state,
        softcap=config and bool(m.facts.get("attn_logit_softcapping")),
        release=m.release,
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
