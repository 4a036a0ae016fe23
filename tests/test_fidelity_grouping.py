"""``kvconfig.mirror.grouping`` against vLLM 0.33.0's ``get_kv_cache_groups`` on random spec mixes.

Each drawn layer is one of a few spec descriptions (full attention, sliding window, MLA,
Mamba, with their own heads, dtypes, alignments and block sizes). The same description
builds kvconfig's ``Spec`` and vLLM's real spec object; both groupings must give the
same groups (layers in order, kind, B) or both must fail. Covers uniform specs,
uniform types, page unification (scaling and padding), bucketing and
``layers[i::num_groups]`` splitting with padding, the 1.5x rule, the MLA + sliding-window
fallback, ``--disable-hybrid-kv-cache-manager`` and block-outermost packing.
"""

from __future__ import annotations

import types
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("vllm")

from kvconfig.mirror.grouping import GroupingError, group_specs
from kvconfig.mirror.specs import Spec

pytestmark = pytest.mark.vllm

_DTYPES = {"bfloat16": 2, "float16": 2, "uint8": 1}

Desc = tuple[Any, ...]
"""(cls, block_size, heads, head_size, dtype, window, alignment, state)."""


def _ours(d: Desc) -> Spec:
    cls, block, heads, head, dtype, window, align, state = d
    alignment = None if align is None else ("multiple_of", align)
    size = _DTYPES[dtype]
    if cls == "mamba":
        return Spec("mamba", block, content=state, fields=("mamba2", "none", 0, 0, None))
    if cls == "mla":
        fields: tuple[object, ...] = (head, 0, dtype, "none", 1, "auto", None, "sparse", False)
        return Spec("mla", block, 1, head * size, alignment=alignment, fields=fields)
    fields = (head, head, dtype, "none", None)
    spec_cls = "sliding_window" if cls == "sw" else "full"
    return Spec(
        spec_cls,
        block,
        heads,
        2 * head * size,
        alignment=alignment,
        window=window if cls == "sw" else None,
        fields=fields,
    )


def _theirs(d: Desc) -> Any:
    import torch
    from vllm.v1.attention.backend import MultipleOf
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        MambaSpec,
        MLAAttentionSpec,
        SlidingWindowSpec,
    )

    cls, block, heads, head, dtype, window, align, state = d
    torch_dtype = getattr(torch, dtype)
    alignment = None if align is None else MultipleOf(align)
    if cls == "mamba":
        return MambaSpec(shapes=((state,),), dtypes=(torch.uint8,), block_size=block)
    if cls == "mla":
        return MLAAttentionSpec(
            block_size=block,
            num_kv_heads=1,
            head_size=head,
            dtype=torch_dtype,
            max_tp_shards=1,
            cache_dtype_str="auto",
            block_stride_alignment=alignment,
        )
    if cls == "sw":
        return SlidingWindowSpec(
            block_size=block,
            num_kv_heads=heads,
            head_size=head,
            dtype=torch_dtype,
            sliding_window=window,
            block_stride_alignment=alignment,
        )
    return FullAttentionSpec(
        block_size=block,
        num_kv_heads=heads,
        head_size=head,
        dtype=torch_dtype,
        block_stride_alignment=alignment,
    )


def _config(disable_hybrid: bool, layout: str) -> Any:
    from vllm.v1.kv_cache_layout import KVCacheLayout

    cache = types.SimpleNamespace(get_resolved_kv_cache_layout=lambda: KVCacheLayout[layout])
    return types.SimpleNamespace(
        scheduler_config=types.SimpleNamespace(disable_hybrid_kv_cache_manager=disable_hybrid),
        attention_config=types.SimpleNamespace(hisparse_config=None),
        cache_config=cache,
    )


def _vllm_groups(descs: list[Desc], disable_hybrid: bool, layout: str) -> Any:
    from vllm.v1.core.kv_cache_planning import get_kv_cache_groups
    from vllm.v1.kv_cache_interface import get_kv_cache_spec_kind

    specs = {f"layers.{i}": _theirs(d) for i, d in enumerate(descs)}
    groups = get_kv_cache_groups(_config(disable_hybrid, layout), specs)
    return [
        (
            tuple(g.layer_names),
            get_kv_cache_spec_kind(g.kv_cache_spec).value,
            g.kv_cache_spec.block_size,
        )
        for g in groups
    ]


def _kvconfig_groups(descs: list[Desc], disable_hybrid: bool, layout: str) -> Any:
    specs = {f"layers.{i}": _ours(d) for i, d in enumerate(descs)}
    groups = group_specs(
        specs, disable_hybrid=disable_hybrid, block_outermost=layout.startswith("B")
    )
    return [(g.layers, g.kind, g.block_size) for g in groups]


_desc = st.one_of(
    st.tuples(
        st.just("full"),
        st.sampled_from([16, 32, 64]),
        st.sampled_from([1, 2, 8]),
        st.sampled_from([64, 128]),
        st.sampled_from(["bfloat16", "uint8"]),
        st.none(),
        st.sampled_from([None, 64, 128]),
        st.just(0),
    ),
    st.tuples(
        st.just("sw"),
        st.sampled_from([16, 32, 64]),
        st.sampled_from([1, 2, 8]),
        st.sampled_from([64, 128]),
        st.sampled_from(["bfloat16", "uint8"]),
        st.sampled_from([128, 1024]),
        st.sampled_from([None, 64]),
        st.just(0),
    ),
    st.tuples(
        st.just("mla"),
        st.sampled_from([16, 64]),
        st.just(1),
        st.sampled_from([576, 132]),
        st.sampled_from(["bfloat16", "uint8"]),
        st.none(),
        st.sampled_from([None, 64]),
        st.just(0),
    ),
    st.tuples(
        st.just("mamba"),
        st.sampled_from([16, 64]),
        st.just(1),
        st.just(1),
        st.just("uint8"),
        st.none(),
        st.none(),
        st.sampled_from([4096, 65536, 131072]),
    ),
)


@st.composite
def _layouts(draw: Any) -> list[Desc]:
    kinds = draw(st.lists(_desc, min_size=1, max_size=3))
    extra = draw(st.lists(st.sampled_from(kinds), max_size=14))
    return list(draw(st.permutations(kinds + extra)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    descs=_layouts(),
    disable_hybrid=st.booleans(),
    layout=st.sampled_from(["LBNHC", "LBNHC", "BLHNC"]),
)
def test_grouping_matches_vllm(descs: list[Desc], disable_hybrid: bool, layout: str) -> None:
    try:
        theirs = _vllm_groups(descs, disable_hybrid, layout)
    except (ValueError, NotImplementedError, AssertionError, StopIteration) as err:
        with pytest.raises(GroupingError):
            _kvconfig_groups(descs, disable_hybrid, layout)
        assert str(err)
        return
    assert _kvconfig_groups(descs, disable_hybrid, layout) == theirs


@pytest.mark.parametrize(
    ("counts", "expected_groups"),
    [((12, 13), 2), ((12, 17), 2), ((12, 18), 3), ((10, 52), 7), ((1, 18, 18), 37)],
)
def test_group_size_rule(counts: tuple[int, ...], expected_groups: int) -> None:
    """The smallest bucket sets the group size, unless the largest is under 1.5x it."""
    kinds: list[Desc] = [
        ("sw", 16, 8, 64, "bfloat16", 128, None, 0),
        ("full", 16, 8, 64, "bfloat16", None, None, 0),
        ("full", 16, 8, 64, "bfloat16", None, 64, 0),  # another backend's alignment
    ]
    descs: list[Desc] = []
    for n, kind in zip(counts, kinds, strict=False):
        descs += [kind] * n
    theirs = _vllm_groups(descs, False, "LBNHC")
    assert len(theirs) == expected_groups
    assert _kvconfig_groups(descs, False, "LBNHC") == theirs
