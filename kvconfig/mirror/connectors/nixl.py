"""NIXL's handshake checks and compatibility hash.

Mirrors ``vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py``
(``_nixl_handshake``, ``add_remote_agent``, ``_validate_remote_agent_handshake``),
``nixl/pull_worker.py`` (``_read_blocks``) and ``nixl/metadata.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kvconfig.errors import ConnectorRefusal
from kvconfig.mirror import versions
from kvconfig.mirror.connectors.topology import block_size_ratio, tp_ratio

NIXL_CONNECTOR_VERSION = 15
"""``NIXL_CONNECTOR_VERSION`` (``distributed/kv_transfer/kv_connector/v1/nixl/metadata.py``)."""


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
    vllm_version: str = versions.DEFAULT
    """The vLLM release the worker runs (whose layout facts apply)."""
    region_groups: tuple[int, ...] = ()
    """The transfer group of each region, in region order (``region_group_ids``, which it
    also advertises in ``NixlAgentMetadata``)."""
    draft_kv_heads: int | None = None
    """A non-MLA draft's total KV heads under an MLA target, when it has head-sharded
    draft regions (``_head_sharded_draft_kv_heads``); None otherwise."""
    nvfp4: bool = False
    """An attention layer's KV cache is NVFP4 (``kv_quant_mode.is_nvfp4``)."""


@dataclass(frozen=True, slots=True)
class Handshake:
    """The outcome of a NIXL handshake between a local (initiating) and a remote worker."""

    check: str
    """The check that decides it: ``ok``, or a short name (``compat-hash``, ``block-size``,
    ``host-buffer``, ``tp-split``, ``region-mapped``, ``mamba-pages``, ``layout``,
    ``head-split``, ``tp``, ``dcp``, ``draft``, ``nvfp4``)."""
    refusal: ConnectorRefusal | None = None
    """What vLLM raises; None when it accepts the pair."""
    ratio: int = 1
    """The block-size ratio the transfer runs at when accepted."""
    at: str = ""
    """Where vLLM checks (``file:function``)."""


def block_contiguous(layout: str, vllm_version: str) -> bool:
    """``KVCacheLayout[layout].is_block_contiguous`` (``v1/kv_cache_layout.py``): [H, N, C]
    contiguous within a block, as the release's data has it (``facts.json``,
    ``kv_cache_layouts``); a name the release does not know is not."""
    release = vllm_version if vllm_version in versions.KNOWN else versions.DEFAULT
    layouts = versions.facts(release).kv_cache_layouts or (
        versions.facts(versions.DEFAULT).kv_cache_layouts  # a release without the data
    )
    known = layouts.get(layout.upper())
    return bool(known and known.get("block_contiguous"))


def nixl_handshake(local: NixlSide, remote: NixlSide) -> Handshake:
    """What vLLM does when ``local`` handshakes with ``remote``, in vLLM's order.

    Mirrors, in ``nixl/base_worker.py``: the compatibility-hash check of
    ``_nixl_handshake``; ``add_remote_agent`` (``TransferTopology.block_size_ratio``) and
    ``_validate_remote_agent_handshake`` (DCP, DCP with Mamba, Mamba prefix caching, host
    buffer, layout, the permute with HMA, heterogeneous TP over a block-contiguous
    layout, the per-region lengths that refuse other block sizes when the remote TP is
    larger, DCP region pulls with split pages, the head-sharded draft of an MLA target (its
    TP and DCP, its layout), NVFP4 re-sharding); and the region-mapped read of
    ``pull_worker.py:_read_blocks``. Per-region replication in the TP split (a GQA
    target's MLA draft regions are REPLICATE) decides nothing of its own: the target's
    SPLIT regions come first and refuse other block sizes.
    """
    base = "distributed/kv_transfer/kv_connector/v1/nixl/"
    if local.enforce_compat_hash and local.compat_hash != remote.compat_hash:
        return Handshake(
            "compat-hash",
            ConnectorRefusal(
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
            ConnectorRefusal(
                "NotImplementedError", "Attention-HMA push requires identical P/D block sizes."
            ),
            at=base + "base_worker.py:add_remote_agent",
        )
    try:
        ratio_tp = tp_ratio(local.tp, remote.tp)
        ratio = block_size_ratio(local.block_size, remote.block_size)
    except ConnectorRefusal as refusal:
        check = "tp" if "tensor parallel" in refusal.message else "block-size"
        return Handshake(check, refusal, at=base + "base_worker.py:add_remote_agent")
    validate = base + "base_worker.py:_validate_remote_agent_handshake"
    if local.dcp % remote.dcp and remote.dcp % local.dcp:
        return Handshake(
            "dcp",
            ConnectorRefusal(
                "AssertionError",
                f"DCP sizes must divide one another: local={local.dcp}, remote={remote.dcp} "
                f"(engine {remote.engine}).",
            ),
            at=validate,
        )
    if local.has_mamba and local.dcp != remote.dcp:
        return Handshake(
            "dcp",
            ConnectorRefusal(
                "RuntimeError",
                "Hybrid MLA+Mamba NIXL transfers require matching DCP sizes, "
                f"got local={local.dcp}, remote={remote.dcp}.",
            ),
            at=validate,
        )
    if (
        not local.use_mla
        and not local.has_mamba
        and ratio_tp < 0
        and remote.tp > local.total_kv_heads
    ):
        return Handshake("tp", ConnectorRefusal("AssertionError", ""), at=validate)
    if local.draft_kv_heads is not None and (ratio_tp < 0 or local.dcp > 1 or remote.dcp > 1):
        return Handshake(
            "draft",
            ConnectorRefusal(
                "NotImplementedError",
                "NIXL head-sharded draft KV under an MLA target requires local TP >= remote "
                f"TP and no DCP: local TP={local.tp}, remote TP={remote.tp}, local "
                f"DCP={local.dcp}, remote DCP={remote.dcp}, transfer_mode={local.transfer_mode}.",
            ),
            at=validate,
        )
    if (
        (local.dcp > 1 or remote.dcp > 1)
        and local.region_groups
        and local.region_groups != remote.region_groups
        and (local.pages_per_block != 1 or remote.pages_per_block != 1)
    ):
        return Handshake(
            "dcp",
            ConnectorRefusal(
                "NotImplementedError",
                "DCP region pulls require matching logical and physical block sizes",
            ),
            at=validate,
        )
    if local.has_mamba and remote.pages_per_block != local.pages_per_block and local.prefix_caching:
        return Handshake(
            "mamba-pages",
            ConnectorRefusal(
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
            ConnectorRefusal(
                "AssertionError", "Heterogeneous block sizes are not supported with host buffer"
            ),
            at=validate,
        )
    permuted = (
        local.enable_permute_local_kv
        and remote.kv_cache_layout == "LBHNC"
        and local.kv_cache_layout == "LBNHC"
    )
    differ = not local.use_mla and remote.kv_cache_layout != local.kv_cache_layout
    if differ and permuted and local.hma:
        return Handshake(
            "layout",
            ConnectorRefusal("AssertionError", "HMA does not support block size post processing"),
            at=validate,
        )
    if differ and not permuted:
        return Handshake(
            "layout",
            ConnectorRefusal(
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
        and not block_contiguous(local.kv_cache_layout, local.vllm_version)
        and not local.enable_permute_local_kv
    ):
        return Handshake(
            "head-split",
            ConnectorRefusal(
                "RuntimeError",
                "Heterogeneous TP head-dimension splitting requires contiguous heads. "
                "Use a block-contiguous layout (e.g. LBHNC) on the prefill side.",
            ),
            at=validate,
        )
    layout = local.kv_cache_layout
    if (
        local.draft_kv_heads is not None
        and max(1, local.draft_kv_heads // local.tp) != max(1, local.draft_kv_heads // remote.tp)
        and (remote.kv_cache_layout != layout or not block_contiguous(layout, local.vllm_version))
    ):
        return Handshake(
            "draft",
            ConnectorRefusal(
                "RuntimeError",
                "Head-sharded draft KV under an MLA target needs the same block-contiguous "
                f"kv_cache_layout (e.g. LBHNC) on prefill and decode, got local={layout}, "
                f"remote={remote.kv_cache_layout}.",
            ),
            at=validate,
        )
    if (
        not local.use_mla
        and local.nvfp4
        and max(1, local.total_kv_heads // local.tp) != max(1, local.total_kv_heads // remote.tp)
    ):
        return Handshake(
            "nvfp4",
            ConnectorRefusal(
                "RuntimeError",
                "NIXL KV-head re-sharding is not supported for NVFP4 KV cache (local TP "
                f"{local.tp}, remote TP {remote.tp}). Use matching TP sizes on prefill and "
                "decode.",
            ),
            at=validate,
        )
    if ratio != 1 and ratio_tp < 0 and not local.has_mamba and not local.use_mla and not replicated:
        return Handshake(
            "tp-split",
            ConnectorRefusal(
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
            ConnectorRefusal(
                "NotImplementedError",
                "Region-mapped NIXL transfers require matching physical block sizes",
            ),
            ratio=ratio,
            at=base + "pull_worker.py:_read_blocks",
        )
    return Handshake("ok", None, ratio=ratio)


def region_sort_key(layer: str) -> tuple[tuple[int, int | str], ...]:
    """``_region_sort_key`` (``nixl/base_worker.py``): model-layer order, then name."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", layer)
    )


def region_groups(groups: Sequence[Any]) -> tuple[int, ...]:
    """The transfer group of each transfer layer in region order (one region per layer,
    as the engine mode registers them): ``groups`` in transfer order, each with
    ``layers``."""
    by_layer = {layer: i for i, g in enumerate(groups) for layer in g.layers}
    return tuple(by_layer[n] for n in sorted(by_layer, key=region_sort_key))


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
