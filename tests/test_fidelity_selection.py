"""MLA and sparse-MLA backend choice against vLLM 0.33.0's own code.

* The CUDA priority lists are vLLM's ``platforms/cuda.py:_get_backend_priorities``,
  executed from the installed source (the module itself needs ``libcuda``), for every
  combination of capability, KV dtype, head count, head size and causality.
* Validity is each importable backend's real ``validate_configuration`` under the
  emulated platform, with the target config's MLA dimensions, against kvconfig's
  ``invalid_reasons``. A CUDA wheel ships FlashMLA and FlashInfer's SM90/SM120 sparse
  MLA kernels; the emulation says so.
"""

from __future__ import annotations

import ast
import inspect
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

from kvconfig.mirror.selection import invalid_reasons, priorities
from kvconfig.mirror.traits import Machine, Request
from tools.catalog import emulate
from tools.catalog.emulate import Emulation

pytestmark = pytest.mark.vllm

CAPABILITIES = [(8, 0), (9, 0), (10, 0), (10, 3), (12, 0)]


def _vllm_priorities() -> Callable[..., list[Any]]:
    """``_get_backend_priorities`` compiled from vLLM's own ``platforms/cuda.py``."""
    import importlib.util

    from vllm.platforms.interface import DeviceCapability  # noqa: F401
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    spec = importlib.util.find_spec("vllm.platforms.cuda")
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    (fn,) = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name == "_get_backend_priorities"
    ]
    module = ast.Module(
        body=[ast.ImportFrom(module="__future__", names=[ast.alias("annotations")], level=0), fn],
        type_ignores=[],
    )
    ast.fix_missing_locations(module)
    import functools

    scope: dict[str, Any] = {
        "AttentionBackendEnum": AttentionBackendEnum,
        "cache": functools.cache,
        "lru_cache": functools.lru_cache,
    }
    exec(compile(module, spec.origin, "exec"), scope)
    return scope["_get_backend_priorities"]  # type: ignore[no-any-return]


def test_priority_lists_are_vllms() -> None:
    from vllm.platforms.interface import DeviceCapability

    real = _vllm_priorities()
    grid = itertools.product(
        (True, False),
        CAPABILITIES,
        ("auto", "fp8"),
        (8, 16, 128, None),
        (576, 512, 128),
        (False, True),
        (False, True),
    )
    for use_mla, cap, kv, heads, head, non_causal, mm_prefix in grid:
        want = [
            b.name
            for b in real(
                use_mla=use_mla,
                device_capability=DeviceCapability(*cap),
                num_heads=heads,
                kv_cache_dtype=kv,
                use_non_causal=non_causal,
                head_size=head,
                use_mm_prefix=mm_prefix,
            )
        ]
        request = Request(
            head_size=head,
            dtype="bfloat16",
            kv_cache_dtype=kv,
            block_size=None,
            use_mla=use_mla,
            use_non_causal=non_causal,
            use_mm_prefix=mm_prefix,
            num_heads=heads,
        )
        assert priorities(request, Machine(vendor="cuda", capability=cap)) == want


DEEPSEEK = {"qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "kv_lora_rank": 512}
V32 = {**DEEPSEEK, "index_topk": 2048}
OTHER = {"qk_nope_head_dim": 64, "qk_rope_head_dim": 64, "v_head_dim": 64, "kv_lora_rank": 256}

BACKENDS = [
    "FLASHINFER_MLA",
    "TOKENSPEED_MLA",
    "FLASHMLA",
    "TRITON_MLA",
    "FLASHMLA_SPARSE",
    "FLASHINFER_MLA_SPARSE",
    "FLASHINFER_MLA_SPARSE_SM90",
    "FLASHINFER_MLA_SPARSE_SM120",
]


@pytest.fixture
def cuda_wheel_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a CUDA install has and a CPU host lacks: FlashMLA, FlashInfer sparse MLA."""
    import vllm.utils.flashinfer as fi
    from vllm.v1.attention.ops import flashmla

    monkeypatch.setattr(flashmla, "_is_flashmla_available", lambda: (True, None))
    monkeypatch.setattr(fi, "has_flashinfer_sparse_mla_sm120", lambda: True)
    sm90 = emulate.load(
        "vllm.v1.attention.backends.mla.flashinfer_mla_sparse_sm90.FlashInferMLASparseSM90Backend"
    )
    monkeypatch.setitem(
        inspect.getmodule(sm90).__dict__,  # type: ignore[union-attr]
        "has_flashinfer_sm90_nope_mla",
        lambda: True,
    )


@pytest.mark.usefixtures("cuda_wheel_kernels")
@pytest.mark.parametrize("name", BACKENDS)
def test_mla_validity_is_vllms(name: str) -> None:
    import torch
    from vllm.platforms.interface import DeviceCapability

    from kvconfig.mirror.catalog import load_catalog

    cls = emulate.load(load_catalog("0.33.0").registry[name])
    checked = 0
    for cap, kv, sparse, facts, head, heads in itertools.product(
        CAPABILITIES[1:],
        ("auto", "fp8", "fp8_ds_mla"),
        (False, True),
        (DEEPSEEK, V32, OTHER),
        (576, 512),
        (16, 128),
    ):
        with emulate.emulated(
            Emulation(
                capability=cap,
                num_heads=heads,
                num_kv_heads=1,
                head_size=head,
                use_mla=True,
                hf_extra=dict(facts),
                strict_hf=True,
            )
        ):
            want = cls.validate_configuration(
                head_size=head,
                dtype=torch.bfloat16,
                kv_cache_dtype=kv,
                block_size=None,
                use_mla=True,
                has_sink=False,
                use_sparse=sparse,
                use_mm_prefix=False,
                use_per_head_quant_scales=False,
                device_capability=DeviceCapability(*cap),
                attn_type="decoder",
            )
        request = Request(
            head_size=head,
            dtype="bfloat16",
            kv_cache_dtype=kv,
            block_size=None,
            use_mla=True,
            use_sparse=sparse,
            num_heads=heads,
        )
        got = invalid_reasons(name, request, Machine(vendor="cuda", capability=cap, facts=facts))
        assert (got == []) == (want == []), (cap, kv, sparse, facts, head, heads, want, got)
        checked += not want
    assert checked


def test_minimax_m3_backends_are_vllms() -> None:
    """``select_main_backend_and_impl_cls`` and ``select_indexer_impl_cls`` vs
    ``kvconfig.mirror.selection.model_backend``."""
    from kvconfig.mirror.selection import model_backend

    sparse = emulate.load("vllm.models.minimax_m3.common.sparse_attention")
    indexer = emulate.load("vllm.models.minimax_m3.common.indexer")
    for cap, topk, kv in itertools.product(CAPABILITIES, (8, 16, 64), ("auto", "fp8", "fp8_e5m2")):
        with emulate.emulated(Emulation(capability=cap)) as cfg:
            cfg.attention_config.minimax_m3_indexer_cp = False
            backend, _ = sparse.select_main_backend_and_impl_cls(
                topk_blocks=topk, kv_cache_dtype=kv, num_kv_heads=4
            )
            impl = indexer.select_indexer_impl_cls(topk_blocks=topk, indexer_kv_dtype="bf16")
        m = Machine(vendor="cuda", capability=cap, facts={"sparse_topk_blocks": topk})
        main = model_backend("MINIMAX_M3_SPARSE", m, kv)
        index = model_backend("MINIMAX_M3_SPARSE_INDEXER", m, kv)
        assert main is not None and index is not None
        assert main.backend == f"{backend.__module__}.{backend.__qualname__}"
        want = impl.indexer_backend_cls
        assert index.backend == f"{want.__module__}.{want.__qualname__}"
