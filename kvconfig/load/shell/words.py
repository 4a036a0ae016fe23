"""The tokens of a shell script: words as parts (literal text, quoted or not, and the
expansions as written: ``$NAME``/``${...}``, ``$(...)``, ``$((...))``, ``"$@"``, the
elements of ``NAME=(...)``) and operators. The lexer makes them, the parser arranges them
and the evaluator expands them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class _Part:
    text: str
    quoted: bool
    kind: str  # "lit", "param", "cmd", "arith", "at" ("$@" in double quotes), "array", "procsub",
    # "hole" (a run-time part of an eval'd text, ``split_holes``)
    src: str = ""  # the expansion as written
    words: list[_Word] = field(default_factory=list)  # the elements of NAME=(...)


@dataclass
class _Word:
    parts: list[_Part] = field(default_factory=list)
    line: int = 1
    here: bool = False  # the word of a here-string (<<< WORD): the command's input
    doc: bool = False  # ... of a here-document (<<EOF): its body, newlines and all
    stdout: bool = False  # a redirection beside it sends its command's output elsewhere
    stdin: bool = False  # ... takes its command's input from elsewhere (<FILE, <&N)
    writes: list[tuple[str, _Word]] = field(default_factory=list)
    """The files its command's output goes to (``>FILE``, ``>>FILE``): (operator, name)."""

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


HOLE = re.compile("\ue000((?:[0-9a-f]{2})*)\ue001")
"""A part of a text only known at run time, inside a text otherwise known: the text a
variable holds when some of it is a run-time value (``CMD="vllm serve -tp $TP"`` with
``$TP`` unknown), kept for ``eval`` to read (``kvconfig.load.shell.scope``). What names
the part is written in hexadecimal, so that no quote or blank of it is read as syntax."""


def hole(what: str) -> str:
    """The mark of a run-time part, ``what`` naming it (``$TP``, ``$(nvidia-smi ...)``)."""
    return "\ue000" + (what or "a run-time value").encode().hex() + "\ue001"


def hole_what(text: str) -> str | None:
    """What names the run-time value ``text`` stands for when it is one hole (a function's
    argument only known at run time), else None."""
    m = HOLE.fullmatch(text)
    return None if m is None else _named(m)


def _named(m: re.Match[str]) -> str:
    """What a hole's mark names."""
    return bytes.fromhex(m.group(1)).decode(errors="replace") or "a run-time value"


def holes_named(text: str) -> tuple[str, str | None]:
    """``text`` with each hole written as what it names, and what its first hole names
    (None when it holds none)."""
    first = HOLE.search(text)
    if first is None:
        return text, None
    return HOLE.sub(_named, text), _named(first)


def hole_names(text: str) -> list[str]:
    """What each hole of ``text`` names, each once, in order."""
    return list(dict.fromkeys(_named(m) for m in HOLE.finditer(text)))


def split_holes(word: _Word) -> None:
    """A word lexed from a text with holes: each hole becomes a part of kind ``hole``,
    only known at run time, quoted as the text around it was."""
    if not any(p.kind == "lit" and "\ue000" in p.text for p in word.parts):
        return
    parts: list[_Part] = []
    for part in word.parts:
        if part.kind != "lit" or "\ue000" not in part.text:
            parts.append(part)
            continue
        at = 0
        for m in HOLE.finditer(part.text):
            if m.start() > at:
                parts.append(_Part(part.text[at : m.start()], part.quoted, "lit"))
            parts.append(_Part("", part.quoted, "hole", _named(m)))
            at = m.end()
        if at < len(part.text):
            parts.append(_Part(part.text[at:], part.quoted, "lit"))
    word.parts[:] = parts


def one_field(word: _Word) -> bool:
    """The word is one field whatever its run-time parts hold (every expansion quoted,
    none ``"$@"`` or ``"${A[@]}"``; literal text does not split, but a pattern in it may
    match several files)."""
    return all(
        (p.quoted or (p.kind == "lit" and not any(c in p.text for c in "*?["))) and p.kind != "at"
        and "[@]" not in p.text
        for p in word.parts
    )  # fmt: skip


_ASSIGNS = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")


def assignment(word: _Word) -> tuple[str, bool, _Word] | None:
    """(NAME, whether ``+=``, the value's word) of a word that starts with ``NAME=`` or
    ``NAME+=`` unquoted; None for any other word."""
    first = word.parts[0] if word.parts else None
    if first is None or first.kind != "lit" or first.quoted:
        return None
    m = _ASSIGNS.match(first.text)
    if m is None:
        return None
    value = _Word([_Part(first.text[m.end() :], False, "lit"), *word.parts[1:]], word.line)
    return m.group(1), bool(m.group(2)), value


_OPEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)?\[")
_CLOSE = re.compile(r"\](\+?)=")


def element_assignment(word: _Word) -> tuple[str, _Word, bool, _Word] | None:
    """(NAME, the subscript's word, whether ``+=``, the value's word) of bash's
    ``NAME[SUB]=value`` (NAME is empty for ``[KEY]=value`` inside ``NAME=(...)``): the
    subscript ends at the first unquoted ``]=`` or ``]+=``."""
    first = word.parts[0] if word.parts else None
    if first is None or first.kind != "lit" or first.quoted:
        return None
    m = _OPEN.match(first.text)
    if m is None:
        return None
    parts = [_Part(first.text[m.end() :], False, "lit"), *word.parts[1:]]
    for k, part in enumerate(parts):
        if part.kind == "lit" and not part.quoted and (end := _CLOSE.search(part.text)):
            sub = _Word([*parts[:k], _Part(part.text[: end.start()], False, "lit")], word.line)
            value = _Word([_Part(part.text[end.end() :], False, "lit"), *parts[k + 1 :]], word.line)
            return m.group(1) or "", sub, bool(end.group(1)), value
    return None


_COMMAND_AFTER = frozenset({"then", "do", "else", "elif", "if", "while", "until", "{", "!"})


def starts_command(out: list[_Word | _Op]) -> bool:
    """Whether the next token starts a command: first, after an operator that ends or
    joins commands, or after a reserved word a command follows."""
    if not out:
        return True
    last = out[-1]
    if isinstance(last, _Op):
        return last.text != ")"
    return len(last.parts) == 1 and not last.parts[0].quoted and last.raw() in _COMMAND_AFTER
