"""The page around the pictures: one self-contained HTML document (inline CSS and SVG, no
script, no network), every string from the input escaped, and the legend in words."""

from __future__ import annotations

import html
from collections.abc import Iterable

#: No script, no network: the page loads nothing, not even from itself. Inline styles only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'"

WRONG = "\u2717"
"""The mark of what is read wrong (a cross), beside the hatching and the words."""
RIGHT = "\u2713"
"""The mark of what is read right (a tick)."""

_CSS = """
:root { color-scheme: light; --ok: #1a7f37; --bad: #b3261e; --ink: #1f2328; --soft: #59636e;
  --line: #8c959f; --page: #dbe9f7; --block: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
  margin: 0 auto; max-width: 1060px; padding: 16px 20px 40px; background: #fff; }
h1 { font-size: 1.35em; margin: .2em 0 .4em; } h2 { font-size: 1.15em; margin: 1.6em 0 .3em; }
h3 { font-size: 1em; margin: 1.1em 0 .2em; }
.verdict { display: inline-block; padding: 1px 8px; border: 2px solid; border-radius: 4px;
  font-weight: 600; }
.verdict.reject { color: var(--bad); border-style: dashed; } .verdict.ok { color: var(--ok); }
.meta { color: var(--soft); margin: .1em 0; }
figure { margin: .4em 0 .8em; } figcaption { color: var(--soft); font-size: .92em; }
svg { display: block; max-width: 100%; height: auto; }
svg text { font: 12px system-ui, -apple-system, "Segoe UI", sans-serif; fill: var(--ink); }
svg .small { font-size: 11px; fill: var(--soft); } svg .strong { font-weight: 600; }
svg .block { fill: var(--block); stroke: var(--ink); stroke-width: 1.5; }
svg .page { fill: var(--page); stroke: var(--line); stroke-width: 1; }
svg .read-ok { fill: #d5f0dc; stroke: var(--ok); stroke-width: 1.5; }
svg .read-wrong { fill: url(#hatch); stroke: var(--bad); stroke-width: 2.5;
  stroke-dasharray: 6 3; }
svg .label-wrong { fill: var(--bad); font-weight: 600; }
svg .mark { font-size: 14px; paint-order: stroke; stroke: #fff; stroke-width: 4px; }
svg .node { fill: #fff; stroke: var(--ink); stroke-width: 1.5; }
svg .node-wrong { fill: #fff; stroke: var(--bad); stroke-width: 3; stroke-dasharray: 7 3; }
svg .edge { stroke: var(--line); stroke-width: 2; fill: none; }
svg .edge-wrong { stroke: var(--bad); stroke-width: 3.5; stroke-dasharray: 9 4; fill: none; }
svg .tag { fill: #fff; stroke: none; }
table { border-collapse: collapse; margin: .3em 0 .8em; font-size: .93em; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: var(--block); }
td.wrong { color: var(--bad); font-weight: 600; }
.finding { border-left: 4px solid var(--line); padding: 2px 10px; margin: .5em 0; }
.finding.error { border-left: 4px dashed var(--bad); }
.finding p { margin: .2em 0; } .finding ul { margin: .2em 0 .2em 1.2em; padding: 0; }
.legend { border: 1px solid #d0d7de; padding: 6px 12px; margin: .6em 0; font-size: .93em; }
.legend ul { margin: .2em 0; padding-left: 1.2em; }
pre { background: var(--block); padding: 8px 10px; overflow-x: auto; font-size: .88em;
  white-space: pre-wrap; }
"""

#: The hatching of what is read wrong (readable without colour), defined once per page.
HATCH = (
    '<svg width="0" height="0" aria-hidden="true" focusable="false" style="position:absolute">'
    '<defs><pattern id="hatch" width="8" height="8" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="8" height="8" fill="#fbe3e1"/>'
    '<line x1="0" y1="0" x2="0" y2="8" stroke="#b3261e" stroke-width="3"/></pattern></defs></svg>'
)


def esc(value: object) -> str:
    """Any value as HTML/SVG text or attribute content (quotes escaped too)."""
    return html.escape(str(value), quote=True)


def legend(extra: Iterable[str] = ()) -> str:
    """The legend in words: what the shapes, hatching and marks mean."""
    items = [
        "<b>Block</b>: one manager block of the KV cache, <i>B</i> tokens "
        "(<code>--block-size</code>); two are drawn.",
        "<b>Page</b>: a kernel page of <i>k</i> tokens; each block holds <i>B</i>/<i>k</i> "
        "of them. This is how the runner allocates the cache.",
        f"<b>{RIGHT} plain bar</b>: a component reads pages of the size the cache holds.",
        f"<b>{WRONG} hatched bar, dashed outline</b>: a component reads pages of another size: "
        "it reads the wrong KV.",
        *extra,
    ]
    body = "".join(f"<li>{i}</li>" for i in items)
    return f'<aside class="legend" aria-label="Legend"><b>Legend</b><ul>{body}</ul></aside>'


def document(title: str, body: str) -> str:
    """The whole page: ``title`` is escaped here, ``body`` is markup built from escaped text."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="kvconfig">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>{HATCH}\n{body}\n</body></html>\n"
    )


def verdict_badge(verdict: str) -> str:
    """The verdict as a badge with a mark and a word (not colour alone)."""
    mark = WRONG if verdict != "ok" else RIGHT
    word = {"ok": "safe", "reject": "rejected"}.get(verdict, verdict)
    return f'<span class="verdict {esc(verdict)}" data-kv="verdict">{mark} {esc(word)}</span>'


def finding_block(
    code: str,
    slug: str,
    severity: str,
    message: str,
    *,
    where: str = "",
    vllm: str | None = None,
    fixes: Iterable[str] = (),
) -> str:
    """One finding as a paragraph with its fixes."""
    mark = WRONG + " " if severity == "error" else ""
    head = f"{mark}{esc(severity)} {esc(code)} {esc(slug)}{esc(where)}"
    parts = [f"<p><b>{head}</b>: {esc(message)}</p>"]
    if vllm:
        parts.append(f"<p><i>vLLM</i>: {esc(vllm)}</p>")
    fix_items = "".join(f"<li>{esc(f)}</li>" for f in fixes)
    if fix_items:
        parts.append(f"<p>Fixes:</p><ul>{fix_items}</ul>")
    return (
        f'<div class="finding {esc(severity)}" data-kv="finding" data-code="{esc(code)}" '
        f'role="note">{"".join(parts)}</div>'
    )
