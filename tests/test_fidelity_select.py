"""Backend selection against vLLM 0.33.0's own code.

* ``invalid_reasons`` must list exactly what the real class's ``validate_configuration``
  lists, for each backend kvconfig models, across platforms and layer requests.
* (the priority lists themselves are compared with vLLM's in test_fidelity_selection.py)
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from kvconfig.mirror.catalog import SizeContext, load_catalog
from kvconfig.mirror.platform import fa_version, is_quantized, kv_quant
from kvconfig.mirror.selection import TRAITS, invalid_reasons, priorities
from kvconfig.mirror.traits import Machine, Request

pytest.importorskip("vllm")

from tools.catalog.emulate import Emulation, emulated, load

CAPS = [(7, 5), (8, 0), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1)]
DENSE = [
    "FLASH_ATTN",
    "FLASHINFER",
    "TRITON_ATTN",
    "FLEX_ATTENTION",
    "TURBOQUANT",
    "TRITON_FLASHINFER",
    "TRITON_FLASH_ATTN",
]
# Backends whose validity (not the reason text) is compared: their device checks query
# kernels that only a real GPU answers.
VALIDITY_ONLY = ["B12X", "HPC_ATTN"]
REQUESTS = [
    # head_size, dtype, kv_cache_dtype, block_size, sliding window, non-causal[, sink]
    (128, "bfloat16", "auto", None, False, False),
    (64, "bfloat16", "auto", None, True, False, True),
    (128, "bfloat16", "fp8", 256, True, False, True),
    (128, "float16", "fp8", 128, False, False),
    (256, "bfloat16", "auto", 16, True, False),
    (256, "bfloat16", "fp8_e4m3", None, False, True),
    (512, "bfloat16", "fp8", 64, False, False),
    (80, "float32", "auto", 48, False, False),
    (64, "bfloat16", "nvfp4", 256, True, False),
    (128, "bfloat16", "turboquant_k8v4", 32, False, False),
]


def _machine(cap: tuple[int, int], head_size: int, kv: str, trtllm_off: bool) -> Machine:
    catalog = load_catalog("0.33.0")
    ctx = SizeContext(
        vendor="cuda",
        capability_major=cap[0],
        kv_quant=kv_quant(kv),
        head_size=head_size,
        head_size_v=head_size,
        gqa=True,
        trtllm=not trtllm_off and cap[0] == 10,
        fa_version=fa_version(
            vendor="cuda",
            capability=cap,
            head_size=head_size,
            head_size_v=None,
            supports_fa4_hd256=True,
        ),
    )

    return Machine(
        vendor="cuda",
        capability=cap,
        use_trtllm_attention=False if trtllm_off else None,
        quantized_cache=is_quantized(kv),
        catalog=catalog,
        target=ctx,
    )


CASES = list(itertools.product(CAPS, REQUESTS, [False, True]))


MM_PREFIX_CASES = list(itertools.product(CAPS, REQUESTS[:4], [False], [True]))


@pytest.mark.parametrize(
    ("cap", "req", "trtllm_off", "mm_prefix"),
    [(*c, False) for c in CASES] + MM_PREFIX_CASES,
)
def test_validate_configuration(
    cap: tuple[int, int], req: tuple[Any, ...], trtllm_off: bool, mm_prefix: bool
) -> None:
    import torch
    from vllm.platforms.interface import DeviceCapability
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    head, dtype, kv, block, sw, nc, *rest = req
    sink = bool(rest and rest[0])
    machine = _machine(cap, head, kv, trtllm_off)
    emu = Emulation(
        capability=cap,
        head_size=head,
        cache_dtype=kv,
        use_trtllm_attention=False if trtllm_off else None,
    )
    checked = 0
    bad: list[str] = []
    for name in DENSE + VALIDITY_ONLY:
        try:
            cls = load(AttentionBackendEnum[name].value)
        except (ImportError, AttributeError):
            continue
        ours = invalid_reasons(
            name,
            Request(
                head_size=head,
                dtype=dtype,
                kv_cache_dtype=kv,
                block_size=block,
                has_sliding_window=sw,
                use_non_causal=nc,
                has_sink=sink,
                use_mm_prefix=mm_prefix,
            ),
            machine,
        )
        with emulated(emu):
            theirs = cls.validate_configuration(
                head_size=head,
                dtype=getattr(torch, dtype),
                kv_cache_dtype=kv,
                block_size=block,
                use_mla=False,
                has_sink=sink,
                use_sparse=False,
                use_mm_prefix=mm_prefix,
                use_per_head_quant_scales=False,
                device_capability=DeviceCapability(*cap),
                attn_type="decoder",
                has_sliding_window=sw,
                use_non_causal=nc,
            )
        if name in VALIDITY_ONLY:
            theirs = [t for t in theirs if "not supported on the current device" not in t]
            ours, theirs = [bool(ours)], [bool(theirs)]  # type: ignore[list-item]
        if ours != theirs:
            bad.append(f"{name} on sm{cap[0]}{cap[1]} {req}: kvconfig {ours}, vLLM {theirs}")
        checked += 1
    assert not bad, "\n".join(bad)
    assert checked >= 7


def test_traits_cover_the_priority_lists() -> None:
    listed = {
        n
        for cap in CAPS
        for mla in (False, True)
        for n in priorities(
            Request(
                head_size=128, dtype="bfloat16", kv_cache_dtype="auto", block_size=None, use_mla=mla
            ),
            Machine(vendor="cuda", capability=cap),
        )
    }
    dense = {n for n in listed if "MLA" not in n}
    assert dense <= set(TRAITS)
