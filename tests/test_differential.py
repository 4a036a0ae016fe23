"""Differential test: kvconfig's kernel block sizes vs vLLM's ``prepare_kernel_block_sizes``.

Random KV-cache configurations (seeded): one to four groups of full, sliding-window,
MLA, sliding-window MLA, Mamba, encoder-only and HiSparse specs; B from 1 to 4096;
packed and unpacked ``KVCacheTensor``s; backends drawn from the shipped catalog;
platforms and deployments emulated. vLLM's side runs the real function on real
``KVCacheConfig`` / ``KVCacheGroupSpec`` / ``KVCacheTensor`` /
``UniformTypeKVCacheSpecs`` objects and ``AttentionGroup``s of the real backend
classes with ``customize_attention_spec`` applied. kvconfig's side sees only plain
facts: catalog rules (``Entry.sizes``) and
:func:`kvconfig.mirror.dispatch.prepare_kernel_block_sizes`.
Values must be equal; errors must carry vLLM's exact text.

CI runs ``KVCONFIG_DIFF_N`` cases (default 2000). The full run:
``KVCONFIG_DIFF_N=10000 pytest -m slow tests/test_differential.py``
(``KVCONFIG_DIFF_SEED`` picks another seed; ``KVCONFIG_DIFF_VERSION`` another catalog,
for a venv with that vLLM).
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from kvconfig.errors import NoCommonKernelBlockSize
from kvconfig.mirror.catalog import CatalogData, Entry, SizeContext, load_catalog, size_context
from kvconfig.mirror.dispatch import GroupInput, SpecClass, prepare_kernel_block_sizes
from tools.catalog.grid import PLATFORMS, cache_dtypes

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

SEED = int(os.environ.get("KVCONFIG_DIFF_SEED", "33033"))
VERSION = os.environ.get("KVCONFIG_DIFF_VERSION", "0.33.0")

GROUP_KINDS = (
    "full",
    "sliding_window",
    "mla",
    "sliding_window_mla",
    "mamba",
    "encoder_only",
    "hisparse",
)
BACKEND_KINDS = {
    "full": ("attention", "other"),
    "sliding_window": ("attention", "other"),
    "encoder_only": ("attention",),
    "mla": ("mla", "sparse_mla", "indexer"),
    "sliding_window_mla": ("sliding_window_mla",),
    "mamba": ("state",),
}
HEAD_PAIRS = (
    (64, 64),
    (96, 96),
    (112, 112),
    (128, 128),
    (192, 128),
    (256, 256),
    (256, 128),
    (512, 512),
    (80, 80),
)
MLA_HEADS = (576, 512, 128, 64)
TARGET_HEADS = ((32, 8), (32, 32), (64, 8), (8, 1), (28, 4), (40, 8), (16, 16), (12, 8))
BLOCKS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 2048, 4096)


@dataclass
class Layer:
    """One attention group as plain facts, plus the real objects for vLLM."""

    entry: Entry
    head_size: int
    head_size_v: int
    kv_dtype: str
    tokens_per_state: int


@dataclass
class Case:
    """A random deployment and its KV-cache groups."""

    vendor: str
    capability: tuple[int, int] | None
    heads: tuple[int, int]
    cache_dtype: str
    use_trtllm: bool | None
    cubins: bool
    fa_forced: int | None
    batch_invariant: bool
    groups: list[tuple[str, int, list[Layer]]] = field(default_factory=list)
    tensors: list[tuple[list[str], bool]] = field(default_factory=list)

    @property
    def use_mla(self) -> bool:
        return any(kind in ("mla", "sliding_window_mla") for kind, _, _ in self.groups)


def _draw_case(rng: random.Random, pools: dict[str, list[Entry]], dtypes: list[str]) -> Case:
    vendor, cap = rng.choice(PLATFORMS)
    common = ("auto", "fp8", "bfloat16", "fp8_e4m3")
    case = Case(
        vendor=vendor,
        capability=cap,
        heads=rng.choice(TARGET_HEADS),
        cache_dtype=rng.choice(common) if rng.random() < 0.7 else rng.choice(dtypes),
        use_trtllm=rng.choice((None, None, False, True)),
        cubins=rng.random() < 0.75,
        fa_forced=rng.choice((None, None, None, 2, 3, 4)),
        batch_invariant=rng.random() < 0.1,
    )
    for gid in range(rng.randint(1, 4)):
        kind = rng.choice(GROUP_KINDS)
        block = rng.choice(BLOCKS) if rng.random() < 0.85 else rng.randint(1, 4096)
        layers: list[Layer] = []
        if kind in BACKEND_KINDS:
            for _ in range(rng.randint(1, 3) if kind != "mamba" else 1):
                entry = rng.choice(pools[kind])
                if kind in ("mla", "sliding_window_mla"):
                    hs, hv = rng.choice(MLA_HEADS), 0
                else:
                    hs, hv = rng.choice(HEAD_PAIRS)
                dtype = case.cache_dtype if rng.random() < 0.8 else rng.choice(dtypes)
                tps = rng.choice((1, 1, 4, 16)) if kind == "mla" else 1
                layers.append(Layer(entry, hs, hv, dtype, tps))
        case.groups.append((kind, block, layers))
        names = _layer_names(gid, kind, layers)
        case.tensors.append((names, rng.random() < 0.25))
    if len(case.groups) > 1 and rng.random() < 0.2:
        a, b = rng.sample(range(len(case.groups)), 2)
        shared = _layer_names(a, case.groups[a][0], case.groups[a][2])[:1]
        shared += _layer_names(b, case.groups[b][0], case.groups[b][2])[:1]
        case.tensors.append((shared, rng.random() < 0.5))
    return case


def _layer_names(gid: int, kind: str, layers: list[Layer]) -> list[str]:
    count = max(1, len(layers))
    return [f"model.g{gid}.{kind}.{j}" for j in range(count)]


# -- vLLM's side ------------------------------------------------------------------------


def _emulation(case: Case) -> Any:
    from tools.catalog import emulate

    q, kv = case.heads
    return emulate.Emulation(
        vendor=case.vendor,
        capability=case.capability,
        num_heads=q,
        num_kv_heads=kv,
        cache_dtype=case.cache_dtype,
        use_trtllm_attention=case.use_trtllm,
        flash_attn_version=case.fa_forced,
        cubins=case.cubins,
        batch_invariant=case.batch_invariant,
        use_mla=case.use_mla,
    )


def _vllm_spec(kind: str, block: int, layer: Layer | None) -> Any:
    import torch
    from vllm.v1.kv_cache_interface import (
        EncoderOnlyAttentionSpec,
        FullAttentionSpec,
        HiSparseResidentSpec,
        MambaSpec,
        MLAAttentionSpec,
        SlidingWindowMLASpec,
        SlidingWindowSpec,
        get_kv_quant_mode,
    )

    if kind == "mamba":
        return MambaSpec(block_size=block, shapes=((4, 16),), dtypes=(torch.bfloat16,))
    if kind == "hisparse":
        return HiSparseResidentSpec(block_size=block, page_size=4096)
    assert layer is not None
    common: dict[str, Any] = {
        "block_size": block,
        "head_size": layer.head_size,
        "dtype": torch.bfloat16,
        "kv_quant_mode": get_kv_quant_mode(layer.kv_dtype),
    }
    if kind == "mla":
        return MLAAttentionSpec(
            num_kv_heads=1,
            cache_dtype_str=layer.kv_dtype,
            tokens_per_state=layer.tokens_per_state,
            **common,
        )
    if kind == "sliding_window_mla":
        return SlidingWindowMLASpec(
            num_kv_heads=1, sliding_window=128, cache_dtype_str=layer.kv_dtype, **common
        )
    if kind == "sliding_window":
        return SlidingWindowSpec(
            num_kv_heads=8, head_size_v=layer.head_size_v, sliding_window=1024, **common
        )
    if kind == "encoder_only":
        return EncoderOnlyAttentionSpec(num_kv_heads=8, head_size_v=layer.head_size_v, **common)
    return FullAttentionSpec(num_kv_heads=8, head_size_v=layer.head_size_v, **common)


class Rejected(Exception):
    """A backend's ``customize_spec`` refused the layer: vLLM fails before the vote."""


def _vllm_run(case: Case, classes: dict[str, Any]) -> tuple[list[int] | None, str | None]:
    from vllm.v1.kv_cache_interface import (
        AttentionSpec,
        KVCacheConfig,
        KVCacheGroupSpec,
        KVCacheTensor,
        UniformTypeKVCacheSpecs,
    )
    from vllm.v1.worker.utils import (
        AttentionGroup,
        customize_attention_spec,
    )
    from vllm.v1.worker.utils import (
        prepare_kernel_block_sizes as vllm_prepare,
    )

    groups = []
    attn_groups: list[list[Any]] = []
    for gid, (kind, block, layers) in enumerate(case.groups):
        names = _layer_names(gid, kind, layers)
        mine: list[Any] = []
        specs: dict[str, Any] = {}
        if not layers:
            spec = _vllm_spec(kind, block, None)
            groups.append(KVCacheGroupSpec(layer_names=names, kv_cache_spec=spec))
            attn_groups.append([])
            continue
        for name, layer in zip(names, layers, strict=True):
            backend = classes[layer.entry.class_path]
            spec = _vllm_spec(kind, block, layer)
            if isinstance(spec, AttentionSpec):
                try:
                    spec = customize_attention_spec(backend, spec)
                except (ValueError, AssertionError, KeyError) as err:
                    raise Rejected(str(err)) from err
            specs[name] = spec
            mine.append(
                AttentionGroup(
                    backend=backend, layer_names=[name], kv_cache_spec=spec, kv_cache_group_id=gid
                )
            )
        distinct = list(dict.fromkeys(specs.values()))
        if len(distinct) == 1 and len(specs) == 1:
            group_spec = distinct[0]
        else:
            group_spec = UniformTypeKVCacheSpecs(block_size=block, kv_cache_specs=specs)
        groups.append(KVCacheGroupSpec(layer_names=names, kv_cache_spec=group_spec))
        attn_groups.append(mine)
    tensors = [
        KVCacheTensor(
            size=1 << 20,
            layers=names,
            layer_stride=4096 if packed else 4096 * 64,
            block_stride=4096 * len(names) * 2 if packed else 4096,
        )
        for names, packed in case.tensors
    ]
    config = KVCacheConfig(num_blocks=64, kv_cache_tensors=tensors, kv_cache_groups=groups)
    try:
        return vllm_prepare(config, attn_groups), None
    except ValueError as err:
        return None, str(err)


# -- kvconfig's side ---------------------------------------------------------------------


def _context(case: Case, layer: Layer) -> SizeContext:
    q, kv = case.heads
    return size_context(
        vendor=case.vendor,
        capability=case.capability,
        layer_cache_dtype=layer.kv_dtype,
        model_cache_dtype=case.cache_dtype,
        head_size=layer.head_size,
        head_size_v=layer.head_size_v or None,
        target_heads=(q, 1 if case.use_mla else kv),
        use_trtllm_attention=case.use_trtllm,
        cubins=case.cubins,
        batch_invariant=case.batch_invariant,
        flash_attn_version=case.fa_forced,
        tokens_per_state=layer.tokens_per_state,
    )


_SPEC_CLASS: dict[str, SpecClass] = {
    "full": "attention",
    "sliding_window": "attention",
    "mla": "attention",
    "sliding_window_mla": "attention",
    "encoder_only": "encoder_only",
    "mamba": "mamba",
    "hisparse": "other",
}


def _kvconfig_run(case: Case) -> tuple[list[int] | None, str | None]:
    inputs = []
    for gid, (kind, block, layers) in enumerate(case.groups):
        names = set(_layer_names(gid, kind, layers))
        packed = any(p and not names.isdisjoint(t) for t, p in case.tensors)
        voters = tuple((l.entry.name, l.entry.sizes(_context(case, l))) for l in layers)
        inputs.append(
            GroupInput(
                spec=_SPEC_CLASS[kind],
                block_size=block,
                has_layer_views=kind != "hisparse",
                packed=packed,
                voters=voters if kind != "mamba" else (),
            )
        )
    try:
        return prepare_kernel_block_sizes(inputs), None
    except NoCommonKernelBlockSize as err:
        return None, str(err)


# -- the test -----------------------------------------------------------------------------


def _pools(catalog: CatalogData) -> dict[str, list[Entry]]:
    usable = [e for e in catalog.entries if e.introspected and e.name]
    return {
        kind: sorted((e for e in usable if e.serves in kinds), key=lambda e: e.class_path)
        for kind, kinds in BACKEND_KINDS.items()
    }


def run_differential(n: int, seed: int) -> Counter[str]:
    """Compare ``n`` random cases; returns outcome counts; fails on the first difference."""
    from tools.catalog import emulate
    from tools.catalog.discover import load_class

    catalog = load_catalog(VERSION)
    pools = _pools(catalog)
    classes = {e.class_path: load_class(e.class_path) for pool in pools.values() for e in pool}
    dtypes = cache_dtypes()
    stats: Counter[str] = Counter()
    for i in range(n):
        rng = random.Random(seed * 1_000_003 + i)
        case = _draw_case(rng, pools, dtypes)
        with emulate.emulated(_emulation(case)):
            try:
                expected = _vllm_run(case, classes)
            except Rejected:
                stats["rejected by customize_spec"] += 1
                continue
        got = _kvconfig_run(case)
        assert got == expected, f"case {i} (seed {seed}): vLLM {expected}, kvconfig {got}\n{case}"
        stats["error" if expected[1] else "value"] += 1
        kinds = [kind for kind, _, _ in case.groups]
        stats.update(f"group:{k}" for k in kinds)
        if "encoder_only" in kinds[:-1]:
            stats["encoder-only shift"] += 1
        if any(p for _, p in case.tensors):
            stats["packed tensor"] += 1
        if expected[0] and any(
            k < b for k, (_, b, _) in zip(expected[0], case.groups, strict=False)
        ):
            stats["split (k < B)"] += 1
    return stats


def _check_spread(stats: Counter[str], n: int) -> None:
    compared = stats["value"] + stats["error"]
    assert compared >= 0.8 * n, stats
    for key in (
        "error",
        "value",
        "encoder-only shift",
        "packed tensor",
        "split (k < B)",
        *(f"group:{k}" for k in GROUP_KINDS),
    ):
        assert stats[key] >= n // 200, (key, stats)


def test_differential_ci() -> None:
    n = int(os.environ.get("KVCONFIG_DIFF_N", "2000"))
    stats = run_differential(n, SEED)
    _check_spread(stats, n)


@pytest.mark.slow
def test_differential_full() -> None:
    n = max(10_000, int(os.environ.get("KVCONFIG_DIFF_N", "10000")))
    started = time.monotonic()
    stats = run_differential(n, SEED + 1)
    _check_spread(stats, n)
    took = time.monotonic() - started
    print(f"differential: {n} cases, seed {SEED + 1}, {took:.1f} s, {dict(stats)}")
