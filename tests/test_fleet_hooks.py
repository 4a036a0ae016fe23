"""The kvconfig hooks' connector checks, in vLLM 0.33.0's own code.

* In engine children with the hooks loaded by vLLM's plugin loader (``KVCONFIG_MODE=enforce``),
  vLLM's real ``_nixl_handshake`` runs against the peer's payload: the hooks refuse the
  #28661 pair with ``HandshakeRefused`` naming both engines' plans, where vLLM alone
  asserts (``tests/test_fleet_engine.py`` runs the same pair without the hooks), and let
  a correct pair through to vLLM's own checks, which pass. The plan digest is exported
  beside the plan.
* The wrapper on the connectors' block-size sync, in engine children with the hooks in
  each mode, on vLLM's real ``NixlPullConnectorWorker`` built on the started engine,
  nothing of kvconfig's stubbed: ``strict`` refuses to start (the fleet's engine mode
  passes the mode on; it used to start the children without the hooks), ``enforce`` and
  ``warn`` log and start; offline, the fleet rules say the same.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

from kvconfig.errors import HandshakeRefused
from kvconfig.fleet import engine_mode, read
from kvconfig.fleet import planner as P
from kvconfig.fleet.diff import diff_files
from kvconfig.fleet.model import Engine
from kvconfig.fleet.rules.engine import engine_issues

pytestmark = pytest.mark.vllm

FLEETS = Path(__file__).resolve().parent.parent / "examples" / "fleets"
HOOKED = ("nixl-28661-block-128", "correct-pd")


@functools.cache
def hooked(export: str) -> dict[str, list[Engine]]:
    """The two fleets with the kvconfig hooks in every engine (one engine-mode run); the
    correct pair's prefill engine exports its plan to ``export``."""
    planner = P.Planner()
    flat: list[Engine] = []
    parts: list[list[int]] = []
    for name in HOOKED:
        fleet = read.read([str(FLEETS / f"{name}.yaml")])
        specs = []
        specs = [dataclasses.replace(s, hooks="enforce") for s in fleet.engines]
        engines = [planner.plan(s) for s in specs]
        parts.append(list(range(len(flat), len(flat) + len(engines))))
        flat += engines
    # the export is kvconfig's caller's setting (a fleet file's env never reaches it)
    exporter = next(flat[i] for i in parts[HOOKED.index("correct-pd")] if flat[i].name == "prefill")
    real = engine_mode.request

    def request(e: Engine, peers_file: str) -> Any:
        r = real(e, peers_file)
        if e is exporter and r is not None:
            r = dataclasses.replace(r, settings={**r.settings, "KVCONFIG_PLAN_EXPORT": export})
        return r

    engine_mode.request = request  # type: ignore[assignment]
    try:
        planned = engine_mode.with_vllm(flat, fleets=parts)
    finally:
        engine_mode.request = real  # type: ignore[assignment]
    return {name: [planned[i] for i in part] for name, part in zip(HOOKED, parts, strict=True)}


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("export")


def _handshakes(engines: list[Engine], local: str) -> list[dict[str, Any]]:
    e = next(x for x in engines if x.name == local)
    return list(((e.vllm or {}).get("nixl") or [{}])[0].get("handshakes") or [])


def test_vllm_alone_asserts_at_the_28661_handshake() -> None:
    from fleet_runs import run

    _, eng, _ = run()
    (h,) = _handshakes(eng["nixl-28661-block-128"], "decode-h100")
    assert (h["status"], h["error"]) == ("refused", "AssertionError")
    assert h["message"] == (
        "Local block size 64 is not divisible by remote block size 128 or vice versa."
    )
    assert h["where"].startswith("vllm/distributed/kv_transfer/kv_connector/utils.py")


def test_the_hooks_refuse_it_with_both_plans(export_dir: Path) -> None:
    engines = hooked(str(export_dir / "plan-{rank}.json"))["nixl-28661-block-128"]
    assert all(e.plan["hooks"] == "enforce" for e in engines)
    (h,) = _handshakes(engines, "decode-h100")
    assert (h["status"], h["error"]) == ("refused", "HandshakeRefused")
    text = h["message"]
    assert text.startswith("kvconfig: refusing the KV-transfer handshake of engine kvconfig-")
    assert "(B=128, pages 64 x2, TP 1, FLASHINFER, LBHNC) with engine kvconfig-" in text
    assert "(B=128, pages 128 x1, TP 1, FLASHINFER, LBHNC)" in text
    assert (
        "vLLM would then fail with 'AssertionError: Local block size 64 is not divisible by "
        "remote block size 128 or vice versa.'"
    ) in text
    assert "Fix: --block-size 64 on both engines" in text


def test_the_hooks_let_a_correct_pair_through_to_vllms_checks(export_dir: Path) -> None:
    engines = hooked(str(export_dir / "plan-{rank}.json"))["correct-pd"]
    (h,) = _handshakes(engines, "decode")
    assert h == {"peer": h["peer"], "status": "ok", "validated": True}


def test_each_worker_exports_its_plan_digest(export_dir: Path) -> None:
    hooked(str(export_dir / "plan-{rank}.json"))
    plan = export_dir / "plan-0.json"
    sidecar = export_dir / "plan-0.digest.json"
    doc = json.loads(sidecar.read_text(encoding="utf-8"))
    assert doc["kvconfig_digest"] == 1 and len(doc["digest"]) == 16
    assert (doc["rank"], doc["pipeline_stage"], doc["tensor_rank"]) == (0, 0, 0)
    assert doc["plan"] == json.loads(plan.read_text(encoding="utf-8"))
    text, code = diff_files(str(plan), str(sidecar))
    assert code == 0 and "same plan" in text


# ------------------------------------------- the block-size sync wrapper, in each mode

MODES = ("strict", "enforce", "warn")
MISMATCH = "votes once over every transfer layer and transfers it in 64-token pages"


@functools.cache
def global_vote() -> dict[str, dict[str, Engine]]:
    """The NIXL global-vote fleet (Gemma 2: FLASH_ATTN's full-attention group runs
    128-token pages, FLASHINFER's sliding-window group 64; NIXL votes 64 over all) with
    the hooks in each mode: every engine started by vLLM's start-up in an engine child,
    the hooks loaded by vLLM's plugin loader, vLLM's real ``NixlPullConnectorWorker``
    built on the engine (one engine-mode run); and the same engines offline."""
    planner = P.Planner()
    fleet = read.read([str(FLEETS / "nixl-global-vote.yaml")])
    flat: list[Engine] = []
    parts: list[list[int]] = []
    for mode in MODES:
        engines = [planner.plan(dataclasses.replace(s, hooks=mode)) for s in fleet.engines]
        parts.append(list(range(len(flat), len(flat) + len(engines))))
        flat += engines
    planned = engine_mode.with_vllm(flat, fleets=parts)
    out = {}
    for mode, part in zip(MODES, parts, strict=True):
        out[mode] = {planned[i].name: planned[i] for i in part}
        out[f"{mode}-offline"] = {flat[i].name: flat[i] for i in part}
    return out


def _nixl(e: Engine) -> dict[str, Any]:
    (facts,) = (e.vllm or {}).get("nixl") or [{}]
    return dict(facts)


@pytest.mark.parametrize("mode", MODES)
def test_the_children_run_the_hooks_in_the_fleets_mode(mode: str) -> None:
    for e in global_vote()[mode].values():
        assert e.plan["hooks"] == mode, (e.name, e.plan["hooks"])


def test_strict_refuses_the_connector_at_start_up() -> None:
    for name, e in global_vote()["strict"].items():
        refusal = _nixl(e)["refusal"]
        assert refusal["error"] == "ConnectorBlockSizeMismatch", (name, refusal)
        assert MISMATCH in refusal["message"]
        assert "KV-cache group 1" in refusal["message"]
        assert "runner reads in 128-token kernel pages" in refusal["message"]
        # the fleet says so, offline and from vLLM's start-up alike
        (issue,) = [i for i in engine_issues(e) if i.code == "KV702"]
        assert issue.vllm.startswith("the hooks refuse to start: raises ConnectorBlockSizeMismatch")
        offline = engine_issues(global_vote()["strict-offline"][name])
        assert [(i.code, i.vllm[:60]) for i in offline] == [("KV702", issue.vllm[:60])]


@pytest.mark.parametrize("mode", ["enforce", "warn"])
def test_enforce_and_warn_log_and_keep_vllms_vote(mode: str) -> None:
    """The groups' runner values differ (128 and 64): there is no one value to hand
    over, so enforce logs like warn and the connector keeps its own 64."""
    for name, e in global_vote()[mode].items():
        facts = _nixl(e)
        assert facts["refusal"] is None, facts["refusal"]
        assert facts["hooks"] == {
            "own": 64,
            "used": 64,
            "runner": {"0": 64, "1": 128},
            "handed": False,
        }, name
        (line,) = facts["hooks_log"]
        assert line.startswith("ERROR kvconfig: KV-cache group 1") and MISMATCH in line
        assert line.endswith(f"(KVCONFIG_MODE={mode}: starting anyway)")
        codes = [i.code for i in engine_issues(e)]
        assert codes == [i.code for i in engine_issues(global_vote()[f"{mode}-offline"][name])]
        assert codes == ["KV701"]


def test_handshake_refusals_survive_pickling() -> None:
    err = HandshakeRefused(
        local_engine="d",
        remote_engine="p",
        local_plan={"block_size": 128, "kernel_block_size": 64, "pages_per_block": 2, "tp": 1},
        remote_plan={"block_size": 128, "kernel_block_size": 128, "pages_per_block": 1, "tp": 1},
        check="page sizes that are no multiple of each other",
        vllm_error="AssertionError: Local block size 64 is not divisible by remote block size 128",
        fixes=["--block-size 64 on both engines"],
    )
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.remote_plan == err.remote_plan
