"""The recorded H200 results of ``bench/gpu_proof/run.py``: shape and thresholds, on the CPU.

``tests/test_gpu_proof.py`` runs the kernels and needs a GPU; this file only reads the JSON the
GPU run wrote to ``bench/gpu_proof/results/`` and checks that it holds every case of the plan and
says what docs/gpu-proof.md says: (a) and (c) match dense attention, (b) is far off, (c) equals
(a) bit for bit, FlashInfer ran both tables, and the split/unsplit timing ratio is there for
every batch and context.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "gpu_proof"
RESULTS = BENCH / "results"
RUNS = {
    "seed0": (0, "h200-seed0"),
    "seed1": (1, "h200-seed1"),
    "flashinfer": (0, "h200-flashinfer"),
}


def load_plan() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_proof_plan_results", BENCH / "plan.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


P = load_plan()


def load(stem: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RESULTS / f"{stem}.json").read_text())
    return data


@pytest.fixture(params=sorted(RUNS))
def run(request: pytest.FixtureRequest) -> tuple[int, dict[str, Any]]:
    seed, stem = RUNS[request.param]
    return seed, load(stem)


def test_every_run_has_its_log() -> None:
    for _, stem in RUNS.values():
        log = (RESULTS / f"{stem}.log").read_text()
        assert "(a) matched in 59/59; (b) differed in 59/59; (c) matched in 59/59" in log, stem
    assert "1 passed" in (RESULTS / "h200-pytest.log").read_text()


def test_device_software_and_configuration(run: tuple[int, dict[str, Any]]) -> None:
    seed, data = run
    assert data["ok"] is True
    device = data["device"]
    assert device["name"] == "NVIDIA H200"
    assert device["capability"] == "9.0"
    assert device["nvidia_smi"].startswith("580.")
    for key in ("torch", "triton", "python", "torch_cuda"):
        assert device[key], key
    assert data["vllm"]["version"] == "0.33.0"
    assert data["vllm"]["wheel"].startswith("vllm-0.33.0-")
    assert list(data["vllm"]["stand_ins"]) == ["vllm.platforms.current_platform"]
    votes = data["vllm_votes"]
    assert votes["vllm"] == "0.33.0"
    assert votes["runner_kernel_block_size"] == P.KERNEL_BLOCK_SIZE
    assert votes["speculator_kernel_block_size"] == P.BLOCK_SIZE
    assert votes["layout"] == "LBNHC"
    config = data["config"]
    assert config["seed"] == seed
    assert config["small"] is False
    expected = {
        "block_size": P.BLOCK_SIZE,
        "kernel_block_size": P.KERNEL_BLOCK_SIZE,
        "num_q_heads": P.NUM_Q_HEADS,
        "num_kv_heads": P.NUM_KV_HEADS,
        "head_dim": P.HEAD_DIM,
        "dtype": P.DTYPE_NAME,
        "atol": P.ATOL,
        "rtol": P.RTOL,
        "max_rel_fro": P.MAX_REL_FRO,
    }
    assert {k: config[k] for k in expected} == expected


def test_cache_is_vllms_split_view() -> None:
    layout = load("h200-seed0")["cache_layout"]
    assert layout["layout"] == "LBNHC"
    page = P.BLOCK_SIZE * P.NUM_KV_HEADS * 2 * P.HEAD_DIM  # elements of one manager block
    assert layout["block_stride_bytes"] == page * 2  # bf16
    assert layout["split_view"]["stride"] == [page // P.SPLIT, 2 * P.HEAD_DIM, 2 * 8 * 128, 1]
    assert layout["split_view"]["shape"][1:] == [P.NUM_KV_HEADS, P.KERNEL_BLOCK_SIZE, 256]
    assert layout["unsplit_view"]["shape"][0] * P.SPLIT == layout["split_view"]["shape"][0]
    assert layout["key_cache_split"]["shape"][1:] == [P.KERNEL_BLOCK_SIZE, 8, P.HEAD_DIM]
    assert layout["value_cache_offset_elements"] == P.HEAD_DIM


def test_every_case_of_the_plan_is_there(run: tuple[int, dict[str, Any]]) -> None:
    seed, data = run
    plan = P.build_plan(seed, False)
    assert [c["name"] for c in data["cases"]] == [c.name for c in plan]
    for case, recorded in zip(plan, data["cases"], strict=True):
        assert recorded["batch"] == case.batch
        assert recorded["q_len"] == case.q_len
        assert recorded["tokens"] == sum(case.lens)
        # batches of 1 and 8 take the split-K launch, 64 the 2D one: both are exercised
        assert recorded["path"] == ("2D" if case.batch == 64 else "3D split-K"), case.name


def test_expanded_table_matches_dense_attention(run: tuple[int, dict[str, Any]]) -> None:
    _, data = run
    for case in data["cases"]:
        a = case["a"]
        assert case["writes_ok"], case["name"]
        assert case["misread_a"] == 0.0, case["name"]
        assert a["finite"], case["name"]
        assert a["frac_off"] == 0.0, case["name"]
        assert a["rel_fro"] < P.MAX_REL_FRO, case["name"]
        assert a["max_abs"] < P.ATOL / 2, case["name"]
        assert case["ok_a"], case["name"]


def test_unexpanded_table_is_far_off(run: tuple[int, dict[str, Any]]) -> None:
    _, data = run
    for case in data["cases"]:
        b = case["b"]
        assert b["frac_off"] >= P.MIN_FRAC_OFF_B, case["name"]
        assert b["rel_fro"] > 1.0, case["name"]
        assert b["max_abs"] > 10 * P.ATOL, case["name"]
        assert case["misread_b"] > 0.5, case["name"]
        assert case["ok_b"], case["name"]


def test_hooked_table_equals_expanded(run: tuple[int, dict[str, Any]]) -> None:
    _, data = run
    for case in data["cases"]:
        assert case["c_table_equals_a"], case["name"]
        assert case["c_bitwise_equals_a"], case["name"]
        assert case["c"] == case["a"], case["name"]
        assert case["ok_c"], case["name"]


def test_flashinfer_ran_both_tables() -> None:
    data = load("h200-flashinfer")
    fi = data["flashinfer"]
    assert fi["status"] == "ran"
    assert fi["version"] == "0.7.2.post1"
    assert fi["backend"] == "fa2"
    assert fi["first_plan_s"] > 0
    ran = 0
    for case in data["cases"]:
        if case["q_len"] != 1:
            assert case["flashinfer"] == {}, case["name"]
            continue
        ran += 1
        a, b = case["flashinfer"]["a"], case["flashinfer"]["b"]
        assert a["frac_off"] == 0.0 and a["rel_fro"] < P.MAX_REL_FRO, case["name"]
        assert b["frac_off"] >= P.MIN_FRAC_OFF_B, case["name"]
    assert ran == 31
    for stem in ("h200-seed0", "h200-seed1"):
        assert load(stem)["flashinfer"] == {"status": "not tried"}


def test_timing_ratio_for_every_batch_and_context() -> None:
    timing = load("h200-seed0")["timing"]
    shapes = [(t["batch"], t["seq_len"]) for t in timing]
    assert shapes == list(itertools.product(P.TIMING_BATCHES, P.TIMING_CONTEXTS))
    for t in timing:
        assert math.isclose(t["ratio"], t["split_median_us"] / t["unsplit_median_us"])
        assert 0.95 < t["ratio"] < 1.05, t
        assert 0.95 < t["control_ratio"] < 1.05, t
        assert len(t["split_us"]) == len(t["unsplit_us"]) == len(t["control_us"]) >= 5
        assert t["bitwise_equal"], t
        assert t["max_abs_split_vs_unsplit"] == 0.0, t
    for stem in ("h200-seed1", "h200-flashinfer"):
        assert load(stem)["timing"] == []
