"""One KV-cache group as a picture: two manager blocks of B tokens, the kernel pages of k
tokens the runner splits them into, and one bar per component with the pages it reads."""

from __future__ import annotations

from typing import NamedTuple

from kvconfig.report.html.page import RIGHT, WRONG, esc

LABEL_W = 200
BLOCK_W = 290
GAP = 16
WIDTH = LABEL_W + 2 * BLOCK_W + GAP + 12
ROW_H = 48
MAX_PAGES = 96
"""More pages than this per block are drawn as one shaded bar with their count."""


class Reader(NamedTuple):
    """A component that reads a group's pages: the runner, the speculator, a connector."""

    name: str
    k: int | None
    """The page size it reads with (None: it does not read this group)."""


class GroupView(NamedTuple):
    """What the picture needs of one group (from a plan or a fleet plan)."""

    key: str
    """Unique within the page (element ids)."""
    id: int
    kind: str
    block_size: int
    k: int | None
    """The kernel page size the runner allocates with (None: no size suits every backend)."""
    packed: bool
    readers: tuple[Reader, ...]

    @property
    def split(self) -> int | None:
        """B/k."""
        return None if not self.k else self.block_size // self.k

    def wrong(self, r: Reader) -> bool:
        """Whether ``r`` reads pages of a size other than the cache's."""
        return r.k is not None and self.k is not None and r.k != self.k

    def caption(self) -> str:
        """The group in one line."""
        head = f"KV-cache group {self.id} ({self.kind}): blocks of {self.block_size} tokens"
        if self.k is None:
            return f"{head}; no kernel page size suits every backend"
        if self.packed:
            return f"{head}; packed state, never split (one page per block)"
        n = self.split
        return f"{head}, each split into {n} kernel page{'s' if n != 1 else ''} of {self.k} tokens"

    def status(self, r: Reader, short: bool = False) -> str:
        """What ``r`` reads, in words, with the mark (``short``: to fit the picture)."""
        if r.k is None:
            return "does not read this group"
        if self.k is None:
            return f"votes {r.k}-token pages; the group has no page size"
        if self.wrong(r):
            how = f"reads {r.k}-token pages"
            if r.k == self.block_size:
                how = "reads each block unsplit" if short else f"{how}: each block unsplit"
            if short:
                return f"{WRONG} {how}, the cache holds {self.k}-token pages: wrong KV"
            return f"{WRONG} {how}; the cache holds {self.k}-token pages: reads the wrong KV"
        return f"{RIGHT} reads the {self.k}-token pages the cache holds"

    def describe(self) -> str:
        """The whole picture in sentences (the SVG's description)."""
        return " ".join(
            [self.caption() + "."] + [f"{r.name} {self.status(r)}." for r in self.readers]
        )


def _text(x: float, y: float, text: str, cls: str = "", anchor: str = "start") -> str:
    c = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}"{c} text-anchor="{anchor}">{esc(text)}</text>'


def _bars(x0: float, y: float, h: float, *, block: int, size: int, cls: str, label: bool) -> str:
    """Bars of ``size`` tokens across one block of ``block`` tokens drawn BLOCK_W wide."""
    scale = BLOCK_W / block
    count = -(-block // size)
    if count > MAX_PAGES:
        rect = f'<rect x="{x0:.1f}" y="{y:.1f}" width="{BLOCK_W}" height="{h}" class="{cls}"/>'
        return rect + _text(
            x0 + BLOCK_W / 2, y + h / 2 + 4, f"{count} x {size} tokens", "small", "middle"
        )
    out = []
    for i in range(count):
        x = x0 + i * size * scale
        w = min(size * scale, x0 + BLOCK_W - x)
        out.append(
            f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{max(w - 2, 0.5):.1f}" height="{h}" '
            f'class="{cls}" data-kv="bar"/>'
        )
        if label and w >= 46:
            out.append(_text(x + w / 2, y + h / 2 + 4, f"{size} tok", "small", "middle"))
        elif cls == "read-wrong" and w >= 14:
            out.append(_text(x + w / 2, y + h / 2 + 5, WRONG, "label-wrong mark", "middle"))
    return "".join(out)


def group_svg(g: GroupView) -> str:
    """The picture of one group, with a title and a description for screen readers."""
    height = 82 + ROW_H * len(g.readers) + 6
    blocks_x = (LABEL_W, LABEL_W + BLOCK_W + GAP)
    page = g.k if g.k else g.block_size
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-labelledby="t-{g.key} d-{g.key}" '
        f'data-kv="group" data-group="{g.id}">',
        f'<title id="t-{g.key}">{esc(g.caption())}</title>',
        f'<desc id="d-{g.key}">{esc(g.describe())}</desc>',
        _text(0, 40, f"cache: {g.block_size}-token blocks", "strong"),
        _text(
            0,
            56,
            f"{g.k}-token pages, {g.split} per block" if g.k else "no page size",
            "small" if g.k else "label-wrong",
        ),
    ]
    for n, x in enumerate(blocks_x):
        first = n * g.block_size
        parts.append(
            _text(x, 14, f"block {n} (tokens {first}-{first + g.block_size - 1})", "small")
        )
        parts.append(
            f'<rect x="{x}" y="20" width="{BLOCK_W}" height="48" rx="3" class="block" '
            f'data-kv="block"><title>manager block {n}: {g.block_size} tokens</title></rect>'
        )
        pages = _bars(x, 26, 36, block=g.block_size, size=page, cls="page", label=True)
        parts.append(f'<g data-kv="pages">{pages}</g>')
    y = 84
    for r in g.readers:
        wrong = g.wrong(r)
        status = g.status(r)
        parts.append(
            f'<g data-kv="reader" data-reader="{esc(r.name)}" data-wrong="{str(wrong).lower()}">'
            f"<title>{esc(r.name)}: {esc(status)}</title>"
        )
        parts.append(_text(0, y + 15, r.name, "strong label-wrong" if wrong else "strong"))
        reads = "-" if r.k is None else f"reads {r.k}-token pages"
        parts.append(_text(0, y + 31, reads, "label-wrong" if wrong else "small"))
        if r.k is not None:
            cls = "read-wrong" if wrong else "read-ok"
            for x in blocks_x:
                parts.append(_bars(x, y, 22, block=g.block_size, size=r.k, cls=cls, label=False))
        short = g.status(r, short=True)
        parts.append(_text(LABEL_W, y + 37, short, "label-wrong" if wrong else "small"))
        parts.append("</g>")
        y += ROW_H
    parts.append("</svg>")
    return "".join(parts)


def group_table(g: GroupView) -> str:
    """The picture's facts as a table (for reading without the picture)."""
    rows = "".join(
        f"<tr><td>{esc(r.name)}</td><td>{'-' if r.k is None else r.k}</td>"
        f'<td class="{"wrong" if g.wrong(r) else ""}">{esc(g.status(r))}</td></tr>'
        for r in g.readers
    )
    return (
        f'<table aria-label="{esc(g.caption())}">'
        "<thead><tr><th>component</th><th>reads pages of (tokens)</th><th>so</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def group_figure(g: GroupView, backends: str = "") -> str:
    """The group's picture, its caption and its table."""
    note = f" Backends: {esc(backends)}." if backends else ""
    wrong = any(g.wrong(r) for r in g.readers) or g.k is None
    return (
        f'<figure data-kv="group-figure" data-wrong="{str(wrong).lower()}">{group_svg(g)}'
        f"<figcaption>{esc(g.caption())}.{note}</figcaption>{group_table(g)}</figure>"
    )


def readers_of(runner: int | None, speculator: int | None, has_draft: bool) -> list[Reader]:
    """The runner, and the speculator when the group has draft layers."""
    out = [Reader("runner", runner)]
    if has_draft or speculator is not None:
        out.append(Reader("speculator", speculator))
    return out
