"""What routers, the offloading connector and pipeline stages see: the engine core's block
sizes and hash seed, offload chunks and tiers, each stage's layers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvconfig.errors import ConnectorRefusal, InputError, NoCommonKernelBlockSize
from kvconfig.fleet.components.facts import OffloadFacts, RoutingFacts, TierFacts
from kvconfig.fleet.components.groups import (
    FULL_ATTENTION_KINDS,
    Group,
    _model_facts,
    cache_block_size,
)
from kvconfig.fleet.model import Engine
from kvconfig.mirror.connectors.offloading import (
    file_mapper_base_path,
    file_mapper_fields,
    offload_blocks_per_chunk,
)
from kvconfig.mirror.connectors.scheduler import (
    CacheGroup,
    effective_attention_block_size,
    kv_cache_block_sizes,
    manager_block_size,
    none_hash_seed,
)
from kvconfig.mirror.connectors.stages import layer_index, pp_indices
from kvconfig.mirror.vote import Declared, select_common


def _cache_groups(engine: Engine, groups: Sequence[Group]) -> list[CacheGroup]:
    prefix = bool(engine.deployment.prefix_caching)
    return [
        CacheGroup(
            block_size=g.block_size,
            dcp_sharded=not g.state,
            prefix_cacheable=True,
            full_attention=g.kind in FULL_ATTENTION_KINDS,
            mamba_align=prefix if g.state else None,
        )
        for g in groups
    ]


def _match_unit(engine: Engine, unit: Any) -> int | None:
    """``--prefix-match-unit`` as vLLM's parser takes it (an integer); InputError else."""
    if unit is None:
        return None
    try:
        return int(unit)
    except (TypeError, ValueError):
        raise InputError(
            f"expected a whole number of tokens, got {unit!r}; vLLM's parser refuses it",
            source=engine.spec.source,
            key="--prefix-match-unit",
            hint="e.g. --prefix-match-unit 16",
        ) from None


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
        scheduler, hash_block = kv_cache_block_sizes(
            cgs,
            cache_block_size=cache_block_size(engine, groups),
            dcp=dcp,
            prefix_match_unit=_match_unit(engine, unit),
            prefix_caching=bool(dep.prefix_caching),
            connector=connector,
        )
    except ConnectorRefusal as err:
        scheduler = hash_block = None
        refusal = err
    return RoutingFacts(
        effective=effective_attention_block_size(cgs, dcp),
        group_sizes=[manager_block_size(g, dcp) for g in cgs],
        scheduler=scheduler,
        hash_block=hash_block,
        algo=algo,
        seed=none_hash_seed(algo, engine.env.get("PYTHONHASHSEED")),
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
    tokens = [manager_block_size(g, engine.dcp) for g in _cache_groups(engine, groups)]
    refusal: ConnectorRefusal | None = routing.refusal
    per_chunk: int | None = None
    if refusal is None and routing.hash_block is not None:
        for t in tokens:
            if t % routing.hash_block:
                refusal = ConnectorRefusal(
                    "AssertionError",
                    f"tokens_per_block={t} not divisible by tokens_per_hash="
                    f"{routing.hash_block}. Hybrid models (e.g. Mamba+Attention) need "
                    "--enable-prefix-caching to align block sizes.",
                )
                break
    if refusal is None:
        try:
            per_chunk = offload_blocks_per_chunk(extra, tokens)
        except ConnectorRefusal as err:
            refusal = err
    tiers = [TierFacts("cpu")]
    dep = engine.deployment
    _, _, dtype, _ = _model_facts(engine)
    cache_dtype = dtype if dep.kv_cache_dtype == "auto" else str(dep.kv_cache_dtype)
    listed = extra.get("secondary_tiers")
    for tier in listed if isinstance(listed, list) else []:
        if not isinstance(tier, Mapping):
            continue
        kind = str(tier.get("type", "?"))
        root = tier.get("root_dir")
        facts = TierFacts(kind, str(root) if root is not None else None)
        if kind == "fs" and root is not None and per_chunk is not None:
            facts.fields = file_mapper_fields(
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
            facts.namespace = file_mapper_base_path(str(root), facts.fields)
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
        span = pp_indices(hidden, rank, pp, partition)
        ks: list[int | None] = []
        for g in groups:
            voters: list[Declared] = []
            for name, sizes, layers, role in g.voters:
                mine = [
                    n
                    for n in layers
                    if (role == "draft" and rank == pp - 1)
                    or (role != "draft" and (layer_index(n) or 0) in span)
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
