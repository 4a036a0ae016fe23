"""bash's brace expansion of a word (the bash manual, Brace Expansion): a sequence
expression ``{x..y[..incr]}`` of integers or single letters, or a list ``{a,b,...}`` with
at least one unquoted comma, in unquoted literal text, becomes one word per element (its
preamble and postscript around each), left to right, before any other expansion. dash
has none. A brace inside another one, or one that spans quotes or an expansion, is not
expanded here: ``doubtful`` says so, and the word is then only known at run time."""

from __future__ import annotations

import re

from kvconfig.load.shell.words import _Part, _Word

_BODY = re.compile(r"\{([^{}]*)\}")
_SEQ = re.compile(r"(-?[0-9]+|[A-Za-z])\.\.(-?[0-9]+|[A-Za-z])(?:\.\.(-?[0-9]+))?")
MAX_WORDS = 1024
"""A sequence longer than this is not expanded (kvconfig keeps the word as written)."""


def _sequence(body: str) -> list[str] | None:
    m = _SEQ.fullmatch(body)
    if m is None:
        return None
    x, y, step = m.group(1), m.group(2), m.group(3)
    incr = abs(int(step)) if step else 1
    incr = incr or 1
    if x.lstrip("-").isdigit() != y.lstrip("-").isdigit():
        return None
    if x.lstrip("-").isdigit():
        a, b = int(x), int(y)
        if abs(b - a) // incr + 1 > MAX_WORDS:
            return None
        width = max(len(x), len(y)) if re.match(r"-?0[0-9]", x) or re.match(r"-?0[0-9]", y) else 0
        values = range(a, b + 1, incr) if a <= b else range(a, b - 1, -incr)
        return [f"{v:0{width}d}" if width else str(v) for v in values]
    a, b = ord(x), ord(y)
    values = range(a, b + 1, incr) if a <= b else range(a, b - 1, -incr)
    return [chr(v) for v in values]


def _items(text: str) -> tuple[int, int, list[str]] | None:
    """(start, end, elements) of the first brace expression in unquoted text."""
    for m in _BODY.finditer(text):
        before = text[: m.start()]
        if before.count("{") != before.count("}") or (before.endswith("$")):
            continue  # nested inside another brace, or ${...}
        body = m.group(1)
        seq = _sequence(body)
        if seq is not None:
            return m.start(), m.end(), seq
        if "," in body:
            return m.start(), m.end(), body.split(",")
    return None


def expand_braces(word: _Word) -> list[_Word]:
    """The words bash makes of ``word`` by brace expansion (``[word]`` when it has none)."""
    for k, part in enumerate(word.parts):
        if part.kind != "lit" or part.quoted:
            continue
        found = _items(part.text)
        if found is None:
            continue
        start, end, elements = found
        out: list[_Word] = []
        for element in elements:
            text = part.text[:start] + element + part.text[end:]
            parts = [*word.parts[:k], _Part(text, False, "lit"), *word.parts[k + 1 :]]
            out.extend(expand_braces(_Word(parts, word.line)))
            if len(out) > MAX_WORDS:
                return [word]
        return out
    return [word]


def doubtful(word: _Word) -> bool:
    """Whether bash may still expand a brace of ``word`` that ``expand_braces`` left: one
    nested in another, or one whose body holds quotes or an expansion."""
    text = "".join(p.text if p.kind == "lit" and not p.quoted else "\0" for p in word.parts)
    for m in re.finditer(r"\{", text):
        end = text.find("}", m.end())
        if end < 0:
            continue
        body = text[m.end() : end]
        if "," in body or ".." in body or "\0" in body or "{" in body:
            return True
    return False
