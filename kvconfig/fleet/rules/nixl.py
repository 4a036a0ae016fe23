"""Findings between a NIXL prefill and decode engine: vLLM's handshake, replayed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvconfig.errors import ConnectorRefusal
from kvconfig.fleet.components import components
from kvconfig.fleet.components.facts import NixlFacts
from kvconfig.fleet.model import Engine
from kvconfig.fleet.rules.common import (
    BACKEND_CANDIDATES,
    Issue,
    Pair,
    Replan,
    _common_block,
    _refused,
)
from kvconfig.mirror.connectors.nixl import Handshake, nixl_handshake

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
    "head-split": "KV722",
    "draft": "KV718",
    "nvfp4": "KV718",
}


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
    ("block size post processing", "layout"),
    ("contiguous heads", "head-split"),
    ("head-sharded draft", "draft"),
    ("Head-sharded draft", "draft"),
    ("NVFP4", "nvfp4"),
    ("tensor parallel size", "tp"),
    ("DCP", "dcp"),
)


def _classify(message: str) -> str:
    return next((check for text, check in _CHECKS if text in message), "tp")


def nixl_outcome(pair: Pair) -> Handshake | None:
    """What NIXL's handshake does for this pair (None: they do not pair over NIXL).

    In engine mode the handshake vLLM ran decides, but for the checks it could not run
    (after ``_validate_remote_agent_handshake``), which the mirror decides.
    """
    sides = _sides(pair)
    if sides is None:
        return None
    local, remote, ln, rn = sides
    mirrored = nixl_handshake(ln.side(local), rn.side(remote))
    real = ln.handshakes.get(rn.engine_id) if rn.engine_id else None
    if real is None:
        return mirrored
    if real.get("status") == "refused":
        message = str(real.get("message", ""))
        return Handshake(
            _classify(message),
            ConnectorRefusal(str(real.get("error")), message),
            at=str(real.get("where") or ""),
        )
    if mirrored.check == "region-mapped":
        return mirrored
    return Handshake("ok", None, ratio=mirrored.ratio)


def _describe_nixl(e: Engine, n: NixlFacts) -> str:
    return (
        f"{e.name} ({e.platform}, TP {e.tp}, {n.backend_name}): B={n.logical}, NIXL pages "
        f"{n.kernel or n.logical}, {n.pages} per block"
    )


def _factor_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return [k for k in a if a.get(k) != b.get(k)]


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
        elif out.check == "head-split":
            message = (
                f"{local.name} (TP {local.tp}) and {remote.name} (TP {remote.tp}) split each "
                f"page by KV heads, but {local.name} runs the {ln.layout} KV-cache layout, "
                f"whose heads are not contiguous within a block ({both})."
            )
            values[f"{local.name}.layout"] = ln.layout
            fixes += [
                "VLLM_KV_CACHE_LAYOUT=LBHNC (block-contiguous) on both engines, or none",
                "equal tensor parallelism on both engines",
            ]
        elif out.check == "draft":
            message = (
                f"{local.name} (TP {local.tp}, DCP {local.dcp}) and {remote.name} (TP "
                f"{remote.tp}, DCP {remote.dcp}) serve an MLA model whose draft model is not "
                f"MLA: NIXL splits the draft's KV by heads ({both})."
            )
            if "kv_cache_layout" in out.refusal.message:
                fixes.append("VLLM_KV_CACHE_LAYOUT=LBHNC (block-contiguous) on both engines")
            else:
                fixes.append(
                    f"TP on {local.name} at least {remote.name}'s, and no decode context "
                    "parallelism on either engine"
                )
        elif out.check == "nvfp4":
            message = (
                f"{local.name} (TP {local.tp}) and {remote.name} (TP {remote.tp}) keep the KV "
                f"cache in NVFP4 and hold different numbers of KV heads per rank ({both}): "
                "an NVFP4 page stores every head's data before the scales, so NIXL cannot "
                "re-shard it by heads."
            )
            fixes += [
                "equal tensor parallelism on both engines",
                "another --kv-cache-dtype (fp8, auto) on both engines",
            ]
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
