"""The kvconfig hooks' connector checks, in vLLM 0.33.0's own code.

* In engine children with the hooks loaded by vLLM's plugin loader (``KVCONFIG_MODE=enforce``),
  vLLM's real ``_nixl_handshake`` runs against the peer's payload: the hooks refuse the
  #28661 pair with ``HandshakeRefused`` naming both engines' plans, where vLLM alone
  asserts (``tests/test_fleet_engine.py`` runs the same pair without the hooks), and let
  a correct pair through to vLLM's own checks, which pass. The plan digest is exported
  beside the plan.
* In this process, the wrapper on the connectors' block-size sync, on vLLM's real
  ``NixlBaseConnectorWorker`` class: ``enforce`` hands the runner's value over, ``strict``
  refuses, ``warn`` logs.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import pickle
import types
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

from kvconfig.errors import ConnectorBlockSizeMismatch, HandshakeRefused
from kvconfig.fleet import engine_mode, read
from kvconfig.fleet import planner as P
from kvconfig.fleet.diff import diff_files
from kvconfig.fleet.model import Engine

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


# ---------------------------------------------------------------- the sync wrapper in process


class _Backend:
    def __init__(self, name: str, sizes: list[int]) -> None:
        self.name, self.sizes = name, sizes

    def get_name(self) -> str:
        return self.name

    def get_supported_kernel_block_sizes(self, spec: Any = None) -> list[int]:
        return self.sizes


@pytest.fixture
def connector_hooks(monkeypatch: pytest.MonkeyPatch) -> Any:
    """vLLM's NIXL worker class with the kvconfig connector wrappers installed, its
    backends' votes answered by stand-in backends."""
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl import base_worker

    from kvconfig.hooks import _connectors
    from kvconfig.hooks._connectors import sync
    from kvconfig.hooks._state import STATE

    backends = [_Backend("FLASHINFER", [16, 32, 64])]
    monkeypatch.setattr(
        base_worker,
        "get_current_attn_backends_and_specs",
        lambda vllm_config, kv_cache_config, fallback: (backends, [None]),
    )
    monkeypatch.setattr(
        sync,
        "_vote_of",
        lambda worker, block: 64 if block % 64 == 0 else 16,
    )
    patched = _connectors.install()
    assert f"{_connectors.NIXL}.NixlBaseConnectorWorker._sync_block_size_with_kernel" in patched
    saved = STATE.mode
    yield types.SimpleNamespace(module=sync, state=STATE, backends=backends)
    STATE.mode = saved
    _connectors.uninstall()


def _worker(block: int = 128) -> Any:
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl.base_worker import (
        NixlBaseConnectorWorker,
    )

    w: Any = object.__new__(NixlBaseConnectorWorker)
    w.shutdown = lambda: None
    group = types.SimpleNamespace(
        layer_names=["layers.0.attn"], kv_cache_spec=types.SimpleNamespace(block_size=block)
    )
    w.__dict__.update(
        vllm_config=None,
        kv_cache_config=types.SimpleNamespace(transfer_groups=[group]),
        attn_backends=[],
        block_size=block,
        num_blocks=10,
        _physical_blocks_per_logical_kv_block=1,
    )
    return w


def test_enforce_hands_the_runners_value_to_the_connector(
    connector_hooks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    connector_hooks.state.mode = "enforce"
    monkeypatch.setattr(connector_hooks.module, "runner_votes", lambda cfg, kv: {0: 32})
    w = _worker()
    w._sync_block_size_with_kernel()
    assert (w.block_size, w._physical_blocks_per_logical_kv_block, w.num_blocks) == (32, 4, 40)
    record = w.__dict__["_kvconfig_record"]
    assert (record.own, record.used, record.handed) == (64, 32, True)


def test_strict_refuses_a_connector_that_disagrees(
    connector_hooks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    connector_hooks.state.mode = "strict"
    monkeypatch.setattr(connector_hooks.module, "runner_votes", lambda cfg, kv: {0: 128})
    with pytest.raises(ConnectorBlockSizeMismatch) as err:
        _worker()._sync_block_size_with_kernel()
    assert err.value.component == "NixlBaseConnectorWorker"
    assert (err.value.expected, err.value.found, err.value.block_size) == (128, 64, 128)
    assert pickle.loads(pickle.dumps(err.value)).found == 64


def test_warn_logs_and_keeps_vllms_vote(
    connector_hooks: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    connector_hooks.state.mode = "warn"
    monkeypatch.setattr(connector_hooks.module, "runner_votes", lambda cfg, kv: {0: 128})
    w = _worker()
    with caplog.at_level(logging.ERROR, logger="vllm.kvconfig"):
        w._sync_block_size_with_kernel()
    assert w.block_size == 64
    assert "KVCONFIG_MODE=warn: starting anyway" in caplog.text


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
