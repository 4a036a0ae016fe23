"""A fleet: the engines of one serving system, linted together, and the fleet plan.

``FleetFile`` is the native fleet file (``kvconfig_fleet: 1``, docs/fleets.md): each
engine's deployment, platform, role, parallelism and ``--kv-transfer-config``, and the
KV-aware router and offload tiers in front of and beside them. ``FleetPlan`` is what
``kvconfig lint --fleet`` computes: every engine's plan (``schemas.plan.Plan``) with the
block sizes its connectors compute on their own and the block size it reports to
routers, then the findings between engines.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from kvconfig.mirror import versions
from kvconfig.schemas._base import Strict
from kvconfig.schemas.plan import Plan, Severity

PositiveInt = Annotated[int, Field(ge=1, strict=True)]

FleetRole = Literal["prefill", "decode", "both"]
"""``prefill`` engines produce KV for ``decode`` engines; ``both`` serve whole requests
(and pair with either side)."""

RouterKind = Literal["dynamo", "llm-d", "none"]
"""The KV-aware router in front of the engines."""

HashAlgo = Literal["sha256", "sha256_cbor", "xxhash", "xxhash_cbor"]
"""vLLM's ``--prefix-caching-hash-algo`` values."""


class Parallelism(Strict):
    """An engine's parallel layout; each value set here is passed to ``vllm serve`` as its
    option (a value the deployment sets too must agree)."""

    tensor: PositiveInt | None = None
    """``--tensor-parallel-size``."""
    pipeline: PositiveInt | None = None
    """``--pipeline-parallel-size``."""
    data: PositiveInt | None = None
    """``--data-parallel-size``: DP engines, each with its own KV cache."""
    decode_context: PositiveInt | None = None
    """``--decode-context-parallel-size``: a block then covers B x DCP tokens."""
    prefill_context: PositiveInt | None = None
    """``--prefill-context-parallel-size``."""
    expert: bool | None = None
    """``--enable-expert-parallel`` (changes nothing in the KV-cache plan)."""


class KVTransferConfig(Strict):
    """vLLM's ``--kv-transfer-config`` (``vllm/config/kv_transfer.py:KVTransferConfig``)."""

    kv_connector: str
    """The connector: ``NixlConnector``, ``MooncakeConnector``, ``OffloadingConnector``,
    ``MultiConnector``, ..."""
    engine_id: str | None = None
    """The engine id for KV transfers."""
    kv_buffer_device: str = "cuda"
    """Where the connector buffers KV: ``cuda`` (device memory) or ``cpu`` (a host buffer)."""
    kv_role: Literal["kv_producer", "kv_consumer", "kv_both"] | None = None
    """Whether the engine produces, consumes or both."""
    kv_port: int = 14579
    """The connector's port."""
    kv_connector_extra_config: dict[str, Any] = Field(default_factory=dict)
    """The connector's own settings (NIXL ``backends``, offloading ``block_size``,
    ``secondary_tiers``, MultiConnector ``connectors``, ...)."""
    kv_connector_module_path: str | None = None
    """Where an out-of-tree connector is loaded from."""
    enable_permute_local_kv: bool = False
    """NIXL: receive LBHNC into a local LBNHC cache."""
    kv_load_failure_policy: Literal["recompute", "fail"] = "fail"
    """What a failed KV load does to the request."""


class FleetEngine(Strict):
    """One engine (or ``replicas`` identical engines) of the fleet."""

    name: str = Field(min_length=1)
    """The engine's name in findings (unique in the fleet)."""
    deployment: str | None = None
    """A ``vllm serve --config`` YAML or a native kvconfig file, relative to the fleet file."""
    command: str | list[str] | None = None
    """Or a pasted ``vllm serve ...`` command (a string, or its argv); relative paths in it
    resolve from the fleet file's folder."""
    platform: str | None = None
    """Its GPU (``H100``, ``B200``, ``sm90``, ...); default: the fleet's."""
    role: FleetRole = "both"
    """Prefill, decode, or both."""
    replicas: PositiveInt = 1
    """Identical engines of this configuration (planned once, counted in the fleet)."""
    parallelism: Parallelism = Field(default_factory=Parallelism)
    """Tensor, pipeline, data, context parallelism."""
    kv_transfer_config: KVTransferConfig | None = None
    """Its ``--kv-transfer-config`` (one the deployment sets too must be the same)."""
    env: dict[str, str] = Field(default_factory=dict)
    """The engine's environment (``PYTHONHASHSEED``, ``VLLM_KV_CACHE_LAYOUT``, ...)."""
    hooks: Literal["none", "enforce"] | None = None
    """Whether the kvconfig vLLM hooks run in this engine; default: the fleet's."""
    vllm_version: str | None = None
    """The vLLM release this engine runs; default: the fleet's (a fleet may mix releases,
    and the NIXL compatibility hash of each engine carries its own)."""

    @model_validator(mode="after")
    def _one_source(self) -> FleetEngine:
        if (self.deployment is None) == (self.command is None):
            raise ValueError("give the engine either 'deployment' or 'command'")
        return self


class Router(Strict):
    """A KV-aware router: it hashes prompts in blocks and matches them with the engines'
    cached blocks (their KV events)."""

    kind: RouterKind = "none"
    """``dynamo`` (NVIDIA Dynamo's KV router), ``llm-d`` (llm-d's precise prefix-cache
    scorer), or ``none``."""
    block_size: PositiveInt | None = None
    """Tokens per hashed block: Dynamo's ``--kv-cache-block-size`` (``DYN_KV_CACHE_BLOCK_SIZE``;
    unset, it takes the block size a worker registers), llm-d's
    ``tokenProcessorConfig.blockSize`` (unset: 16)."""
    hashes_prompts: bool = False
    """The router compares its own prompt hashes with the engines' block hashes, so the
    hash algorithm and seed must match (llm-d's ``hashSeed``)."""
    hash_algo: HashAlgo | None = None
    """The hash algorithm the router assumes (with ``hashes_prompts``)."""
    hash_seed: str | None = None
    """The seed the router assumes: vLLM's ``PYTHONHASHSEED`` (with ``hashes_prompts``)."""
    engines: list[str] = Field(default_factory=list)
    """The engines it routes to (empty: every engine)."""


class OffloadTier(Strict):
    """An offload tier: shorthand for the ``OffloadingConnector`` entry each named engine
    gets in its ``--kv-transfer-config`` (beside its P/D connector, in a MultiConnector)."""

    name: str = Field(min_length=1)
    """The tier's name in findings."""
    kind: Literal["cpu", "fs"] = "fs"
    """``cpu``: a CPU tier only; ``fs``: a CPU tier and a file-system tier (``root_dir``)."""
    root_dir: str | None = None
    """The file tier's folder; engines with the same folder share it."""
    block_size: PositiveInt | None = None
    """Tokens per offloaded chunk (``kv_connector_extra_config.block_size``)."""
    blocks_per_chunk: PositiveInt | None = None
    """Or the chunk size in GPU blocks."""
    cpu_bytes_to_use: PositiveInt = 1 << 30
    """The CPU tier's size."""
    engines: list[str] = Field(default_factory=list)
    """The engines that use it (empty: every engine)."""

    @model_validator(mode="after")
    def _root(self) -> OffloadTier:
        if self.kind == "fs" and not self.root_dir:
            raise ValueError("an 'fs' tier needs 'root_dir'")
        return self


class FleetFile(Strict):
    """The native fleet file."""

    schema_: str | None = Field(default=None, alias="$schema")
    """Editor hint: the JSON Schema of this file."""
    kvconfig_fleet: Literal[1]
    """Format version of this file (how kvconfig tells a fleet file from a deployment)."""
    name: str = ""
    """The serving system's name."""
    platform: str | None = None
    """The engines' GPU when an engine does not name its own."""
    vllm_version: str = versions.DEFAULT
    """The vLLM release the engines run unless an engine names its own."""
    hooks: Literal["none", "enforce"] = "none"
    """Whether the kvconfig vLLM hooks run in the engines."""
    engines: list[FleetEngine] = Field(min_length=1)
    """The engines."""
    router: Router = Field(default_factory=Router)
    """The KV-aware router in front of them."""
    offload: list[OffloadTier] = Field(default_factory=list)
    """Offload tiers the engines use."""

    @model_validator(mode="after")
    def _names(self) -> FleetFile:
        names = [e.name for e in self.engines]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise ValueError(f"engine name {n!r} is used twice")
        known = set(names)
        for ref in [*self.router.engines, *(e for t in self.offload for e in t.engines)]:
            if ref not in known:
                raise ValueError(f"no engine is named {ref!r}")
        return self


# ---------------------------------------------------------------- the fleet plan


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
    none is, but kvconfig cannot derive some engine's model offline (KV401)."""
    source: str
    """The fleet file (or the deployment files, comma-separated)."""
    vllm_version: str
    """The vLLM release planned for."""
    engine: Literal["offline", "vllm"] = "offline"
    """How the engines were planned: kvconfig's resolver or vLLM's own start-up."""
    router: Router
    """The router in front of the engines."""
    engines: list[EnginePlan]
    """The engines, in the fleet's order."""
    findings: list[FleetFinding]
    """Findings between engines and components, errors first."""
