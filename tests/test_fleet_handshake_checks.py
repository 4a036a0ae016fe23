"""NIXL's handshake validation, vLLM 0.33.0's own, against kvconfig's mirror.

vLLM's ``NixlPullConnectorWorker._validate_remote_agent_handshake`` runs on a worker whose
state is what ``__init__`` and ``register_kv_caches`` leave for the checks it makes: a
real ``TransferTopology`` with the peer registered, real ``FullAttentionSpec`` and
``MLAAttentionSpec`` layer specs, region lengths from those specs' page sizes, the
head-sharded draft regions from vLLM's own ``_resolve_head_sharded_draft_kv_heads`` and
``_get_head_sharded_draft_regions``, and a real ``NixlAgentMetadata`` from the peer. Each
case describes two workers (TP, DCP, block size, pages, heads, layout, draft, NVFP4,
region groups); vLLM's outcome and ``kvconfig.mirror.connectors.nixl.nixl_handshake``'s
are compared: the same exception type and text, or both accept.

The checks: DCP region pulls with split pages, the head-sharded draft of an MLA target
(TP, DCP, layout), NVFP4 re-sharding, per-region replication in the TP split (a GQA
target's MLA draft regions), Mamba with MLA across DCP sizes, the permute with HMA.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("vllm")

from kvconfig.mirror.connectors.nixl import NixlSide, nixl_handshake

pytestmark = pytest.mark.vllm

TARGET_LAYERS = 2


@dataclass(frozen=True)
class Side:
    """One NIXL worker of a case."""

    tp: int = 1
    dcp: int = 1
    block: int = 16
    """Kernel block size (the worker's ``block_size`` after its vote)."""
    pages: int = 1
    layout: str = "LBHNC"
    groups: tuple[int, ...] = ()
    """Transfer group per region (default: all in group 0)."""


@dataclass(frozen=True)
class Case:
    local: Side
    remote: Side
    heads: int = 8
    """The target's total KV heads (GQA)."""
    mla: bool = False
    mamba: bool = False
    draft: str | None = None
    """``gqa``: a non-MLA draft (8 KV heads) under an MLA target; ``mla``: an MLA draft
    under a GQA target (REPLICATE regions)."""
    nvfp4: bool = False
    hma: bool = False
    permute: bool = False


CASES = {
    "same": Case(Side(tp=2), Side(tp=2)),
    "dcp-region-pulls-split-pages": Case(
        Side(tp=2, dcp=2, pages=2, groups=(0, 1)),
        Side(tp=2, dcp=2, pages=2, groups=(0, 0)),
        mla=True,
    ),
    "dcp-region-pulls-whole-pages": Case(
        Side(tp=2, dcp=2, groups=(0, 1)), Side(tp=2, dcp=2, groups=(0, 0)), mla=True
    ),
    "draft-smaller-local-tp": Case(Side(tp=1), Side(tp=2), mla=True, draft="gqa"),
    "draft-dcp": Case(Side(tp=2, dcp=2), Side(tp=2), mla=True, draft="gqa"),
    "draft-layout-not-contiguous": Case(
        Side(tp=2, layout="LBNHC"), Side(tp=1, layout="LBNHC"), mla=True, draft="gqa"
    ),
    "draft-layouts-differ": Case(Side(tp=2), Side(tp=1, layout="LBNHC"), mla=True, draft="gqa"),
    "draft-contiguous": Case(Side(tp=2), Side(tp=1), mla=True, draft="gqa"),
    "draft-same-tp": Case(Side(tp=2, layout="LBNHC"), Side(tp=2), mla=True, draft="gqa"),
    "nvfp4-resharded": Case(Side(tp=2), Side(tp=1), nvfp4=True),
    "nvfp4-same-tp": Case(Side(tp=2), Side(tp=2), nvfp4=True),
    "nvfp4-replicated-heads": Case(Side(tp=8), Side(tp=4), heads=2, nvfp4=True),
    "mla-draft-tp-split": Case(Side(tp=1, block=32), Side(tp=2, block=16), draft="mla"),
    "mla-draft-larger-local-tp": Case(Side(tp=2, block=32), Side(tp=1, block=16), draft="mla"),
    "mamba-mla-dcp": Case(Side(tp=2), Side(tp=2, dcp=2), mla=True, mamba=True),
    "permute-with-hma": Case(
        Side(tp=2, layout="LBNHC"), Side(tp=2, layout="LBHNC"), hma=True, permute=True
    ),
}


def _names(case: Case) -> list[str]:
    n = TARGET_LAYERS + (1 if case.draft else 0)
    return [f"model.layers.{i}.self_attn.attn" for i in range(n)]


def _specs(case: Case, side: Side) -> dict[str, Any]:
    """The layer specs of one worker (its share of the heads), as vLLM builds them."""
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVQuantMode, MLAAttentionSpec

    logical = side.block * side.pages
    quant = KVQuantMode.NVFP4 if case.nvfp4 else KVQuantMode.NONE
    dtype = torch.uint8 if case.nvfp4 else torch.bfloat16

    def gqa(heads: int) -> Any:
        return FullAttentionSpec(
            block_size=logical,
            num_kv_heads=max(1, heads // side.tp),
            head_size=128,
            dtype=dtype,
            kv_quant_mode=quant,
        )

    def mla() -> Any:
        return MLAAttentionSpec(block_size=logical, num_kv_heads=1, head_size=576, dtype=dtype)

    out = {}
    for i, name in enumerate(_names(case)):
        draft = i >= TARGET_LAYERS
        if draft and case.draft == "gqa":
            out[name] = gqa(8)
        elif draft and case.draft == "mla":
            out[name] = mla()
        else:
            out[name] = mla() if case.mla else gqa(case.heads)
    return out


def _region_lens(case: Case, side: Side) -> list[int]:
    return [s.page_size_bytes // side.pages for s in _specs(case, side).values()]


def _groups(case: Case, side: Side) -> list[int]:
    return list(side.groups) or [0] * len(_names(case))


def _worker(case: Case) -> Any:
    """vLLM's pull worker, holding what its checks read, the peer registered."""
    from vllm.distributed.kv_transfer.kv_connector.utils import (
        EngineTransferInfo,
        TransferTopology,
    )
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl.pull_worker import (
        NixlPullConnectorWorker,
    )
    from vllm.v1.kv_cache_interface import MLAAttentionSpec

    local, remote = case.local, case.remote
    heads = 1 if case.mla else case.heads
    topo = TransferTopology(
        tp_rank=0,
        tp_size=local.tp,
        block_size=local.block,
        engine_id="local",
        is_mla=case.mla,
        is_mamba=case.mamba,
        total_num_kv_heads=heads,
        attn_backends=[],
        dcp_size=local.dcp,
    )
    topo.register_remote_engine(
        "remote",
        EngineTransferInfo(
            remote_tp_size=remote.tp,
            remote_block_len=_region_lens(case, remote)[0],
            remote_block_size=remote.block,
            remote_physical_blocks_per_logical=remote.pages,
            remote_dcp_size=remote.dcp,
        ),
    )
    specs = _specs(case, local)
    names = _names(case)
    draft_model = None
    if case.draft:
        draft_model = types.SimpleNamespace(
            use_mla=case.draft == "mla",
            get_total_num_kv_heads=lambda: 8,
            get_total_num_hidden_layers=lambda: 1,
        )
    w: Any = object.__new__(NixlPullConnectorWorker)
    w.__dict__.update(
        transfer_topo=topo,
        dcp_size=local.dcp,
        use_mla=case.mla,
        _has_mamba=case.mamba,
        _is_csa_linear=False,
        vllm_config=types.SimpleNamespace(
            speculative_config=types.SimpleNamespace(draft_model_config=draft_model)
            if draft_model
            else None,
            cache_config=types.SimpleNamespace(enable_prefix_caching=True),
        ),
        model_config=types.SimpleNamespace(get_total_num_hidden_layers=lambda: TARGET_LAYERS),
        _layer_specs=specs,
        region_names=names,
        _region_is_mla=[isinstance(s, MLAAttentionSpec) for s in specs.values()],
        region_group_ids=_groups(case, local),
        dst_region_group_ids={"remote": _groups(case, remote)},
        _physical_blocks_per_logical_kv_block=local.pages,
        use_host_buffer=False,
        kv_cache_layout=local.layout,
        host_buffer_kv_cache_layout=local.layout,
        kv_transfer_config=types.SimpleNamespace(enable_permute_local_kv=case.permute),
        enable_permute_local_kv=False,
        _is_hma_required=case.hma,
        backend_name="FLASH_ATTN",
        _transfer_layer_region_indices=(),
        _transfer_layer_names=(),
        block_len_per_layer=_region_lens(case, local),
        dst_num_blocks={"remote": 100},
    )
    w._head_sharded_draft_kv_heads = w._resolve_head_sharded_draft_kv_heads()
    w._head_sharded_draft_regions = w._get_head_sharded_draft_regions()
    return w


def _metadata(case: Case) -> Any:
    """What the peer advertises (``NixlAgentMetadata``)."""
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl.metadata import NixlAgentMetadata

    remote = case.remote
    lens = _region_lens(case, remote)
    n = len(lens)
    return NixlAgentMetadata(
        engine_id="remote",
        agent_metadata=b"peer",
        kv_caches_base_addr=[(i + 1) << 32 for i in range(n)],
        device_id=0,
        num_blocks=100,
        block_lens=lens,
        block_strides=list(lens),
        kv_cache_layout=remote.layout,
        block_size=remote.block,
        ssm_sizes=(0, 0),
        attn_backend_name="FLASH_ATTN",
        physical_blocks_per_logical_kv_block=remote.pages,
        region_num_blocks=[100] * n,
        region_group_ids=_groups(case, remote),
        region_names=_names(case),
        region_mem_types=["VRAM"] * n,
        dcp_size=remote.dcp,
        pcp_size=1,
    )


def _vllm(case: Case) -> tuple[str, str] | None:
    w = _worker(case)
    try:
        w._validate_remote_agent_handshake(_metadata(case), case.remote.tp, case.remote.dcp)
    except Exception as err:
        return type(err).__name__, str(err)
    return None


def _side(case: Case, side: Side, name: str) -> NixlSide:
    draft_heads = 8 if case.draft == "gqa" else None
    return NixlSide(
        engine=name,
        block_size=side.block,
        pages_per_block=side.pages,
        tp=side.tp,
        dcp=side.dcp,
        total_kv_heads=1 if case.mla else case.heads,
        use_mla=case.mla,
        has_mamba=case.mamba,
        hma=case.hma,
        kv_cache_layout=side.layout,
        enable_permute_local_kv=case.permute,
        region_groups=tuple(_groups(case, side)),
        draft_kv_heads=draft_heads,
        nvfp4=case.nvfp4,
    )


def _mine(case: Case) -> tuple[str, str] | None:
    out = nixl_handshake(_side(case, case.local, "local"), _side(case, case.remote, "remote"))
    if out.refusal is None:
        return None
    return out.refusal.error, out.refusal.message


#: the cases vLLM refuses, and the check kvconfig names
REFUSED = {
    "dcp-region-pulls-split-pages": "dcp",
    "draft-smaller-local-tp": "draft",
    "draft-dcp": "draft",
    "draft-layout-not-contiguous": "draft",
    "draft-layouts-differ": "draft",
    "nvfp4-resharded": "nvfp4",
    "mla-draft-tp-split": "tp-split",
    "mamba-mla-dcp": "dcp",
    "permute-with-hma": "layout",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_mirror_ends_the_handshake_as_vllm(name: str) -> None:
    case = CASES[name]
    theirs = _vllm(case)
    assert (theirs is not None) == (name in REFUSED), theirs
    assert _mine(case) == theirs
    if name in REFUSED:
        local = _side(case, case.local, "local")
        assert nixl_handshake(local, _side(case, case.remote, "remote")).check == REFUSED[name]


def test_the_draft_regions_are_vllms() -> None:
    """The head-sharded draft region exists only under an MLA target with a GQA draft."""
    assert _worker(CASES["draft-contiguous"])._head_sharded_draft_regions == {TARGET_LAYERS}
    assert _worker(CASES["mla-draft-larger-local-tp"])._head_sharded_draft_regions == set()
    assert _worker(CASES["same"])._head_sharded_draft_regions == set()
