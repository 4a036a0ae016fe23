"""From a deployment to its plan: backends per layer, KV-cache groups, B, k, and findings.

The steps follow vLLM's start-up order (reference: docs/how-the-plan-is-computed.md):

1. each layer picks its backend (``_select``);
2. each backend declares its kernel-page sizes for the layer (the catalog);
3. the manager block size B is the user's ``--block-size`` or vLLM's default for the backends;
4. layers form KV-cache groups (``_groups``);
5. per group, the model runner votes over every layer, target and draft
   (``prepare_kernel_block_sizes``); the Model Runner V2 speculator votes again over
   the draft layers alone; a V1 drafter narrows the runner's value per backend;
6. disagreements and failures become findings.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from kvconfig.derive.common import per_rank
from kvconfig.errors import (
    AlignedBlockSizeUnsupported,
    GroupingError,
    InputError,
    NoCommonBlockSize,
    NoCommonKernelBlockSize,
)
from kvconfig.mirror import block_size as _blocksize
from kvconfig.mirror.catalog import CatalogData, Entry, SizeContext, load_catalog, size_context
from kvconfig.mirror.platform import is_quantized, trtllm_usable
from kvconfig.mirror.selection import (
    MAMBA_BACKENDS,
    Machine,
    Request,
    Selection,
    model_backend,
    select,
)
from kvconfig.mirror.vote import Declared, select_common
from kvconfig.plan import findings as F
from kvconfig.plan.groups import (
    MLA_KINDS,
    BlockPlan,
    Group,
    LayerInfo,
    canonical_cache_dtype,
    make_groups,
)
from kvconfig.plan.setup import LayerSet, Setup
from schemas.sizes import KernelSize, MultipleOf, accepts

DEFAULT_BLOCK_SIZE = _blocksize.DEFAULT_BLOCK_SIZE
"""``CacheConfig.DEFAULT_BLOCK_SIZE``."""

#: kvconfig layer kinds -> vLLM's ``get_attn_spec_kind`` (the keys of ``backend_per_kind``).
VLLM_KIND = {"sparse_mla": "mla_attention", "chunked_local": "full_attention"}
"""Layer kinds that ``selector.get_attn_spec_kind`` reports as another kind when it looks up
``attention-config.backend_per_kind`` (it sees only MLA, sliding window and attention type)."""

#: Speculators that go through Model Runner V2's ``DraftModelSpeculator.set_attn``.
DRAFTING_METHODS = frozenset({"eagle", "eagle3", "mtp", "draft_model", "dflash", "dspark"})


@dataclass(frozen=True, slots=True)
class Voter:
    """One attention group of a KV-cache group (vLLM's ``AttentionGroup``)."""

    name: str
    class_path: str
    sizes: tuple[KernelSize, ...]
    roles: frozenset[str]
    layers: tuple[str, ...]
    narrowed: int | None = None

    @property
    def declared(self) -> Declared:
        """The voter as the vote sees it."""
        return (self.name, self.sizes)

    @property
    def role(self) -> str:
        """target, draft or mixed."""
        return next(iter(self.roles)) if len(self.roles) == 1 else "mixed"


@dataclass(frozen=True, slots=True)
class GroupResult:
    """The plan of one KV-cache group."""

    id: int
    kind: str
    block_size: int
    block_size_reason: str
    kernel_block_size: int | None
    packed: bool
    target_layers: tuple[str, ...]
    draft_layers: tuple[str, ...]
    voters: tuple[Voter, ...]
    runner: int | None
    speculator: int | None

    @property
    def split(self) -> int | None:
        """B/k, or None without k."""
        k = self.kernel_block_size
        return None if k is None else self.block_size // k

    def to_json(self) -> dict[str, object]:
        """The group in the documented JSON shape."""
        return {
            "id": self.id,
            "kind": self.kind,
            "block_size": self.block_size,
            "block_size_reason": self.block_size_reason,
            "kernel_block_size": self.kernel_block_size,
            "split": self.split,
            "packed": self.packed,
            "layers": {"target": list(self.target_layers), "draft": list(self.draft_layers)},
            "backends": [
                {
                    "name": v.name,
                    "class": v.class_path,
                    "sizes": [
                        s if isinstance(s, int) else {"multiple_of": s.multiple_of} for s in v.sizes
                    ],
                    "role": v.role,
                    "layers": list(v.layers),
                    "kernel_block_size": v.narrowed,
                }
                for v in self.voters
            ],
            "components": {"runner": self.runner, "speculator": self.speculator},
        }


@dataclass(frozen=True, slots=True)
class PlanResult:
    """The plan of one deployment on one platform."""

    setup: Setup
    groups: tuple[GroupResult, ...]
    findings: tuple[F.Found, ...]
    layers: tuple[LayerInfo, ...] = ()

    @property
    def verdict(self) -> str:
        """``reject`` when any finding is an error."""
        return "reject" if any(f.severity == "error" for f in self.findings) else "ok"

    def to_json(self) -> dict[str, object]:
        """The plan in the documented, stable JSON shape (docs/json.md)."""
        p = self.setup.platform
        assert p is not None
        return {
            "verdict": self.verdict,
            "vllm_version": self.setup.vllm_version,
            "platform": {"name": p.name, "vendor": p.vendor, "capability": p.capability_text()},
            "source": self.setup.source,
            "runner": self.setup.runner,
            "hooks": self.setup.hooks,
            "speculative_method": self.setup.speculative_method,
            "groups": [g.to_json() for g in self.groups],
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass
class _Ctx:
    """Deployment-wide facts shared by every step."""

    setup: Setup
    catalog: CatalogData
    machine: Machine
    target_heads: tuple[int, int]
    gqa: bool
    trtllm: bool
    findings: list[F.Found] = field(default_factory=list)
    hybrid: bool = False
    selections: dict[tuple[object, ...], Selection] = field(default_factory=dict)
    """Backend selections already made in this plan: a model repeats the same layer."""
    choices: dict[tuple[object, ...], tuple[Selection, str]] = field(default_factory=dict)
    """Per distinct layer (names aside): its selection and backend class."""
    declared: dict[tuple[object, ...], tuple[KernelSize, ...]] = field(default_factory=dict)
    """Sizes already evaluated, per backend class and layer geometry (and without a spec)."""
    target: SizeContext | None = None
    """What backends read when asked without a spec (the target model's config)."""
    contexts: dict[tuple[object, ...], SizeContext] = field(default_factory=dict)
    """Size contexts already derived, per layer geometry and cache dtype."""

    def select(self, requested: str | None, request: Request, source: str) -> Selection:
        """``_select.select``, computed once per distinct request."""
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
            hit = self.declared[key] = entry.sizes(_size_context(self, layer, cache))
        return hit


def _per_rank(layer: LayerSet, tp: int) -> tuple[int, int]:
    q = per_rank(layer.num_heads, tp)
    kv = 1 if layer.kind in MLA_KINDS else per_rank(layer.num_kv_heads, tp)
    return q, kv


def _requested_backend(s: Setup, layer: LayerSet) -> tuple[str | None, str]:
    """The backend a layer asks vLLM for, and where the request comes from."""
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


def _request(s: Setup, layer: LayerSet, kv_dtype: str, heads: int) -> Request:
    """What the layer asks of its backend (vLLM's selector config)."""
    return Request(
        head_size=layer.head_size,
        dtype=layer.dtype,
        kv_cache_dtype=kv_dtype,
        block_size=s.block_size,
        use_mla=layer.kind in MLA_KINDS,
        use_sparse=layer.kind == "sparse_mla",
        has_sink=layer.has_sink,
        has_sliding_window=layer.kind in ("sliding_window", "sliding_window_mla"),
        use_non_causal=layer.non_causal,
        num_heads=heads,
    )


def _size_context(ctx: _Ctx, layer: LayerSet, kv_dtype: str) -> SizeContext:
    """The facts the layer's backend reads when it declares its sizes (once per geometry)."""
    key = (kv_dtype, layer.head_size, layer.head_size_v, layer.tokens_per_state)
    hit = ctx.contexts.get(key)
    if hit is None:
        hit = ctx.contexts[key] = _new_size_context(ctx, layer, kv_dtype)
    return hit


def _new_size_context(ctx: _Ctx, layer: LayerSet, kv_dtype: str) -> SizeContext:
    s = ctx.setup
    p = s.platform
    assert p is not None
    return size_context(
        vendor=p.vendor,
        capability=p.capability,
        layer_cache_dtype=kv_dtype,
        model_cache_dtype=s.kv_cache_dtype,
        head_size=layer.head_size,
        head_size_v=layer.head_size_v,
        target_heads=ctx.target_heads,
        use_trtllm_attention=s.attention.use_trtllm_attention,
        cubins=s.trtllm_cubins,
        batch_invariant=ctx.machine.batch_invariant,
        flash_attn_version=s.attention.flash_attn_version,
        tokens_per_state=layer.tokens_per_state,
        softcap=bool(s.model_facts.get("attn_logit_softcapping")),
    )


def _model_layer(s: Setup) -> LayerSet:
    """The target's first attention layer: what ``model_config`` says about attention."""
    targets = [l for l in s.layers if l.role == "target"]
    attention = ("full_attention", "sliding_window", *MLA_KINDS)
    return next((l for l in targets if l.kind in attention), targets[0])


def _target_context(ctx: _Ctx) -> SizeContext:
    """What a backend sees when asked for sizes without a spec (it reads the target config)."""
    if ctx.target is None:
        ctx.target = _size_context(ctx, _model_layer(ctx.setup), ctx.setup.kv_cache_dtype)
    return ctx.target


def _nospec_sizes(ctx: _Ctx, name: str) -> tuple[KernelSize, ...]:
    """A backend's sizes asked without a spec: it reads the target model's config."""
    key: tuple[object, ...] = ("no spec", name)
    hit = ctx.declared.get(key)
    if hit is None:
        hit = ctx.declared[key] = _nospec_sizes_uncached(ctx, name)
    return hit


def _nospec_sizes_uncached(ctx: _Ctx, name: str) -> tuple[KernelSize, ...]:
    if name in ctx.setup.backends:
        return ctx.setup.backends[name][1]
    path = ctx.catalog.registry.get(name, name)
    entry = ctx.catalog.by_class.get(path)
    if entry is None:
        return (MultipleOf(1),)
    return entry.sizes(_target_context(ctx))


def _machine(s: Setup) -> Machine:
    p = s.platform
    assert p is not None
    return Machine(
        vendor=p.vendor,
        capability=p.capability,
        batch_invariant=_env_flag(s, "VLLM_BATCH_INVARIANT"),
        use_trtllm_attention=s.attention.use_trtllm_attention,
        cubins=s.trtllm_cubins,
        flash_attn_version=s.attention.flash_attn_version,
        quantized_cache=is_quantized(s.kv_cache_dtype),
        facts=s.model_facts,
    )


def _env_flag(s: Setup, name: str) -> bool:
    value = s.env.get(name)
    if value is None:
        return False
    try:
        return bool(int(value))
    except ValueError as err:
        raise InputError(
            f"{name}={value!r} is not an integer", key="--env", hint=f"use {name}=0 or {name}=1"
        ) from err


def resolve_setup(s: Setup) -> PlanResult:
    """Plan a deployment: every group's B and k, each component's value, and findings."""
    if s.platform is None:
        raise InputError(
            "no platform given",
            source=s.source,
            key="--platform",
            hint="pass --platform (e.g. --platform h200) or set 'platform' in the file",
        )
    catalog = load_catalog(s.vllm_version)
    q, kv = _per_rank(_model_layer(s), s.tensor_parallel_size)
    machine = _machine(s)
    ctx = _Ctx(
        setup=s,
        catalog=catalog,
        machine=machine,
        target_heads=(q, kv),
        gqa=kv > 0 and q // kv > 1,
        trtllm=trtllm_usable(
            capability=s.platform.capability,
            num_heads=q,
            num_kv_heads=kv,
            use_trtllm_attention=s.attention.use_trtllm_attention,
            cubins=s.trtllm_cubins,
            batch_invariant=machine.batch_invariant,
        ),
    )
    ctx.machine = replace(machine, block_sizes_nospec=lambda n: _nospec_sizes(ctx, n))
    layers = _select_backends(ctx)
    return _plan(ctx, layers)


def _select_backends(ctx: _Ctx) -> list[LayerInfo]:
    s = ctx.setup
    infos: list[LayerInfo] = []
    refused: dict[tuple[str, int], tuple[Selection, list[LayerSet]]] = {}
    for index, layer in enumerate(s.layers):
        kv_dtype = layer.kv_cache_dtype or s.kv_cache_dtype
        q, _ = _per_rank(layer, s.tensor_parallel_size)
        key = (_layer_key(layer), kv_dtype, q)
        chosen = ctx.choices.get(key)
        if chosen is None:
            chosen = ctx.choices[key] = _choose(ctx, layer, kv_dtype, q)
        sel, path = chosen
        entry: Entry | None = None
        sizes: tuple[KernelSize, ...] = ()
        cache = kv_dtype
        if sel.backend is None:
            refused.setdefault((layer.role, id(sel)), (sel, []))[1].append(layer)
        elif sel.backend in s.backends:
            sizes = s.backends[sel.backend][1]
        else:
            entry = ctx.catalog.by_class.get(path)
            name = entry.name if entry is not None else sel.backend
            cache = canonical_cache_dtype(layer, name, s)
            sizes = ctx.sizes(entry, layer, cache) if entry else (MultipleOf(1),)
        infos.append(
            LayerInfo(
                index=index,
                layer=layer,
                selection=sel,
                entry=entry,
                backend_name=sel.backend,
                class_path=path,
                sizes=sizes,
                heads_per_rank=q,
                cache_dtype=cache,
            )
        )
    for sel, layers in refused.values():
        ctx.findings.append(F.backend_refused(layers, sel, s))
    return infos


_NAMING = frozenset({"name", "count", "first_index", "group"})
_layer_key = operator.attrgetter(*(f for f in LayerSet.__slots__ if f not in _NAMING))
"""Everything about a layer set but its names and group: what selection depends on."""


def _choose(ctx: _Ctx, layer: LayerSet, kv_dtype: str, heads: int) -> tuple[Selection, str]:
    """The layer's backend selection and the backend class it resolves to."""
    s = ctx.setup
    if layer.kind == "mamba":
        path = MAMBA_BACKENDS.get(layer.mamba_type or "", "")
        entry = ctx.catalog.by_class.get(path)
        name = entry.name if entry is not None else (layer.mamba_type or "mamba").upper()
        return Selection(name, "the Mamba mixer's own backend"), path
    requested, source = _requested_backend(s, layer)
    if requested is not None and requested in s.backends:
        return Selection(requested, source), requested
    own = model_backend(layer.backend, ctx.machine, kv_dtype) if layer.backend else None
    if own is not None:
        return own, own.backend or ""
    request = _request(s, layer, kv_dtype, heads)
    if requested is None:
        sel = ctx.select(None, request, source)
        return sel, ctx.catalog.registry.get(sel.backend or "", sel.backend or "")
    key = source.split(" ")[0]
    entry = ctx.catalog.lookup(requested, source=s.source, key=key)
    name = requested.upper() if requested.upper() in ctx.catalog.registry else entry.name
    sel = ctx.select(name, request, source)
    return sel, entry.class_path


def _block_plan(ctx: _Ctx, layers: Sequence[LayerInfo]) -> BlockPlan | None:
    """B and the Mamba block sizes, or None (with a finding) where vLLM fails."""
    s = ctx.setup

    def sizes_of(b: _blocksize.Backend) -> tuple[KernelSize, ...]:
        if b.class_path in s.backends:
            return s.backends[b.class_path][1]
        return _nospec_sizes(ctx, b.class_path)

    try:
        plan, adjusted = _blocksize.plan_block_size(s, layers, ctx.machine, sizes_of)
    except NoCommonBlockSize as err:
        ctx.findings.append(F.no_block_size(err.names, ctx))
        return None
    except AlignedBlockSizeUnsupported as err:
        ctx.findings.append(F.aligned_rejected(err.block_size, err.names))
        return None
    if adjusted:
        ctx.findings.append(F.block_size_adjusted(plan.block_size, plan.reason))
    return plan


def _plan(ctx: _Ctx, layers: list[LayerInfo]) -> PlanResult:
    s = ctx.setup
    if any(i.backend_name is None for i in layers):
        return PlanResult(s, (), tuple(F.sort(ctx.findings)), tuple(layers))
    plan = _block_plan(ctx, layers)
    if plan is None:
        return PlanResult(s, (), tuple(F.sort(ctx.findings)), tuple(layers))
    ctx.hybrid = any(i.layer.kind == "mamba" for i in layers)
    try:
        groups = make_groups(s, layers, plan)
    except GroupingError as err:
        ctx.findings.append(F.grouping_fails(str(err), s))
        return PlanResult(s, (), tuple(F.sort(ctx.findings)), tuple(layers))
    results = tuple(_vote_group(ctx, g) for g in groups)
    return PlanResult(s, results, tuple(F.sort(ctx.findings)), tuple(layers))


EVERYONE = frozenset({"target", "draft"})
DRAFTS = frozenset({"draft"})


def _voters(group: Group, roles: frozenset[str]) -> list[Voter]:
    """vLLM's attention groups: one per (backend class, layer spec, heads), in layer order."""
    found: dict[tuple[object, ...], tuple[list[LayerInfo], list[str]]] = {}
    for info, names in group.runs:
        if info.layer.role not in roles:
            continue
        key = (info.class_path, info.spec_key(), info.heads_per_rank)
        infos, layer_names = found.setdefault(key, ([], []))
        infos.append(info)
        layer_names.extend(names)
    return [
        Voter(
            name=infos[0].display_name(),
            class_path=infos[0].class_path,
            sizes=infos[0].sizes,
            roles=frozenset(i.layer.role for i in infos),
            layers=tuple(layer_names),
        )
        for infos, layer_names in found.values()
    ]


def _vote(block_size: int, voters: Sequence[Voter]) -> int | NoCommonKernelBlockSize:
    try:
        return select_common(block_size, [v.declared for v in voters])
    except NoCommonKernelBlockSize as err:
        return err


def _vote_group(ctx: _Ctx, g: Group) -> GroupResult:
    s = ctx.setup
    B = g.block_size
    runs = g.runs
    everyone = _voters(g, EVERYONE)
    has_draft = any(i.layer.role == "draft" for i, _ in runs)
    speculating = s.speculative_method in DRAFTING_METHODS and has_draft
    if g.kind == "mamba" or not g.has_layer_views:
        runner: int | NoCommonKernelBlockSize = B
    elif g.packed:
        runner = B
    else:
        runner = _vote(B, everyone)
    if isinstance(runner, NoCommonKernelBlockSize):
        ctx.findings.append(F.no_common_size(g, runner, [v.declared for v in everyone]))
        runner_k: int | None = None
    else:
        runner_k = runner
    speculator_k: int | None = None
    if speculating and runner_k is not None:
        drafts = _voters(g, DRAFTS)
        if s.runner == "v1" or s.hooks == "enforce":
            values = {_narrow(runner_k, d) for d in drafts}
            speculator_k = runner_k if values == {runner_k} else min(values)
        elif g.packed or g.kind == "mamba":
            speculator_k = B
        else:
            own = _vote(B, drafts)
            if isinstance(own, NoCommonKernelBlockSize):
                ctx.findings.append(F.speculator_no_common_size(g, own, runner_k))
            else:
                speculator_k = own
        if speculator_k is not None and speculator_k != runner_k:
            ctx.findings.append(
                F.component_mismatch(
                    g,
                    runner_k,
                    speculator_k,
                    everyone,
                    ctx,
                    block_fixes=[] if ctx.hybrid else _agreeing_block_sizes(g, runner_k),
                    backend_fixes=_agreeing_drafter_backends(ctx, g),
                )
            )
        elif s.runner == "v2" and s.hooks == "enforce" and not (g.packed or g.kind == "mamba"):
            own = _vote(B, drafts)
            if isinstance(own, int) and own != runner_k:
                ctx.findings.append(F.fixed_by_hooks(g, runner_k, own, everyone))
    narrowed = tuple(
        Voter(
            v.name,
            v.class_path,
            v.sizes,
            v.roles,
            v.layers,
            _narrow(runner_k, v) if runner_k is not None else None,
        )
        for v in everyone
    )
    return GroupResult(
        id=g.id,
        kind=g.kind,
        block_size=B,
        block_size_reason=g.block_size_reason,
        kernel_block_size=runner_k,
        packed=g.packed,
        target_layers=_names_of(runs, "target"),
        draft_layers=_names_of(runs, "draft"),
        voters=narrowed,
        runner=runner_k,
        speculator=speculator_k if speculating else None,
    )


def _names_of(runs: Sequence[tuple[LayerInfo, tuple[str, ...]]], role: str) -> tuple[str, ...]:
    """The names of a group's layers of one role, in order."""
    parts = [names for info, names in runs if info.layer.role == role]
    return parts[0] if len(parts) == 1 else tuple(n for names in parts for n in names)


def _narrow(k: int, voter: Voter) -> int:
    """``create_metadata_builders``: the group's k narrowed by one backend."""
    if accepts(voter.sizes, k):
        return k
    try:
        return select_common(k, [voter.declared])
    except NoCommonKernelBlockSize:
        return k


def _agreeing_block_sizes(g: Group, runner_k: int) -> list[int]:
    """Block sizes (multiples of 16 up to 1024) at which runner and speculator agree."""
    everyone = [v.declared for v in _voters(g, EVERYONE)]
    drafts = [v.declared for v in _voters(g, DRAFTS)]
    good = []
    for b in sorted({runner_k, *range(16, 1025, 16)}):
        try:
            if select_common(b, everyone) == select_common(b, drafts):
                good.append(b)
        except NoCommonKernelBlockSize:
            continue
    good.sort(key=lambda b: (b != runner_k, b))
    return good


def _agreeing_drafter_backends(ctx: _Ctx, g: Group) -> list[str]:
    """Drafter backends, valid on the platform, with which runner and speculator agree."""
    s = ctx.setup
    drafts = [i for i, _ in g.runs if i.layer.role == "draft"]
    targets = [i.backend_name for i, _ in g.runs if i.layer.role == "target"]
    found = []
    for name in dict.fromkeys(
        [*targets, "FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION"]
    ):
        if name is None or name in s.backends or name in (d.backend_name for d in drafts):
            continue
        swapped = []
        for info in drafts:
            kv_dtype = info.layer.kv_cache_dtype or s.kv_cache_dtype
            sel = select(
                name,
                _request(s, info.layer, kv_dtype, info.heads_per_rank),
                ctx.machine,
                "alternative",
            )
            entry = ctx.catalog.by_class.get(ctx.catalog.registry.get(name, ""))
            if sel.backend is None or entry is None:
                break
            sizes = entry.sizes(_size_context(ctx, info.layer, kv_dtype))
            swapped.append(
                replace(
                    info, backend_name=name, entry=entry, class_path=entry.class_path, sizes=sizes
                )
            )
        else:
            alt = replace(
                g,
                runs=tuple((swapped[drafts.index(i)] if i in drafts else i, n) for i, n in g.runs),
            )
            everyone = [v.declared for v in _voters(alt, EVERYONE)]
            own = [v.declared for v in _voters(alt, DRAFTS)]
            try:
                if select_common(g.block_size, everyone) == select_common(g.block_size, own):
                    found.append(name)
            except NoCommonKernelBlockSize:
                continue
    return found
