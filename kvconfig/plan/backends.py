"""Step 1 and 2 of a plan: the backend each layer set gets, and what it declares.

The request follows vLLM's configuration plumbing: ``attention-config.backend_per_kind``
for the layer's kind (``v1/attention/selector.py:get_attn_spec_kind``), else
``--attention-backend``; drafters inherit it or not depending on the runner and the
method (``SpeculativeConfig.apply_draft_overrides``,
``llm_base_proposer._create_draft_vllm_config``). The choice itself is
``kvconfig.mirror.selection``; the declared sizes come from the catalog.
"""

from __future__ import annotations

import operator

from kvconfig.mirror.impls import impl_refusal
from kvconfig.mirror.selection import MAMBA_BACKENDS, Selection, model_backend
from kvconfig.mirror.specs import MLA_KINDS, per_rank
from kvconfig.plan import findings as F
from kvconfig.plan.assemble import canonical_cache_dtype
from kvconfig.plan.context import Choice, PlanContext
from kvconfig.plan.result import LayerInfo
from kvconfig.schemas.deployment import LayerSet
from kvconfig.schemas.sizes import MultipleOf

#: kvconfig layer kinds -> vLLM's ``get_attn_spec_kind`` (the keys of ``backend_per_kind``).
VLLM_KIND = {"sparse_mla": "mla_attention", "chunked_local": "full_attention"}
"""Layer kinds that ``selector.get_attn_spec_kind`` reports as another kind when it looks up
``attention-config.backend_per_kind`` (it sees only MLA, sliding window and attention type)."""

_NAMING = frozenset({"name", "count", "first_index", "group"})
_layer_key = operator.attrgetter(*(f for f in LayerSet.__slots__ if f not in _NAMING))
"""Everything about a layer set but its names and group: what selection depends on."""


def requested_backend(ctx: PlanContext, layer: LayerSet) -> tuple[str | None, str]:
    """The backend a layer asks vLLM for, and where the request comes from."""
    s = ctx.deployment
    if layer.backend is not None:
        return layer.backend, "deployment file"
    att = s.attention
    kind = VLLM_KIND.get(layer.kind, layer.kind)
    per_kind = att.backend_per_kind.get(kind)
    target_choice: tuple[str | None, str] = (
        (per_kind, f"attention-config.backend_per_kind.{kind}")
        if per_kind
        else (att.backend, "--attention-backend")
        if att.backend
        else (None, "automatic")
    )
    if layer.role == "target":
        return target_choice
    method = s.speculative_method
    if method == "draft_model" and s.runner == "v2":
        return target_choice[0], (
            "the target's attention config (V2 standalone draft models ignore "
            "speculative-config.attention_backend)"
        )
    if s.draft_attention_backend:
        return s.draft_attention_backend, "speculative-config.attention_backend"
    if s.runner == "v1" or method in ("dflash", "dspark"):
        if per_kind:
            return per_kind, f"attention-config.backend_per_kind.{kind}"
        return None, "automatic (the drafter does not inherit the target's backend here)"
    if target_choice[0] is None:
        return None, "automatic"
    return target_choice[0], f"{target_choice[1]} (inherited by the drafter)"


def choose_backends(ctx: PlanContext) -> list[LayerInfo]:
    """Every layer set with its backend and declared sizes; refusals become findings.

    Layer sets that differ only in their names and group (a model repeats its layers)
    are chosen for once, and so is a layer set every plan with the same engine setting,
    request and block size shares (``PlanContext.setting``).
    """
    s = ctx.deployment
    tp = s.tensor_parallel_size
    # the deployment's own backends make a choice this deployment's alone
    choices = ctx.setting.choices if not ctx.custom else {}
    infos: list[LayerInfo] = []
    refused: dict[tuple[str, int], tuple[Selection, list[LayerSet]]] = {}
    for layer in s.layers:
        kv_dtype = layer.kv_cache_dtype or s.kv_cache_dtype
        q = per_rank(layer.num_heads, tp)
        requested = requested_backend(ctx, layer)
        key = (_layer_key(layer), kv_dtype, q, requested, s.block_size)
        choice = choices.get(key)
        if choice is None:
            choice = choices[key] = _declared(ctx, layer, kv_dtype, q, requested)
        sel, path, entry, sizes, cache, attention_key, spec_sizes = choice
        if sel.backend is None:
            refused.setdefault((layer.role, id(sel)), (sel, []))[1].append(layer)
        infos.append(
            LayerInfo(
                layer, sel, entry, sel.backend, path, sizes, q, cache, attention_key, spec_sizes
            )
        )
    for sel, layers in refused.values():
        ctx.findings.append(F.backend_refused(layers, sel, ctx.platform))
    return infos


def _declared(
    ctx: PlanContext, layer: LayerSet, kv_dtype: str, q: int, requested: tuple[str | None, str]
) -> Choice:
    """The backend of a distinct layer set and what it declares for it."""
    sel, path = _choose(ctx, layer, kv_dtype, q, requested)
    if sel.backend is None:
        return sel, path, None, (), kv_dtype, (), ()
    if sel.backend in ctx.custom:
        own = ctx.custom[sel.backend]
        return (
            sel,
            path,
            None,
            own,
            kv_dtype,
            (path, *_spec(layer, kv_dtype, ctx.deployment.tensor_parallel_size), q),
            own,
        )
    entry = ctx.catalog.by_class.get(path)
    name = entry.name if entry is not None else sel.backend
    refusal = impl_refusal(name, kv_dtype, ctx.platform, ctx.deployment.model_facts)
    if refusal is not None:
        return (
            Selection(None, sel.reason, error=refusal, rejected=((name, (refusal,)),)),
            path,
            None,
            (),
            kv_dtype,
            (),
            (),
        )
    cache = canonical_cache_dtype(layer, name, ctx.deployment, ctx.platform.major)
    key = (path, *_spec(layer, cache, ctx.deployment.tensor_parallel_size), q)
    if entry is None:
        return sel, path, None, (MultipleOf(1),), cache, key, (MultipleOf(1),)
    sizes = ctx.sizes(entry, layer, cache)
    return sel, path, entry, sizes, cache, key, ctx.spec_sizes(entry, layer, cache)


def _spec(layer: LayerSet, cache_dtype: str, tp: int) -> tuple[object, ...]:
    """What makes two layers' KV-cache specs equal: the spec holds the KV heads of one
    rank, so layers whose heads differ but replicate to the same per-rank count match."""
    l = layer
    return (
        l.kind,
        l.num_kv_heads if l.kind in MLA_KINDS else per_rank(l.num_kv_heads, tp),
        l.head_size,
        l.head_size_v,
        l.dtype,
        cache_dtype,
        l.sliding_window,
        l.tokens_per_state,
        l.state_bytes,
    )


def _choose(
    ctx: PlanContext,
    layer: LayerSet,
    kv_dtype: str,
    heads: int,
    requested_from: tuple[str | None, str],
) -> tuple[Selection, str]:
    """The layer's backend selection and the backend class it resolves to."""
    s = ctx.deployment
    if layer.kind == "mamba":
        path = MAMBA_BACKENDS.get(layer.mamba_type or "", "")
        entry = ctx.catalog.by_class.get(path)
        name = entry.name if entry is not None else (layer.mamba_type or "mamba").upper()
        return Selection(name, "the Mamba mixer's own backend"), path
    requested, source = requested_from
    if requested is not None and requested in ctx.custom:
        return Selection(requested, source), requested
    own = model_backend(layer.backend, ctx.machine, kv_dtype) if layer.backend else None
    if own is not None:
        return own, own.backend or ""
    request = ctx.request(layer, kv_dtype, heads)
    if requested is None:
        sel = ctx.select(None, request, source)
        return sel, ctx.catalog.registry.get(sel.backend or "", sel.backend or "")
    registry = ctx.catalog.registry
    enum_path = registry.get(requested.strip().upper())
    if enum_path is not None and enum_path not in ctx.catalog.by_class:
        # vLLM imports the class to validate it: ImportError, "Selected backend ... is not valid"
        why = f"vLLM names it, but its class {enum_path} is not in this vLLM (ImportError)"
        refused = Selection(None, source, error=why, rejected=((requested.upper(), (why,)),))
        return refused, enum_path
    found = ctx.catalog.lookup(requested, source=s.source, key=source.split(" ")[0])
    if enum_path is not None:
        name = requested.strip().upper()
    elif found.name in registry:
        name = found.name  # a class path of a backend vLLM's selector can name
    else:
        # a class no AttentionBackendEnum name selects: the model wires it itself
        # (DeepseekV32IndexerCache), and vLLM validates nothing
        return Selection(found.name, source), found.class_path
    return ctx.select(name, request, source), found.class_path
