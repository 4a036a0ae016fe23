"""What each component of one engine computes (``Components``), one record per component."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvconfig.errors import ConnectorRefusal
from kvconfig.fleet.components.groups import Group
from kvconfig.fleet.model import Engine
from kvconfig.mirror.connectors.nixl import NixlSide


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
    refusal: ConnectorRefusal | None = None
    handshakes: dict[str, Any] = field(default_factory=dict)
    """Engine mode: vLLM's own handshake with each peer, by the peer's engine id."""
    engine_id: str = ""
    """Engine mode: the engine id vLLM's worker ran with."""
    region_groups: tuple[int, ...] = ()
    """The transfer group of each transfer layer, in NIXL's region order."""
    draft_kv_heads: int | None = None
    """A non-MLA draft's total KV heads under an MLA target (head-sharded draft regions)."""
    nvfp4: bool = False
    """The KV cache is NVFP4."""

    def side(self, engine: Engine) -> NixlSide:
        """The worker as the handshake sees it."""
        return NixlSide(
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
            vllm_version=engine.deployment.vllm_version,
            region_groups=self.region_groups,
            draft_kv_heads=self.draft_kv_heads,
            nvfp4=self.nvfp4,
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
    replicated: bool = False
    """``TransferTopology.local_replicates_kv_cache``: MLA, or more TP ranks than KV heads."""
    refusal: ConnectorRefusal | None = None


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
    refusal: ConnectorRefusal | None = None


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
    refusal: ConnectorRefusal | None = None


@dataclass
class Components:
    """Every component of one engine."""

    groups: list[Group]
    nixl: list[NixlFacts]
    mooncake: list[MooncakeFacts]
    offload: list[OffloadFacts]
    others: list[dict[str, Any]]
    layout: str
    layout_refusal: ConnectorRefusal | None
    routing: RoutingFacts
    stages: list[tuple[int, tuple[int, int], list[int | None]]]
    """(stage, (first, last layer), k per group) per pipeline stage."""
