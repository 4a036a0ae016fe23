"""``kvconfig lint --fleet --format html``: the fleet as a graph (router, engines, the
connectors between them, the edges where they disagree marked), then every engine's groups
with the pages its runner, speculator and connectors read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from kvconfig.codes import FindingCode
from kvconfig.report.html.groups import GroupView, Reader, group_figure, readers_of
from kvconfig.report.html.page import (
    WRONG,
    document,
    esc,
    finding_block,
    legend,
    verdict_badge,
)

#: Findings about the router and one engine: the router's edge to that engine is marked.
ROUTER_CODES = {
    FindingCode.ROUTER_BLOCK_SIZE.value,
    FindingCode.ROUTER_HASH.value,
    FindingCode.PREFIX_MATCH_UNIT.value,
}
ROUTER = "\x00router"
"""The router's node key (no engine name can hold a NUL)."""
GRAPH_W = 920
NODE_W = 240
NODE_H = 66
ROW = 104
_COLUMN = {"prefill": 0, "decode": 2}


class Edge(NamedTuple):
    """A line between two nodes: a connector pair, a router's engine, or a finding's pair."""

    a: str
    b: str
    labels: tuple[str, ...]
    codes: tuple[str, ...]
    """The findings that mark it (empty: the two agree)."""


def _pairs(engines: Sequence[Mapping[str, Any]]) -> dict[frozenset[str], list[str]]:
    """Engines that transfer KV through one connector: producer (or both) to consumer."""
    out: dict[frozenset[str], list[str]] = {}
    for a in engines:
        for b in engines:
            if a["name"] >= b["name"]:
                continue
            for ca in a["connectors"]:
                if ca["kind"] in ("offloading", "other"):
                    continue
                for cb in b["connectors"]:
                    roles = {ca["role"], cb["role"]}
                    one_way = roles in ({"kv_producer"}, {"kv_consumer"})
                    if cb["name"] == ca["name"] and not one_way:
                        out.setdefault(frozenset((a["name"], b["name"])), []).append(ca["name"])
    return out


def edges(doc: Mapping[str, Any]) -> tuple[list[Edge], dict[str, list[str]]]:
    """The graph's edges, and the findings that mark a node (an engine on its own)."""
    names = [e["name"] for e in doc["engines"]]
    labels: dict[frozenset[str], list[str]] = {
        k: list(dict.fromkeys(v)) for k, v in _pairs(doc["engines"]).items()
    }
    order: dict[frozenset[str], tuple[str, str]] = {}
    for key in labels:
        a, b = sorted(key)
        order[key] = (a, b)
    routed: list[str] = []  # the planned engines behind any router
    for router in doc.get("routers") or [doc["router"]]:
        if router["kind"] != "none":
            routed += [n for n in router["engines"] if n in names] if router["engines"] else names
    for name in dict.fromkeys(routed):
        key = frozenset((ROUTER, name))
        labels.setdefault(key, []).append("routes")
        order[key] = (ROUTER, name)
    codes: dict[frozenset[str], list[str]] = {}
    nodes: dict[str, list[str]] = {}
    for f in doc["findings"]:
        if f["severity"] == "info":
            continue
        who = [e for e in f["engines"] if e in names]
        if len(who) == 1 and f["code"] in ROUTER_CODES and doc["router"]["kind"] != "none":
            key = frozenset((ROUTER, who[0]))
            order.setdefault(key, (ROUTER, who[0]))
            labels.setdefault(key, ["routes"])
            codes.setdefault(key, []).append(f["code"])
            continue
        if len(who) == 1:
            nodes.setdefault(who[0], []).append(f["code"])
        for other in who[1:]:
            key = frozenset((who[0], other))
            order.setdefault(key, (who[0], other))
            labels.setdefault(key, [])
            codes.setdefault(key, []).append(f["code"])
    out = [Edge(*order[k], tuple(labels[k]), tuple(dict.fromkeys(codes.get(k, [])))) for k in order]
    return out, nodes


def _positions(doc: Mapping[str, Any]) -> tuple[dict[str, tuple[float, float]], int]:
    """Node key -> top-left corner; and the graph's height.

    Engines stand in columns by role (prefill, the others, decode). The router stands
    above them, or to their left when they form one column (its links then fan out
    instead of running through the boxes)."""
    columns: dict[int, list[str]] = {}
    for e in doc["engines"]:
        columns.setdefault(_COLUMN.get(e["role"], 1), []).append(e["name"])
    used = sorted(columns)
    rows = max(len(v) for v in columns.values()) if columns else 0
    router = doc["router"]["kind"] != "none"
    left = router and len(used) == 1
    top = 150 if router and not left else 16
    pos: dict[str, tuple[float, float]] = {}
    for i, col in enumerate(used):
        cx = GRAPH_W * (0.75 if left else (i + 0.5) / len(used))
        for j, name in enumerate(columns[col]):
            pos[name] = (cx - NODE_W / 2, top + j * ROW)
    height = top + max(rows, 1) * ROW
    if left:
        pos[ROUTER] = (20, top + (height - top - ROW) / 2)
    else:
        pos[ROUTER] = ((GRAPH_W - NODE_W) / 2, 14)
    return pos, height


def _edge_svg(e: Edge, pos: Mapping[str, tuple[float, float]], n: int) -> str:
    (xa, ya), (xb, yb) = pos[e.a], pos[e.b]
    x1, y1, x2, y2 = xa + NODE_W / 2, ya + NODE_H / 2, xb + NODE_W / 2, yb + NODE_H / 2
    if abs(x1 - x2) < 1:  # one column: bend out to the right, past the boxes between
        bend = x1 + NODE_W / 2 + 40 + 14 * (n % 3)
        d = f"M{x1 + NODE_W / 2:.1f},{y1:.1f} Q{bend + 40:.1f},{(y1 + y2) / 2:.1f} "
        d += f"{x2 + NODE_W / 2:.1f},{y2:.1f}"
        mx, my = bend + 10, (y1 + y2) / 2
    else:
        d = f"M{x1:.1f},{y1:.1f} L{x2:.1f},{y2:.1f}"
        mx, my = (x1 + x2) / 2, (y1 + y2) / 2
    wrong = bool(e.codes)
    label = ", ".join(e.labels)
    if wrong:
        label = (label + " " if label else "") + f"{WRONG} " + " ".join(e.codes)
    w = 7 * len(label) + 10
    a = "router" if e.a == ROUTER else e.a
    said = f"{a} - {e.b}: " + (f"they disagree ({', '.join(e.codes)})" if wrong else "they agree")
    return (
        f'<g data-kv="edge" data-wrong="{str(wrong).lower()}" '
        f'data-codes="{esc(" ".join(e.codes))}">'
        f"<title>{esc(said)}</title>"
        f'<path d="{d}" class="{"edge-wrong" if wrong else "edge"}"/>'
        f'<rect x="{mx - w / 2:.1f}" y="{my - 10:.1f}" width="{w}" height="18" class="tag"/>'
        f'<text x="{mx:.1f}" y="{my + 3:.1f}" text-anchor="middle" '
        f'class="{"label-wrong" if wrong else "small"}">{esc(label)}</text></g>'
    )


def _fit(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters (an ellipsis marks the cut)."""
    return text if len(text) <= chars else text[: chars - 1] + "\u2026"


def _node_svg(key: str, x: float, y: float, lines: Sequence[str], codes: Sequence[str]) -> str:
    full = " / ".join(lines) + (f" ({', '.join(codes)})" if codes else "")
    wrong = bool(codes)
    more = f" +{len(codes) - 2}" if len(codes) > 2 else ""
    mark = f"  {WRONG} " + " ".join(codes[:2]) + more if wrong else ""
    first = _fit(lines[0], max(8, 30 - len(mark))) + mark
    lines = [lines[0], *(_fit(t, 36) for t in lines[1:])]
    texts = [
        f'<text x="{x + 10:.1f}" y="{y + 20 + 16 * i:.1f}" class="{c}">{esc(t)}</text>'
        for i, (t, c) in enumerate(
            [(first, "strong label-wrong" if wrong else "strong")]
            + [(t, "small") for t in lines[1:]]
        )
    ]
    kind = "router" if key == ROUTER else "engine"
    name = "router" if key == ROUTER else key
    return (
        f'<g data-kv="{kind}" data-name="{esc(name)}" data-wrong="{str(wrong).lower()}">'
        f"<title>{esc(full)}</title>"
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{NODE_H}" rx="6" '
        f'class="{"node-wrong" if wrong else "node"}"/>{"".join(texts)}</g>'
    )


def _engine_lines(e: Mapping[str, Any]) -> list[str]:
    reps = f" x{e['replicas']}" if e["replicas"] > 1 else ""
    p = e["parallelism"]
    counts: dict[str, int] = {}
    for g in e["components"]:
        pair = f"{g['block_size']}/{'-' if g['runner'] is None else g['runner']}"
        counts[pair] = counts.get(pair, 0) + 1
    sizes = ", ".join(f"{pair} ({n} groups)" if n > 1 else pair for pair, n in counts.items())
    return [
        str(e["name"]),
        f"{e['role']}{reps}, {e['platform']}, TP {p['tensor']}",
        f"B/k {sizes}" if sizes else "no groups",
    ]


def fleet_svg(doc: Mapping[str, Any]) -> str:
    """The fleet graph."""
    found, marked = edges(doc)
    pos, height = _positions(doc)
    wide = any(abs(pos[e.a][0] - pos[e.b][0]) < 1 for e in found)
    width = GRAPH_W + (120 if wide else 0)
    bad = [e for e in found if e.codes]
    desc = (
        f"{len(doc['engines'])} engines, {len(found)} links; "
        + (
            "disagreeing: "
            + "; ".join(
                f"{'router' if e.a == ROUTER else e.a} and {e.b} ({', '.join(e.codes)})"
                for e in bad
            )
            if bad
            else "every link agrees"
        )
        + "".join(f"; {n} on its own ({', '.join(c)})" for n, c in marked.items())
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-labelledby="fleet-t fleet-d" data-kv="fleet">',
        '<title id="fleet-t">The fleet: engines, router and connectors</title>',
        f'<desc id="fleet-d">{esc(desc)}</desc>',
        *(_edge_svg(e, pos, i) for i, e in enumerate(found)),
    ]
    r = doc["router"]
    if r["kind"] != "none":
        at = f"{r['block_size']}-token blocks" if r["block_size"] else "block size from engines"
        x, y = pos[ROUTER]
        parts.append(_node_svg(ROUTER, x, y, [f"{r['kind']} router", at], []))
    for e in doc["engines"]:
        x, y = pos[e["name"]]
        parts.append(_node_svg(e["name"], x, y, _engine_lines(e), marked.get(e["name"], [])))
    parts.append("</svg>")
    return "".join(parts)


def _engine_section(e: Mapping[str, Any], n: int) -> str:
    plan = e["plan"]
    by_id = {g["id"]: g for g in plan["groups"]}
    parts = [
        f"<h2>Engine {esc(e['name'])} {verdict_badge(plan['verdict'])}</h2>",
        f'<p class="meta">{esc(" / ".join(_engine_lines(e)[1:]))}; {esc(e["source"])}; '
        f"digest {esc(e['digest'])}</p>",
    ]
    for c in e["components"]:
        g = by_id.get(c["group"], {})
        draft = bool((g.get("layers") or {}).get("draft"))
        readers = readers_of(c["runner"], c["speculator"], draft)
        readers += [Reader(str(name), k) for name, k in c["connectors"].items()]
        k = g.get("kernel_block_size", c["runner"])
        v = GroupView(
            f"e{n}g{c['group']}",
            c["group"],
            str(c["kind"]),
            c["block_size"],
            k,
            bool(g.get("packed")),
            tuple(readers),
        )
        parts.append(f"<h3>Group {c['group']}: {esc(c['kind'])}, B = {c['block_size']}</h3>")
        parts.append(group_figure(v))
    for f in plan["findings"]:
        if f["severity"] != "info":
            where = f" (group {f['group']})" if f["group"] is not None else ""
            parts.append(
                finding_block(f["code"], f["name"], f["severity"], f["message"], where=where)
            )
    return f'<section data-kv="engine-section">{"".join(parts)}</section>'


def _router_words(r: Mapping[str, Any]) -> str:
    if r["kind"] == "none":
        return "no router"
    at = f" at {r['block_size']}-token blocks" if r["block_size"] else ""
    return f"{r['kind']} router{at}"


def _unplanned_section(unplanned: list[Mapping[str, Any]], pairs: list[Mapping[str, Any]]) -> str:
    """The engines kvconfig did not plan (KV401, KV402, KV403), as their files read, and
    the pairs."""
    if not unplanned and not pairs:
        return ""
    rows = "".join(
        f"<tr><td>{esc(u['name'])}</td><td>{esc(u['role'])}</td><td>{u['replicas']}</td>"
        f"<td>{esc(str(u['model']))}</td><td>{u['parallelism']['tensor']}</td>"
        f"<td>{esc(str(u['block_size'] or 'vLLM default'))}</td>"
        f"<td>{esc(str(u['connector'] or '-'))}</td><td>{esc(u['code'])}</td></tr>"
        for u in unplanned
    )
    table = (
        '<h2>Not planned</h2><table data-kv="unplanned"><tr><th>engine</th><th>role</th>'
        "<th>replicas</th><th>model</th><th>TP</th><th>block size</th><th>connector</th>"
        f"<th>why</th></tr>{rows}</table>"
        if unplanned
        else ""
    )
    shown = "".join(f"<li>{esc(p['prefill'])} → {esc(p['decode'])}</li>" for p in pairs)
    listed = f'<h2>Prefill → decode pairs</h2><ul data-kv="pairs">{shown}</ul>' if pairs else ""
    return f'<section data-kv="unplanned-section">{table}{listed}</section>'


def render_fleet(doc: Mapping[str, Any]) -> str:
    """The fleet plan's page (``doc`` is the fleet plan's JSON document)."""
    title = f"kvconfig fleet: {doc['source']}"
    findings = [
        finding_block(
            f["code"],
            f["name"],
            f["severity"],
            f["message"],
            where=f" [{' / '.join(f['engines'])}]",
            vllm=f["vllm"],
            fixes=f["fixes"],
        )
        for f in doc["findings"]
    ]
    n = len(doc["engines"]) + len(doc.get("unplanned", []))
    body = [
        f"<header><h1>{esc(title)} {verdict_badge(doc['verdict'])}</h1>",
        f'<p class="meta">{n} engine{"s" if n != 1 else ""}, vLLM {esc(doc["vllm_version"])}, '
        f"{esc(_router_words(doc['router']))}, {esc(doc['engine'])} plans</p></header>",
        legend(
            [
                "<b>Box</b>: an engine (or the router); <b>line</b>: a KV connector between two "
                "engines, or the router's link to an engine.",
                f"<b>{WRONG} dashed thick line or box</b>: the two ends (or the engine on its "
                "own) disagree; the finding codes are written beside it.",
            ]
        ),
        f'<main><figure data-kv="fleet-figure">{fleet_svg(doc)}'
        "<figcaption>Engines by role: prefill left, decode right, the others between."
        "</figcaption></figure>",
        "<h2>Findings</h2>" if findings else "<p>No findings: every link agrees.</p>",
        *findings,
        *(_engine_section(e, i) for i, e in enumerate(doc["engines"])),
        _unplanned_section(doc.get("unplanned", []), doc.get("pairs", [])),
        "</main>",
    ]
    return document(title, "\n".join(body))
