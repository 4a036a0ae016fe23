"""One mirror of ``prepare_kernel_block_sizes``, used by the resolver, the hooks and the tests.

vLLM decides per KV-cache group whether to vote at all (encoder-only: skipped; no layer
views, Mamba, packed tensors: B) before it votes. kvconfig has that dispatch once,
``kvconfig.mirror.dispatch``; the differential test drives it against vLLM's function,
so the resolver and the hooks' runtime plan must run it rather than a copy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvconfig.mirror import dispatch
from kvconfig.mirror.catalog import load_catalog
from kvconfig.mirror.versions import DEFAULT

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every call of the dispatch, from wherever kvconfig runs it."""
    from kvconfig.plan import resolve, runtime

    seen: list[Any] = []
    real = dispatch.group_kernel_block_size

    def spy(group: dispatch.GroupInput) -> int | None:
        seen.append(group)
        return real(group)

    for module in (dispatch, resolve, runtime):
        if hasattr(module, "group_kernel_block_size"):
            monkeypatch.setattr(module, "group_kernel_block_size", spy)
    yield seen


def test_the_resolver_and_the_runtime_import_the_one_dispatch() -> None:
    from kvconfig.plan import resolve, runtime

    assert resolve.group_kernel_block_size is dispatch.group_kernel_block_size
    assert runtime.group_kernel_block_size is dispatch.group_kernel_block_size


def test_the_resolver_votes_through_the_dispatch(
    calls: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import kvconfig

    monkeypatch.chdir(ROOT)
    path = "examples/qwen3-8b-eagle3-gh200-triton-128.yaml"
    plan = kvconfig.resolve(kvconfig.load_deployment(path, platform="gh200"))
    assert [g.components.runner for g in plan.groups] == [64]
    # the runner's vote over all layers, then the speculator's over its draft layers
    assert [(c.block_size, len(c.voters)) for c in calls] == [(128, 2), (128, 1)]


def test_the_runtime_votes_through_the_dispatch(calls: list[Any]) -> None:
    from kvconfig.mirror.catalog import SizeContext
    from kvconfig.mirror.platform import PlatformId
    from kvconfig.plan.runtime import RuntimeDeployment, RuntimeGroup, RuntimeVoter, runtime_report

    ctx = SizeContext("cuda", 9, "none", 128, 128, True, True, 3)
    fi = "vllm.v1.attention.backends.flashinfer.FlashInferBackend"
    voter = RuntimeVoter("FLASHINFER", fi, (fi,), (16, 32, 64), ctx, ("l0",), (), 64)
    groups = (
        RuntimeGroup(0, "full_attention", 128, "attention", True, False, (voter,), 64),
        RuntimeGroup(1, "encoder_only_attention", 128, "encoder_only", True, False, (), None),
        RuntimeGroup(2, "mamba", 256, "mamba", True, False, (), 256),
    )
    d = RuntimeDeployment(
        DEFAULT, PlatformId("sm90", "cuda", (9, 0)), "v2", "enforce", None, groups
    )
    report = runtime_report(d, load_catalog(DEFAULT))
    assert report.own == {0: 64, 1: None, 2: 256}
    assert [c.spec for c in calls] == ["attention", "encoder_only", "mamba"]
