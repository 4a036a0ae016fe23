"""The tokens of a shell script: words as parts (literal text, quoted or not, and the
expansions as written: ``$NAME``/``${...}``, ``$(...)``, ``$((...))``, ``"$@"``, the
elements of ``NAME=(...)``) and operators. The lexer makes them, the parser arranges them
and the evaluator expands them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class _Part:
    text: str
    quoted: bool
    kind: str  # "lit", "param", "cmd", "arith", "at" ("$@" in double quotes), "array", "procsub"
    src: str = ""  # the expansion as written
    words: list[_Word] = field(default_factory=list)  # the elements of NAME=(...)


@dataclass
class _Word:
    parts: list[_Part] = field(default_factory=list)
    line: int = 1
    here: bool = False  # the word of a here-string (<<< WORD): the command's input
    doc: bool = False  # ... of a here-document (<<EOF): its body, newlines and all

    def raw(self) -> str:
        return "".join(p.text if p.kind == "lit" else _source_form(p) for p in self.parts)


def _source_form(part: _Part) -> str:
    if part.src:
        return part.src
    if part.kind in {"param", "at"}:
        return "${" + part.text + "}"
    if part.kind == "cmd":
        return "$(" + part.text + ")"
    return "$((" + part.text + "))"


@dataclass
class _Op:
    text: str
    line: int
