"""A fleet planned by vLLM's own start-up (``engine="vllm"``): each engine in an engine
child (``kvconfig.engine``), its connectors' code run on the engine's objects
(``kvconfig.engine.connectors``), and every NIXL pair's handshake run for real.

Two rounds: the first starts every distinct engine and collects what its connectors
compute, among it the handshake payload each NIXL worker serves; the second starts the
engines that initiate a NIXL handshake again, with their peers' payloads, and runs vLLM's
``_nixl_handshake`` against them. The children of the first round serve the second (the
peers travel in a file both rounds name). Each data-parallel engine plans alike, so the
engine mode runs one (``--data-parallel-size`` is not passed on).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kvconfig.errors import ConnectorRefusal
from kvconfig.fleet._load import kv_transfer_of
from kvconfig.fleet.components import components
from kvconfig.fleet.components.facts import Components
from kvconfig.fleet.model import Engine
from kvconfig.fleet.rules.common import Pair, pairs

SKIPPED_OPTIONS = frozenset({"data-parallel-size"})

HOOK_MODES = ("enforce", "strict", "warn")
"""The hooks' modes an engine child loads them in (any other: the hooks are off)."""


def _flags(options: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for name, value in options.items():
        if name in SKIPPED_OPTIONS or value is None or value is False:
            continue
        if value is True:
            out.append(f"--{name}")
        elif isinstance(value, Mapping | list):
            out += [f"--{name}", json.dumps(value)]
        else:
            out += [f"--{name}", str(value)]
    return out


def engine_id(e: Engine) -> str:
    """The engine id its connectors run with: its own, else one kvconfig derives from its
    configuration (engines configured alike are one engine)."""
    import hashlib

    kv = kv_transfer_of(e.options, e.spec.source) or {}
    derived = hashlib.sha256(e.spec.key().encode()).hexdigest()[:12]
    return str(kv.get("engine_id") or f"kvconfig-{derived}")


def request(e: Engine, peers_file: str) -> Any:
    """The engine child request of one engine (None for native deployment files)."""
    from kvconfig.engine import _gpu
    from kvconfig.engine.pool import Request

    if e.loaded.native:
        return None
    spec = e.spec
    given = {k: v for k, v in spec.given.items() if k != "kv-transfer-config"}
    # kv_transfer_of(e.options): the deployment's or the fleet's, offload tiers merged in
    kv = kv_transfer_of(e.options, spec.source)
    if kv is not None:
        given["kv-transfer-config"] = {**kv, "engine_id": engine_id(e)}
    if isinstance(spec.target, str):
        path = Path(spec.target) if Path(spec.target).is_absolute() else spec.cwd / spec.target
        argv = ["--config", str(path.resolve())]
        cwd = str(path.resolve().parent)
    else:
        tokens = list(spec.target)
        while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
            tokens.pop(0)
        if tokens[:1] == ["env"]:
            tokens.pop(0)
            while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
                tokens.pop(0)
        if tokens[:2] == ["vllm", "serve"]:
            tokens = tokens[2:]
        argv, cwd = tokens, str(spec.cwd)
    dep = e.deployment
    return Request(
        argv=(*argv, *_flags(given)),
        cwd=cwd,
        gpu=_gpu(e.result.platform),
        env=dict(e.env),
        settings={"KVCONFIG_FLEET_PEERS": peers_file},
        cubins=bool(dep.trtllm_cubins),
        hooks=dep.hooks if dep.hooks in HOOK_MODES else "none",
    )


def _planned(e: Engine, answer: Any) -> Engine:
    """``e`` with vLLM's plan of its start-up (``kvconfig.engine``'s ``PlanResult``), with
    KV901 and KV902 as single-engine mode has them (``kvconfig.engine.contained``)."""
    from kvconfig.engine import contained, description, emulate
    from kvconfig.engine.connectors import stand_in as connector_stand_ins
    from kvconfig.engine.plan import plan_result

    p = e.result.platform
    result = plan_result(
        answer,
        source=e.spec.source,
        platform=p,
        description=description(answer.vllm_version, p),
        stood_in=(*emulate.STOOD_IN, *connector_stand_ins.STOOD_IN),
    )
    result = contained(result, e.env, answer.data.get("remote_code") == "ignored")
    facts = (answer.data.get("facts") or {}).get("connectors")
    return replace(e, result=result, plan=result.to_json(), vllm=facts, cache={})


def with_vllm(
    engines: Sequence[Engine],
    *,
    jobs: int = 1,
    timeout: float = 300.0,
    fleets: Sequence[Sequence[int]] | None = None,
    python: str | None = None,
    trust_remote_code: bool = False,
) -> list[Engine]:
    """The engines planned again by vLLM's start-up, with vLLM's connector facts.

    ``fleets`` partitions the engines (by index) into fleets whose pairs handshake; by
    default they are one fleet. Several fleets planned at once share the engine children.
    vLLM runs code from a model's folder only with ``trust_remote_code`` (kvconfig's own
    ``--trust-remote-code``), as in single-engine mode: an engine that asks for it gets
    KV901 and vLLM's own classes, or an input error when vLLM cannot build it without.
    An engine whose start-up gives no plan (``kvconfig.engine.start_up_error``: a child
    that timed out or died, vLLM's parser refusing the command) is an input error, as in
    single-engine mode, never planned offline instead.
    """
    from kvconfig.engine import available, start_up_error
    from kvconfig.engine.pool import Pool
    from kvconfig.errors import InputError

    why = available(python)
    if why is not None:
        raise InputError(f"--engine vllm needs vLLM: {why}", key="--engine")
    distinct: dict[str, Engine] = {}
    for e in engines:
        distinct.setdefault(e.spec.key(), e)
    out: dict[str, Engine] = {}
    folder = None
    try:
        folder = tempfile.mkdtemp(prefix="kvconfig-fleet-")
        peers_file = os.path.join(folder, "peers.json")
        Path(peers_file).write_text("{}", encoding="utf-8")
        reqs = {k: request(e, peers_file) for k, e in distinct.items()}
        keys = [k for k, r in reqs.items() if r is not None]
        children = len({reqs[k].key() for k in keys}) or 1
        with Pool(
            jobs=max(jobs, children),
            timeout=timeout,
            python=python,
            trust_remote_code=trust_remote_code,
        ) as pool:
            answers = dict(zip(keys, pool.ask_all([reqs[k] for k in keys]), strict=True))
            for k in keys:
                e, a = distinct[k], answers[k]
                error = start_up_error(a, e.spec.where or e.spec.source)
                if error is not None:
                    # no plan from vLLM: never the offline plan in its place
                    raise error
                out[k] = _planned(e, a)
            planned_now = [out.get(e.spec.key(), e) for e in engines]
            peers: dict[str, list[dict[str, Any]]] = {}
            for part in fleets or [range(len(engines))]:
                for local, found in _peers([planned_now[i] for i in part]).items():
                    peers.setdefault(local, []).extend(found)
            if peers:
                Path(peers_file).write_text(json.dumps(peers), encoding="utf-8")
                again = [k for k in keys if k in out and engine_id(out[k]) in peers]
                second = pool.ask_all([reqs[k] for k in again])
                for k, a in zip(again, second, strict=True):
                    facts = (a.data.get("facts") or {}).get("connectors") or {}
                    nixl = (facts.get("nixl") or [{}])[0]
                    base = out[k].vllm or {}
                    if base.get("nixl"):
                        base["nixl"][0]["handshakes"] = nixl.get("handshakes", [])
    finally:
        if folder is not None:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
    planned = [out.get(e.spec.key(), e) for e in engines]
    result = []
    for e, p in zip(engines, planned, strict=True):
        result.append(p if p.spec is e.spec else replace(p, spec=e.spec, cache=p.cache))
    for e in result:
        apply(e)
    return result


def _peers(engines: Sequence[Engine]) -> dict[str, list[dict[str, Any]]]:
    """Local NIXL engine id -> the peers it handshakes with (pull: decode asks prefill)."""
    peers: dict[str, list[dict[str, Any]]] = {}
    for pair in pairs(engines):
        sides = _sides(pair)
        if sides is None:
            continue
        local, remote = sides
        rn = ((remote.vllm or {}).get("nixl") or [{}])[0]
        if not rn.get("payload") or rn.get("refusal"):
            continue
        peers.setdefault(engine_id(local), []).append(
            {
                "name": rn["engine_id"],
                "engine_id": rn["engine_id"],
                "tp": rn.get("tp", remote.tp),
                "dcp": rn.get("dcp", remote.dcp),
                "payload": rn["payload"],
            }
        )
    return peers


def _sides(pair: Pair) -> tuple[Engine, Engine] | None:
    p = ((pair.prefill.vllm or {}).get("nixl") or [None])[0]
    d = ((pair.decode.vllm or {}).get("nixl") or [None])[0]
    if not p or not d or p.get("refusal") or d.get("refusal"):
        return None
    if d.get("transfer_mode", "pull") == "pull":
        return pair.decode, pair.prefill
    return pair.prefill, pair.decode


def _refusal(raw: Mapping[str, Any] | None) -> ConnectorRefusal | None:
    if not raw:
        return None
    return ConnectorRefusal(str(raw.get("error")), str(raw.get("message")))


def apply(e: Engine) -> Components:
    """The engine's components with what vLLM computed in place of kvconfig's mirrors."""
    c = components(e)
    facts = e.vllm
    if not facts:
        return c
    for mine, theirs in zip(c.nixl, facts.get("nixl") or [], strict=False):
        if theirs.get("refusal") and "kernel_block_size" not in theirs:
            mine.refusal = _refusal(theirs["refusal"])
            continue
        mine.kernel = theirs.get("kernel_block_size", mine.kernel)
        mine.own = theirs.get("own_block_size", mine.kernel)
        mine.pages = theirs.get("pages_per_block", mine.pages)
        mine.logical = theirs.get("logical_block_size", mine.logical)
        mine.backend_name = theirs.get("backend_name", mine.backend_name)
        mine.layout = theirs.get("layout", mine.layout)
        mine.hma = theirs.get("hma", mine.hma)
        mine.use_host_buffer = theirs.get("use_host_buffer", mine.use_host_buffer)
        mine.compat_hash = theirs.get("compat_hash", mine.compat_hash)
        mine.factors = theirs.get("compat_factors") or mine.factors
        mine.refusal = _refusal(theirs.get("refusal"))
        mine.engine_id = str(theirs.get("engine_id", ""))
        mine.handshakes = {str(h.get("peer")): h for h in theirs.get("handshakes") or []}
    for mine_m, theirs in zip(c.mooncake, facts.get("mooncake") or [], strict=False):
        mine_m.refusal = _refusal(theirs.get("refusal"))
        if theirs.get("kernel_block_size") is not None:
            mine_m.kernel = theirs["kernel_block_size"]
            mine_m.own = theirs.get("own_block_size", mine_m.kernel)
            mine_m.pages = theirs["pages_per_block"]
            mine_m.logical = theirs["logical_block_size"]
    for mine_o, theirs in zip(c.offload, facts.get("offload") or [], strict=False):
        mine_o.refusal = _refusal(theirs.get("refusal"))
        if theirs.get("refusal") is None:
            mine_o.group_tokens = list(theirs["group_tokens_per_block"])
            mine_o.blocks_per_chunk = theirs["blocks_per_chunk"]
            mine_o.tokens_per_hash = theirs["tokens_per_hash"]
            for t_mine, t_theirs in zip(mine_o.tiers, theirs.get("tiers") or [], strict=False):
                t_mine.namespace = t_theirs.get("namespace", t_mine.namespace)
                t_mine.fields = t_theirs.get("namespace_fields", t_mine.fields)
    routing = facts.get("routing")
    if routing:
        r = c.routing
        r.effective = routing.get("effective_block_size")
        r.group_sizes = list(routing.get("group_block_sizes") or r.group_sizes)
        r.scheduler = routing.get("scheduler_block_size")
        r.hash_block = routing.get("hash_block_size")
        r.seed = routing.get("hash_seed")
        r.refusal = _refusal(routing.get("refusal"))
    if facts.get("layout"):
        c.layout = facts["layout"]
    return c
