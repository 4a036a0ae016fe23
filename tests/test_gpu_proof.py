"""Small-size correctness part of ``bench/gpu_proof/run.py`` (vLLM's Triton kernel) on a CUDA GPU.

Skips (at collection, without error) where torch, Triton or a CUDA device is missing, and where
the CPU steps have not been run: ``bench/gpu_proof/extract.py`` (vLLM's files from the wheel) and
``bench/gpu_proof/hooked_tables.py`` (vLLM's block tables), see docs/gpu-proof.md.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

pytestmark = pytest.mark.gpu

BENCH = Path(__file__).resolve().parents[1] / "bench" / "gpu_proof"
CARRY = BENCH / "_carry"
if not all((CARRY / name).exists() for name in ("vllm.zip", "manifest.json", "hooked_tables.json")):
    pytest.skip(
        f"{CARRY} not prepared: run bench/gpu_proof/extract.py and hooked_tables.py first",
        allow_module_level=True,
    )


def load_run() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_proof_run", BENCH / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_vllm_kernel_reads_split_pages_through_expanded_and_hooked_tables(tmp_path: Path) -> None:
    run = load_run()
    out = tmp_path / "gpu_proof.json"
    rc = run.main(["--small", "--no-timing", "--no-flashinfer", "--json", str(out)])
    data = json.loads(out.read_text())
    assert rc == 0
    assert data["ok"] is True
    assert data["vllm"]["version"] == "0.33.0"
    cases = data["cases"]
    assert len(cases) >= 20
    assert {c["path"] for c in cases} == {"3D split-K"}  # batches of 1 and 8 take split-K
    for case in cases:
        assert case["writes_ok"], case
        assert case["a"]["frac_off"] == 0.0, case
        assert case["a"]["rel_fro"] < run.P.MAX_REL_FRO, case
        assert case["misread_a"] == 0.0, case
        assert case["b"]["frac_off"] > run.P.MIN_FRAC_OFF_B, case
        assert case["misread_b"] > 0.0, case
        assert case["c_table_equals_a"], case
        assert case["c_bitwise_equals_a"], case
