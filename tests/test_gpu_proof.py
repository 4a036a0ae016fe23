"""Small-size correctness part of ``bench/gpu_proof/run.py`` on a CUDA GPU.

Skips (at collection, without error) where torch, Triton or a CUDA device is missing.
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

RUN_PY = Path(__file__).resolve().parents[1] / "bench" / "gpu_proof" / "run.py"


def load_run() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_proof_run", RUN_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_expanded_table_matches_and_manager_table_does_not(tmp_path: Path) -> None:
    run = load_run()
    out = tmp_path / "gpu_proof.json"
    rc = run.main(["--small", "--no-timing", "--no-flashinfer", "--json", str(out)])
    data = json.loads(out.read_text())
    assert rc == 0
    assert data["ok"] is True
    cases = data["cases"]
    assert len(cases) >= 10
    for case in cases:
        assert case["a"]["frac_off"] == 0.0, case
        assert case["a"]["max_abs"] < run.ATOL + 1.0 * run.RTOL, case
        assert case["gather_a_exact"], case
        assert case["b"]["frac_off"] > 0.1, case
        assert case["gather_b_misread"] > 0.0, case
