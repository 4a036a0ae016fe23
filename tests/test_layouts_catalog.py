"""The catalog entries and spec alignments the new layouts use, against the real classes.

For every MLA, sparse-MLA, indexer, MiniMax-M3 and Mamba backend kvconfig's catalog
lists, the sizes its rules give must equal what the real class's
``get_supported_kernel_block_sizes`` returns for a real spec under the emulated
platform; and ``kvconfig.mirror.specs.customize`` must set the ``block_stride_alignment``
vLLM's ``customize_attention_spec`` sets. Classes that cannot be imported without a GPU
are marked ``introspected: false`` in the catalog and skipped here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("vllm")

from kvconfig.mirror.catalog import SizeContext, load_catalog
from kvconfig.mirror.platform import kv_quant
from kvconfig.mirror.specs import Spec, customize
from kvconfig.schemas.sizes import MultipleOf
from tools.catalog import emulate
from tools.catalog.emulate import Emulation

pytestmark = pytest.mark.vllm

SERVES = ("mla", "sparse_mla", "indexer", "state")
MINIMAX = "vllm.models.minimax_m3."
ENTRIES = [
    e
    for e in load_catalog("0.33.0").entries
    if e.serves in SERVES or e.class_path.startswith(MINIMAX)
]
PLATFORMS = [
    ("cuda", (9, 0)),
    ("cuda", (10, 0)),
    ("cuda", (10, 3)),
    ("cuda", (12, 0)),
    ("rocm", (9, 4)),
]


def _spec(kind: str, kv: str) -> Any:
    import torch
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        MLAAttentionSpec,
        get_kv_quant_mode,
    )

    dtype = torch.uint8 if kv != "auto" else torch.bfloat16
    if kind in ("mla", "sparse_mla", "indexer"):
        return MLAAttentionSpec(
            block_size=64,
            num_kv_heads=1,
            head_size=576,
            dtype=dtype,
            kv_quant_mode=get_kv_quant_mode(kv),
            cache_dtype_str=kv,
        )
    return FullAttentionSpec(
        block_size=64,
        num_kv_heads=4,
        head_size=128,
        dtype=dtype,
        kv_quant_mode=get_kv_quant_mode(kv),
    )


def _ours(sizes: Any) -> list[Any]:
    from vllm.v1.attention.backend import MultipleOf as VMultipleOf

    return [MultipleOf(s.base) if isinstance(s, VMultipleOf) else s for s in sizes]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.class_path.rsplit(".", 1)[-1] for e in ENTRIES])
def test_catalog_sizes_are_the_real_classes(entry: Any) -> None:
    if not entry.introspected:
        pytest.skip(f"{entry.class_path} cannot be imported without a GPU")
    cls = emulate.load(entry.class_path)
    if entry.name:  # abstract bases have no name (their get_name() raises)
        assert cls.get_name() == entry.name
    for vendor, capability in PLATFORMS:
        for kv in ("auto", "fp8"):
            spec = _spec(entry.serves, kv)
            with emulate.emulated(
                Emulation(
                    vendor=vendor,
                    capability=capability,
                    use_mla=True,
                    num_heads=128,
                    num_kv_heads=1,
                    head_size=576,
                )
            ):
                real = _ours(cls.get_supported_kernel_block_sizes(spec))
            ctx = SizeContext(
                vendor=vendor,
                capability_major=capability[0],
                kv_quant=kv_quant(kv),
                head_size=576,
                head_size_v=576,
                gqa=True,
                trtllm=False,
                fa_version=None,
            )
            assert list(entry.sizes(ctx)) == real, (vendor, capability, kv)


ALIGNED = [
    # (registry name or class, spec kind, kv, capability)
    ("FLASHMLA_SPARSE", "mla", "fp8_ds_mla", (9, 0)),
    ("FLASHMLA_SPARSE", "mla", "fp8_ds_mla", (10, 0)),
    ("FLASHMLA_SPARSE", "mla", "auto", (9, 0)),
    ("FLASHINFER_MLA_SPARSE", "mla", "auto", (10, 0)),
    ("FLASHINFER_MLA_SPARSE_SM90", "mla", "auto", (9, 0)),
    ("FLASHINFER_MLA", "mla", "auto", (10, 0)),
    ("FLASHMLA", "mla", "fp8", (9, 0)),
    ("TRITON_MLA", "mla", "auto", (9, 0)),
    ("vllm.v1.attention.backends.mla.indexer.DeepseekV32IndexerBackend", "mla", "auto", (9, 0)),
    (
        "vllm.models.minimax_m3.nvidia.sparse_attention_msa.MiniMaxM3SparseMSABackend",
        "full",
        "auto",
        (10, 0),
    ),
    ("vllm.models.minimax_m3.common.indexer.MiniMaxM3IndexerBackend", "mla", "auto", (10, 0)),
    ("FLASHINFER", "full", "auto", (9, 0)),
    ("FLASH_ATTN", "full", "auto", (9, 0)),
]


@pytest.mark.parametrize(("backend", "kind", "kv", "capability"), ALIGNED)
def test_customize_alignment_is_vllms(
    backend: str, kind: str, kv: str, capability: tuple[int, int]
) -> None:
    import torch
    from vllm.v1.attention.backend import MultipleOf as VMultipleOf
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MLAAttentionSpec, get_kv_quant_mode
    from vllm.v1.worker.utils import customize_attention_spec

    catalog = load_catalog("0.33.0")
    entry = catalog.lookup(backend)
    cls = emulate.load(entry.class_path)
    dtype = torch.bfloat16 if kv == "auto" else torch.uint8
    content = {"fp8_ds_mla": 656}.get(kv)
    if kind == "mla":
        real = MLAAttentionSpec(
            block_size=256,
            num_kv_heads=1,
            head_size=576,
            dtype=dtype,
            kv_quant_mode=get_kv_quant_mode(kv),
            cache_dtype_str=kv,
            state_content_bytes=content,
        )
        ours = Spec("mla", 256, 1, content or 576 * dtype.itemsize)
    else:
        real = FullAttentionSpec(
            block_size=256,
            num_kv_heads=4,
            head_size=128,
            dtype=dtype,
            kv_quant_mode=get_kv_quant_mode(kv),
        )
        ours = Spec("full", 256, 4, 2 * 128 * dtype.itemsize)
    with emulate.emulated(Emulation(capability=capability, num_heads=32, num_kv_heads=4)):
        theirs = customize_attention_spec(cls, real).block_stride_alignment
        sizes = tuple(_ours(cls.get_supported_kernel_block_sizes(real)))
    got = customize(ours, entry.name, sizes, capability[0], kv_quant(kv) != "none").alignment
    want = (
        None
        if theirs is None
        else ("multiple_of", theirs.base)
        if isinstance(theirs, VMultipleOf)
        else ("bytes", theirs)
    )
    assert got == want
    assert ours._replace(alignment=got).stride_alignment() == _stride(real, theirs)


def _stride(spec: Any, alignment: Any) -> int:
    return int(replace(spec, block_stride_alignment=alignment).get_block_stride_alignment())
