"""The fleet report: text (one table per engine, then the findings) and JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def _v(x: Any) -> str:
    return "-" if x is None else str(x)


def _table(rows: list[list[str]], indent: str = "") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in rows
    ]


def _engine_lines(e: Mapping[str, Any]) -> list[str]:
    p = e["parallelism"]
    plan = e["plan"]
    par = f"TP {p['tensor']}"
    for key, label in (("pipeline", "PP"), ("data", "DP"), ("decode_context", "DCP")):
        if p[key] > 1:
            par += f", {label} {p[key]}"
    replicas = f", x{e['replicas']}" if e["replicas"] > 1 else ""
    head = (
        f"{e['name']} ({e['role']}{replicas}): {e['source']} on {e['platform']}, {par}, "
        f"{'Model Runner V2' if plan['runner'] == 'v2' else 'Model Runner V1'}; "
        f"digest {e['digest']}"
    )
    lines = [head]
    names = list(dict.fromkeys(n for g in e["components"] for n in g["connectors"]))
    rows = [["group", "kind", "B", "B x DCP", "runner", "speculator", *names]]
    for g in e["components"]:
        rows.append(
            [
                str(g["group"]),
                g["kind"],
                str(g["block_size"]),
                str(g["manager_block_size"]),
                _v(g["runner"]),
                _v(g["speculator"]),
                *(_v(g["connectors"].get(n)) for n in names),
            ]
        )
    if len(rows) > 1:
        lines += _table(rows, "  ")
    for c in e["connectors"]:
        bits = [c["name"]]
        if c.get("kernel_block_size") is not None:
            bits.append(
                f"pages {c['kernel_block_size']} x{c.get('pages_per_block')} per "
                f"{c.get('logical_block_size')}-token block"
            )
        if c.get("compat_hash"):
            f = c["compat_factors"] or {}
            bits.append(
                f"compat hash {c['compat_hash'][:12]} ({f.get('attn_backend_name')}, "
                f"{f.get('dtype')}, kv {f.get('cache_dtype')}, {f.get('transfer_mode')})"
            )
        off = c.get("offload")
        if off:
            bits.append(
                f"chunks of {_v(off['blocks_per_chunk'])} blocks, hash every "
                f"{_v(off['tokens_per_hash'])} tokens"
            )
            bits += [
                f"{t['kind']} tier {t['root_dir']} -> {t['namespace']}"
                for t in off["tiers"]
                if t.get("namespace")
            ]
        if c.get("refusal"):
            bits.append(f"refused: {c['refusal']}")
        lines.append("  connector " + "; ".join(bits))
    r = e["routing"]
    seed = r["hash_seed"] if r["hash_seed"] is not None else "random per process"
    lines.append(
        f"  reports {_v(r['effective_block_size'])}-token blocks to routers "
        f"(events: {', '.join(map(str, sorted(set(r['group_block_sizes']))))}); hashes "
        f"{r['hash_algo']} every {_v(r['hash_block_size'])} tokens from seed {seed}"
    )
    for s in e["stages"]:
        ks = ", ".join(_v(k) for k in s["kernel_block_sizes"])
        lines.append(f"  stage {s['stage']} (layers {s['layers'][0]}-{s['layers'][1]}): k {ks}")
    for f in plan["findings"]:
        if f["severity"] == "info":
            continue
        where = f" group {f['group']}" if f["group"] is not None else ""
        lines.append(f"  {f['severity']} {f['code']} {f['name']}{where}: {f['message']}")
    return lines


def _unplanned_line(u: Mapping[str, Any]) -> str:
    """An engine kvconfig did not plan: what its file says, and why (KV401, KV402, KV403)."""
    p, r = u["parallelism"], u.get("run_time") or {}
    sizes = [
        (label, r.get(f"{key}-parallel-size", p[key]))
        for key, label in (("tensor", "TP"), ("pipeline", "PP"), ("data", "DP"))
    ]
    par = ", ".join(f"{label} {v}" for label, v in sizes if label == "TP" or v != 1)
    replicas = f", x{u['replicas']}" if u["replicas"] > 1 else ""
    block = (
        f"block {r['block-size']}"
        if "block-size" in r
        else f"block {u['block_size']}"
        if u["block_size"]
        else "block: vLLM's default"
    )
    conn = (
        f", {u['connector']}" + (f" ({u['kv_role']})" if u["kv_role"] else "")
        if u["connector"]
        else ""
    )
    return (
        f"{u['name']} ({u['role']}{replicas}): {u['source']}, {_v(u['model'])}, {par}, "
        f"{block}{conn}; not planned ({u['code']})"
    )


def render_text(doc: Mapping[str, Any]) -> str:
    """The fleet plan as text."""
    routers = doc.get("routers") or [doc["router"]]
    kinds = [
        f"{x['kind']} router" + (f" at {x['block_size']}-token blocks" if x["block_size"] else "")
        for x in routers
        if x["kind"] != "none"
    ]
    r = ", ".join(kinds) or "no router"
    n = len(doc["engines"]) + len(doc.get("unplanned", []))
    lines = [
        f"fleet {doc['source']}: {n} engine{'s' if n != 1 else ''}, vLLM {doc['vllm_version']}, "
        f"{r}",
        "",
    ]
    for e in doc["engines"]:
        lines += [*_engine_lines(e), ""]
    for u in doc.get("unplanned", []):
        lines += [_unplanned_line(u), ""]
    if doc.get("pairs"):
        shown = ", ".join(f"{p['prefill']} -> {p['decode']}" for p in doc["pairs"])
        lines += [f"pairs (prefill -> decode): {shown}", ""]
    for f in doc["findings"]:
        where = f" group {f['group']}" if f["group"] is not None else ""
        who = " / ".join(f["engines"])
        lines.append(f"{f['severity']} {f['code']} {f['name']} [{who}]{where}: {f['message']}")
        lines.append(f"  vLLM: {f['vllm']}")
        lines.extend(f"  fix: {fix}" for fix in f["fixes"])
    if doc["findings"]:
        lines.append("")
    lines.append(f"verdict: {doc['verdict']}")
    return "\n".join(lines) + "\n"


def render_json(doc: Mapping[str, Any]) -> str:
    """The fleet plan as JSON (``schemas/json/fleet-plan.schema.json``)."""
    return json.dumps(doc, indent=2) + "\n"


def summary(docs: Sequence[Mapping[str, Any]]) -> str:
    """One line per code for a lint summary."""
    counts: dict[str, int] = {}
    for d in docs:
        for f in d["findings"]:
            counts[f["code"]] = counts.get(f["code"], 0) + 1
    return ", ".join(f"{c} x{n}" for c, n in sorted(counts.items()))
