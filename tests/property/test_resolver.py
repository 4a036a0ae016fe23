"""Properties of kvconfig's resolver on generated backends and groups.

Each example is a deployment of out-of-tree backends (arbitrary size declarations:
exact ints and ``MultipleOf``), layers spread over explicit KV-cache groups, target
and draft roles, a block size per deployment or per group. The whole resolver runs
(``kvconfig.load.validate.deployment`` -> ``kvconfig.plan.resolve.resolve``) and every
group's plan is checked against a brute-force search over all divisors of B with vLLM's
rules (reference §2.2-2.3):
an int accepts exactly itself, ``MultipleOf(m)`` any multiple of m; B wins when every
backend accepts it, else the largest explicit int that divides B and every backend
accepts, else an error that names the group and its backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kvconfig.errors import NoCommonKernelBlockSize
from kvconfig.load.platforms import parse_platform
from kvconfig.load.validate import deployment
from kvconfig.mirror.vote import select_common
from kvconfig.plan.resolve import resolve
from kvconfig.plan.result import PlanResult
from kvconfig.schemas.sizes import KernelSize, MultipleOf, size_to_json

H200 = parse_platform("h200")

POWERS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]

exact = st.one_of(st.sampled_from(POWERS), st.integers(1, 1100))
multiple = st.builds(MultipleOf, st.one_of(st.sampled_from(POWERS[:9]), st.integers(1, 300)))
size_lists = st.lists(st.one_of(exact, exact, multiple), min_size=1, max_size=5)
block_sizes = st.one_of(st.sampled_from(POWERS), st.integers(1, 4096))


def accepts(sizes: Sequence[KernelSize], k: int) -> bool:
    """vLLM's ``_block_size_is_supported`` for one backend, restated over its definition."""
    return any(k == s if isinstance(s, int) else k % s.multiple_of == 0 for s in sizes)


def brute_force(block_size: int, declared: Sequence[Sequence[KernelSize]]) -> int | None:
    """The vote by exhaustive search: every divisor of B, vLLM's candidate rule."""
    fits = [d for d in range(1, block_size + 1) if block_size % d == 0]
    fits = [d for d in fits if all(accepts(sizes, d) for sizes in declared)]
    if block_size in fits:
        return block_size
    explicit = {s for sizes in declared for s in sizes if isinstance(s, int)}
    candidates = [d for d in fits if d in explicit]
    return max(candidates) if candidates else None


@st.composite
def deployments(draw: st.DrawFn) -> dict[str, Any]:
    """A native deployment document of custom backends in explicit groups."""
    n_backends = draw(st.integers(1, 4))
    backends = {f"B{i}": draw(size_lists) for i in range(n_backends)}
    n_groups = draw(st.integers(1, 3))
    layers: list[dict[str, Any]] = []
    for gid in range(n_groups):
        for j in range(draw(st.integers(1, 4))):
            layers.append(
                {
                    "name": f"g{gid}.s{j}.{{i}}",
                    "count": draw(st.integers(1, 3)),
                    "role": draw(st.sampled_from(["target", "target", "draft"])),
                    "backend": f"B{draw(st.integers(0, n_backends - 1))}",
                    "num_kv_heads": draw(st.sampled_from([1, 8])),
                    "group": gid,
                }
            )
    layers[0]["role"] = "target"
    has_draft = any(s["role"] == "draft" for s in layers)
    groups = [
        {"id": gid, "block_size": draw(block_sizes)}
        for gid in range(n_groups)
        if draw(st.booleans())
    ]
    return {
        "source": "generated",
        "runner": draw(st.sampled_from(["v2", "v2", "v1"])),
        "hooks": draw(st.sampled_from(["none", "none", "enforce"])),
        "block_size": draw(block_sizes),
        "speculative_method": "eagle3" if has_draft else None,
        "backends": {n: {"sizes": [size_to_json(s) for s in sz]} for n, sz in backends.items()},
        "groups": groups,
        "layers": layers,
    }


def _plan(doc: dict[str, Any]) -> PlanResult:
    return resolve(deployment(doc), H200)


def _declared(doc: dict[str, Any], gid: int, roles: set[str]) -> dict[str, list[KernelSize]]:
    """Backend name -> declared sizes, for the layers of group ``gid`` with one of ``roles``."""
    from kvconfig.schemas.sizes import size_from_json

    names = {s["backend"] for s in doc["layers"] if s["group"] == gid and s["role"] in roles}
    return {n: [size_from_json(x) for x in doc["backends"][n]["sizes"]] for n in names}


@given(deployments())
def test_the_runner_vote_matches_brute_force(doc: dict[str, Any]) -> None:
    plan = _plan(doc)
    assert [g.id for g in plan.groups] == sorted({s["group"] for s in doc["layers"]})
    for g in plan.groups:
        declared = _declared(doc, g.id, {"target", "draft"})
        assert {v.name for v in g.voters} == set(declared)
        for v in g.voters:
            assert list(v.sizes) == declared[v.name]
        want = brute_force(g.block_size, list(declared.values()))
        assert g.runner_k == want == g.kernel_block_size
        if want is not None:
            assert g.block_size % want == 0
            assert all(accepts(sizes, want) for sizes in declared.values())
        else:
            errors = [f for f in plan.findings if f.code == "KV201" and f.group == g.id]
            assert len(errors) == 1
            text = errors[0].message
            assert f"group {g.id}" in text
            assert all(f"{name}: " in text for name in declared)
            assert plan.verdict == "reject"


@given(deployments())
def test_the_speculator_never_votes_below_the_runner(doc: dict[str, Any]) -> None:
    """Reference §4.4: the draft-only vote d is always >= the runner's all-layer vote r."""
    plan = _plan(doc)
    own_vote = doc["runner"] == "v2" and doc["hooks"] == "none"
    for g in plan.groups:
        drafts = _declared(doc, g.id, {"draft"})
        if not drafts or g.runner_k is None:
            continue
        d = g.speculator_k
        assert d is not None, "a group the runner can split always has a speculator value"
        assert d >= g.runner_k
        assert g.block_size % d == 0
        if own_vote:
            assert d == brute_force(g.block_size, list(drafts.values()))
        else:
            # V1 narrows the runner's value; the kvconfig hooks hand it over
            assert d == g.runner_k
        mismatch = [f for f in plan.findings if f.group == g.id and f.code in ("KV101", "KV102")]
        assert bool(mismatch) == (d != g.runner_k)
        assert not [f for f in plan.findings if f.group == g.id and f.code == "KV202"]


@given(st.lists(size_lists, min_size=0, max_size=4), block_sizes)
def test_the_vote_itself_matches_brute_force(declared: list[list[KernelSize]], b: int) -> None:
    voters = [(f"B{i}", sizes) for i, sizes in enumerate(declared)]
    want = brute_force(b, declared)
    if want is None:
        try:
            select_common(b, voters)
        except NoCommonKernelBlockSize as err:
            assert err.block_size == b
            assert [name for name, _ in err.declared] == [n for n, _ in voters]
        else:
            raise AssertionError("expected NoCommonKernelBlockSize")
    else:
        assert select_common(b, voters) == want
