"""kvconfig's plan against vLLM 0.33.0's own vote, on the same KV-cache configs.

Every case is planned by kvconfig (catalog rules + kvconfig's vote) and by vLLM's real
``prepare_kernel_block_sizes`` / ``select_common_block_size`` with the real backend
classes under an emulated GPU. The runner's k, the speculator's value and the error
text must be the same.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from kvconfig.plan.resolve import resolve
from kvconfig.schemas.deployment import AttentionSettings, Deployment, LayerSet

pytest.importorskip("vllm")

from tests.vllm_truth import emulation_for, vllm_values

PLATFORMS = ["a100", "l40s", "h200", "b200", "gb300", "rtx pro 6000"]
PAIRS: list[tuple[str, str | None]] = [
    ("FLASHINFER", "TRITON_ATTN"),
    ("FLASHINFER", "FLASH_ATTN"),
    ("FLASH_ATTN", "FLASHINFER"),
    ("FLASHINFER", None),
    ("TRITON_ATTN", "FLEX_ATTENTION"),
    ("FLASH_ATTN", "FLASH_ATTN"),
]
BLOCKS = [16, 48, 128, 256, 1024]
HEADS = [(32, 8, 1), (32, 32, 1), (64, 8, 8)]  # (query heads, KV heads, tensor parallel)
RUNNERS = ["v2"]
"""Model Runner V1 and the hooks are compared with vLLM's whole start-up instead
(tests/test_fidelity_runners.py): their outcome is the runner handing its sizes over,
which only vLLM's own start-up shows."""


def _setup(  # noqa: PLR0917 (one positional per table column)
    platform: str,
    target: str,
    draft: str | None,
    block: int,
    heads: tuple[int, int, int],
    runner: str,
    *,
    head_size: int = 128,
    kv_cache_dtype: str = "auto",
    hooks: str = "none",
    draft_heads: tuple[int, int] | None = None,
    use_trtllm: bool | None = None,
    target_kv: str | None = None,
    draft_kv: str | None = None,
    softcap: bool = False,
) -> Deployment:
    q, kv, tp = heads
    layers = [
        LayerSet(
            name="model.layers.{i}.self_attn.attn",
            count=4,
            backend=target,
            num_heads=q,
            num_kv_heads=kv,
            head_size=head_size,
            kv_cache_dtype=target_kv,
        )
    ]
    if draft is not None:
        dq, dkv = draft_heads or (q, kv)
        layers.append(
            LayerSet(
                name="model.layers.{i}.self_attn.attn",
                first_index=4,
                role="draft",
                backend=draft,
                num_heads=dq,
                num_kv_heads=dkv,
                head_size=head_size,
                kv_cache_dtype=draft_kv,
            )
        )
    return Deployment(
        source="case",
        platform=platform,
        layers=layers,
        runner=runner,
        hooks=hooks,
        block_size=block,
        kv_cache_dtype=kv_cache_dtype,
        tensor_parallel_size=tp,
        speculative_method="eagle3" if draft is not None else None,
        attention=AttentionSettings(use_trtllm_attention=use_trtllm),
        model_facts={"attn_logit_softcapping": 1} if softcap else {},
    )


def _compare(dep: Deployment, *, must_vote: bool = False) -> None:
    plan = resolve(dep)
    refused = [f for f in plan.findings if f.code in ("KV301", "KV302")]
    if refused:
        # vLLM refuses the backend at model construction; there is nothing to vote.
        # (Backend validity is checked against vLLM in test_fidelity_select.py.)
        assert not must_vote, refused[0].message
        assert not plan.groups
        return
    truth = vllm_values(dep, plan, emulation_for(dep, plan))
    assert len(truth) == len(plan.groups)
    for g, t in zip(plan.groups, truth, strict=True):
        if isinstance(t.runner, str):
            assert g.runner_k is None, f"vLLM raised {t.runner!r}, kvconfig voted {g.runner_k}"
            messages = [f.message for f in plan.findings if f.code == "KV201" and f.group == g.id]
            assert messages and t.runner in messages[0]
            continue
        assert g.runner_k == t.runner, f"runner: kvconfig {g.runner_k}, vLLM {t.runner}"
        assert g.kernel_block_size == t.runner
        if isinstance(t.speculator, str):
            assert any(f.code == "KV202" and t.speculator in f.message for f in plan.findings)
        else:
            assert g.speculator_k == t.speculator, (
                f"speculator: kvconfig {g.speculator_k}, vLLM {t.speculator}"
            )
        mismatch = [f for f in plan.findings if f.code in ("KV101", "KV102") and f.group == g.id]
        disagree = t.speculator is not None and t.speculator != t.runner
        assert bool(mismatch) == disagree


CASES = list(itertools.product(PLATFORMS, PAIRS, BLOCKS, HEADS, RUNNERS))


@pytest.mark.parametrize(
    ("platform", "pair", "block", "heads", "runner"),
    CASES,
    ids=[
        f"{p.replace(' ', '')}-{t}+{d or 'none'}-B{b}-q{h[0]}kv{h[1]}tp{h[2]}-{r}"
        for p, (t, d), b, h, r in CASES
    ],
)
def test_table(
    platform: str,
    pair: tuple[str, str | None],
    block: int,
    heads: tuple[int, int, int],
    runner: str,
) -> None:
    _compare(_setup(platform, pair[0], pair[1], block, heads, runner))


SPECIAL: list[tuple[str, dict[str, Any]]] = [
    # FA4's Blackwell head_size=256 kernel: 128-token pages only.
    (
        "b200-fa-hd256-B256",
        {
            "platform": "b200",
            "target": "FLASH_ATTN",
            "draft": "FLASHINFER",
            "block": 256,
            "head_size": 256,
        },
    ),
    (
        "b200-fa-hd256-fi-B512",
        {
            "platform": "b200",
            "target": "FLASHINFER",
            "draft": "FLASH_ATTN",
            "block": 512,
            "head_size": 256,
        },
    ),
    # ... but not for soft-capped models (Gemma 2), which fall back to FA2.
    (
        "b200-fa-hd256-softcap",
        {
            "platform": "b200",
            "target": "FLASH_ATTN",
            "draft": "FLASHINFER",
            "block": 256,
            "head_size": 256,
            "softcap": True,
        },
    ),
    (
        "gb300-fa-hd256-B384",
        {
            "platform": "gb300",
            "target": "FLASH_ATTN",
            "draft": None,
            "block": 384,
            "head_size": 256,
        },
    ),
    # SM90 FA4 FP8-KV dequant kernel at head_size 512: 64-token pages.
    (
        "h100-fa-fp8-hd512",
        {
            "platform": "h100",
            "target": "FLASH_ATTN",
            "draft": "TRITON_ATTN",
            "block": 256,
            "head_size": 512,
            "kv_cache_dtype": "fp8",
        },
    ),
    # FlashInfer large pages need GQA, SM10x and TRTLLM.
    (
        "b200-fi-no-trtllm",
        {
            "platform": "b200",
            "target": "FLASHINFER",
            "draft": "TRITON_ATTN",
            "block": 256,
            "use_trtllm": False,
        },
    ),
    (
        "b200-fi-mha",
        {
            "platform": "b200",
            "target": "FLASHINFER",
            "draft": "TRITON_ATTN",
            "block": 256,
            "heads": (32, 32, 1),
        },
    ),
    (
        "sm110-fi",
        {"platform": "sm110", "target": "FLASHINFER", "draft": "TRITON_ATTN", "block": 256},
    ),
    # The drafter has other heads than the target (FlashInfer still reads the target's).
    (
        "b200-draft-heads",
        {
            "platform": "b200",
            "target": "TRITON_ATTN",
            "draft": "FLASHINFER",
            "block": 512,
            "draft_heads": (32, 32),
        },
    ),
    # Turboquant target + FA draft: r=128, d=256 (reference §4.4).
    (
        "h200-turboquant",
        {
            "platform": "h200",
            "target": "TURBOQUANT",
            "draft": "FLASH_ATTN",
            "block": 256,
            "target_kv": "turboquant_k8v4",
        },
    ),
    # Runner 64 (FlashInfer), draft 128 (Turboquant's own), B 256: the speculator split error.
    (
        "h200-split-error",
        {
            "platform": "h200",
            "target": "FLASHINFER",
            "draft": "TURBOQUANT",
            "block": 256,
            "draft_kv": "turboquant_k8v4",
        },
    ),
    (
        "b200-tfi-mm",
        {
            "platform": "b200",
            "target": "TRITON_FLASHINFER",
            "draft": "FLASHINFER",
            "block": 128,
            "head_size": 256,
            "use_trtllm": False,
        },
    ),
    (
        "b200-fp8-fi",
        {
            "platform": "b200",
            "target": "FLASHINFER",
            "draft": "FLASH_ATTN",
            "block": 512,
            "kv_cache_dtype": "fp8",
        },
    ),
    (
        "b200-no-common",
        {
            "platform": "b200",
            "target": "FLASH_ATTN",
            "draft": "FLASHINFER",
            "block": 256,
            "head_size": 256,
            "use_trtllm": False,
        },
    ),
]


@pytest.mark.parametrize(("case", "kw"), SPECIAL, ids=[c for c, _ in SPECIAL])
def test_special(case: str, kw: dict[str, Any]) -> None:
    kw = dict(kw)
    dep = _setup(
        kw.pop("platform"),
        kw.pop("target"),
        kw.pop("draft"),
        kw.pop("block"),
        kw.pop("heads", (32, 8, 1)),
        kw.pop("runner", "v2"),
        **kw,
    )
    _compare(dep, must_vote=True)


def _outcomes(dep: Deployment) -> set[str]:
    """What a case exercises: split or unsplit groups, and the findings it raises."""
    plan = resolve(dep)
    out = {f.code.value for f in plan.findings}
    for g in plan.groups:
        if g.runner_k is not None:
            out.add("split" if g.runner_k < g.block_size else "unsplit")
    return out


def test_the_table_reaches_every_outcome_vllm_can_disagree_on() -> None:
    """A vote that splits blocks and one that does not, the silent mismatch (KV101), the
    mismatch vLLM fails on (KV102) and no common size (KV201): each is compared with vLLM
    by at least one case (the one the hooks fix, KV103, in test_fidelity_runners.py)."""
    seen: set[str] = set()
    for p, (t, d), b, h, r in CASES:
        seen |= _outcomes(_setup(p, t, d, b, h, r))
    for _, special in SPECIAL:
        kw = dict(special)
        args = [kw.pop(k) for k in ("platform", "target", "draft", "block")]
        seen |= _outcomes(_setup(*args, kw.pop("heads", (32, 8, 1)), kw.pop("runner", "v2"), **kw))
    assert {"split", "unsplit", "KV101", "KV102", "KV201"} <= seen, seen
