"""Findings inside one engine: its connectors' own votes, offloading, start-up refusals and
pipeline stages."""

from __future__ import annotations

from typing import Any

from kvconfig.errors import ConnectorRefusal
from kvconfig.fleet.components import components
from kvconfig.fleet.components.facts import Components, MooncakeFacts, NixlFacts
from kvconfig.fleet.model import Engine
from kvconfig.fleet.rules.common import Issue, _refused


def engine_issues(engine: Engine) -> list[Issue]:
    """Findings about one engine's own components."""
    c = components(engine)
    out: list[Issue] = []
    voters: list[NixlFacts | MooncakeFacts] = [*c.nixl, *c.mooncake]
    for conn in voters:
        out.extend(_connector_vote(engine, c, conn))
    for off in c.offload:
        if off.refusal is not None:
            out.append(_offload_refusal(engine, c, off.refusal))
    if c.routing.refusal is not None:
        out.append(
            Issue(
                "KV715",
                [engine.name],
                f"{engine.name}: --prefix-match-unit {engine.options.get('prefix-match-unit')} "
                f"does not fit its KV-cache groups (block sizes "
                f"{', '.join(str(s) for s in c.routing.group_sizes)}): prefix-cache keys are "
                "computed in units every prefix-cacheable group's block size must divide.",
                _refused(
                    c.routing.refusal, "v1/core/kv_cache_utils.py:resolve_kv_cache_block_sizes"
                )
                + " when the engine core sizes the KV cache",
                _match_unit_fixes(c),
                values={"prefix_match_unit": _int(engine.options.get("prefix-match-unit"))},
            )
        )
    if c.layout_refusal is not None:
        out.append(
            Issue(
                "KV716",
                [engine.name],
                f"{engine.name}: the connectors of its MultiConnector require different "
                "KV-cache layouts; the cache has one.",
                _refused(c.layout_refusal, "kv_connector/v1/multi_connector.py")
                + " while the engine core resolves the layout",
                ["give every child connector the same layout (drop or replace the odd one)"],
            )
        )
    out.extend(_stages(engine, c))
    return out


#: vLLM's start-up errors (engine mode) that a fleet rule explains, and its code.
STARTUP_REFUSALS = (
    ("Invalid prefix_match_unit", "KV715"),
    ("KV cache layout mismatch", "KV716"),
    ("must be a multiple of the GPU KV cache block size", "KV713"),
    ("VLLM_SSM_CONV_STATE_LAYOUT", "KV702"),
    ("NixlConnector", "KV702"),
    ("NixlPushConnector", "KV702"),
)


def startup_issues(engine: Engine) -> list[Issue]:
    """Engine mode: vLLM refused to start the engine for a reason a fleet rule covers."""
    out = []
    for f in engine.plan.get("findings") or ():
        if f.get("code") != "KV601":
            continue
        text = str(f.get("message", ""))
        code = next((c for part, c in STARTUP_REFUSALS if part in text), None)
        if code is not None:
            out.append(
                Issue(
                    code,
                    [engine.name],
                    f"{engine.name}: vLLM's own start-up refuses the engine.",
                    "raises at start-up: " + text.split("): ", 1)[-1],
                    [],
                )
            )
    return out


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _match_unit_fixes(c: Components) -> list[str]:
    import math

    sizes = c.routing.group_sizes
    if not sizes:
        return []
    g = math.gcd(*sizes)
    if len(sizes) == 1:
        return [f"unset --prefix-match-unit, or set it to {sizes[0]}"]
    return [f"--prefix-match-unit {g} (or any divisor of {g})", "unset --prefix-match-unit"]


HOOKS_REFUSALS = ("ConnectorBlockSizeMismatch", "HooksFailed")
"""The kvconfig hooks' own refusals of a connector (``KVCONFIG_MODE=strict``)."""


def _connector_vote(engine: Engine, c: Components, conn: NixlFacts | MooncakeFacts) -> list[Issue]:
    if conn.refusal is not None and conn.refusal.error in HOOKS_REFUSALS:
        return [
            Issue(
                "KV702",
                [engine.name],
                f"{engine.name}: the kvconfig hooks (KVCONFIG_MODE="
                f"{engine.deployment.hooks}) refuse to build its {conn.name}: "
                f"{conn.refusal.message}",
                "the hooks refuse to start: "
                + _refused(
                    conn.refusal, "hooks/_connectors/sync.py, in the connector worker's __init__"
                )
                + ", after the weights are loaded",
                [
                    f"give the groups backends that agree at B={conn.logical} (e.g. one "
                    "--attention-backend for every layer kind)",
                    "KVCONFIG_MODE=enforce (hands the runner's k to the connector when the "
                    "groups share one, else logs the difference and starts)",
                ],
            )
        ]
    if conn.refusal is not None:
        return [
            Issue(
                "KV702",
                [engine.name],
                f"{engine.name}: vLLM cannot build its {conn.name}: {conn.refusal.message}",
                _refused(conn.refusal, "the connector worker's __init__")
                + " at start-up, after the weights are loaded",
                _refusal_fixes(conn.refusal),
            )
        ]
    out = []
    own = conn.own
    for g in c.groups:
        if g.state or g.runner is None or own is None or own == g.runner:
            continue
        others = ", ".join(
            f"group {h.id} k={h.runner}" for h in c.groups if not h.state and h.id != g.id
        )
        values: dict[str, int | str | None] = {
            "block_size": g.block_size,
            "runner": g.runner,
            conn.name: own,
        }
        if conn.kernel == g.runner and conn.kernel != own:
            out.append(
                Issue(
                    "KV719",
                    [engine.name],
                    f"{engine.name} group {g.id}: {conn.name} would vote {own}-token pages over "
                    f"all transfer layers; the kvconfig hooks hand it the runner's {g.runner}.",
                    "the hooks replace the connector's vote at start-up",
                    group=g.id,
                    values=values,
                )
            )
            continue
        out.append(
            Issue(
                "KV701",
                [engine.name],
                f"{engine.name} group {g.id} ({g.kind}, B={g.block_size}): the model runner "
                f"split its blocks into {g.runner}-token pages (its vote over this group's "
                f"layers), but {conn.name} votes once over every transfer layer and walks all "
                f"groups in {own}-token pages, {conn.pages} per {conn.logical}-token block"
                + (f" ({others})" if others else "")
                + ". Between engines with the same plan the bytes still land in place; a "
                "transfer at another block ratio or TP post-processes pages this group does "
                "not have.",
                "silent: vLLM does not compare the connector's vote with the runner's "
                "(vllm/v1/worker/utils.py:prepare_kernel_block_sizes votes per group, "
                "_sync_block_size_with_kernel once for all)"
                + (
                    f"; the kvconfig hooks (KVCONFIG_MODE={engine.deployment.hooks}) log it as "
                    "an ERROR and start"
                    if engine.deployment.hooks in ("enforce", "warn")
                    else ""
                ),
                [
                    f"give the groups backends that agree at B={g.block_size} "
                    f"(e.g. one --attention-backend for every layer kind)",
                    "install the kvconfig hooks (KVCONFIG_MODE=enforce hands the runner's k to "
                    "the connector when the groups share one; strict refuses otherwise)",
                ],
                group=g.id,
                values=values,
            )
        )
    return out


def _refusal_fixes(refusal: ConnectorRefusal) -> list[str]:
    text = refusal.message
    if "VLLM_SSM_CONV_STATE_LAYOUT" in text:
        return ["set VLLM_SSM_CONV_STATE_LAYOUT=DS in the engine's environment"]
    if "NixlConnector (pull)" in text:
        return ["use --pipeline-parallel-size 1 on this side, or NixlPushConnector for PP + HMA"]
    if "pipeline_parallel_size" in text:
        return ["use --pipeline-parallel-size 1 on this side"]
    if "No common block size" in text:
        return ["choose a --block-size every transfer layer's backend accepts"]
    if "prefill_context_parallel_size" in text:
        return ["run prefill context parallelism on producers only"]
    return []


def _offload_refusal(engine: Engine, c: Components, refusal: ConnectorRefusal) -> Issue:
    tokens = c.offload[0].group_tokens if c.offload else []
    fixes = []
    if "multiple of the GPU KV cache block size" in refusal.message and tokens:
        fixes.append(
            f"set the offload chunk ('block_size') to a multiple of {tokens[0]}, or give "
            "'blocks_per_chunk' instead"
        )
    if "tokens_per_hash" in refusal.message:
        fixes.append("enable prefix caching (--enable-prefix-caching)")
    return Issue(
        "KV713",
        [engine.name],
        f"{engine.name}: the offloading connector cannot size its chunks from GPU blocks of "
        f"{', '.join(str(t) for t in tokens)} tokens.",
        _refused(refusal, "kv_connector/v1/offloading/config.py:build_offloading_config")
        + " when the connector starts",
        fixes,
        values={"block_size": tokens[0] if tokens else None},
    )


def _stages(engine: Engine, c: Components) -> list[Issue]:
    out = []
    for g in c.groups:
        ks = {s[2][g.id] for s in c.stages if g.id < len(s[2]) and s[2][g.id] is not None}
        if len(ks) <= 1:
            continue
        per = "; ".join(
            f"stage {s[0]} (layers {s[1][0]}-{s[1][1]}) k={s[2][g.id]}"
            for s in c.stages
            if s[2][g.id] is not None
        )
        out.append(
            Issue(
                "KV717",
                [engine.name],
                f"{engine.name} group {g.id} (B={g.block_size}): each pipeline stage votes over "
                f"its own layers and allocates its share of the group with its own pages: "
                f"{per}. The plan (and the digest) of one stage is not the other's; connectors "
                "on each stage transfer at that stage's k.",
                "silent: vLLM never synchronises k across workers",
                [
                    "give every layer of the group one attention backend (the draft layers too: "
                    "speculative-config attention_backend)",
                    "export each worker's plan (KVCONFIG_PLAN_EXPORT=plan-{rank}.json) and "
                    "compare them with kvconfig diff",
                ],
                group=g.id,
                values={f"stage{s[0]}": s[2][g.id] for s in c.stages},
            )
        )
    return out
