"""What vLLM 0.33.0's KV connectors, routers' block reports and offload tiers compute.

Each function mirrors one vLLM function or check (named in its docstring, paths relative
to the ``vllm`` package) on plain values: block sizes, the voters of a kernel block-size
vote, tensor-parallel sizes, a handful of flags. Nothing here imports torch or vLLM; the
fleet planner (``kvconfig.fleet``) feeds it an engine's plan, and the fidelity tests run
vLLM's own functions on the same inputs.

Errors vLLM raises come back as :class:`Refusal` (the exception vLLM raises and its text),
so callers can report vLLM's own words.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kvconfig.errors import NoCommonKernelBlockSize
from kvconfig.mirror.vote import Declared, select_common

NIXL_CONNECTOR_VERSION = 15
"""``NIXL_CONNECTOR_VERSION`` (``distributed/kv_transfer/kv_connector/v1/nixl/metadata.py``)."""

DEFAULT_NONE_HASH_SEED = "vllm-none-hash"
"""``DEFAULT_NONE_HASH_SEED`` (``v1/core/kv_cache_utils.py``)."""

HASH_ALGOS = ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor")
"""``PrefixCachingHashAlgo`` (``config/cache.py``); the default is ``sha256``."""

NON_CRYPTO_HASH_ALGOS = frozenset({"xxhash", "xxhash_cbor"})
"""``_NON_CRYPTO_HASH_FUNCTIONS`` (``v1/core/kv_cache_utils.py``)."""

NIXL_CONNECTORS = {
    "NixlConnector": "pull",
    "NixlPullConnector": "pull",
    "NixlPushConnector": "push",
}
"""NIXL's connector names and their ``_TRANSFER_MODE`` (``nixl/connector.py``)."""

MOONCAKE_CONNECTORS = frozenset({"MooncakeConnector"})
"""The Mooncake P/D connector (``mooncake/mooncake_connector.py``)."""

OFFLOADING_CONNECTORS = frozenset({"OffloadingConnector"})
"""The native offloading connector (``offloading_connector.py``)."""

SUPPORTS_HMA = frozenset(
    {
        "DecodeBenchConnector",
        "ExampleHiddenStatesConnector",
        "HiSparseConnector",
        "MoRIIOConnector",
        "MooncakeConnector",
        "MooncakeStoreConnector",
        "MultiConnector",
        "NixlConnector",
        "NixlPullConnector",
        "NixlPushConnector",
        "OffloadingConnector",
        "SimpleCPUOffloadConnector",
        "UMBPStoreConnector",
    }
)
"""Connectors that subclass ``SupportsHMA`` (``kv_connector/v1/base.py``); with any other,
``VllmConfig`` turns the hybrid KV-cache manager off (``config/vllm.py``)."""

KNOWN_CONNECTORS = frozenset(
    {
        "ExampleConnector",
        "FlexKVConnectorV1",
        "HF3FSKVConnector",
        "LMCacheConnectorV1",
        "LMCacheMPConnector",
        *SUPPORTS_HMA,
    }
)
"""The connector names ``KVConnectorFactory`` registers (``kv_connector/factory.py``)."""


class Refusal(Exception):
    """vLLM raises ``error`` (the exception type: ``AssertionError``, ``RuntimeError``,
    ...) with ``message`` (vLLM's own text) at this point."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(error, message)
        self.error = error
        self.message = message

    def __str__(self) -> str:
        return f"{self.error}: {self.message}" if self.message else self.error


# ---------------------------------------------------------------- the connectors' own vote


def transfer_block_size(groups: Sequence[tuple[int, bool]], default: int) -> int:
    """The block size NIXL starts from: the LCM of the transfer groups' B, Mamba groups
    left out; ``default`` (``cache_config.block_size``) when none is left.

    ``groups`` holds ``(B, is_state)`` per transfer group (``is_state``: a Mamba or
    circular-buffer group). Mirrors ``NixlBaseConnectorWorker.__init__``
    (``nixl/base_worker.py``).
    """
    sizes = [b for b, is_state in groups if not is_state]
    return math.lcm(*sizes) if sizes else default


@dataclass(frozen=True, slots=True)
class Sync:
    """What ``_sync_block_size_with_kernel`` leaves on a connector worker."""

    logical: int
    """The block size it started from."""
    kernel: int
    """``self.block_size`` afterwards: the page size the connector transfers."""
    pages_per_block: int
    """``_physical_blocks_per_logical_kv_block``."""


def sync_block_size(block_size: int, voters: Sequence[Declared]) -> Sync:
    """One ``select_common_block_size`` over every transfer layer's (backend, spec), for all
    groups at once, and one pages-per-block ratio.

    Mirrors ``_sync_block_size_with_kernel`` of ``NixlBaseConnectorWorker``
    (``nixl/base_worker.py``) and of ``MooncakeConnectorWorker``
    (``mooncake/mooncake_connector.py``), with the voters
    ``get_current_attn_backends_and_specs`` (``kv_connector/utils.py``) collects
    (compressed caches left out). Raises ``NoCommonKernelBlockSize`` as vLLM raises
    ``ValueError: No common block size for ...``.
    """
    kernel = select_common(block_size, voters)
    return Sync(block_size, kernel, block_size // kernel)


def logical_to_kernel_block_ids(
    block_ids: Sequence[Sequence[int]], ratio: int, state_groups: frozenset[int] = frozenset()
) -> list[list[int]]:
    """Logical block ids expanded to kernel page ids, ``b -> b*ratio + j``; state (Mamba)
    groups are left as they are.

    Mirrors ``_logical_to_kernel_block_ids`` of both connector workers.
    """
    if ratio == 1:
        return [list(g) for g in block_ids]
    return [
        list(g) if i in state_groups else [b * ratio + j for b in g for j in range(ratio)]
        for i, g in enumerate(block_ids)
    ]


def connector_error(err: NoCommonKernelBlockSize) -> Refusal:
    """vLLM's error when a connector's own vote finds no size."""
    return Refusal("ValueError", str(err))


# ---------------------------------------------------------------- NIXL's handshake


def tp_ratio(local_tp: int, remote_tp: int) -> int:
    """``TransferTopology.tp_ratio`` (``kv_connector/utils.py``): positive when the local
    side has the larger TP, negative when the remote has."""
    if local_tp >= remote_tp:
        if local_tp % remote_tp:
            raise Refusal(
                "AssertionError",
                f"Local tensor parallel size {local_tp} is not divisible "
                f"by remote tensor parallel size {remote_tp}.",
            )
        return local_tp // remote_tp
    if remote_tp % local_tp:
        raise Refusal(
            "AssertionError",
            f"Remote tensor parallel size {remote_tp} is not divisible "
            f"by local tensor parallel size {local_tp}.",
        )
    return -(remote_tp // local_tp)


def block_size_ratio(local: int, remote: int) -> int:
    """``TransferTopology.block_size_ratio`` (``kv_connector/utils.py``)."""
    if local % remote:
        raise Refusal(
            "AssertionError",
            f"Local block size {local} is not divisible by remote block size {remote} "
            "or vice versa.",
        )
    return local // remote


@dataclass(frozen=True, slots=True)
class NixlSide:
    """One NIXL worker as the handshake sees it (its own state, or what it advertises in
    ``NixlAgentMetadata``)."""

    engine: str
    block_size: int
    """The worker's ``block_size`` after its own vote (kernel pages)."""
    pages_per_block: int
    """``physical_blocks_per_logical_kv_block``."""
    tp: int
    """The transfer TP size (the TP size, or the PCP size when PCP and DCP shard)."""
    dcp: int = 1
    pcp: int = 1
    total_kv_heads: int = 1
    """``get_total_num_kv_heads()`` (1 for MLA)."""
    use_mla: bool = False
    has_mamba: bool = False
    hma: bool = False
    """``_is_hma_required``: HMA on and a non-full-attention transfer layer."""
    prefix_caching: bool = True
    use_host_buffer: bool = False
    """``kv_buffer_device == "cpu"``."""
    kv_cache_layout: str = "LBHNC"
    compat_hash: str = ""
    enforce_compat_hash: bool = True
    region_mapped: bool = False
    """Regions of several cache groups (``_uses_region_group_mapping``)."""
    enable_permute_local_kv: bool = False
    transfer_mode: str = "pull"
    pp: int = 1


@dataclass(frozen=True, slots=True)
class Handshake:
    """The outcome of a NIXL handshake between a local (initiating) and a remote worker."""

    check: str
    """The check that decides it: ``ok``, or a short name (``compat-hash``, ``block-size``,
    ``host-buffer``, ``tp-split``, ``region-mapped``, ``mamba-pages``, ``layout``, ``tp``)."""
    refusal: Refusal | None = None
    """What vLLM raises; None when it accepts the pair."""
    ratio: int = 1
    """The block-size ratio the transfer runs at when accepted."""
    at: str = ""
    """Where vLLM checks (``file:function``)."""


_BLOCK_CONTIGUOUS = frozenset({"LBHNC", "HND", "BLHNC", "BHLNC"})
"""``KVCacheLayout.is_block_contiguous`` (``v1/kv_cache_layout.py``): per-block heads are
contiguous; the token-major layouts (``LBNHC``/``NHD``) are not."""


def nixl_handshake(local: NixlSide, remote: NixlSide) -> Handshake:
    """What vLLM 0.33.0 does when ``local`` handshakes with ``remote``, in vLLM's order.

    Mirrors, in ``nixl/base_worker.py``: the compatibility-hash check of
    ``_nixl_handshake``; ``add_remote_agent`` (``TransferTopology.block_size_ratio``) and
    ``_validate_remote_agent_handshake`` (DCP, Mamba prefix caching, host buffer, layout,
    heterogeneous TP, the per-region lengths that refuse other block sizes when the
    remote TP is larger); and the region-mapped read of ``pull_worker.py:_read_blocks``.
    """
    base = "distributed/kv_transfer/kv_connector/v1/nixl/"
    if local.enforce_compat_hash and local.compat_hash != remote.compat_hash:
        return Handshake(
            "compat-hash",
            Refusal(
                "RuntimeError",
                f"NIXL compatibility hash mismatch. Local: {local.compat_hash}, Remote: "
                f"{remote.compat_hash}. Prefill and decode instances have incompatible "
                "configurations. This may be due to: different vLLM versions, models, "
                "dtypes, KV cache layouts, attention backends, etc. Both instances must "
                "use identical configurations.Disable this check using --kv-transfer-config "
                '\'{"kv_connector_extra_config": {"enforce_handshake_compat": false}}\'',
            ),
            at=base + "base_worker.py:_nixl_handshake",
        )
    layer_routed = local.transfer_mode == "push" and local.pp > 1 and local.hma
    if layer_routed and not local.has_mamba and local.block_size != remote.block_size:
        return Handshake(
            "block-size",
            Refusal(
                "NotImplementedError", "Attention-HMA push requires identical P/D block sizes."
            ),
            at=base + "base_worker.py:add_remote_agent",
        )
    try:
        ratio_tp = tp_ratio(local.tp, remote.tp)
        ratio = block_size_ratio(local.block_size, remote.block_size)
    except Refusal as refusal:
        check = "tp" if "tensor parallel" in refusal.message else "block-size"
        return Handshake(check, refusal, at=base + "base_worker.py:add_remote_agent")
    validate = base + "base_worker.py:_validate_remote_agent_handshake"
    if local.dcp % remote.dcp and remote.dcp % local.dcp:
        return Handshake(
            "dcp",
            Refusal(
                "AssertionError",
                f"DCP sizes must divide one another: local={local.dcp}, remote={remote.dcp} "
                f"(engine {remote.engine}).",
            ),
            at=validate,
        )
    if (
        not local.use_mla
        and not local.has_mamba
        and ratio_tp < 0
        and remote.tp > local.total_kv_heads
    ):
        return Handshake("tp", Refusal("AssertionError", ""), at=validate)
    if local.has_mamba and remote.pages_per_block != local.pages_per_block and local.prefix_caching:
        return Handshake(
            "mamba-pages",
            Refusal(
                "RuntimeError",
                "Prefix caching with heterogeneous physical_blocks_per_logical is not "
                "supported for Mamba hybrid models. Local: "
                f"{local.pages_per_block}, Remote: {remote.pages_per_block}. Disable prefix "
                "caching with --disable-prefix-caching.",
            ),
            at=validate,
        )
    if ratio != 1 and local.use_host_buffer:
        return Handshake(
            "host-buffer",
            Refusal(
                "AssertionError", "Heterogeneous block sizes are not supported with host buffer"
            ),
            at=validate,
        )
    permuted = (
        local.enable_permute_local_kv
        and remote.kv_cache_layout == "LBHNC"
        and local.kv_cache_layout == "LBNHC"
    )
    if not local.use_mla and remote.kv_cache_layout != local.kv_cache_layout and not permuted:
        return Handshake(
            "layout",
            Refusal(
                "RuntimeError",
                f"Heterogeneous TP expects same kv_cache_layout (local "
                f"{local.kv_cache_layout}, remote {remote.kv_cache_layout}). Or enable "
                "experimental feature to receive LBHNC into a local LBNHC cache by "
                "setting 'enable_permute_local_kv'=True in --kv-transfer-config.",
            ),
            at=validate,
        )
    replicated = remote.tp > local.total_kv_heads
    if (
        abs(ratio_tp) != 1
        and not local.use_mla
        and not replicated
        and local.kv_cache_layout not in _BLOCK_CONTIGUOUS
        and not local.enable_permute_local_kv
    ):
        return Handshake(
            "layout",
            Refusal(
                "RuntimeError",
                "Heterogeneous TP head-dimension splitting requires contiguous heads. "
                "Use a block-contiguous layout (e.g. LBHNC) on the prefill side.",
            ),
            at=validate,
        )
    if ratio != 1 and ratio_tp < 0 and not local.has_mamba and not local.use_mla and not replicated:
        return Handshake(
            "tp-split",
            Refusal(
                "AssertionError",
                "Different local/remote block sizes are not supported when P TP > D TP.",
            ),
            at=validate,
        )
    if (
        ratio != 1
        and local.transfer_mode == "pull"
        and (local.region_mapped or remote.region_mapped)
    ):
        return Handshake(
            "region-mapped",
            Refusal(
                "NotImplementedError",
                "Region-mapped NIXL transfers require matching physical block sizes",
            ),
            ratio=ratio,
            at=base + "pull_worker.py:_read_blocks",
        )
    return Handshake("ok", None, ratio=ratio)


def compatibility_factors(
    *,
    vllm_version: str,
    model: str,
    dtype: str,
    num_kv_heads: int,
    head_size: int,
    num_hidden_layers: int,
    attn_backend_name: str,
    cache_dtype: str,
    is_hma_enabled: bool,
    speculative: Mapping[str, Any] | None,
    transfer_mode: str,
) -> dict[str, Any]:
    """The factors ``compute_nixl_compatibility_hash`` hashes (``nixl/metadata.py``)."""
    return {
        "vllm_version": vllm_version,
        "nixl_connector_version": NIXL_CONNECTOR_VERSION,
        "model": model,
        "dtype": dtype,
        "num_kv_heads": num_kv_heads,
        "head_size": head_size,
        "num_hidden_layers": num_hidden_layers,
        "attn_backend_name": attn_backend_name,
        "cache_dtype": cache_dtype,
        "is_hma_enabled": is_hma_enabled,
        "speculative_config": dict(speculative) if speculative is not None else None,
        "transfer_mode": transfer_mode,
    }


def compatibility_hash(factors: Mapping[str, Any]) -> str:
    """``hash_factors`` (``config/utils.py``): SHA-256 of the sorted JSON of the factors."""
    return hashlib.sha256(json.dumps(dict(factors), sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------- Mooncake


def mooncake_region_lengths(
    local_kv_block_len: int,
    remote_kv_block_len: int,
    local_tp: int,
    remote_tp: int,
    total_kv_heads: int | None,
) -> str | None:
    """The error ``_validate_asymmetric_region_lengths`` returns for one region type
    (``mooncake/mooncake_connector.py``), or None: it compares byte lengths only."""
    if total_kv_heads is not None:
        local_tp = min(local_tp, total_kv_heads)
        remote_tp = min(remote_tp, total_kv_heads)
    ratio = tp_ratio(local_tp, remote_tp)
    if ratio == 1 and local_kv_block_len != remote_kv_block_len:
        return (
            "Mooncake KV region length mismatch for homogeneous TP at region 0: "
            f"local={local_kv_block_len}, remote={remote_kv_block_len}."
        )
    if ratio > 1 and remote_kv_block_len != local_kv_block_len * ratio:
        return (
            "Mooncake destination KV region length does not match the producer TP ratio at "
            f"region 0: local={local_kv_block_len}, remote={remote_kv_block_len}, "
            f"tp_ratio={ratio}."
        )
    if ratio < 0 and local_kv_block_len != remote_kv_block_len * -ratio:
        return (
            "Mooncake source KV region length does not match the consumer TP ratio at region "
            f"0: local={local_kv_block_len}, remote={remote_kv_block_len}, tp_ratio={ratio}."
        )
    return None


@dataclass(frozen=True, slots=True)
class MooncakeSend:
    """What the Mooncake sender (P) does with one request's blocks."""

    error: str | None
    """The per-request error P reports (the request fails), or None."""
    written: list[int] = field(default_factory=list)
    """D's kernel pages P writes, in order."""
    expected: list[int] = field(default_factory=list)
    """The kernel pages D reads the request from."""
    sent: tuple[int, int] = (0, 0)
    """The first and last prompt token P sends."""


def mooncake_send(
    tokens: int, p_block: int, p_ratio: int, d_block: int, d_ratio: int, *, d_first: int = 0
) -> MooncakeSend:
    """One full-attention request of ``tokens`` tokens sent from P to D.

    P's local and D's remote logical block ids are both expanded with P's ratio
    (``_logical_to_kernel_block_ids``), after P drops its leading blocks when it holds
    more than D (``_build_transfer_params``, ``mooncake/mooncake_connector.py``). D's
    blocks are ``d_first ..``.
    """
    n_p = math.ceil(tokens / p_block)
    n_d = math.ceil(tokens / d_block)
    d_ids = list(range(d_first, d_first + n_d))
    expected = logical_to_kernel_block_ids([d_ids], d_ratio)[0]
    if n_p < n_d:
        return MooncakeSend("P num blocks less than D", [], expected)
    written = logical_to_kernel_block_ids([d_ids], p_ratio)[0]
    first = (n_p - n_d) * p_block
    return MooncakeSend(None, written, expected, (first, min(tokens, n_p * p_block) - 1))


# ---------------------------------------------------------------- offloading and hashing


def offload_blocks_per_chunk(
    extra_config: Mapping[str, Any], group_tokens_per_block: Sequence[int]
) -> int:
    """``blocks_per_chunk`` of ``build_offloading_config``
    (``kv_connector/v1/offloading/config.py``), or the Refusal vLLM raises."""
    if not group_tokens_per_block:
        raise Refusal("ValueError", "KV offloading found no eligible cache groups.")
    per_chunk = extra_config.get("blocks_per_chunk")
    tokens = extra_config.get("block_size")
    if per_chunk is not None and tokens is not None:
        raise Refusal(
            "ValueError",
            "Specify only one of 'block_size' or 'blocks_per_chunk' in kv_connector_extra_config.",
        )
    if per_chunk is not None:
        if int(per_chunk) <= 0:
            raise Refusal("ValueError", "'blocks_per_chunk' must be greater than 0.")
        return int(per_chunk)
    if tokens is None:
        return 1
    unique = set(group_tokens_per_block)
    if len(unique) != 1:
        raise Refusal(
            "AssertionError",
            "If 'block_size' is specified in kv_connector_extra_config, there must be at "
            "least one KV cache group, and all groups must have the same block size.",
        )
    block = unique.pop()
    value = int(tokens)
    if value % block:
        rounded = math.ceil(value / block) * block
        raise Refusal(
            "ValueError",
            f"'block_size'={value} in kv_connector_extra_config must be a multiple of the "
            f"GPU KV cache block size ({block} tokens). Use {rounded} instead, or set "
            "'blocks_per_chunk' to express the chunk size in blocks.",
        )
    return value // block


@dataclass(frozen=True, slots=True)
class CacheGroup:
    """One KV-cache group as the scheduler's block-size rules see it."""

    block_size: int
    dcp_sharded: bool = True
    """Attention specs are DCP-sharded; Mamba specs are not."""
    prefix_cacheable: bool = True
    full_attention: bool = True
    """``is_full_attention_spec`` (full attention and MLA; not sliding window or Mamba)."""
    mamba_align: bool | None = None
    """Mamba groups: whether ``mamba_cache_mode`` is ``align``; None for attention."""


def manager_block_size(group: CacheGroup, dcp: int) -> int:
    """``resolve_dcp_kv_block_size`` (``v1/core/kv_cache_utils.py``), also the block size of
    the group's single-type manager (``SingleTypeKVCacheManager.__init__``)."""
    return group.block_size * (dcp if group.dcp_sharded else 1)


def effective_attention_block_size(groups: Sequence[CacheGroup], dcp: int) -> int | None:
    """``EngineCore._initialize_effective_attention_block_size`` (``v1/engine/core.py``):
    the one full-attention manager block size, else None."""
    sizes = {manager_block_size(g, dcp) for g in groups if g.full_attention}
    return sizes.pop() if len(sizes) == 1 else None


def kv_cache_block_sizes(
    groups: Sequence[CacheGroup],
    *,
    cache_block_size: int,
    dcp: int,
    prefix_match_unit: int | None,
    prefix_caching: bool,
    connector: bool,
) -> tuple[int, int]:
    """(scheduler block size, hash block size), or the Refusal vLLM raises.

    Mirrors ``resolve_kv_cache_block_sizes`` (``v1/core/kv_cache_utils.py``) without the
    compressed-state alignment check.
    """
    if len(groups) <= 1:
        d = dcp if (groups and groups[0].dcp_sharded) else 1
        bs = cache_block_size * d
        if (
            prefix_match_unit not in (None, bs)
            and len(groups) == 1
            and (prefix_caching or connector)
        ):
            raise Refusal(
                "ValueError",
                f"Invalid prefix_match_unit={prefix_match_unit}; with a single KV cache "
                f"group, prefix-cache hits land on the block size ({bs}). Unset it or set "
                f"it to {bs}.",
            )
        return bs, bs
    sizes = [manager_block_size(g, dcp) for g in groups]
    scheduler = math.lcm(*sizes)
    if not (prefix_caching or connector):
        return scheduler, scheduler
    if any(g.mamba_align is False for g in groups):
        return scheduler, scheduler
    hashing = [s for g, s in zip(groups, sizes, strict=True) if g.prefix_cacheable] or sizes
    unit = prefix_match_unit if prefix_match_unit is not None else math.gcd(*hashing)
    if any(s % unit for s in hashing):
        raise Refusal(
            "ValueError",
            f"Invalid prefix_match_unit={unit}; prefix-cacheable KV cache group block sizes "
            f"must be divisible by prefix_match_unit. Got group block sizes={sizes}, "
            f"prefix-cacheable={hashing}.",
        )
    return scheduler, unit


def none_hash_seed(algo: str, pythonhashseed: str | None) -> str | None:
    """The seed prefix-cache block hashes chain from; None when it is random per process.

    Mirrors ``resolve_none_hash_seed`` (``v1/core/kv_cache_utils.py``).
    """
    if pythonhashseed is not None:
        return pythonhashseed
    if algo in NON_CRYPTO_HASH_ALGOS:
        return None
    return DEFAULT_NONE_HASH_SEED


def file_mapper_fields(
    *,
    model_name: str,
    tokens_per_hash: int,
    blocks_per_file: int,
    tp: int,
    pp: int,
    pcp: int,
    dcp: int,
    dtype: str,
    groups: Sequence[tuple[int, Sequence[str]]],
    parallel_agnostic: bool = False,
    replicated_layout: bool = False,
) -> dict[str, Any]:
    """The fields a file tier namespaces its folder by: ``FileMapper.__init__`` with
    ``from_offloading_spec``'s groups (``v1/kv_offload/file_mapper.py``)."""
    if parallel_agnostic:
        tp = pp = pcp = dcp = 1
    fields: dict[str, Any] = {
        "model_name": model_name,
        "tokens_per_hash": tokens_per_hash,
        "blocks_per_file": blocks_per_file,
        "tp_size": tp,
        "pp_size": pp,
        "pcp_size": pcp,
        "dcp_size": dcp,
        "dtype": dtype,
        "kv_cache_groups": [
            {"tokens_per_block": tokens, "layer_names": list(names)} for tokens, names in groups
        ],
        "inference_engine": "vllm",
    }
    if not parallel_agnostic:
        fields["parallel_agnostic"] = False
    if replicated_layout:
        fields["replicated_layout"] = True
    return fields


def file_mapper_base_path(root_dir: str, fields: Mapping[str, Any]) -> str:
    """``FileMapper._compute_base_path`` (``v1/kv_offload/file_mapper.py``)."""
    canonical = json.dumps(dict(fields), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
    return f"{root_dir}/{str(fields['model_name']).replace('/', '_')}_{digest}"


# ---------------------------------------------------------------- layouts and stages


def required_kv_cache_layout(connector: str, *, use_mla: bool, hisparse: bool) -> str | None:
    """A connector class's ``get_required_kvcache_layout`` (each connector's module)."""
    if connector in NIXL_CONNECTORS or connector in MOONCAKE_CONNECTORS:
        return None if use_mla else "LBHNC"
    if connector in OFFLOADING_CONNECTORS:
        return "BLHNC" if hisparse else "LBHNC"
    if connector == "HiSparseConnector":
        return "BLHNC"
    if connector == "ExampleHiddenStatesConnector":
        return "LBNHC"
    return None


def multi_connector_layout(layouts: Sequence[str | None]) -> str | None:
    """``MultiConnector.get_required_kvcache_layout`` (``multi_connector.py``)."""
    found = sorted({x for x in layouts if x is not None})
    if len(found) > 1:
        raise Refusal(
            "ValueError",
            f"KV cache layout mismatch: found {len(found)} different layouts "
            f"({', '.join(found)}).All connectors must use the same layout.",
        )
    return found[0] if found else None


def pp_indices(num_layers: int, rank: int, size: int, partition: str | None = None) -> range:
    """The layers of pipeline stage ``rank``: ``get_pp_indices`` (``distributed/utils.py``),
    with ``VLLM_PP_LAYER_PARTITION`` as ``partition``."""
    if partition is not None:
        parts = [int(p) for p in partition.split(",")]
    else:
        per = num_layers // size
        parts = [per] * size
        rest = num_layers % size
        for i in range(2, rest + 2):
            parts[-i] += 1
    start = sum(parts[:rank])
    return range(start, start + parts[rank])


def layer_index(name: str) -> int | None:
    """The layer index in a layer's name: its one integer part (``extract_layer_index``,
    ``model_executor/models/utils.py``); None when there is not exactly one."""
    ints = [int(p) for p in name.split(".") if p.isdigit()]
    return ints[0] if len(ints) == 1 else None


__all__ = [
    "DEFAULT_NONE_HASH_SEED",
    "HASH_ALGOS",
    "KNOWN_CONNECTORS",
    "MOONCAKE_CONNECTORS",
    "NIXL_CONNECTORS",
    "NIXL_CONNECTOR_VERSION",
    "OFFLOADING_CONNECTORS",
    "SUPPORTS_HMA",
    "CacheGroup",
    "Handshake",
    "MooncakeSend",
    "NixlSide",
    "Refusal",
    "Sync",
    "block_size_ratio",
    "compatibility_factors",
    "compatibility_hash",
    "effective_attention_block_size",
    "file_mapper_base_path",
    "file_mapper_fields",
    "kv_cache_block_sizes",
    "layer_index",
    "logical_to_kernel_block_ids",
    "manager_block_size",
    "mooncake_region_lengths",
    "mooncake_send",
    "multi_connector_layout",
    "nixl_handshake",
    "none_hash_seed",
    "offload_blocks_per_chunk",
    "pp_indices",
    "required_kv_cache_layout",
    "sync_block_size",
    "tp_ratio",
    "transfer_block_size",
]
