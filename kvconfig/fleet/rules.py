"""Findings between the engines of a fleet (KV7xx), and inside one engine's components.

Each rule names the engines, the group, both values, what vLLM 0.33.0 does at that point
(its error, or ``silent:`` and the consequence) and settings that make them agree. Fixes
that name a block size or a backend are checked: the engines are planned again with it
(``Replan``) and the rule must pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kvconfig.codes import FindingCode
from kvconfig.fleet.components import Components, Group, MooncakeFacts, NixlFacts, components
from kvconfig.fleet.model import Engine
from kvconfig.mirror import connectors as M

Replan = Callable[[Engine, Mapping[str, Any]], Engine | None]
"""The engine planned again with these ``vllm serve`` options set (None: it cannot be)."""

BLOCK_CANDIDATES = (16, 32, 64, 128, 256, 512, 1024)
"""Block sizes a fix may propose (vLLM's usual ones)."""

BACKEND_CANDIDATES = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION")
"""Attention backends a fix may propose for a pair on different GPUs."""

_ORDER = {"error": 0, "warning": 1, "info": 2}

_CODES = {c.value: c for c in FindingCode}

NIXL_CODES = {
    "compat-hash": "KV708",
    "block-size": "KV703",
    "tp-split": "KV704",
    "host-buffer": "KV705",
    "region-mapped": "KV706",
    "mamba-pages": "KV707",
    "tp": "KV718",
    "dcp": "KV718",
    "layout": "KV718",
}


@dataclass
class Issue:
    """One fleet finding."""

    code: str
    engines: list[str]
    message: str
    vllm: str
    fixes: list[str] = field(default_factory=list)
    group: int | None = None
    values: dict[str, int | str | None] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return _CODES[self.code].slug

    @property
    def severity(self) -> str:
        return _CODES[self.code].severity.value

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape (``schemas.fleet.FleetFinding``)."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "engines": list(self.engines),
            "group": self.group,
            "values": dict(self.values),
            "message": self.message,
            "vllm": self.vllm,
            "fixes": list(self.fixes),
        }


def sort(issues: Iterable[Issue]) -> list[Issue]:
    """Errors first, then by code."""
    return sorted(issues, key=lambda i: (_ORDER[i.severity], i.code))


def _refused(refusal: M.Refusal, at: str = "") -> str:
    where = f" ({at})" if at else ""
    return f"raises {refusal}{where}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# ---------------------------------------------------------------- inside one engine


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


def _connector_vote(engine: Engine, c: Components, conn: NixlFacts | MooncakeFacts) -> list[Issue]:
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
                "_sync_block_size_with_kernel once for all)",
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


def _refusal_fixes(refusal: M.Refusal) -> list[str]:
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


def _offload_refusal(engine: Engine, c: Components, refusal: M.Refusal) -> Issue:
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


# ---------------------------------------------------------------- between engines


@dataclass(frozen=True)
class Pair:
    """A producer and a consumer that transfer KV."""

    prefill: Engine
    decode: Engine


def pairs(engines: Sequence[Engine]) -> list[Pair]:
    """Every producer-consumer pair: prefill (or both) engines with decode (or both)."""
    out = []
    for p in engines:
        if p.spec.role not in ("prefill", "both"):
            continue
        for d in engines:
            if d is p or d.spec.role not in ("decode", "both"):
                continue
            if p.spec.role == "both" and d.spec.role == "both":
                continue
            out.append(Pair(p, d))
    return out


def _nixl_of(e: Engine) -> NixlFacts | None:
    nixl = components(e).nixl
    return nixl[0] if nixl else None


def _sides(pair: Pair) -> tuple[Engine, Engine, NixlFacts, NixlFacts] | None:
    """(local, remote) as NIXL's handshake sees them: in pull mode the decode engine
    handshakes with the prefill engine, in push mode the other way round."""
    p, d = _nixl_of(pair.prefill), _nixl_of(pair.decode)
    if p is None or d is None or p.refusal is not None or d.refusal is not None:
        return None
    if d.transfer_mode == "pull":
        return pair.decode, pair.prefill, d, p
    return pair.prefill, pair.decode, p, d


#: Fragments of vLLM's handshake errors, and the check each belongs to.
_CHECKS = (
    ("compatibility hash", "compat-hash"),
    ("Local block size", "block-size"),
    ("identical P/D block sizes", "block-size"),
    ("host buffer", "host-buffer"),
    ("physical_blocks_per_logical", "mamba-pages"),
    ("Head-sharded attention reads", "tp-split"),
    ("when P TP > D TP", "tp-split"),
    ("Region-mapped", "region-mapped"),
    ("kv_cache_layout", "layout"),
    ("contiguous heads", "layout"),
    ("tensor parallel size", "tp"),
    ("DCP", "dcp"),
)


def _classify(message: str) -> str:
    return next((check for text, check in _CHECKS if text in message), "tp")


def nixl_outcome(pair: Pair) -> M.Handshake | None:
    """What NIXL's handshake does for this pair (None: they do not pair over NIXL).

    In engine mode the handshake vLLM ran decides, but for the checks it could not run
    (after ``_validate_remote_agent_handshake``), which the mirror decides.
    """
    sides = _sides(pair)
    if sides is None:
        return None
    local, remote, ln, rn = sides
    mirrored = M.nixl_handshake(ln.side(local), rn.side(remote))
    real = ln.handshakes.get(rn.engine_id) if rn.engine_id else None
    if real is None:
        return mirrored
    if real.get("status") == "refused":
        message = str(real.get("message", ""))
        return M.Handshake(
            _classify(message),
            M.Refusal(str(real.get("error")), message),
            at=str(real.get("where") or ""),
        )
    if mirrored.check == "region-mapped":
        return mirrored
    return M.Handshake("ok", None, ratio=mirrored.ratio)


def _describe_nixl(e: Engine, n: NixlFacts) -> str:
    return (
        f"{e.name} ({e.platform}, TP {e.tp}, {n.backend_name}): B={n.logical}, NIXL pages "
        f"{n.kernel or n.logical}, {n.pages} per block"
    )


def _factor_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return [k for k in a if a.get(k) != b.get(k)]


def _candidates(pair: Pair) -> list[int]:
    """Block sizes to try, nearest the engines' own first (the largest at or below it,
    then larger ones)."""
    groups = [g for e in (pair.prefill, pair.decode) for g in components(e).groups]
    current = max((g.block_size for g in groups), default=16)
    sizes: list[int] = list(BLOCK_CANDIDATES)
    if any(g.state for g in groups) and current <= 4096:
        sizes = list(range(64, 4097, 64))
    below = sorted((b for b in sizes if b <= current), reverse=True)
    above = sorted(b for b in sizes if b > current)
    return below + above


def _common_block(
    pair: Pair, ok: Callable[[Pair], bool], replan: Replan, limit: int = 3
) -> list[int]:
    """Block sizes that, set on both engines, make ``ok`` hold."""
    found: list[int] = []
    for b in _candidates(pair):
        p = replan(pair.prefill, {"block-size": b})
        d = replan(pair.decode, {"block-size": b})
        if p is None or d is None or p.plan.get("verdict") != "ok" or d.plan.get("verdict") != "ok":
            continue
        if ok(Pair(p, d)):
            found.append(b)
            if len(found) >= limit:
                break
    return found


def _nixl_ok(pair: Pair) -> bool:
    out = nixl_outcome(pair)
    return out is not None and out.refusal is None


def _common_backend(pair: Pair, replan: Replan) -> list[str]:
    found = []
    for name in BACKEND_CANDIDATES:
        p = replan(pair.prefill, {"attention-backend": name})
        d = replan(pair.decode, {"attention-backend": name})
        if p is None or d is None or p.plan.get("verdict") != "ok" or d.plan.get("verdict") != "ok":
            continue
        if _nixl_ok(Pair(p, d)):
            found.append(name)
    return found


def nixl_issues(pair: Pair, replan: Replan) -> list[Issue]:
    """The NIXL handshake of one pair, and the silent page mismatch of an accepted one."""
    sides = _sides(pair)
    if sides is None:
        return []
    local, remote, ln, rn = sides
    out = nixl_outcome(pair)
    assert out is not None
    names = [local.name, remote.name]
    values: dict[str, int | str | None] = {
        f"{local.name}.nixl_block_size": ln.kernel,
        f"{remote.name}.nixl_block_size": rn.kernel,
        f"{local.name}.tp": local.tp,
        f"{remote.name}.tp": remote.tp,
    }
    both = f"{_describe_nixl(local, ln)}; {_describe_nixl(remote, rn)}"
    when = (
        f" at {local.name}'s first transfer from {remote.name} (the handshake passes)"
        if out.check == "region-mapped"
        else f" in {local.name}'s first handshake with {remote.name}, after both engines "
        "loaded their weights"
    )
    if out.refusal is not None:
        code = NIXL_CODES[out.check]
        fixes: list[str] = []
        if out.check == "compat-hash":
            diff = _factor_diff(ln.factors, rn.factors)
            values.update({f"{local.name}.{k}": str(ln.factors.get(k)) for k in diff})
            values.update({f"{remote.name}.{k}": str(rn.factors.get(k)) for k in diff})
            shown = ", ".join(f"{k} {ln.factors.get(k)!r} vs {rn.factors.get(k)!r}" for k in diff)
            message = (
                f"{local.name} and {remote.name} compute different NIXL compatibility hashes "
                f"(nixl/metadata.py:compute_nixl_compatibility_hash): {shown}."
            )
            backends = _common_backend(pair, replan) if "attn_backend_name" in diff else []
            fixes += [
                f"--attention-backend {b} on both engines (valid on {pair.prefill.platform} and "
                f"{pair.decode.platform}; the handshake then passes)"
                for b in backends[:2]
            ]
            if "model" in diff:
                fixes.append("start both engines with the same model string (path or name)")
            if not fixes:
                fixes.append("run both engines with the same " + ", ".join(diff))
        elif out.check in ("block-size", "tp-split", "host-buffer", "region-mapped", "mamba-pages"):
            if out.check == "block-size":
                message = (
                    f"NIXL pairs {local.name} (local) with {remote.name} (remote): {both}. "
                    f"{local.name}'s {ln.kernel}-token pages are no multiple of "
                    f"{remote.name}'s {rn.kernel}."
                )
            elif out.check == "tp-split":
                message = (
                    f"{remote.name} has TP {remote.tp} and {local.name} TP {local.tp}, and "
                    f"their NIXL pages differ ({both}): {local.name} reads each page from "
                    f"{remote.tp // local.tp} prefill ranks by heads, which vLLM does not "
                    "support at another block size."
                )
                fixes.append(f"equal TP on both engines (--tensor-parallel-size {local.tp})")
            elif out.check == "host-buffer":
                message = (
                    f"{local.name} stages NIXL transfers in a host buffer (kv_buffer_device "
                    f"cpu) and its pages differ from {remote.name}'s: {both}."
                )
                fixes.append("kv_buffer_device: cuda on the decode engine")
            elif out.check == "region-mapped":
                message = (
                    f"{local.name} and {remote.name} transfer a hybrid cache (HMA: regions of "
                    f"several KV-cache groups) at a block ratio of {out.ratio}: {both}."
                )
            else:
                message = (
                    f"{local.name} and {remote.name} serve a Mamba hybrid with prefix caching "
                    f"and split its blocks into different numbers of pages: {both}."
                )
                fixes.append("--disable-prefix-caching on both engines")
            lead = []
            blocks = _common_block(pair, _nixl_ok, replan)
            if blocks:
                lead.append(
                    f"--block-size {blocks[0]} on both engines (NIXL pages then agree"
                    + (f"; also {', '.join(map(str, blocks[1:]))}" if blocks[1:] else "")
                    + ")"
                )
            backends = _common_backend(pair, replan)
            lead += [f"--attention-backend {b} on both engines" for b in backends[:1]]
            fixes = lead + fixes
        elif out.check == "layout":
            message = (
                f"{local.name} runs the {ln.layout} KV-cache layout and {remote.name} "
                f"{rn.layout} ({both}); NIXL compares the layouts in the handshake."
            )
            values[f"{local.name}.layout"] = ln.layout
            values[f"{remote.name}.layout"] = rn.layout
            fixes.append(
                "the same VLLM_KV_CACHE_LAYOUT on both engines (or none: NIXL then asks for "
                "LBHNC on both)"
            )
        else:
            message = f"NIXL refuses {local.name} with {remote.name}: {both}."
            fixes.append("equal tensor and context parallel layouts on both engines")
        return [
            Issue(
                code,
                names,
                message,
                _refused(out.refusal, out.at) + when,
                fixes,
                values=values,
            )
        ]
    # accepted: a ratio other than 1, or other TPs, are post-processed per kernel page;
    # a group whose runner pages differ from the connector's does not have those pages
    if out.ratio == 1 and local.tp == remote.tp:
        return []
    bad = [
        (e, n, g)
        for e, n in ((local, ln), (remote, rn))
        for g in components(e).groups
        if not g.state and g.runner is not None and n.kernel is not None and n.kernel != g.runner
    ]
    if not bad:
        return []
    e, n, g = bad[0]
    return [
        Issue(
            "KV720",
            names,
            f"NIXL accepts {local.name} with {remote.name} at block ratio {out.ratio}, TP "
            f"{local.tp}/{remote.tp}: {both}. {e.name}'s group {g.id} was split by its runner "
            f"into {g.runner}-token pages, but NIXL lays it out in {n.kernel}-token pages; the "
            "receive side re-lays pages (heads, tails) that this group does not have.",
            "silent: wrong KV in that group after every transfer (accuracy loss, vLLM PR #42097)",
            [
                "one attention backend for every layer kind on both engines, so NIXL's vote "
                "equals every group's",
                "equal block sizes and TP on both engines",
            ],
            group=g.id,
            values=values,
        )
    ]


def hybrid_issues(pair: Pair, replan: Replan) -> list[Issue]:
    """KV709: same --block-size, different B from hybrid alignment at their parallelism."""
    p, d = pair.prefill, pair.decode
    if not (components(p).nixl or components(p).mooncake):
        return []
    gp, gd = components(p).groups, components(d).groups
    if not any(g.state for g in gp) or len(gp) != len(gd):
        return []
    asked_p, asked_d = p.deployment.block_size, d.deployment.block_size
    if asked_p != asked_d:
        return []
    bp = max(g.block_size for g in gp)
    bd = max(g.block_size for g in gd)
    if bp == bd:
        return []

    def same(x: Pair) -> bool:
        return max(g.block_size for g in components(x.prefill).groups) == max(
            g.block_size for g in components(x.decode).groups
        )

    blocks = _common_block(pair, same, replan, limit=1)
    asked = f"--block-size {asked_p}" if asked_p else "vLLM's default block size"
    return [
        Issue(
            "KV709",
            [p.name, d.name],
            f"{p.name} (TP {p.tp}, DP {p.dp}) and {d.name} (TP {d.tp}, DP {d.dp}) both start "
            f"from {asked}, but vLLM's hybrid alignment (platforms/interface.py:"
            f"_align_hybrid_block_size) sizes B from the per-rank KV heads and Mamba state: "
            f"B={bp} on {p.name}, B={bd} on {d.name}.",
            "silent here; every connector and router downstream then sees two block sizes",
            (
                [f"--block-size {blocks[0]} on both engines (both keep it after alignment)"]
                if blocks
                else []
            )
            + ["equal tensor parallelism on both engines"],
            values={f"{p.name}.block_size": bp, f"{d.name}.block_size": bd},
        )
    ]


def mooncake_issues(pair: Pair, replan: Replan) -> list[Issue]:
    """KV710: Mooncake P and D with different blocks."""
    pm, dm = components(pair.prefill).mooncake, components(pair.decode).mooncake
    if not pm or not dm or pm[0].refusal is not None or dm[0].refusal is not None:
        return []
    p, d = pm[0], dm[0]
    if p.kernel is None or d.kernel is None:
        return []
    if (p.logical, p.kernel) == (d.logical, d.kernel):
        return []
    pe, de = pair.prefill, pair.decode
    values: dict[str, int | str | None] = {
        f"{pe.name}.block_size": p.logical,
        f"{pe.name}.mooncake_pages": p.kernel,
        f"{de.name}.block_size": d.logical,
        f"{de.name}.mooncake_pages": d.kernel,
    }
    both = (
        f"{pe.name}: B={p.logical}, Mooncake pages {p.kernel} ({p.pages} per block); "
        f"{de.name}: B={d.logical}, pages {d.kernel} ({d.pages} per block)"
    )
    err = M.mooncake_region_lengths(p.kv_block_len, d.kv_block_len, pe.tp, de.tp, p.total_kv_heads)

    def same(x: Pair) -> bool:
        a, b = components(x.prefill).mooncake, components(x.decode).mooncake
        return bool(a and b) and (a[0].logical, a[0].kernel) == (b[0].logical, b[0].kernel)

    blocks = _common_block(pair, same, replan, limit=1)
    fixes = [f"--block-size {blocks[0]} on both engines"] if blocks else []
    at = "mooncake/mooncake_connector.py"
    if err is not None:
        vllm = f"fails the transfer: {err} ({at}:_validate_asymmetric_region_lengths)"
        message = f"Mooncake's pages differ between {pe.name} and {de.name}: {both}."
    else:
        tokens = 4 * max(p.logical, d.logical)
        send = M.mooncake_send(tokens, p.logical, p.pages, d.logical, d.pages)
        if send.error is not None:
            vllm = (
                f"fails every request: '{send.error}' ({at}:_build_transfer_params); the "
                "decode engine recomputes or errors"
            )
            message = (
                f"Mooncake pairs {pe.name} with {de.name}: {both}. Only byte lengths are "
                "compared, and they match; P then has fewer blocks than D for every prompt."
            )
        else:
            first, last = send.sent
            vllm = (
                f"silent: for a {tokens}-token prompt P sends tokens {first}-{last} into D's "
                f"kernel pages {_ids(send.written)}, while D reads the prompt from pages "
                f"{_ids(send.expected)}: the decode engine attends over the wrong KV"
            )
            message = (
                f"Mooncake pairs {pe.name} with {de.name}: {both}. The sender expands D's "
                f"logical block ids with its own ratio ({p.pages}, not {d.pages}; "
                f"{at}:_logical_to_kernel_block_ids) and only compares byte lengths, which "
                "match."
            )
    return [Issue("KV710", [pe.name, de.name], message, vllm, fixes, values=values)]


def _ids(ids: Sequence[int]) -> str:
    if len(ids) > 6 and ids == list(range(ids[0], ids[0] + len(ids))):
        return f"{ids[0]}-{ids[-1]}"
    return "[" + ", ".join(map(str, ids)) + "]"


# ---------------------------------------------------------------- router and tiers


@dataclass(frozen=True)
class RouterSpec:
    """The router in front of the engines."""

    kind: str = "none"
    block_size: int | None = None
    hashes_prompts: bool = False
    hash_algo: str | None = None
    hash_seed: str | None = None
    engines: tuple[str, ...] = ()


ROUTER_SETTING = {
    "dynamo": "the Dynamo frontend's --kv-cache-block-size (DYN_KV_CACHE_BLOCK_SIZE)",
    "llm-d": "llm-d's tokenProcessorConfig.blockSize",
}


def router_issues(router: RouterSpec, engines: Sequence[Engine], replan: Replan) -> list[Issue]:
    """KV711, KV712: the router's block size and hashes against the engines'."""
    if router.kind == "none":
        return []
    behind = [e for e in engines if not router.engines or e.name in router.engines]
    out: list[Issue] = []
    registered = None
    if router.block_size is not None:
        size, origin = router.block_size, "set"
    elif router.kind == "llm-d":
        size, origin = 16, "llm-d's default"
    else:
        # Dynamo takes the block size the first worker registers (cache_config.block_size)
        first = behind[0] if behind else None
        registered = cache_block(first) if first is not None else None
        size, origin = registered or 16, f"registered by {first.name if first else '-'}"
    setting = ROUTER_SETTING.get(router.kind, "the router's block size")
    for e, count in _distinct(behind):
        r = components(e).routing
        events = sorted(set(r.group_sizes))
        if r.effective == size and size in events:
            continue
        reported = r.effective if r.effective is not None else "none (several)"
        fixes = []
        if r.effective is not None:
            fixes.append(f"set {setting} to {r.effective}")
        good = [
            b
            for b in BLOCK_CANDIDATES
            if (x := replan(e, {"block-size": b})) is not None
            and components(x).routing.effective == size
        ]
        if good:
            fixes.append(f"--block-size {good[0]} on {e.name} (it then reports {size})")
        out.append(
            Issue(
                "KV711",
                [e.name],
                f"The {router.kind} router hashes prompts in {size}-token blocks ({origin}); "
                f"{e.name} reports an effective attention block size of {reported} "
                f"(cache_config.effective_attention_block_size, B x DCP, v1/engine/core.py) and "
                f"publishes KV events in blocks of {', '.join(map(str, events))} tokens"
                + (f" (and {count - 1} more engines configured alike)." if count > 1 else "."),
                "silent: the router's block hashes never match the engine's events, so "
                "routing falls back to load only (Dynamo #1232, #9376; llm-d PR #2203)",
                fixes,
                values={"router.block_size": size, f"{e.name}.effective_block_size": r.effective},
            )
        )
    if router.hashes_prompts:
        out.extend(_router_hash(router, behind))
    return out


def cache_block(e: Engine) -> int:
    """The block size a Dynamo worker registers: the engine's ``cache_config.block_size``."""
    from kvconfig.fleet.components import cache_block_size

    return cache_block_size(e, components(e).groups)


def _distinct(engines: Sequence[Engine]) -> list[tuple[Engine, int]]:
    """One engine per distinct configuration, with how many engines it stands for."""
    seen: dict[str, list[Any]] = {}
    for e in engines:
        key = e.spec.key()
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [e, 1]
    return [(e, n) for e, n in seen.values()]


def _router_hash(router: RouterSpec, engines: Sequence[Engine]) -> list[Issue]:
    out = []
    seeds = {e.name: components(e).routing.seed for e in engines}
    for e, _ in _distinct(engines):
        r = components(e).routing
        problems = []
        fixes = []
        if router.hash_algo is not None and r.algo != router.hash_algo:
            problems.append(f"it hashes with {r.algo}, the router with {router.hash_algo}")
            fixes.append(f"--prefix-caching-hash-algo {router.hash_algo} on {e.name}")
        if r.seed is None:
            problems.append(f"{r.algo} without PYTHONHASHSEED takes a random seed in every process")
            fixes.append(f"set PYTHONHASHSEED={router.hash_seed or '0'} on {e.name}")
        elif router.hash_seed is not None and r.seed != router.hash_seed:
            problems.append(f"its seed is {r.seed!r}, the router's {router.hash_seed!r}")
            fixes.append(f"set PYTHONHASHSEED={router.hash_seed} on {e.name}")
        elif router.hash_seed is None and len({s for s in seeds.values() if s}) > 1:
            problems.append("the engines hash from different seeds")
            fixes.append("set one PYTHONHASHSEED on every engine")
        if problems:
            out.append(
                Issue(
                    "KV712",
                    [e.name],
                    f"The {router.kind} router compares its own prompt hashes with {e.name}'s "
                    f"block hashes, but {'; '.join(problems)} "
                    "(v1/core/kv_cache_utils.py:resolve_none_hash_seed).",
                    "silent: no prompt hash matches, so no prefix hit is ever routed",
                    fixes,
                    values={
                        "router.hash_algo": router.hash_algo,
                        f"{e.name}.hash_algo": r.algo,
                        f"{e.name}.hash_seed": r.seed or "random",
                    },
                )
            )
    return out


def tier_issues(engines: Sequence[Engine]) -> list[Issue]:
    """KV714, KV721: engines that share a file tier."""
    by_root: dict[str, list[tuple[Engine, Any]]] = {}
    for e, _ in _distinct(engines):
        for off in components(e).offload:
            for t in off.tiers:
                if t.kind == "fs" and t.root_dir and t.namespace:
                    by_root.setdefault(t.root_dir, []).append((e, t))
    out = []
    for root, users in by_root.items():
        first_e, first_t = users[0]
        for e, t in users[1:]:
            if t.namespace == first_t.namespace:
                continue
            diff = [k for k in first_t.fields if first_t.fields.get(k) != t.fields.get(k)]
            shown = "; ".join(
                f"{k}: {_short(first_t.fields.get(k))} vs {_short(t.fields.get(k))}" for k in diff
            )
            fixes = []
            if "kv_cache_groups" in diff:
                fixes.append("the same --block-size (and so tokens per block) on both engines")
            if any(k in diff for k in ("tp_size", "pp_size", "dcp_size", "pcp_size")):
                fixes.append("the same parallel layout on both engines")
            if "model_name" in diff:
                fixes.append("the same model string on both engines")
            out.append(
                Issue(
                    "KV714",
                    [first_e.name, e.name],
                    f"{first_e.name} and {e.name} share the file tier {root}, but each writes "
                    f"under a folder named by a hash of its layout (v1/kv_offload/file_mapper.py:"
                    f"FileMapper): {first_t.namespace} vs {t.namespace} ({shown}).",
                    "silent: neither engine ever finds the other's blocks (0% hit rate across "
                    "engines); each fills the tier on its own",
                    fixes or ["the same KV-cache layout on both engines"],
                    values={
                        f"{first_e.name}.namespace": first_t.namespace,
                        f"{e.name}.namespace": t.namespace,
                    },
                )
            )
        for e, _ in users:
            seed = components(e).routing.seed
            if seed is None and len(users) > 1:
                out.append(
                    Issue(
                        "KV721",
                        [e.name],
                        f"{e.name} shares the file tier {root} with other engines, but hashes "
                        f"its blocks with {components(e).routing.algo} without PYTHONHASHSEED: "
                        "a random seed in every process (resolve_none_hash_seed).",
                        "silent: no other process ever computes the same block hashes",
                        [f"set PYTHONHASHSEED on every engine sharing {root}", "use sha256"],
                        values={f"{e.name}.hash_seed": "random"},
                    )
                )
    return out


def _short(value: Any) -> str:
    if isinstance(value, list):
        return (
            "["
            + ", ".join(
                str(v.get("tokens_per_block", v)) if isinstance(v, dict) else str(v) for v in value
            )
            + "]"
        )
    return str(value)


def pair_issues(pair: Pair, replan: Replan) -> list[Issue]:
    """Every rule between a producer and a consumer."""
    return [
        *hybrid_issues(pair, replan),
        *nixl_issues(pair, replan),
        *mooncake_issues(pair, replan),
    ]


def group_of(g: Group) -> str:
    return f"group {g.id} ({g.kind})"
