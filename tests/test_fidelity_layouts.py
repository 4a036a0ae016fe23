"""kvconfig's groups, B and k against vLLM 0.33.0's own start-up code, per family.

For each deployment, ``vllm_harness.run_vllm`` runs vLLM's real block-size selection
(with hybrid alignment), spec collection, grouping, KV-cache placement and Model Runner
V2's attention-backend set-up over the layers kvconfig derived. The example table
(``layout_cases``) must equal vLLM's outcome, and kvconfig's plan must equal both.

Quick cases run in CI; ``-m slow`` adds a grid over platforms, block sizes, tensor
parallelism and speculative tokens:
``pytest -m slow tests/test_fidelity_layouts.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from layout_cases import CASES, EXAMPLES, MODELS, Case

pytest.importorskip("vllm")

from vllm_harness import VllmOutcome, mamba_state_bytes, model_json_of, run_vllm

from kvconfig.load.deployment import load
from kvconfig.load.platforms import parse_platform
from kvconfig.plan.resolve import resolve
from kvconfig.plan.result import PlanResult
from kvconfig.schemas.deployment import Deployment

pytestmark = pytest.mark.vllm


def _both(
    path: Path, platform: str, model: str, env: dict[str, str] | None = None
) -> tuple[Deployment, PlanResult, VllmOutcome]:
    setup = load(str(path), env=env)
    plan = resolve(setup, parse_platform(platform))
    assert plan.groups, [f.message for f in plan.findings]
    return setup, plan, run_vllm(setup, plan, model_json_of(MODELS / model))


def _assert_same(plan: PlanResult, vllm: VllmOutcome) -> None:
    """Same groups (layers, kind, B), same runner k, same speculator k per draft group."""
    ours = [(g.target_layers + g.draft_layers, g.kind, g.block_size) for g in plan.groups]
    assert ours == vllm.groups
    assert [g.runner_k for g in plan.groups] == vllm.runner
    drafts = {g.id for g in plan.groups if g.draft_layers}
    assert drafts == set(vllm.draft_groups)
    if vllm.speculator is not None and plan.runner == "v2":
        assert {i: plan.groups[i].speculator_k for i in drafts} == {
            i: vllm.speculator[i] for i in drafts
        }


def _verdict(vllm: VllmOutcome) -> str:
    """Model Runner V2 without hooks: a draft group whose speculator votes apart is wrong."""
    if vllm.speculator is None:
        return "ok"
    bad = [i for i in vllm.draft_groups if vllm.speculator[i] != vllm.runner[i]]
    return "reject" if bad else "ok"


PLANNED = [c for c in CASES if c.groups]


@pytest.mark.parametrize("case", PLANNED, ids=[c.id for c in PLANNED])
def test_example_table_is_what_vllm_does(case: Case) -> None:
    _, plan, vllm = _both(EXAMPLES / case.file, case.platform, case.model)
    assert [(k, b) for _, k, b in vllm.groups] == [(k, b) for k, b, _ in case.groups]
    assert vllm.runner == [k for _, _, k in case.groups]
    speculator = {i: vllm.speculator[i] for i in vllm.draft_groups} if vllm.speculator else {}
    assert speculator == case.speculator
    assert _verdict(vllm) == case.verdict
    _assert_same(plan, vllm)


def _serve(tmp_path: Path, text: str) -> Path:
    models = tmp_path / "models"
    if not models.exists():
        models.symlink_to(MODELS)
    path = tmp_path / "deploy.yaml"
    path.write_text(text)
    return path


def test_vllm_refuses_flashinfer_for_gemma3s_multimodal_prefix() -> None:
    """The refused example of the table: what vLLM's FlashInfer says to Gemma 3's layers."""
    import torch
    from vllm.platforms.interface import DeviceCapability

    from tools.catalog.emulate import Emulation, emulated, load

    cls = load("vllm.v1.attention.backends.flashinfer.FlashInferBackend")
    with emulated(Emulation(capability=(9, 0), num_heads=32, num_kv_heads=16)):
        reasons = cls.validate_configuration(
            head_size=128,
            dtype=torch.bfloat16,
            kv_cache_dtype="auto",
            block_size=128,
            use_mla=False,
            has_sink=False,
            use_sparse=False,
            use_mm_prefix=True,
            use_per_head_quant_scales=False,
            device_capability=DeviceCapability(9, 0),
            attn_type="decoder",
        )
    assert reasons == ["partial multimodal token full attention not supported"]


#: (id, platform, model, serve YAML) per family, beyond the examples.
FAMILY_CASES = [
    ("gemma2-fa", "h100", "gemma-2-9b-it", "model: ./models/gemma-2-9b-it\n"),
    (
        "gemma2-fi-256",
        "h100",
        "gemma-2-9b-it",
        "model: ./models/gemma-2-9b-it\nblock-size: 256\nattention-backend: FLASHINFER\n",
    ),
    (
        "gemma3-triton-sw",
        "h100",
        "gemma-3-27b-it",
        "model: ./models/gemma-3-27b-it\nblock-size: 128\nlanguage-model-only: true\n"
        "attention-config:\n"
        "  backend_per_kind:\n    sliding_window: TRITON_ATTN\n    full_attention: FLASHINFER\n",
    ),
    (
        "gemma3-no-hma",
        "h100",
        "gemma-3-27b-it",
        "model: ./models/gemma-3-27b-it\nblock-size: 128\nattention-backend: FLASHINFER\n"
        "language-model-only: true\ndisable-hybrid-kv-cache-manager: true\n",
    ),
    (
        "gpt-oss-eagle3-b200",
        "b200",
        "gpt-oss-120b",
        "model: ./models/gpt-oss-120b\nblock-size: 256\nspeculative-config:\n"
        "  model: ./models/gpt-oss-120b-eagle3\n  method: eagle3\n  num_speculative_tokens: 3\n",
    ),
    (
        "gpt-oss-eagle3-fa-h200",
        "h200",
        "gpt-oss-120b",
        "model: ./models/gpt-oss-120b\nspeculative-config:\n"
        "  model: ./models/gpt-oss-120b-eagle3\n  method: eagle3\n  num_speculative_tokens: 3\n",
    ),
    (
        "deepseek-v3-mtp-b200",
        "b200",
        "deepseek-v3",
        "model: ./models/deepseek-v3\ntensor-parallel-size: 8\nblock-size: 128\n"
        "speculative-config:\n  method: mtp\n  num_speculative_tokens: 1\n",
    ),
    (
        "kimi-k2-eagle3-b200-default",
        "b200",
        "kimi-k2-instruct",
        "model: ./models/kimi-k2-instruct\ntensor-parallel-size: 8\nspeculative-config:\n"
        "  model: ./models/kimi-k2-eagle3\n  method: eagle3\n  num_speculative_tokens: 3\n",
    ),
    (
        "deepseek-v32-mtp-b200-fp8",
        "b200",
        "deepseek-v3.2-exp",
        "model: ./models/deepseek-v3.2-exp\ntensor-parallel-size: 8\nkv-cache-dtype: fp8\n"
        "block-size: 128\nspeculative-config:\n  method: mtp\n  num_speculative_tokens: 1\n",
    ),
    (
        "minimax-m3-h200-128",
        "h200",
        "minimax-m3-nvfp4",
        "model: ./models/minimax-m3-nvfp4\ntensor-parallel-size: 4\nblock-size: 256\n"
        "speculative-config:\n  model: ./models/minimax-m3-eagle3-gqa\n  method: eagle3\n"
        "  num_speculative_tokens: 3\n",
    ),
    (
        "qwen3-next-fa-h200",
        "h200",
        "qwen3-next-80b-a3b-instruct",
        "model: ./models/qwen3-next-80b-a3b-instruct\ntensor-parallel-size: 4\n",
    ),
    (
        "qwen3-next-no-prefix-b200",
        "b200",
        "qwen3-next-80b-a3b-instruct",
        "model: ./models/qwen3-next-80b-a3b-instruct\nno-enable-prefix-caching: true\n"
        "max-model-len: 32768\nspeculative-config:\n  method: mtp\n  num_speculative_tokens: 3\n",
    ),
    (
        "qwen3.5-mtp-b200",
        "b200",
        "qwen3.5-9b",
        "model: ./models/qwen3.5-9b\nspeculative-config:\n  method: mtp\n"
        "  num_speculative_tokens: 2\n",
    ),
    (
        "qwen3-next-fp8-l40s",
        "l40s",
        "qwen3-next-80b-a3b-instruct",
        "model: ./models/qwen3-next-80b-a3b-instruct\nkv-cache-dtype: fp8\n"
        "attention-backend: TRITON_ATTN\nblock-size: 64\n",
    ),
    (
        "nemotron-h-tp2-fi",
        "h100",
        "nemotron-h-8b-base-8k",
        "model: ./models/nemotron-h-8b-base-8k\ntensor-parallel-size: 2\n"
        "attention-backend: FLASHINFER\n",
    ),
    ("jamba-a100", "a100", "jamba-v0.1", "model: ./models/jamba-v0.1\n"),
]


@pytest.mark.parametrize(
    ("platform", "model", "text"),
    [c[1:] for c in FAMILY_CASES],
    ids=[c[0] for c in FAMILY_CASES],
)
def test_family_matches_vllm(tmp_path: Path, platform: str, model: str, text: str) -> None:
    _, plan, vllm = _both(_serve(tmp_path, text), platform, model)
    _assert_same(plan, vllm)
    attention = [g for g in plan.groups if g.kind != "mamba"]
    assert {g.block_size for g in attention} <= {vllm.block_size} | {
        b for _, k, b in vllm.groups if k != "mamba"
    }


@pytest.mark.parametrize("layout", ["BLHNC", "LBHNC"])
def test_block_outermost_layouts_are_never_split(tmp_path: Path, layout: str) -> None:
    """``VLLM_KV_CACHE_LAYOUT=BLHNC`` packs layers into each block: k stays B."""
    text = (
        "model: ./models/gemma-3-27b-it\nblock-size: 128\nattention-backend: FLASHINFER\n"
        "language-model-only: true\n"
    )
    env = {"VLLM_KV_CACHE_LAYOUT": layout}
    _, plan, vllm = _both(_serve(tmp_path, text), "h100", "gemma-3-27b-it", env)
    _assert_same(plan, vllm)
    packed = layout.startswith("B")
    assert all(g.packed == packed for g in plan.groups)
    blocks = [b for _, _, b in vllm.groups]
    if packed:  # mixed pages pack per block (sliding windows keep 64-token blocks): no split
        assert vllm.runner == blocks and 64 in blocks
    else:
        assert set(vllm.runner) == {64} and set(blocks) == {128}


def test_mamba_state_matches_vllm_calculators(tmp_path: Path) -> None:
    """kvconfig's Mamba state bytes equal the page vLLM's calculators give (unpadded)."""
    cases = [
        (
            "qwen3-next-80b-a3b-instruct",
            "tensor-parallel-size: 2\nspeculative-config:\n"
            "  method: mtp\n  num_speculative_tokens: 2\n",
        ),
        ("qwen3.5-9b", ""),
        ("nemotron-h-8b-base-8k", "tensor-parallel-size: 4\n"),
        ("jamba-v0.1", ""),
    ]
    for model, extra in cases:
        path = _serve(tmp_path, f"model: ./models/{model}\n{extra}")
        setup, plan, vllm = _both(path, "h100", model)
        state = {l.state_bytes for l in setup.layers if l.kind == "mamba"}
        assert len(state) == 1
        page = vllm.block_size * _per_token(setup)
        assert vllm.mamba_page_size_padded in (None, page)
        (ours,) = state
        assert ours is not None
        assert vllm.mamba_page_size_padded is None or ours <= vllm.mamba_page_size_padded
        assert mamba_state_bytes(setup, plan, model_json_of(MODELS / model)) == ours


def _per_token(setup: Deployment) -> int:
    from kvconfig.mirror.block_size import attention_page_per_token

    return attention_page_per_token(setup)


SLOW_GRID = [
    (plat, f"model: ./models/{m}\nblock-size: {b}\ntensor-parallel-size: {tp}\n" + extra, m)
    for plat in ("h100", "b200", "gb300", "a100")
    for m, extra in (
        ("gemma-3-27b-it", "attention-backend: FLASHINFER\nlanguage-model-only: true\n"),
        ("gemma-2-9b-it", ""),
        ("qwen3-next-80b-a3b-instruct", "attention-backend: FLASHINFER\n"),
        ("nemotron-h-8b-base-8k", ""),
        ("minimax-m3-nvfp4", ""),
    )
    for b in (16, 64, 128, 256, 1024)
    for tp in (1, 2)
]


@pytest.mark.slow
@pytest.mark.parametrize(("platform", "text", "model"), SLOW_GRID)
def test_grid_matches_vllm(tmp_path: Path, platform: str, text: str, model: str) -> None:
    setup = load(str(_serve(tmp_path, text)))
    plan = resolve(setup, parse_platform(platform))
    # an empty plan is kvconfig refusing, not vLLM: every grid case is one vLLM plans, so
    # kvconfig's refusal is a difference to fix, never a case to skip
    assert plan.groups, "kvconfig refuses a deployment vLLM plans: " + "; ".join(
        f"{f.code} {f.message}" for f in plan.findings
    )
    if any(f.code == "KV201" for f in plan.findings):
        with pytest.raises(ValueError, match="No common block size"):
            run_vllm(setup, plan, model_json_of(MODELS / model))
        return
    _assert_same(plan, run_vllm(setup, plan, model_json_of(MODELS / model)))
