"""kvconfig's connector mirrors against vLLM 0.33.0's own functions, run in this process.

Each test calls the vLLM function a mirror in ``kvconfig.mirror.connectors`` names, with
vLLM's own objects (specs, KV-cache configs, transfer topologies, regions), and compares
values and error texts. What needs a built engine (the connectors' own vote on real
layers, the compatibility hash of a real config, the handshake, the offloading config,
hybrid alignment over TP) is in ``tests/test_fleet_engine.py``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("vllm")

import torch

from kvconfig.errors import ConnectorRefusal
from kvconfig.mirror.connectors.mooncake import mooncake_region_lengths
from kvconfig.mirror.connectors.offloading import (
    file_mapper_base_path,
    file_mapper_fields,
    offload_blocks_per_chunk,
)
from kvconfig.mirror.connectors.registry import (
    multi_connector_layout,
    required_kv_cache_layout,
)
from kvconfig.mirror.connectors.scheduler import (
    HASH_ALGOS,
    CacheGroup,
    kv_cache_block_sizes,
    manager_block_size,
    none_hash_seed,
)
from kvconfig.mirror.connectors.stages import layer_index, pp_indices
from kvconfig.mirror.connectors.sync import logical_to_kernel_block_ids
from kvconfig.mirror.connectors.topology import block_size_ratio, tp_ratio

pytestmark = pytest.mark.vllm


def _attention(block: int, heads: int = 8, head: int = 128) -> Any:
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    return FullAttentionSpec(
        block_size=block, num_kv_heads=heads, head_size=head, dtype=torch.bfloat16
    )


def _mamba(block: int, mode: str = "align") -> Any:
    from vllm.v1.kv_cache_interface import MambaSpec

    return MambaSpec(
        block_size=block,
        shapes=((4, 64), (8, 16, 16)),
        dtypes=(torch.bfloat16, torch.float32),
        mamba_cache_mode=mode,
    )


def _kv_config(specs: list[Any]) -> Any:
    from vllm.v1.kv_cache_interface import KVCacheConfig, KVCacheGroupSpec

    groups = [KVCacheGroupSpec([f"layers.{i}.attn"], s) for i, s in enumerate(specs)]
    return KVCacheConfig(num_blocks=100, kv_cache_tensors=[], kv_cache_groups=groups)


# ---------------------------------------------------------------- the handshake's arithmetic


def _topology(tp_size: int, block_size: int) -> Any:
    """vLLM's ``TransferTopology`` of a local engine of ``tp_size`` ranks and ``block_size``."""
    from vllm.distributed.kv_transfer.kv_connector.utils import TransferTopology

    return TransferTopology(
        tp_rank=0,
        tp_size=tp_size,
        block_size=block_size,
        engine_id="local",
        is_mla=False,
        is_mamba=False,
        total_num_kv_heads=8,
        attn_backends=[],
    )


def _same_outcome(theirs: Callable[[], Any], mine: Callable[[], Any]) -> None:
    """vLLM's value or assertion text, and kvconfig's value or refusal text, are equal."""
    try:
        expected = theirs()
    except AssertionError as err:
        expected = str(err)
    try:
        got = mine()
    except ConnectorRefusal as err:
        got = err.message
    assert got == expected


@pytest.mark.parametrize(
    ("local", "remote"), [(128, 64), (64, 128), (576, 320), (320, 576), (64, 64), (96, 32)]
)
def test_block_size_ratio(local: int, remote: int) -> None:
    topo = _topology(1, local)
    _same_outcome(lambda: topo.block_size_ratio(remote), lambda: block_size_ratio(local, remote))


@pytest.mark.parametrize(("local", "remote"), [(1, 2), (2, 1), (4, 8), (8, 4), (3, 2), (2, 3)])
def test_tp_ratio(local: int, remote: int) -> None:
    topo = _topology(local, 16)
    _same_outcome(lambda: topo.tp_ratio(remote), lambda: tp_ratio(local, remote))


@pytest.mark.parametrize("ratio", [1, 2, 9])
def test_nixl_and_mooncake_expand_block_ids_as_vllm(ratio: int) -> None:
    from vllm.distributed.kv_transfer.kv_connector.v1.mooncake.mooncake_connector import (
        MooncakeConnectorWorker,
    )
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl.base_worker import (
        NixlBaseConnectorWorker,
    )

    config = _kv_config([_mamba(576), _attention(576)])
    ids = [[3, 4], [1, 7, 8]]
    nixl: Any = object.__new__(NixlBaseConnectorWorker)
    nixl.kv_cache_config = config
    mooncake: Any = object.__new__(MooncakeConnectorWorker)
    mooncake.shutdown = lambda: None  # its __del__ shuts down what this bare worker lacks
    nixl.shutdown = lambda: None
    mooncake.kv_cache_config = config
    mooncake._physical_blocks_per_logical_kv_block = ratio
    mine = logical_to_kernel_block_ids(ids, ratio, frozenset({0}))
    assert nixl._logical_to_kernel_block_ids(ids, ratio) == mine
    assert mooncake._logical_to_kernel_block_ids(ids) == mine


def _region(kv_block_len: int) -> Any:
    from vllm.distributed.kv_transfer.kv_connector.v1.mooncake.mooncake_connector import (
        TransferRegion,
    )

    return TransferRegion("layers.0.attn", 0, 0, 2 * kv_block_len, kv_block_len)


@pytest.mark.parametrize(
    ("local", "remote", "ltp", "rtp"),
    [
        (4096, 4096, 1, 1),
        (4096, 8192, 1, 1),
        (4096, 8192, 2, 1),
        (8192, 4096, 1, 2),
        (100, 300, 2, 1),
    ],
)
@pytest.mark.parametrize(
    ("heads", "replicated"), [(8, False), (8, True), (None, False), (None, True), (1, True)]
)
def test_mooncake_compares_byte_lengths_only(  # noqa: PLR0917 - one per parameter
    local: int, remote: int, ltp: int, rtp: int, heads: int | None, replicated: bool
) -> None:
    """Including the replicated producer (an MLA or Mamba producer passes no head count:
    a replicated one is not checked)."""
    from vllm.distributed.kv_transfer.kv_connector.v1.mooncake.mooncake_connector import (
        _validate_asymmetric_region_lengths,
    )

    theirs = _validate_asymmetric_region_lengths(
        [_region(local)], [_region(remote)], ltp, rtp, replicated, total_num_kv_heads=heads
    )
    mine = mooncake_region_lengths(local, remote, ltp, rtp, heads, producer_replicated=replicated)
    assert mine == theirs


# ---------------------------------------------------------------- hashes


# NIXL's compatibility hash is compared where kvconfig derives its factors from a
# deployment and vLLM computes it on the engine's real VllmConfig:
# tests/test_fleet_mirror_fixes.py and tests/test_fleet_engine.py.


@pytest.mark.parametrize("algo", HASH_ALGOS)
@pytest.mark.parametrize("seed", [None, "0", "42"])
def test_none_hash_seed(algo: str, seed: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import resolve_none_hash_seed

    if seed is None:
        monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    else:
        monkeypatch.setenv("PYTHONHASHSEED", seed)
    theirs = resolve_none_hash_seed(get_hash_fn_by_name(algo))
    mine = none_hash_seed(algo, seed)
    if mine is None:  # random per process: two calls differ
        assert theirs != resolve_none_hash_seed(get_hash_fn_by_name(algo))
    else:
        assert theirs == mine


# ---------------------------------------------------------------- block sizes the engine reports


CASES = {
    "one-group": ([_attention(64)], 1, None),
    "one-group-dcp": ([_attention(64)], 4, None),
    "unit-equal": ([_attention(64)], 1, 64),
    "unit-wrong": ([_attention(64)], 1, 32),
    "hybrid": ([_mamba(576), _attention(576)], 1, None),
    "hybrid-unit": ([_mamba(576), _attention(576)], 1, 64),
    "hybrid-bad-unit": ([_mamba(576), _attention(576)], 1, 100),
    "hybrid-no-align": ([_mamba(576, "none"), _attention(576)], 1, 100),
    "two-attention": ([_attention(64), _attention(128)], 2, None),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("prefix", [True, False])
def test_kv_cache_block_sizes(case: str, prefix: bool) -> None:
    from vllm.v1.core.kv_cache_utils import resolve_dcp_kv_block_size, resolve_kv_cache_block_sizes

    specs, dcp, unit = CASES[case]
    config = _kv_config(specs)
    ns = types.SimpleNamespace
    vllm_config = ns(
        cache_config=ns(
            block_size=min(s.block_size for s in specs),
            prefix_match_unit=unit,
            enable_prefix_caching=prefix,
        ),
        parallel_config=ns(decode_context_parallel_size=dcp),
        kv_transfer_config=None,
    )
    try:
        theirs: Any = resolve_kv_cache_block_sizes(config, vllm_config)
    except ValueError as err:
        theirs = str(err)
    groups = [
        CacheGroup(
            block_size=s.block_size,
            dcp_sharded=s.dcp_sharded,
            full_attention=not hasattr(s, "shapes"),
            mamba_align=(s.mamba_cache_mode == "align") if hasattr(s, "shapes") else None,
        )
        for s in specs
    ]
    try:
        mine: Any = kv_cache_block_sizes(
            groups,
            cache_block_size=min(s.block_size for s in specs),
            dcp=dcp,
            prefix_match_unit=unit,
            prefix_caching=prefix,
            connector=False,
        )
    except ConnectorRefusal as err:
        mine = err.message
    assert mine == theirs
    for s, g in zip(specs, groups, strict=True):
        assert manager_block_size(g, dcp) == resolve_dcp_kv_block_size(s, dcp)


# ---------------------------------------------------------------- offload tiers, stages, layouts


@pytest.mark.parametrize("tokens", [64, 128])
@pytest.mark.parametrize("agnostic", [False, True])
def test_file_tier_namespace(tokens: int, agnostic: bool) -> None:
    from vllm.v1.kv_offload.file_mapper import FileMapper

    groups = [{"tokens_per_block": tokens, "layer_names": ["model.layers.0.self_attn.attn"]}]
    mapper = FileMapper(
        root_dir="/mnt/kv",
        model_name="../models/qwen3-8b",
        tokens_per_hash=tokens,
        blocks_per_file=4,
        tp_size=2,
        pp_size=1,
        pcp_size=1,
        dcp_size=1,
        rank=0,
        dtype="bfloat16",
        kv_cache_groups=groups,
        parallel_agnostic=agnostic,
    )
    fields = file_mapper_fields(
        model_name="../models/qwen3-8b",
        tokens_per_hash=tokens,
        blocks_per_file=4,
        tp=2,
        pp=1,
        pcp=1,
        dcp=1,
        dtype="bfloat16",
        groups=[(tokens, ["model.layers.0.self_attn.attn"])],
        parallel_agnostic=agnostic,
    )
    assert fields == mapper.get_run_config()
    assert file_mapper_base_path("/mnt/kv", fields) == mapper.base_path


@pytest.mark.parametrize(("layers", "size"), [(36, 2), (36, 5), (32, 3), (7, 4), (52, 8)])
def test_pipeline_stages(layers: int, size: int) -> None:
    from vllm.distributed.utils import get_pp_indices

    for rank in range(size):
        start, end = get_pp_indices(layers, rank, size)
        assert pp_indices(layers, rank, size) == range(start, end)


def test_pipeline_partition_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.distributed.utils import get_pp_indices

    monkeypatch.setenv("VLLM_PP_LAYER_PARTITION", "20,16")
    for rank in range(2):
        start, end = get_pp_indices(36, rank, 2)
        assert pp_indices(36, rank, 2, "20,16") == range(start, end)


@pytest.mark.parametrize(
    "name", ["model.layers.12.self_attn.attn", "language_model.model.layers.3.linear_attn"]
)
def test_layer_index(name: str) -> None:
    from vllm.model_executor.models.utils import extract_layer_index

    assert layer_index(name) == extract_layer_index(name)


CONNECTOR_CLASSES = {
    "NixlConnector": "vllm.distributed.kv_transfer.kv_connector.v1.nixl.connector.NixlConnector",
    "MooncakeConnector": "vllm.distributed.kv_transfer.kv_connector.v1.mooncake."
    "mooncake_connector.MooncakeConnector",
    "OffloadingConnector": "vllm.distributed.kv_transfer.kv_connector.v1.offloading_connector."
    "OffloadingConnector",
    "HiSparseConnector": "vllm.distributed.kv_transfer.kv_connector.v1.hisparse.connector."
    "HiSparseConnector",
    "ExampleHiddenStatesConnector": "vllm.distributed.kv_transfer.kv_connector.v1."
    "example_hidden_states_connector.ExampleHiddenStatesConnector",
}


def _class(path: str) -> Any:
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("connector", sorted(CONNECTOR_CLASSES))
@pytest.mark.parametrize("mla", [False, True])
def test_required_layouts(connector: str, mla: bool) -> None:
    ns = types.SimpleNamespace
    config = ns(model_config=ns(use_mla=mla), attention_config=ns(hisparse_config=None))
    theirs = _class(CONNECTOR_CLASSES[connector]).get_required_kvcache_layout(config)
    assert required_kv_cache_layout(connector, use_mla=mla, hisparse=False) == theirs


def test_multi_connector_layouts() -> None:
    from vllm.config import KVTransferConfig
    from vllm.distributed.kv_transfer.kv_connector.v1.multi_connector import MultiConnector

    ns = types.SimpleNamespace
    children = [
        {"kv_connector": "NixlConnector", "kv_role": "kv_producer"},
        {"kv_connector": "ExampleHiddenStatesConnector", "kv_role": "kv_producer"},
    ]
    config = ns(
        model_config=ns(use_mla=False),
        attention_config=ns(hisparse_config=None),
        kv_transfer_config=KVTransferConfig(
            kv_connector="MultiConnector",
            kv_role="kv_producer",
            kv_connector_extra_config={"connectors": children},
        ),
    )
    with pytest.raises(ValueError) as err:
        MultiConnector.get_required_kvcache_layout(config)
    with pytest.raises(ConnectorRefusal) as mine:
        multi_connector_layout(["LBHNC", "LBNHC"])
    # vLLM lists the layouts of a set, in no fixed order
    assert sorted(str(err.value)) == sorted(mine.value.message)


@pytest.mark.parametrize(
    ("extra", "tokens"),
    [
        ({}, [64]),
        ({"block_size": 256}, [64]),
        ({"block_size": 100}, [64]),
        ({"blocks_per_chunk": 3}, [64, 64]),
        ({"block_size": 128, "blocks_per_chunk": 2}, [64]),
        ({"block_size": 128}, [64, 128]),
        ({"blocks_per_chunk": 0}, [64]),
    ],
)
def test_offload_chunks(extra: dict[str, Any], tokens: list[int]) -> None:
    """``build_offloading_config`` on a KV-cache config vLLM's own classes make."""
    from vllm.config import KVTransferConfig
    from vllm.distributed.kv_transfer.kv_connector.v1.offloading.config import (
        build_offloading_config,
    )

    config = _kv_config([_attention(t) for t in tokens])
    ns = types.SimpleNamespace
    vllm_config = ns(
        kv_transfer_config=KVTransferConfig(
            kv_connector="OffloadingConnector",
            kv_role="kv_both",
            engine_id="e",
            kv_connector_extra_config=extra,
        ),
        parallel_config=ns(
            decode_context_parallel_size=1,
            prefill_context_parallel_size=1,
            tensor_parallel_size=1,
            pipeline_parallel_size=1,
            world_size=1,
            distributed_executor_backend="uni",
            nnodes_within_dp=1,
            rank=0,
            data_parallel_index=0,
            data_parallel_size=1,
            data_parallel_rank_local=0,
        ),
        cache_config=ns(
            block_size=min(tokens),
            prefix_match_unit=None,
            enable_prefix_caching=True,
            cache_dtype="auto",
            kv_cache_layout=None,
        ),
        model_config=ns(
            use_mla=False,
            dtype=torch.bfloat16,
            model="m",
            max_model_len=4096,
            get_total_num_kv_heads=lambda: 8,
        ),
        use_v2_model_runner=True,
        kv_events_config=None,
    )
    try:
        theirs: Any = build_offloading_config(vllm_config, config).cache.blocks_per_chunk
    except (ValueError, AssertionError) as err:
        theirs = str(err)
    try:
        mine: Any = offload_blocks_per_chunk(extra, tokens)
    except ConnectorRefusal as err:
        mine = err.message
    assert mine == theirs
