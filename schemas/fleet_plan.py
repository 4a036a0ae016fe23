"""The fleet plan: what ``kvconfig lint --fleet`` computes (``FleetPlan``): every engine's
plan (``schemas.plan.Plan``) with the block sizes its connectors compute on their own and the
block size it reports to routers, the engines it could not plan offline, the P/D pairs,
then the findings between engines. The native fleet file is ``schemas.fleet``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kvconfig.schemas._base import Strict
from kvconfig.schemas.fleet import FleetRole, Router
from kvconfig.schemas.plan import Plan, Severity


class OffloadTierPlan(Strict):
    """One offload tier of an engine."""

    kind: str
    """``cpu`` or the secondary tier's type (``fs``, ``obj``, ``p2p``)."""
    root_dir: str | None = None
    """A file tier's folder."""
    namespace: str | None = None
    """The folder the file tier writes to (``FileMapper._compute_base_path``): engines
    whose namespaces differ never read each other's blocks."""
    namespace_fields: dict[str, Any] = Field(default_factory=dict)
    """What the namespace is computed from."""


class OffloadPlan(Strict):
    """What the offloading connector computes (``build_offloading_config``)."""

    group_tokens_per_block: list[int]
    """Tokens per GPU block of each offloaded group (B x DCP)."""
    blocks_per_chunk: int | None
    """GPU blocks per offloaded chunk (null: vLLM refuses the settings)."""
    tokens_per_hash: int | None
    """The hash block size."""
    tiers: list[OffloadTierPlan] = Field(default_factory=list)
    """CPU and secondary tiers."""


class ConnectorPlan(Strict):
    """A KV connector of an engine, as a component beside the runner and the speculator."""

    name: str
    """vLLM's connector name (``NixlConnector``, ...)."""
    kind: Literal["nixl", "mooncake", "offloading", "other"]
    """The connector family kvconfig models."""
    role: str | None = None
    """``kv_role``."""
    logical_block_size: int | None = None
    """The block size its own vote starts from."""
    kernel_block_size: int | None = None
    """The page size it transfers in (its ``block_size`` after its own vote)."""
    pages_per_block: int | None = None
    """Its one pages-per-block ratio for all groups (``_physical_blocks_per_logical_kv_block``)."""
    transfer_groups: list[int] = Field(default_factory=list)
    """The KV-cache groups it transfers."""
    required_layout: str | None = None
    """The KV-cache layout it asks for (``get_required_kvcache_layout``)."""
    transfer_mode: str | None = None
    """NIXL: ``pull`` or ``push``."""
    compat_factors: dict[str, Any] | None = None
    """NIXL: the inputs of its compatibility hash (``compute_nixl_compatibility_hash``)."""
    compat_hash: str | None = None
    """NIXL: the hash it sends in the handshake."""
    offload: OffloadPlan | None = None
    """The offloading connector's chunks and tiers."""
    refusal: str | None = None
    """What vLLM raises when it builds this connector (null: it starts)."""


class GroupComponents(Strict):
    """The kernel block size every component of one engine uses for one KV-cache group."""

    group: int
    """The KV-cache group id."""
    kind: str
    """The group's spec kind."""
    block_size: int
    """B."""
    manager_block_size: int
    """B x DCP: tokens per block in the scheduler, in KV events and for routers."""
    runner: int | None
    """The model runner's k (it allocates the cache)."""
    speculator: int | None
    """The speculator's own k."""
    connectors: dict[str, int | None] = Field(default_factory=dict)
    """Each connector's k for this group (its one global vote)."""


class Routing(Strict):
    """What the engine reports to KV-aware routers and prefix-cache tiers."""

    effective_block_size: int | None
    """``cache_config.effective_attention_block_size``: the one full-attention block size
    (B x DCP) the engine core reports, or null when there are several."""
    group_block_sizes: list[int]
    """Each group's manager block size (KV events carry these)."""
    scheduler_block_size: int | None
    """The scheduler's block size (LCM of the groups')."""
    hash_block_size: int | None
    """Tokens per prefix-cache hash (``--prefix-match-unit``)."""
    hash_algo: str
    """``--prefix-caching-hash-algo``."""
    hash_seed: str | None
    """The seed block hashes chain from; null when it is random per process."""
    prefix_caching: bool
    """Prefix caching (and so KV events for routers) is on."""
    refusal: str | None = None
    """What vLLM raises for these settings (e.g. a ``--prefix-match-unit`` that does not
    divide a block size)."""


class StagePlan(Strict):
    """One pipeline stage's own vote (each worker votes over its own layers)."""

    stage: int
    """The pipeline rank."""
    layers: list[int]
    """First and last layer index of the stage."""
    kernel_block_sizes: list[int | None]
    """Its k per KV-cache group (null: the stage holds no layer of the group)."""


class EnginePlan(Strict):
    """One engine of the fleet: its plan and what every component computes."""

    name: str
    """The engine's name."""
    role: FleetRole
    """Prefill, decode, or both."""
    replicas: int
    """How many engines share this plan (replicas x data-parallel size)."""
    source: str
    """The deployment it was read from."""
    platform: str
    """Its GPU."""
    parallelism: dict[str, int]
    """``tensor``, ``pipeline``, ``data``, ``decode_context``, ``prefill_context``."""
    kv_transfer_config: dict[str, Any] | None
    """The ``--kv-transfer-config`` the engine runs with (offload tiers merged in)."""
    plan: Plan
    """Its plan, as ``kvconfig plan`` computes it."""
    components: list[GroupComponents]
    """Per group: runner, speculator and connectors."""
    connectors: list[ConnectorPlan]
    """Its KV connectors."""
    routing: Routing
    """What it reports to routers."""
    stages: list[StagePlan] = Field(default_factory=list)
    """Per pipeline stage (pipeline parallelism only)."""
    digest: str
    """The plan digest each of its workers exports (``kvconfig.fleet.diff.digest``)."""


class UnplannedEngine(Strict):
    """An engine kvconfig could not plan offline (KV401, KV402, KV403): what its file says."""

    name: str
    """The engine's name."""
    role: FleetRole
    """Prefill, decode, or both."""
    replicas: int
    """How many engines it stands for (replicas x data-parallel size)."""
    source: str
    """The deployment it was read from."""
    code: Literal["KV401", "KV402", "KV403"]
    """Why it is not planned: its layers cannot be derived (KV401), its model's
    ``config.json`` cannot be read offline (KV402), or an option that changes the plan is
    only known at run time (KV403)."""
    why: str
    """The architecture (KV401), what kvconfig could not read (KV402), or which value is
    only known at run time (KV403)."""
    model: str | None
    """The model vLLM serves, as its parser stores it."""
    parallelism: dict[str, int]
    """``tensor``, ``pipeline``, ``data``."""
    block_size: int | None
    """``--block-size`` or the launcher's default; null: vLLM picks it."""
    connector: str | None
    """Its KV connector (a MultiConnector's children in parentheses)."""
    kv_role: str | None
    """The connector's ``kv_role``."""
    run_time: dict[str, str] = Field(default_factory=dict)
    """Options whose value is only known at run time, with the word that holds it
    (``{"tensor-parallel-size": "$(TP)"}``); ``parallelism`` and ``block_size`` then keep
    the default."""


class PairPlan(Strict):
    """A producer and a consumer engine that transfer KV (by their roles)."""

    prefill: str
    """The producer (a prefill or both engine)."""
    decode: str
    """The consumer (a decode or both engine)."""


class FleetFinding(Strict):
    """One problem between engines, or between an engine and its connectors or router."""

    code: str
    """Stable code (``KV7xx``, docs/findings.md)."""
    name: str
    """Stable slug of the code."""
    severity: Severity
    """error, warning or info."""
    engines: list[str]
    """The engine or the pair concerned (for a pair: the side that checks first)."""
    group: int | None = None
    """The KV-cache group concerned, if any."""
    values: dict[str, int | str | None] = Field(default_factory=dict)
    """The values that disagree, by who holds them."""
    message: str
    """One paragraph: what each side computes and the consequence."""
    vllm: str
    """What vLLM does at that point: its error, or ``silent: ...`` with the consequence."""
    fixes: list[str] = Field(default_factory=list)
    """Settings that make them agree, most direct first."""


class FleetPlan(Strict):
    """``kvconfig lint --fleet``: every engine, and the findings between them."""

    kvconfig_fleet: Literal[1] = 1
    """Format version of this document."""
    verdict: Literal["ok", "reject", "unknown"]
    """``reject`` when an engine's plan or a fleet finding is an error; ``unknown`` when
    none is, but kvconfig cannot plan some engine offline (KV401, KV402, KV403)."""
    source: str
    """The fleet file (or the deployment files, comma-separated)."""
    vllm_version: str
    """The vLLM release planned for."""
    engine: Literal["offline", "vllm"] = "offline"
    """How the engines were planned: kvconfig's resolver or vLLM's own start-up."""
    router: Router
    """The router in front of the engines (the first of ``routers``)."""
    routers: list[Router] = Field(default_factory=list)
    """Every KV-aware router in front of the engines: an operator file may deploy several
    (two Dynamo graphs, a frontend and a standalone ``dynamo.router``), each in front of
    the engines it names (empty: every engine)."""
    engines: list[EnginePlan]
    """The engines kvconfig planned, in the fleet's order."""
    unplanned: list[UnplannedEngine] = Field(default_factory=list)
    """The engines it could not plan offline, as their files read."""
    pairs: list[PairPlan] = Field(default_factory=list)
    """Every prefill-decode pair, planned engines or not."""
    findings: list[FleetFinding]
    """Findings between engines and components, errors first."""
