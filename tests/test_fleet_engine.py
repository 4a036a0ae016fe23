"""Every example fleet through vLLM 0.33.0's own start-up and connector code.

One engine-mode run (``kvconfig.fleet.engine_mode``) starts every distinct engine of the
example fleets in engine children (an emulated GPU per child), runs vLLM's NIXL worker
``__init__`` and block-size sync, ``compute_nixl_compatibility_hash``, Mooncake's sync,
``build_offloading_config`` and ``FileMapper``, the engine core's block-size reports and
``_align_hybrid_block_size`` over TP on each built engine, then every NIXL pair's real
``_nixl_handshake`` up to ``_validate_remote_agent_handshake``. The offline mirrors must
compute the same: values, error texts, handshake outcomes.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("vllm")

from fleet_runs import NAMES, run

from kvconfig.fleet import engine_mode
from kvconfig.fleet.components import components
from kvconfig.fleet.model import Engine
from kvconfig.fleet.rules.common import Pair, pairs
from kvconfig.fleet.rules.engine import engine_issues
from kvconfig.fleet.rules.nixl import _classify, nixl_outcome
from kvconfig.mirror.connectors.sync import logical_to_kernel_block_ids

pytestmark = pytest.mark.vllm

#: vLLM refuses these engines for lack of an optional package this host does not have.
MISSING_PACKAGE = ("xxhash is required",)


def _refused(e: Engine) -> str | None:
    for f in e.plan.get("findings") or ():
        if f["code"] in ("KV601", "KV301", "KV302"):
            return str(f["message"])
    return None


def _pairs(name: str) -> list[tuple[Engine, Engine]]:
    off, eng, _ = run()
    by_name = {e.name: e for e in eng[name]}
    return [(p, by_name[p.name]) for p in off[name]]


@pytest.mark.parametrize("name", NAMES)
def test_vllm_starts_the_engines_or_refuses_them_as_kvconfig_says(name: str) -> None:
    for off, eng in _pairs(name):
        why = _refused(eng)
        if why is None:
            assert eng.vllm is not None
            continue
        if any(m in why for m in MISSING_PACKAGE):
            continue
        # vLLM refused at start-up: kvconfig's rule must say the same, in vLLM's words
        texts = [i.vllm for i in engine_issues(off)]
        assert any(why.split("): ", 1)[-1].split(" (")[0][:60] in t for t in texts), (why, texts)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "pipeline-stages"])
def test_groups_agree(name: str) -> None:
    """The plans agree group by group (a pipeline's engine child builds stage 0 only:
    ``test_pipeline_stage_zero``)."""
    from kvconfig.engine.compare import differences

    for off, eng in _pairs(name):
        if _refused(eng) is None:
            assert differences(off.plan, eng.plan) == [], off.name


def _vllm(e: Engine, kind: str) -> list[dict[str, Any]]:
    return list((e.vllm or {}).get(kind) or [])


def _started(name: str) -> list[tuple[Engine, Engine]]:
    """(offline, vLLM) for the engines vLLM's start-up built."""
    return [(o, e) for o, e in _pairs(name) if _refused(e) is None]


@pytest.mark.parametrize("name", NAMES)
def test_nixl_computes_what_kvconfig_computes(name: str) -> None:
    for off, eng in _started(name):
        for mine, theirs in zip(components(off).nixl, _vllm(eng, "nixl"), strict=True):
            if theirs.get("refusal"):
                assert mine.refusal is not None, off.name
                assert mine.refusal.message == theirs["refusal"]["message"]
                continue
            assert mine.refusal is None, (off.name, mine.refusal)
            got = {
                "logical_block_size": mine.logical,
                "kernel_block_size": mine.kernel,
                "pages_per_block": mine.pages,
                "backend_name": mine.backend_name,
                "layout": mine.layout,
                "hma": mine.hma,
                "has_mamba": mine.has_mamba,
                "use_mla": mine.use_mla,
                "use_host_buffer": mine.use_host_buffer,
            }
            assert got == {k: theirs[k] for k in got}, off.name
            assert mine.factors == theirs["compat_factors"], off.name
            assert mine.compat_hash == theirs["compat_hash"], off.name


@pytest.mark.parametrize("name", NAMES)
def test_mooncake_computes_what_kvconfig_computes(name: str) -> None:
    for off, eng in _started(name):
        for mine, theirs in zip(components(off).mooncake, _vllm(eng, "mooncake"), strict=True):
            assert (mine.logical, mine.kernel, mine.pages) == (
                theirs["logical_block_size"],
                theirs["kernel_block_size"],
                theirs["pages_per_block"],
            )
            state = frozenset(g.id for g in components(off).groups if g.state)
            sample = [[0, 1, 2] for _ in components(off).groups]
            assert logical_to_kernel_block_ids(sample, mine.pages, state) == theirs["expanded"]


@pytest.mark.parametrize("name", NAMES)
def test_offloading_computes_what_kvconfig_computes(name: str) -> None:
    for off, eng in _started(name):
        for mine, theirs in zip(components(off).offload, _vllm(eng, "offload"), strict=True):
            if theirs.get("refusal"):
                assert (
                    mine.refusal is not None
                    and mine.refusal.message == (theirs["refusal"]["message"])
                )
                continue
            assert mine.group_tokens == theirs["group_tokens_per_block"]
            assert mine.blocks_per_chunk == theirs["blocks_per_chunk"]
            assert mine.tokens_per_hash == theirs["tokens_per_hash"]
            for t_mine, t_theirs in zip(mine.tiers, theirs["tiers"], strict=True):
                assert t_mine.kind == t_theirs["kind"]
                if t_theirs.get("namespace"):
                    assert t_mine.fields == t_theirs["namespace_fields"], off.name
                    assert t_mine.namespace == t_theirs["namespace"], off.name


@pytest.mark.parametrize("name", NAMES)
def test_engines_report_what_kvconfig_computes(name: str) -> None:
    for off, eng in _started(name):
        theirs = (eng.vllm or {}).get("routing")
        if not theirs:
            continue
        r = components(off).routing
        assert r.effective == theirs["effective_block_size"], off.name
        assert r.group_sizes == theirs["group_block_sizes"], off.name
        assert r.algo == theirs["hash_algo"]
        assert r.seed == theirs["hash_seed"], off.name
        assert (r.scheduler, r.hash_block) == (
            theirs.get("scheduler_block_size"),
            theirs.get("hash_block_size"),
        ), off.name


@pytest.mark.parametrize("name", NAMES)
def test_hybrid_alignment_over_tensor_parallelism(name: str) -> None:
    _, _, planner = run()
    for off, eng in _started(name):
        aligned = (eng.vllm or {}).get("aligned") or {}
        for tp, block in aligned.items():
            again = planner.plan(off.spec, {"tensor-parallel-size": int(tp)})
            attention = [g.block_size for g in components(again).groups if not g.state]
            assert max(attention) == block, (off.name, tp)


@pytest.mark.parametrize("name", NAMES)
def test_nixl_handshakes_end_as_kvconfig_says(name: str) -> None:
    off, eng, _ = run()
    offline = {e.name: e for e in off[name]}
    for pair in pairs(eng[name]):
        sides = engine_mode._sides(pair)
        if sides is None:
            continue
        local, remote = sides
        facts = _vllm(local, "nixl")[0]
        remote_id = _vllm(remote, "nixl")[0]["engine_id"]
        (real,) = [h for h in facts["handshakes"] if h["peer"] == remote_id]
        mirrored = nixl_outcome(Pair(offline[pair.prefill.name], offline[pair.decode.name]))
        assert mirrored is not None
        if mirrored.refusal is None or mirrored.check == "region-mapped":
            # vLLM's handshake checks pass; a region-mapped pair fails at its first transfer
            assert real["status"] == "ok" and real["validated"], (name, real)
        else:
            assert real["status"] == "refused", (name, mirrored)
            assert real["error"] == mirrored.refusal.error
            assert real["message"] == mirrored.refusal.message


def test_every_pair_rule_was_driven_through_vllm() -> None:
    """The handshake checks the examples reach in vLLM's own code."""
    _, eng, _ = run()
    seen = set()
    for name in NAMES:
        for e in eng[name]:
            for n in _vllm(e, "nixl"):
                for h in n.get("handshakes") or ():
                    seen.add(_classify(h["message"]) if h["status"] == "refused" else "ok")
    assert seen >= {
        "ok",
        "compat-hash",
        "block-size",
        "tp-split",
        "host-buffer",
        "mamba-pages",
        "layout",
    }


def test_pipeline_stage_zero() -> None:
    """The engine mode builds stage 0 of a pipeline: its k is kvconfig's stage 0."""
    off, eng, _ = run()
    (o,) = off["pipeline-stages"]
    (e,) = eng["pipeline-stages"]
    assert [g["kernel_block_size"] for g in e.plan["groups"]] == components(o).stages[0][2]
