"""What each component of one engine computes on its own, from the engine's plan.

The runner's and the speculator's kernel block sizes are the plan's. Beside them, the
KV connectors of ``--kv-transfer-config`` vote again (NIXL and Mooncake, one vote for all
transfer groups), the offloading connector sizes its chunks and names its file tier, and
the engine core reports a block size to KV-aware routers. Every number comes from the
thin mirrors in ``kvconfig.mirror.connectors``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kvconfig.errors import NoCommonKernelBlockSize
from kvconfig.fleet.model import Engine
from kvconfig.mirror import connectors as M
from kvconfig.mirror.vote import Declared, select_common
from schemas.sizes import KernelSize, size_from_json

FULL_ATTENTION_KINDS = frozenset({"full_attention", "mla_attention", "sparse_mla", "indexer"})
"""Plan kinds whose vLLM specs are ``FullAttentionSpec`` (``is_full_attention_spec``)."""

MLA_KINDS = frozenset({"mla_attention", "sparse_mla", "sliding_window_mla", "indexer"})

LAYOUT_ALIASES = {"NHD": "LBNHC", "HND": "LBHNC"}
"""``VLLM_KV_CACHE_LAYOUT``'s legacy names (``v1/attention/backends/utils.py``)."""

DEFAULT_LAYOUT = "LBNHC"
"""The layout kvconfig assumes when neither the environment nor a connector asks for one."""

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


def kind_of(connector: str) -> str:
    """nixl, mooncake, offloading or other."""
    if connector in M.NIXL_CONNECTORS:
        return "nixl"
    if connector in M.MOONCAKE_CONNECTORS:
        return "mooncake"
    if connector in M.OFFLOADING_CONNECTORS:
        return "offloading"
    return "other"


def entries(kv: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The connectors of a ``--kv-transfer-config``; a MultiConnector's children in order
    (each a full config of its own, ``MultiConnector._get_connector_classes_and_configs``)."""
    if kv is None:
        return []
    if kv.get("kv_connector") == "MultiConnector":
        extra = kv.get("kv_connector_extra_config") or {}
        return [dict(c) for c in extra.get("connectors") or [] if isinstance(c, Mapping)]
    return [dict(kv)]


def supports_hma(kv: Mapping[str, Any]) -> bool:
    """``KVConnectorFactory.supports_hma_config`` (``kv_connector/factory.py``)."""
    if kv.get("kv_connector") == "MultiConnector":
        children = entries(kv)
        return bool(children) and all(supports_hma(c) for c in children)
    return str(kv.get("kv_connector")) in M.SUPPORTS_HMA


# ---------------------------------------------------------------- the plan's groups


@dataclass(frozen=True)
class Group:
    """A KV-cache group of an engine's plan."""

    id: int
    kind: str
    block_size: int
    runner: int | None
    speculator: int | None
    packed: bool
    voters: tuple[tuple[str, tuple[KernelSize, ...], tuple[str, ...], str], ...]
    """(backend, declared sizes, layers, role) per attention group."""

    @property
    def state(self) -> bool:
        """A Mamba group: never split, transferred 1:1."""
        return self.kind == "mamba"

    @property
    def layers(self) -> list[str]:
        return [n for v in self.voters for n in v[2]]


def groups_of(plan: Mapping[str, Any]) -> list[Group]:
    """The groups of a plan JSON."""
    out = []
    for g in plan.get("groups") or ():
        voters = tuple(
            (
                str(b["name"]),
                tuple(size_from_json(s) for s in b.get("sizes") or ()),
                tuple(b.get("layers") or ()),
                str(b.get("role", "target")),
            )
            for b in g.get("backends") or ()
        )
        comps = g.get("components") or {}
        out.append(
            Group(
                int(g["id"]),
                str(g["kind"]),
                int(g["block_size"]),
                comps.get("runner", g.get("kernel_block_size")),
                comps.get("speculator"),
                bool(g.get("packed")),
                voters,
            )
        )
    return out


def _compressed(engine: Engine) -> frozenset[str]:
    """Layers whose caches are compressed (``tokens_per_state > 1``): the connectors'
    votes leave them out (``get_current_attn_backends_and_specs``)."""
    return frozenset(
        n for s in engine.deployment.layers if s.tokens_per_state > 1 for n in s.names()
    )


def connector_voters(engine: Engine, groups: Sequence[Group]) -> list[Declared]:
    """The (backend, sizes) pairs a connector's vote runs over, in layer order."""
    skip = _compressed(engine)
    seen: dict[tuple[str, tuple[KernelSize, ...]], None] = {}
    for g in groups:
        for name, sizes, layers, _ in g.voters:
            if layers and all(n in skip for n in layers):
                continue
            seen[(name, sizes)] = None
    return list(seen)


def cache_block_size(engine: Engine, groups: Sequence[Group]) -> int:
    """``cache_config.block_size`` once the engine core has set it: the smallest
    prefix-cacheable group block size (``EngineCore._initialize_kv_caches``)."""
    sizes = [g.block_size for g in groups]
    if sizes:
        return min(sizes)
    return int(engine.deployment.block_size or 16)


# ---------------------------------------------------------------- facts per component


@dataclass
class NixlFacts:
    """A NIXL connector of an engine."""

    name: str
    role: str | None
    transfer_mode: str
    logical: int
    kernel: int | None
    """Its own vote (None: the vote fails)."""
    pages: int
    own: int | None
    """vLLM's vote before the kvconfig hooks hand over the runner's value."""
    backend_name: str
    layout: str
    hma: bool
    has_mamba: bool
    use_mla: bool
    use_host_buffer: bool
    permute: bool
    total_kv_heads: int
    region_mapped: bool
    factors: dict[str, Any]
    compat_hash: str
    enforce_hash: bool
    refusal: M.Refusal | None = None
    handshakes: dict[str, Any] = field(default_factory=dict)
    """Engine mode: vLLM's own handshake with each peer, by the peer's engine id."""
    engine_id: str = ""
    """Engine mode: the engine id vLLM's worker ran with."""

    def side(self, engine: Engine) -> M.NixlSide:
        """The worker as the handshake sees it."""
        return M.NixlSide(
            engine=engine.name,
            block_size=self.kernel or self.logical,
            pages_per_block=self.pages,
            tp=engine.pcp if engine.pcp > 1 and engine.dcp > 1 else engine.tp,
            dcp=engine.dcp,
            pcp=engine.pcp,
            total_kv_heads=1 if self.use_mla else self.total_kv_heads,
            use_mla=self.use_mla,
            has_mamba=self.has_mamba,
            hma=self.hma,
            prefix_caching=bool(engine.deployment.prefix_caching),
            use_host_buffer=self.use_host_buffer,
            kv_cache_layout=self.layout,
            compat_hash=self.compat_hash,
            enforce_compat_hash=self.enforce_hash,
            region_mapped=self.region_mapped,
            enable_permute_local_kv=self.permute,
            transfer_mode=self.transfer_mode,
            pp=engine.pp,
        )


@dataclass
class MooncakeFacts:
    """A Mooncake P/D connector of an engine."""

    name: str
    role: str | None
    logical: int
    kernel: int | None
    pages: int
    own: int | None
    kv_block_len: int
    """Bytes of one kernel page of one K (or V) region on one rank."""
    total_kv_heads: int | None
    refusal: M.Refusal | None = None


@dataclass
class TierFacts:
    """One offload tier."""

    kind: str
    root_dir: str | None = None
    namespace: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class OffloadFacts:
    """An offloading connector of an engine."""

    name: str
    group_tokens: list[int]
    blocks_per_chunk: int | None
    chunk_tokens: int | None
    tokens_per_hash: int | None
    tiers: list[TierFacts]
    refusal: M.Refusal | None = None


@dataclass
class RoutingFacts:
    """What the engine reports to routers and prefix-cache tiers."""

    effective: int | None
    group_sizes: list[int]
    scheduler: int | None
    hash_block: int | None
    algo: str
    seed: str | None
    prefix_caching: bool
    refusal: M.Refusal | None = None


@dataclass
class Components:
    """Every component of one engine."""

    groups: list[Group]
    nixl: list[NixlFacts]
    mooncake: list[MooncakeFacts]
    offload: list[OffloadFacts]
    others: list[dict[str, Any]]
    layout: str
    layout_refusal: M.Refusal | None
    routing: RoutingFacts
    stages: list[tuple[int, tuple[int, int], list[int | None]]]
    """(stage, (first, last layer), k per group) per pipeline stage."""


# ---------------------------------------------------------------- the computation


def _model_facts(engine: Engine) -> tuple[int, int, str, int]:
    """(total KV heads, head size, dtype, hidden layers) of the target model."""
    layers = [s for s in engine.deployment.layers if s.role == "target" and s.kind != "mamba"]
    first = layers[0] if layers else engine.deployment.layers[0]
    config = engine.loaded.model_config
    hidden = config.get("num_hidden_layers")
    n_layers = int(hidden) if isinstance(hidden, int) else sum(s.count for s in layers)
    return int(first.num_kv_heads), int(first.head_size), str(first.dtype), n_layers


def _first_backend(groups: Sequence[Group]) -> str:
    """The backend of the model's first attention layer: ``get_current_attn_backends``
    lists layers in model order and NIXL names the first (``NixlBaseConnectorWorker``)."""
    best: tuple[int, str] | None = None
    for g in groups:
        for name, _, layers, role in g.voters:
            if role == "draft":
                continue
            for layer in layers:
                idx = M.layer_index(layer)
                key = (idx if idx is not None else 1 << 30, name)
                if best is None or key < best:
                    best = key
    if best is None:
        return groups[0].voters[0][0] if groups and groups[0].voters else "-"
    return best[1]


def _layout(engine: Engine, kv: Mapping[str, Any] | None) -> tuple[str, M.Refusal | None]:
    """The KV-cache layout the engine runs with, and the MultiConnector refusal if any."""
    env = engine.env.get("VLLM_KV_CACHE_LAYOUT")
    use_mla = any(g.kind in MLA_KINDS for g in groups_of(engine.plan))
    required: str | None = None
    refusal: M.Refusal | None = None
    if kv is not None:
        children = entries(kv)
        layouts = [
            M.required_kv_cache_layout(str(c.get("kv_connector")), use_mla=use_mla, hisparse=False)
            for c in children
        ]
        if kv.get("kv_connector") == "MultiConnector":
            try:
                required = M.multi_connector_layout(layouts)
            except M.Refusal as err:
                refusal = err
        else:
            required = layouts[0] if layouts else None
    if env:
        return LAYOUT_ALIASES.get(env, env), refusal
    return required or DEFAULT_LAYOUT, refusal


def _speculative_factors(engine: Engine) -> dict[str, Any] | None:
    """``_get_speculative_compatibility_factors`` (``nixl/metadata.py``)."""
    method = engine.deployment.speculative_method
    if method not in ("eagle", "eagle3", "mtp", "dflash", "dspark"):
        return None
    spec = engine.options.get("speculative-config")
    if isinstance(spec, str):
        import json

        try:
            spec = json.loads(spec)
        except ValueError:
            spec = {}
    spec = spec if isinstance(spec, Mapping) else {}
    model = spec.get("model") or engine.options.get("model")
    aux = None
    if isinstance(model, str):
        import json
        from pathlib import Path

        path = Path(model) if Path(model).is_absolute() else engine.loaded.base / model
        try:
            draft = json.loads((path / "config.json").read_text(encoding="utf-8"))
            ids = draft.get("eagle_aux_hidden_state_layer_ids")
            aux = list(ids) if isinstance(ids, list) else None
        except (OSError, ValueError, AttributeError):
            aux = None
    return {
        "method": spec.get("method", method),
        "model": model,
        "revision": spec.get("revision"),
        "code_revision": spec.get("code_revision"),
        "parallel_drafting": bool(spec.get("parallel_drafting", False)),
        "kv_cache_dtype": str(spec.get("kv_cache_dtype") or engine.deployment.kv_cache_dtype),
        "auxiliary_layer_ids": aux,
    }


def _vote(block: int, voters: Sequence[Declared]) -> tuple[int | None, M.Refusal | None]:
    try:
        return M.sync_block_size(block, voters).kernel, None
    except NoCommonKernelBlockSize as err:
        return None, M.connector_error(err)


def _hooked(own: int | None, groups: Sequence[Group], hooks: str) -> int | None:
    """With the kvconfig hooks enforcing, the connector gets the runner's k when every
    split transfer group shares one (``hooks/_connectors.py``)."""
    if hooks != "enforce":
        return own
    ks = {g.runner for g in groups if not g.state and g.runner is not None}
    return ks.pop() if len(ks) == 1 else own


def _nixl(engine: Engine, entry: Mapping[str, Any], groups: list[Group], layout: str) -> NixlFacts:
    name = str(entry.get("kv_connector"))
    mode = M.NIXL_CONNECTORS[name]
    dep = engine.deployment
    extra = entry.get("kv_connector_extra_config") or {}
    hma = not dep.disable_hybrid_kv_cache_manager and any(
        g.kind != "full_attention" for g in groups
    )
    has_mamba = any(g.state for g in groups)
    use_mla = any(g.kind in MLA_KINDS for g in groups)
    logical = M.transfer_block_size(
        [(g.block_size, g.state) for g in groups], cache_block_size(engine, groups)
    )
    heads, head_size, dtype, n_layers = _model_facts(engine)
    role = entry.get("kv_role")
    refusal: M.Refusal | None = None
    if engine.pcp > 1 and role in ("kv_consumer", "kv_both"):
        refusal = M.Refusal(
            "NotImplementedError",
            "NixlConnector PCP currently supports kv_producer only. Consumers and kv_both "
            "require prefill_context_parallel_size=1.",
        )
    elif has_mamba and engine.env.get("VLLM_SSM_CONV_STATE_LAYOUT") != "DS":
        refusal = M.Refusal(
            "AssertionError",
            "3-read Mamba conv transfer requires DS conv state layout. Set "
            "VLLM_SSM_CONV_STATE_LAYOUT=DS",
        )
    elif engine.pp > 1 and hma and mode == "pull":
        refusal = M.Refusal(
            "NotImplementedError",
            "NixlConnector (pull) does not support pipeline_parallel_size > 1 with hybrid KV "
            "cache layouts (HMA); use NixlPushConnector for PP + HMA.",
        )
    elif engine.pp > 1 and has_mamba:
        refusal = M.Refusal(
            "NotImplementedError",
            "NixlPushConnector does not support pipeline_parallel_size > 1 with Mamba/SSM "
            "hybrid KV cache layouts yet.",
        )
    elif engine.pp > 1 and role == "kv_consumer":
        refusal = M.Refusal(
            "NotImplementedError",
            "NixlPushConnector consumer (decode) does not support pipeline_parallel_size > 1.",
        )
    own, vote_refusal = _vote(logical, connector_voters(engine, groups))
    refusal = refusal or vote_refusal
    kernel = _hooked(own, groups, dep.hooks)
    backend = _first_backend(groups)
    factors = M.compatibility_factors(
        vllm_version=dep.vllm_version,
        model=str(engine.options.get("model", dep.source)),
        dtype=f"torch.{dtype}",
        num_kv_heads=1 if use_mla else heads,
        head_size=head_size,
        num_hidden_layers=n_layers,
        attn_backend_name=backend,
        cache_dtype=str(dep.kv_cache_dtype),
        is_hma_enabled=not dep.disable_hybrid_kv_cache_manager,
        speculative=_speculative_factors(engine),
        transfer_mode=mode,
    )
    return NixlFacts(
        name=name,
        role=role,
        transfer_mode=mode,
        logical=logical,
        kernel=kernel,
        pages=logical // kernel if kernel else 1,
        own=own,
        backend_name=backend,
        layout=layout,
        hma=hma,
        has_mamba=has_mamba,
        use_mla=use_mla,
        use_host_buffer=str(entry.get("kv_buffer_device", "cuda")) == "cpu",
        permute=bool(entry.get("enable_permute_local_kv", False)),
        total_kv_heads=heads,
        region_mapped=hma and len(groups) > 1,
        factors=factors,
        compat_hash=M.compatibility_hash(factors),
        enforce_hash=bool(extra.get("enforce_handshake_compat", True)),
        refusal=refusal,
    )


def _mooncake(engine: Engine, entry: Mapping[str, Any], groups: list[Group]) -> MooncakeFacts:
    dep = engine.deployment
    logical = cache_block_size(engine, groups)
    own, refusal = _vote(logical, connector_voters(engine, groups))
    kernel = _hooked(own, groups, dep.hooks)
    heads, head_size, dtype, _ = _model_facts(engine)
    use_mla = any(g.kind in MLA_KINDS for g in groups)
    per_rank = max(1, heads // engine.tp)
    elem = 1 if str(dep.kv_cache_dtype).startswith("fp8") else DTYPE_BYTES.get(dtype, 2)
    return MooncakeFacts(
        name=str(entry.get("kv_connector")),
        role=entry.get("kv_role"),
        logical=logical,
        kernel=kernel,
        pages=logical // kernel if kernel else 1,
        own=own,
        kv_block_len=(kernel or logical) * per_rank * head_size * elem,
        total_kv_heads=None if use_mla or any(g.state for g in groups) else heads,
        refusal=refusal,
    )


def _cache_groups(engine: Engine, groups: Sequence[Group]) -> list[M.CacheGroup]:
    prefix = bool(engine.deployment.prefix_caching)
    return [
        M.CacheGroup(
            block_size=g.block_size,
            dcp_sharded=not g.state,
            prefix_cacheable=True,
            full_attention=g.kind in FULL_ATTENTION_KINDS,
            mamba_align=prefix if g.state else None,
        )
        for g in groups
    ]


def _routing(engine: Engine, groups: list[Group], connector: bool) -> RoutingFacts:
    dep = engine.deployment
    cgs = _cache_groups(engine, groups)
    dcp = engine.dcp
    algo = str(engine.options.get("prefix-caching-hash-algo") or "sha256")
    unit = engine.options.get("prefix-match-unit")
    refusal = None
    scheduler: int | None
    hash_block: int | None
    try:
        scheduler, hash_block = M.kv_cache_block_sizes(
            cgs,
            cache_block_size=cache_block_size(engine, groups),
            dcp=dcp,
            prefix_match_unit=int(unit) if unit is not None else None,
            prefix_caching=bool(dep.prefix_caching),
            connector=connector,
        )
    except M.Refusal as err:
        scheduler = hash_block = None
        refusal = err
    return RoutingFacts(
        effective=M.effective_attention_block_size(cgs, dcp),
        group_sizes=[M.manager_block_size(g, dcp) for g in cgs],
        scheduler=scheduler,
        hash_block=hash_block,
        algo=algo,
        seed=M.none_hash_seed(algo, engine.env.get("PYTHONHASHSEED")),
        prefix_caching=bool(dep.prefix_caching),
        refusal=refusal,
    )


def _parallel_agnostic(engine: Engine, groups: Sequence[Group]) -> bool:
    """``is_parallelism_agnostic`` of ``build_offloading_config`` (without canonical
    layouts): Model Runner V1, one non-MLA full-attention group sharded by heads."""
    dep = engine.deployment
    if dep.runner == "v2" or len(groups) != 1 or groups[0].kind != "full_attention":
        return False
    heads, _, _, _ = _model_facts(engine)
    per_rank = max(1, heads // engine.tp)
    return (
        per_rank * engine.tp == heads
        and not str(dep.kv_cache_dtype).endswith("per_token_head")
        and engine.dcp == 1
        and engine.pcp == 1
    )


def _offload(
    engine: Engine, entry: Mapping[str, Any], groups: list[Group], routing: RoutingFacts
) -> OffloadFacts:
    extra = dict(entry.get("kv_connector_extra_config") or {})
    tokens = [M.manager_block_size(g, engine.dcp) for g in _cache_groups(engine, groups)]
    refusal: M.Refusal | None = routing.refusal
    per_chunk: int | None = None
    if refusal is None and routing.hash_block is not None:
        for t in tokens:
            if t % routing.hash_block:
                refusal = M.Refusal(
                    "AssertionError",
                    f"tokens_per_block={t} not divisible by tokens_per_hash="
                    f"{routing.hash_block}. Hybrid models (e.g. Mamba+Attention) need "
                    "--enable-prefix-caching to align block sizes.",
                )
                break
    if refusal is None:
        try:
            per_chunk = M.offload_blocks_per_chunk(extra, tokens)
        except M.Refusal as err:
            refusal = err
    tiers = [TierFacts("cpu")]
    dep = engine.deployment
    _, _, dtype, _ = _model_facts(engine)
    cache_dtype = dtype if dep.kv_cache_dtype == "auto" else str(dep.kv_cache_dtype)
    for tier in extra.get("secondary_tiers") or []:
        if not isinstance(tier, Mapping):
            continue
        kind = str(tier.get("type", "?"))
        root = tier.get("root_dir")
        facts = TierFacts(kind, str(root) if root is not None else None)
        if kind == "fs" and root is not None and per_chunk is not None:
            facts.fields = M.file_mapper_fields(
                model_name=str(engine.options.get("model", dep.source)),
                tokens_per_hash=int(routing.hash_block or tokens[0]),
                blocks_per_file=per_chunk,
                tp=engine.tp,
                pp=engine.pp,
                pcp=engine.pcp,
                dcp=engine.dcp,
                dtype=cache_dtype,
                groups=[(t, g.layers) for t, g in zip(tokens, groups, strict=True)],
                parallel_agnostic=_parallel_agnostic(engine, groups),
            )
            facts.namespace = M.file_mapper_base_path(str(root), facts.fields)
        tiers.append(facts)
    return OffloadFacts(
        name=str(entry.get("kv_connector")),
        group_tokens=tokens,
        blocks_per_chunk=per_chunk,
        chunk_tokens=per_chunk * tokens[0] if per_chunk is not None and tokens else None,
        tokens_per_hash=routing.hash_block,
        tiers=tiers,
        refusal=refusal,
    )


def _stages(
    engine: Engine, groups: Sequence[Group]
) -> list[tuple[int, tuple[int, int], list[int | None]]]:
    """Each pipeline stage's own vote: workers vote over the layers they hold
    (``get_pp_indices``); draft layers live on the last stage."""
    pp = engine.pp
    if pp <= 1:
        return []
    config = engine.loaded.model_config
    hidden = config.get("num_hidden_layers")
    if not isinstance(hidden, int):
        return []
    partition = engine.env.get("VLLM_PP_LAYER_PARTITION")
    out = []
    for rank in range(pp):
        span = M.pp_indices(hidden, rank, pp, partition)
        ks: list[int | None] = []
        for g in groups:
            voters: list[Declared] = []
            for name, sizes, layers, role in g.voters:
                mine = [
                    n
                    for n in layers
                    if (role == "draft" and rank == pp - 1)
                    or (role != "draft" and (M.layer_index(n) or 0) in span)
                ]
                if mine:
                    voters.append((name, sizes))
            if not voters:
                ks.append(None)
            elif g.state or g.packed:
                ks.append(g.block_size)
            else:
                try:
                    ks.append(select_common(g.block_size, voters))
                except NoCommonKernelBlockSize:
                    ks.append(None)
        out.append((rank, (span.start, span.stop - 1), ks))
    return out


def components(engine: Engine) -> Components:
    """Every component of an engine (computed once per engine)."""
    cached: Components | None = engine.cache.get("components")
    if cached is not None:
        return cached
    groups = groups_of(engine.plan)
    kv = engine.loaded.options.get("kv-transfer-config")
    from kvconfig.fleet._load import kv_transfer_of

    kv_map = kv_transfer_of(engine.loaded.options, engine.spec.source) if kv is not None else None
    layout, layout_refusal = _layout(engine, kv_map)
    routing = _routing(engine, groups, kv_map is not None)
    nixl, mooncake, offload, others = [], [], [], []
    for entry in entries(kv_map):
        name = str(entry.get("kv_connector"))
        kind = kind_of(name)
        if not groups:
            others.append(entry)
        elif kind == "nixl":
            nixl.append(_nixl(engine, entry, groups, layout))
        elif kind == "mooncake":
            mooncake.append(_mooncake(engine, entry, groups))
        elif kind == "offloading":
            offload.append(_offload(engine, entry, groups, routing))
        else:
            others.append(entry)
    out = Components(
        groups, nixl, mooncake, offload, others, layout, layout_refusal, routing,
        _stages(engine, groups),
    )  # fmt: skip
    engine.cache["components"] = out
    return out
