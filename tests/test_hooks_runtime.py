"""``kvconfig.plan.runtime``: the plan of a running engine from plain records (no vLLM needed).

Expected votes are vLLM 0.33.0's (reference §2.7: B=256 with FLASHINFER and FLASH_ATTN
gives 64; an empty voter set keeps B).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kvconfig.mirror.catalog import SizeContext, load_catalog
from kvconfig.mirror.platform import PlatformId
from kvconfig.plan.runtime import (
    RuntimeDeployment,
    RuntimeGroup,
    RuntimeVoter,
    catalog_sizes,
    runtime_report,
)
from kvconfig.schemas.sizes import MultipleOf

CATALOG = load_catalog("0.33.0")
FI = "vllm.v1.attention.backends.flashinfer.FlashInferBackend"
FA = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"
SM90 = SizeContext(
    vendor="cuda",
    capability_major=9,
    kv_quant="none",
    head_size=128,
    head_size_v=128,
    gqa=True,
    trtllm=True,
    fa_version=3,
)


def voter(
    path: str,
    name: str,
    declared: tuple[object, ...],
    *,
    draft: bool = False,
    k: int = 0,
    lookup: tuple[str, ...] = (),
) -> RuntimeVoter:
    layers = ("draft.0",) if draft else ("layers.0", "layers.1")
    return RuntimeVoter(
        name=name,
        class_path=path,
        lookup=lookup or (path,),
        declared=declared,  # type: ignore[arg-type]
        context=SM90,
        target_layers=() if draft else layers,
        draft_layers=layers if draft else (),
        runner_k=k,
    )


def deployment(*groups: RuntimeGroup, mode: str = "enforce") -> RuntimeDeployment:
    return RuntimeDeployment(
        vllm_version="0.33.0",
        platform=PlatformId("sm90", "cuda", (9, 0)),
        runner="v2",
        mode=mode,
        speculative_method="eagle3",
        groups=groups,
    )


def seed(
    B: int, runner: int | None, speculator: int | None, own: int | None = None
) -> RuntimeGroup:
    return RuntimeGroup(
        id=0,
        kind="full_attention",
        block_size=B,
        spec="attention",
        has_layer_views=True,
        packed=False,
        voters=(
            voter(FI, "FLASHINFER", (16, 32, 64), k=runner or B),
            voter(FA, "FLASH_ATTN", (MultipleOf(16),), draft=True, k=runner or B),
        ),
        runner_k=runner,
        speculator_k=speculator,
        speculator_own=own,
    )


def test_catalog_agrees_with_the_runner_and_plan_validates() -> None:
    from kvconfig.schemas.plan import Plan

    report = runtime_report(deployment(seed(256, 64, 64, own=256)), CATALOG)
    assert report.own == {0: 64}
    assert report.disagreements == () and report.notes == ()
    plan = Plan.model_validate(report.plan.to_json())
    assert plan.verdict == "ok"
    assert [f.code for f in plan.findings] == ["KV103"]
    assert plan.groups[0].layers.draft == ["draft.0"]


@pytest.mark.parametrize(("speculator", "code"), [(256, "KV101"), (128, "KV102")])
def test_a_mismatch_left_in_place_rejects_the_plan(speculator: int, code: str) -> None:
    report = runtime_report(deployment(seed(256, 64, speculator), mode="warn"), CATALOG)
    assert report.plan.verdict == "reject"
    assert [f.code for f in report.plan.findings] == [code]


def test_a_runner_that_votes_differently_is_reported() -> None:
    report = runtime_report(deployment(seed(256, 128, 128)), CATALOG)
    assert report.own == {0: 64}
    assert report.disagreements == (
        "group 0 (B=256): kvconfig's catalog votes 64, vLLM's model runner 128",
    )


def test_declared_sizes_that_differ_from_the_catalog_are_noted() -> None:
    g = seed(256, 64, 64)
    drifted = replace(g.voters[0], declared=(16, 32, 64, 128))
    report = runtime_report(deployment(replace(g, voters=(drifted, g.voters[1]))), CATALOG)
    assert report.notes == (
        "group 0: FLASHINFER declares [16, 32, 64, 128] at run time; "
        "kvconfig's catalog says [16, 32, 64]",
    )


def test_unknown_class_votes_with_its_own_sizes_and_says_so() -> None:
    v = voter("my_plugin.PagedBackend", "PAGED", (32,))
    found = catalog_sizes(CATALOG, v)
    assert found.entry is None and found.sizes == (32,)
    assert "my_plugin.PagedBackend is unknown to kvconfig" in found.note
    g = replace(seed(256, 32, None), voters=(v,))
    report = runtime_report(deployment(g), CATALOG)
    assert report.own == {0: 32} and report.disagreements == ()


def test_a_subclass_is_looked_up_through_the_base_that_declares_its_sizes() -> None:
    v = voter(
        "vllm.FastPrefillFLASHINFER",
        "FLASHINFER",
        (16, 32, 64),
        lookup=("vllm.FastPrefillFLASHINFER", FI),
    )
    found = catalog_sizes(CATALOG, v)
    assert found.entry is CATALOG.by_class[FI]
    assert found.note == f" (via its base {FI})"


def test_without_a_catalog_every_backend_votes_with_its_declared_sizes() -> None:
    report = runtime_report(deployment(seed(256, 64, 64)), None)
    assert report.own == {0: 64}
    assert len(report.notes) == 2 and all("it has no catalog" in n for n in report.notes)


@pytest.mark.parametrize(
    ("spec", "views", "packed", "expected"),
    [
        ("encoder_only", True, False, None),
        ("mamba", True, False, 256),
        ("attention", False, False, 256),
        ("attention", True, True, 256),
        ("attention", True, False, 64),
    ],
)
def test_group_dispatch_follows_prepare_kernel_block_sizes(
    spec: str, views: bool, packed: bool, expected: int | None
) -> None:
    g = replace(seed(256, expected, None), spec=spec, has_layer_views=views, packed=packed)
    assert runtime_report(deployment(g), CATALOG).own == {0: expected}


def test_groups_that_keep_b_do_not_consult_the_catalog() -> None:
    """Mamba backends (GDN, Mamba2, ...) are not in the catalog and need not be."""
    mamba = voter(
        "vllm.v1.attention.backends.gdn_attn.GDNAttentionBackend", "GDN_ATTN", (MultipleOf(1),)
    )
    g = replace(seed(512, 512, None), kind="mamba", spec="mamba", voters=(mamba,))
    report = runtime_report(deployment(g), CATALOG)
    assert report.own == {0: 512} and report.notes == () and report.disagreements == ()


def test_no_common_size_is_no_value() -> None:
    g = replace(
        seed(256, None, None),
        voters=(voter("x.A", "A", (128,)), voter("x.B", "B", (16, 32, 64))),
    )
    report = runtime_report(deployment(g), CATALOG)
    assert report.own == {0: None} and report.disagreements == ()


@pytest.mark.parametrize("mode", ["enforce", "strict", "warn"])
def test_the_export_names_the_mode_the_hooks_ran_in_as_documented(mode: str) -> None:
    from pathlib import Path
    from typing import get_args

    from kvconfig.schemas.plan import PlanHooks

    report = runtime_report(deployment(seed(256, 64, 64), mode=mode), CATALOG)
    assert report.plan.to_json()["hooks"] == mode
    assert mode in get_args(PlanHooks)
    docs = (Path(__file__).resolve().parents[1] / "docs" / "hooks.md").read_text()
    export = docs[docs.index("## Plan export") :]
    paragraph = export[export.index("`hooks` is") : export.index("`source` is")]
    assert f"`{mode}`" in paragraph, paragraph
