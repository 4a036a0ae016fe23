"""Planning a fleet: each engine once per distinct configuration, then the rules.

Engines are planned by kvconfig's offline resolver (``kvconfig.plan.resolve.resolve``);
with ``engine="vllm"`` by vLLM's own start-up in engine children
(``kvconfig.fleet.engine_mode``).
Engines whose configuration is the same are planned once, and so are pairs of
configurations, so a fleet of many replicas costs what its distinct deployments cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kvconfig.codes import FindingCode
from kvconfig.errors import InputError, ModelUnavailable, RunTimeValue, UnsupportedArchitecture
from kvconfig.fleet._load import kv_transfer_of, load
from kvconfig.fleet.components import components
from kvconfig.fleet.components.groups import entries, kind_of
from kvconfig.fleet.diff import digest
from kvconfig.fleet.model import Engine, EngineSpec
from kvconfig.fleet.read import KV_ROLES, FleetInput
from kvconfig.fleet.rules.common import Issue, Pair, pairs, role_pairs, sort
from kvconfig.fleet.rules.engine import engine_issues, startup_issues
from kvconfig.fleet.rules.pairs import pair_issues
from kvconfig.fleet.rules.routers import RouterSpec, router_issues
from kvconfig.fleet.rules.tiers import tier_issues
from kvconfig.fleet.unplanned import Unplanned, unplanned, unplanned_json
from kvconfig.mirror import versions


class Planner:
    """Plans engines, and engines with other settings (for fixes), once each."""

    def __init__(
        self,
        vllm_version: str = versions.DEFAULT,
        *,
        model_paths: Any = None,
        download: bool | None = None,
        asked: str | None = None,
        trtllm_cubins: bool | None = None,
    ) -> None:
        self.vllm_version = vllm_version
        self.model_paths = model_paths
        self.download = download
        self.asked = asked
        """The release every engine plans for (``--vllm-version``, else the repository
        configuration's), above each engine's own (its image tag, its pinned install)."""
        self.trtllm_cubins = trtllm_cubins
        self._done: dict[str, Engine | InputError] = {}
        self._copies: dict[tuple[Any, ...], Engine] = {}

    def plan(self, spec: EngineSpec, override: Mapping[str, Any] | None = None) -> Engine:
        """The engine planned (InputError for bad input)."""
        key = spec.key(override)
        hit = self._done.get(key)
        if hit is None:
            try:
                hit = self._plan(spec, override)
            except InputError as err:
                hit = err
            self._done[key] = hit
        if isinstance(hit, InputError):
            raise hit
        from dataclasses import replace

        # the role "auto" resolves the same way for the same configuration
        own = spec if spec.role != "auto" else replace(spec, role=hit.spec.role)
        if hit.spec == own:
            return hit
        # same configuration, another engine: its own name, role and replicas
        mine = self._copies.get((key, own.name, own.role, own.where, own.replicas))
        if mine is None:
            mine = replace(hit, spec=own)
            self._copies[(key, own.name, own.role, own.where, own.replicas)] = mine
        return mine

    def _plan(self, spec: EngineSpec, override: Mapping[str, Any] | None) -> Engine:
        from kvconfig.load.platforms import parse_platform
        from kvconfig.plan.resolve import resolve
        from kvconfig.plan.result import Found
        from kvconfig.plan.result import sort as sort_findings

        named = versions.release(
            self.asked or spec.vllm_version or self.vllm_version,
            source=spec.where or spec.source,
        )
        loaded = load(
            spec.target,
            cwd=spec.cwd,
            platform=spec.platform,
            vllm_version=named.version,
            given=spec.given,
            defaults=spec.defaults,
            override=override,
            offload=spec.offload,
            env=spec.env,
            hooks=spec.hooks,
            where=spec.where or spec.source,
            engine=spec.engine,
            model_paths=self.model_paths,
            download=self.download,
            trtllm_cubins=self.trtllm_cubins,
        )
        if loaded.deployment.platform is None:
            raise InputError(
                "no platform given",
                source=spec.where or spec.source,
                key="platform",
                hint="give the engine (or the fleet) a platform, or pass --platform",
            )
        result = resolve(loaded.deployment, parse_platform(loaded.deployment.platform))
        if named.assumed:  # planned with the nearest known release's rules: say so
            found = Found(FindingCode.RELEASE_ASSUMED, None, named.message())
            result = result._replace(findings=tuple(sort_findings([*result.findings, found])))
        role = spec.role
        if role == "auto":
            role = "both"
            for entry in entries(kv_transfer_of(loaded.options, spec.source)):
                if kind_of(str(entry.get("kv_connector"))) in ("nixl", "mooncake"):
                    role = KV_ROLES.get(str(entry.get("kv_role")), "both")
                    break
        plan = result.to_json()
        plan["source"] = spec.source
        named_release = named.named.strip().lstrip("vV") if named.assumed else None
        return Engine(replace(spec, role=role), loaded, result, plan, release=named_release)

    def replan(self, engine: Engine, override: Mapping[str, Any]) -> Engine | None:
        """``engine`` with ``override`` set (None when that does not plan)."""
        try:
            return self.plan(engine.spec, override)
        except (InputError, UnsupportedArchitecture, RunTimeValue):
            return None


def plan_engines(fleet: FleetInput, planner: Planner) -> tuple[list[Engine], list[Unplanned]]:
    """Every engine of the fleet, planned; and those kvconfig cannot plan offline (their
    layers cannot be derived, KV401, their model cannot be read, KV402, or an option that
    changes the plan is only known at run time, KV403): cannot tell is
    no rejection, and they stay in the fleet as read (``kvconfig.fleet.unplanned``)."""
    engines: list[Engine] = []
    found: list[Unplanned] = []
    for spec in fleet.engines:
        try:
            engines.append(planner.plan(spec))
        except UnsupportedArchitecture as err:
            found.append(unplanned(spec, "KV401", str(getattr(err, "architecture", "?"))))
        except ModelUnavailable as err:
            found.append(unplanned(spec, "KV402", err.message))
        except RunTimeValue as err:
            found.append(unplanned(spec, "KV403", f"line {err.line}: {err.reason}"))
    return engines, found


def _dedupe_pairs(engines: Sequence[Engine]) -> list[tuple[Pair, int]]:
    """One pair per distinct (producer, consumer) configuration, with how many it stands for."""
    seen: dict[tuple[str, str], list[Any]] = {}
    for pair in pairs(engines):
        key = (pair.prefill.spec.key(), pair.decode.spec.key())
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [pair, 1]
    return [(p, n) for p, n in seen.values()]


def issues(
    engines: Sequence[Engine], routers: Sequence[RouterSpec], planner: Planner
) -> list[Issue]:
    """Every fleet finding. Engines without KV-cache groups (vLLM refused to start them in
    engine mode; their plans say why) take part in none."""
    out: list[Issue] = [f for e in engines if not e.plan.get("groups") for f in startup_issues(e)]
    engines = [e for e in engines if e.plan.get("groups")]
    seen_engine: set[str] = set()
    for e in engines:
        key = e.spec.key()
        if key in seen_engine:
            continue
        seen_engine.add(key)
        out.extend(engine_issues(e))
    for pair, count in _dedupe_pairs(engines):
        found = pair_issues(pair, planner.replan)
        if count > 1:
            for f in found:
                f.values["pairs"] = count
                f.message += f" ({count} engine pairs have these two configurations.)"
        out.extend(found)
    for router in routers:
        out.extend(router_issues(router, engines, planner.replan))
    out.extend(tier_issues(engines))
    return sort(out)


# ---------------------------------------------------------------- the fleet plan JSON


def _connector_json(e: Engine) -> list[dict[str, Any]]:
    c = components(e)
    kv = kv_transfer_of(e.options, e.spec.source)
    by_name: dict[str, Any] = {n.name: n for n in c.nixl}
    by_name.update({m.name: m for m in c.mooncake})
    by_name.update({o.name: o for o in c.offload})
    out = []
    transfer = [g.id for g in c.groups]
    from kvconfig.mirror.connectors.registry import required_kv_cache_layout

    use_mla = any(g.kind in ("mla_attention", "sparse_mla") for g in c.groups)
    for entry in entries(kv):
        name = str(entry.get("kv_connector"))
        kind = kind_of(name)
        item: dict[str, Any] = {
            "name": name,
            "kind": kind,
            "role": entry.get("kv_role"),
            "transfer_groups": transfer,
            "required_layout": required_kv_cache_layout(name, use_mla=use_mla, hisparse=False),
        }
        facts = by_name.get(name)
        if kind == "nixl" and facts is not None:
            item.update(
                logical_block_size=facts.logical,
                kernel_block_size=facts.kernel,
                pages_per_block=facts.pages,
                transfer_mode=facts.transfer_mode,
                compat_factors=facts.factors,
                compat_hash=facts.compat_hash,
                refusal=str(facts.refusal) if facts.refusal else None,
            )
        elif kind == "mooncake" and facts is not None:
            item.update(
                logical_block_size=facts.logical,
                kernel_block_size=facts.kernel,
                pages_per_block=facts.pages,
                refusal=str(facts.refusal) if facts.refusal else None,
            )
        elif kind == "offloading" and facts is not None:
            item.update(
                offload={
                    "group_tokens_per_block": facts.group_tokens,
                    "blocks_per_chunk": facts.blocks_per_chunk,
                    "tokens_per_hash": facts.tokens_per_hash,
                    "tiers": [
                        {
                            "kind": t.kind,
                            "root_dir": t.root_dir,
                            "namespace": t.namespace,
                            "namespace_fields": t.fields,
                        }
                        for t in facts.tiers
                    ],
                },
                refusal=str(facts.refusal) if facts.refusal else None,
            )
        out.append(item)
    return out


def engine_json(e: Engine) -> dict[str, Any]:
    """One engine of the fleet plan (``schemas.fleet_plan.EnginePlan``)."""
    c = components(e)
    connectors = _connector_json(e)
    ks = {n.name: n.kernel for n in c.nixl}
    ks.update({m.name: m.kernel for m in c.mooncake})
    groups = []
    for g, size in zip(c.groups, c.routing.group_sizes, strict=True):
        groups.append(
            {
                "group": g.id,
                "kind": g.kind,
                "block_size": g.block_size,
                "manager_block_size": size,
                "runner": g.runner,
                "speculator": g.speculator,
                "connectors": {n: (None if g.state else k) for n, k in ks.items()},
            }
        )
    r = c.routing
    body = {
        "name": e.name,
        "role": e.spec.role,
        "replicas": e.spec.replicas * e.dp,
        "source": e.spec.source,
        "platform": e.platform,
        "parallelism": {
            "tensor": e.tp,
            "pipeline": e.pp,
            "data": e.dp,
            "decode_context": e.dcp,
            "prefill_context": e.pcp,
        },
        "kv_transfer_config": kv_transfer_of(e.options, e.spec.source),
        "plan": {k: v for k, v in e.plan.items() if k != "engine"},
        "components": groups,
        "connectors": connectors,
        "routing": {
            "effective_block_size": r.effective,
            "group_block_sizes": r.group_sizes,
            "scheduler_block_size": r.scheduler,
            "hash_block_size": r.hash_block,
            "hash_algo": r.algo,
            "hash_seed": r.seed,
            "prefix_caching": r.prefix_caching,
            "refusal": str(r.refusal) if r.refusal else None,
        },
        "stages": [
            {"stage": s, "layers": [a, b], "kernel_block_sizes": ks_} for s, (a, b), ks_ in c.stages
        ],
    }
    body["digest"] = digest(body)
    return body


def fleet_json(
    fleet: FleetInput,
    engines: Sequence[Engine],
    found: Sequence[Issue],
    engine: str,
    unplanned_engines: Sequence[Unplanned] = (),
) -> dict[str, Any]:
    """The fleet plan (``schemas.fleet_plan.FleetPlan``)."""
    bodies = [engine_json(e) for e in engines]
    reject = any(b["plan"]["verdict"] == "reject" for b in bodies) or any(
        f.severity == "error" for f in found
    )
    unknown = bool(unplanned_engines) or any(f.code in ("KV401", "KV402", "KV403") for f in found)
    members: list[Any] = [*engines, *unplanned_engines]
    routers = [
        {
            "kind": r.kind,
            "block_size": r.block_size,
            "hashes_prompts": r.hashes_prompts,
            "hash_algo": r.hash_algo,
            "hash_seed": r.hash_seed,
            "engines": list(r.engines),
        }
        for r in fleet.routers or (fleet.router,)
    ]
    return {
        "kvconfig_fleet": 1,
        "verdict": "reject" if reject else "unknown" if unknown else "ok",
        "source": fleet.source,
        "vllm_version": fleet.vllm_version,
        "engine": engine,
        "router": routers[0],
        "routers": [r for r in routers if r["kind"] != "none"],
        "engines": bodies,
        "unplanned": [unplanned_json(u) for u in unplanned_engines],
        "pairs": [{"prefill": p.spec.name, "decode": d.spec.name} for p, d in role_pairs(members)],
        "findings": [f.to_json() for f in found],
    }
