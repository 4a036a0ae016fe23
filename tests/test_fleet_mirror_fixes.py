"""The NIXL mirror against vLLM 0.33.0's own code, on inputs kvconfig did not write.

* The layout property: ``KVCacheLayout.is_block_contiguous`` for every member of vLLM's
  enum, against the release data ``tools/catalog`` generated (``facts.json``).
* The compatibility hash: ``compute_nixl_compatibility_hash`` on each engine's real
  ``VllmConfig`` (``create_engine_config`` in an engine child) against kvconfig's
  derivation from the same deployment, and the handshake vLLM ran between the engines
  against kvconfig's verdict. The fleets: DeepSeek-V3 with its MTP drafter written
  ``deepseek_mtp`` on one engine and ``mtp`` on the other (vLLM renames the alias before
  hashing; ``tests/fleets/``), a heterogeneous-TP pair in the ``BHLNC`` layout (not
  block-contiguous: vLLM refuses the head split; ``examples/fleets/``), and a Gemma 2
  pair (HMA) whose decode engine asks NIXL to permute LBHNC pages into its LBNHC cache
  (vLLM asserts; ``tests/fleets/``), and Kimi K2 (MLA) with its GQA EAGLE3 drafter on a
  decode engine of smaller TP than its prefill engine (vLLM refuses the head-sharded
  draft; ``tests/fleets/``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

from kvconfig.fleet import engine_mode, lint_fleet, read
from kvconfig.fleet import planner as P
from kvconfig.fleet.components import components
from kvconfig.fleet.model import Engine
from kvconfig.fleet.rules.common import Pair, pairs
from kvconfig.fleet.rules.nixl import nixl_outcome
from kvconfig.mirror import versions
from kvconfig.mirror.connectors.nixl import block_contiguous

pytestmark = pytest.mark.vllm

FLEETS = Path(__file__).resolve().parent / "fleets"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "fleets"
NAMES = ("nixl-bhlnc-tp-pair", "nixl-mla-gqa-draft", "nixl-mtp-alias", "nixl-permute-hma")


def _path(name: str) -> str:
    """The fleet file: the KV722 example is one of examples/fleets/, the others are here."""
    return str(
        EXAMPLES / f"{name}.yaml"
        if (EXAMPLES / f"{name}.yaml").exists()
        else FLEETS / f"{name}.yaml"
    )


@pytest.fixture(scope="module", autouse=True)
def _slow_start() -> Iterator[None]:
    """vLLM's import can take minutes on a loaded host: the engine children of this
    module get 15 minutes to start instead of 5."""
    from kvconfig.engine import pool

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pool, "START_TIMEOUT", 900.0)
        yield


def _layouts() -> list[str]:
    from vllm.v1.kv_cache_layout import KVCacheLayout

    return [m.name for m in KVCacheLayout]


@pytest.mark.parametrize("layout", _layouts())
def test_block_contiguous_is_vllms(layout: str) -> None:
    import vllm
    from vllm.v1.kv_cache_layout import KVCacheLayout

    assert block_contiguous(layout, vllm.__version__) is KVCacheLayout[layout].is_block_contiguous


def test_the_release_data_lists_every_layout() -> None:
    import vllm

    assert sorted(versions.facts(vllm.__version__).kv_cache_layouts) == sorted(_layouts())


@functools.cache
def run() -> tuple[dict[str, list[Engine]], dict[str, list[Engine]]]:
    """(offline engines, vLLM engines) per fleet: one engine-mode run for both."""
    planner = P.Planner()
    offline: dict[str, list[Engine]] = {}
    flat: list[Engine] = []
    parts: list[list[int]] = []
    for name in NAMES:
        engines, _ = P.plan_engines(read.read([_path(name)]), planner)
        offline[name] = engines
        parts.append(list(range(len(flat), len(flat) + len(engines))))
        flat += engines
    planned = engine_mode.with_vllm(flat, fleets=parts)
    return offline, {n: [planned[i] for i in part] for n, part in zip(NAMES, parts, strict=True)}


def _nixl(e: Engine) -> dict[str, Any]:
    (facts,) = (e.vllm or {}).get("nixl") or [{}]
    return dict(facts)


@pytest.mark.parametrize("name", NAMES)
def test_compatibility_hash_of_each_engines_real_config(name: str) -> None:
    off, eng = run()
    for mine, theirs in zip(off[name], eng[name], strict=True):
        facts = _nixl(theirs)
        assert facts.get("compat_hash"), (mine.name, facts)
        (n,) = components(mine).nixl
        assert n.factors == facts["compat_factors"], mine.name
        assert n.compat_hash == facts["compat_hash"], mine.name


def test_mtp_aliases_hash_alike_and_pair() -> None:
    off, eng = run()
    hashes = {_nixl(e)["compat_hash"] for e in eng["nixl-mtp-alias"]}
    assert len(hashes) == 1
    assert {components(e).nixl[0].compat_hash for e in off["nixl-mtp-alias"]} == hashes
    assert _nixl(eng["nixl-mtp-alias"][0])["compat_factors"]["speculative_config"]["method"] == (
        "mtp"
    )
    text, code = lint_fleet([_path("nixl-mtp-alias")])
    assert "KV708" not in text and code == 0, text


@pytest.mark.parametrize("name", NAMES)
def test_handshakes_end_as_kvconfig_says(name: str) -> None:
    off, eng = run()
    offline = {e.name: e for e in off[name]}
    seen = 0
    for pair in pairs(eng[name]):
        sides = engine_mode._sides(pair)
        if sides is None:
            continue
        local, remote = sides
        remote_id = _nixl(remote)["engine_id"]
        (real,) = [h for h in _nixl(local)["handshakes"] if h["peer"] == remote_id]
        mirrored = nixl_outcome(Pair(offline[pair.prefill.name], offline[pair.decode.name]))
        assert mirrored is not None
        if mirrored.refusal is None:
            assert real["status"] == "ok" and real["validated"], (name, real)
        else:
            assert real["status"] == "refused", (name, mirrored)
            assert (real["error"], real["message"]) == (
                mirrored.refusal.error,
                mirrored.refusal.message,
            )
        seen += 1
    assert seen == 1


def test_the_permute_with_hma_is_refused_offline() -> None:
    text, code = lint_fleet([_path("nixl-permute-hma")])
    assert code == 1
    assert "KV718" in text and "HMA does not support block size post processing" in text


def test_the_bhlnc_pair_is_kv722() -> None:
    text, code = lint_fleet([_path("nixl-bhlnc-tp-pair")])
    assert code == 1
    assert "KV722" in text and "requires contiguous heads" in text


def test_the_head_sharded_draft_is_kv718() -> None:
    text, code = lint_fleet([_path("nixl-mla-gqa-draft")])
    assert code == 1
    assert "KV718" in text and "NIXL head-sharded draft KV under an MLA target" in text
