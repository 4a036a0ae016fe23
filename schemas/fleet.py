"""A fleet: the engines of one serving system, linted together.

``FleetFile`` is the native fleet file (``kvconfig_fleet: 1``, docs/fleets.md): each
engine's deployment, platform, role, parallelism and ``--kv-transfer-config``, and the
KV-aware router and offload tiers in front of and beside them. What ``kvconfig lint
--fleet`` computes from it is ``schemas.fleet_plan.FleetPlan``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from kvconfig.mirror import versions
from kvconfig.schemas._base import Strict

PositiveInt = Annotated[int, Field(ge=1, strict=True)]

FleetRole = Literal["prefill", "decode", "both"]
"""``prefill`` engines produce KV for ``decode`` engines; ``both`` serve whole requests
(and pair with either side)."""

RouterKind = Literal["dynamo", "llm-d", "production-stack", "none"]
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
    scorer), ``production-stack`` (its kvaware router: read, nothing to compare), or
    ``none``."""
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
