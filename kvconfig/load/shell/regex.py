"""bash's ``[[ STRING =~ REGEX ]]``: a POSIX extended regular expression, where Python's
``re`` means the same.

bash hands the expanded right word to the C library's ``regcomp`` (``REG_EXTENDED``, no
``REG_NEWLINE``: ``.`` matches a newline, ``^``/``$`` only the ends of the string), its
quoted parts escaped so that they match themselves (bash's manual, "Conditional
Constructs"; ``sh_re_match`` in ``lib/sh/shmatch.c``). The status is 0 when the string
has a match anywhere in it, 1 when not, 2 when the expression is invalid; the match is
``BASH_REMATCH[0]``, the parenthesised subexpressions the later elements (an empty
array when there is no match).

kvconfig decides it only for the part of the syntax where ``re`` means what POSIX means
(characters, ``.``, bracket expressions without backslashes and with the ASCII
character classes, ``* + ? {m,n}`` after an atom, groups, ``|``, ``^``, ``$``) and an
ASCII string (the locale is the machine's); anything else is only known at run time.
Whether a match exists is the same for both; which one POSIX picks (the leftmost, then
the longest) is ``re``'s only without ``|`` and quantified groups, so the elements are
kept only there (and the whole match where the longest end can be tried).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_CLASSES = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v",
    "blank": " \\t",
    "xdigit": "0-9A-Fa-f",
}
_INTERVAL = re.compile(r"\{[0-9]+(,[0-9]*)?\}")


class _Ere:
    """The translation of one expression: its text for ``re``, and what it uses."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.last = ""  # "atom", "quantifier", or "" (start, after ( or |)
        self.depth = 0
        self.alternation = False
        self.quantified_group = False

    def add(self, text: str, literal: bool) -> bool:
        if literal:
            for c in text:
                self.out.append(re.escape(c))
                self.last = "atom"
            return True
        i = 0
        while i < len(text):
            c = text[i]
            step = self.special(text, i)
            if step is None:
                return False
            if step == 0:
                self.out.append(re.escape(c))
                self.last = "atom"
                step = 1
            i += step
        return True

    def special(self, text: str, i: int) -> int | None:
        """How many characters a special one at ``i`` takes (0: none, an ordinary
        character; None: outside the common syntax)."""
        c = text[i]
        if c == "\\":
            nxt = text[i + 1 : i + 2]
            if not nxt or nxt.isalnum() or not nxt.isascii():
                return None  # GNU's \w, \b ..., back-references
            self.out.append(re.escape(nxt))
            self.last = "atom"
            return 2
        if c == "[":
            return self.bracket(text, i)
        m = _INTERVAL.match(text, i)
        if c in "*+?" or c == "{":
            if self.last != "atom" or (c == "{" and m is None):
                return None
            if self.out[-1] == ")":
                self.quantified_group = True
            self.out.append(m.group() if m is not None else c)
            self.last = "quantifier"
            return len(m.group()) if m is not None else 1
        if c in "()|":
            if c != "(" and self.last in ("", "|"):
                return None  # an empty group or alternative
            if c == ")" and not self.depth:
                return None
            self.depth += {"(": 1, ")": -1}.get(c, 0)
            self.alternation = self.alternation or c == "|"
            self.last = {"(": "", ")": "atom"}.get(c, "|")
            self.out.append(c)
            return 1
        if c == ".":
            self.out.append(".")
            self.last = "atom"
            return 1
        if c in "^$":
            self.out.append(r"\Z" if c == "$" else "^")
            self.last = "anchor"
            return 1
        return 0

    def bracket(self, text: str, i: int) -> int | None:
        j = i + 1
        j += text[j : j + 1] == "^"
        j += text[j : j + 1] == "]"
        body = ""
        while j < len(text) and text[j] != "]":
            m = re.match(r"\[:([a-z]+):\]", text[j:])
            if m is not None and m.group(1) in _CLASSES:
                body += _CLASSES[m.group(1)]
                j += m.end()
                continue
            if text[j] in "[\\" or not text[j].isascii():
                return None  # collating elements, other classes; \ is itself in POSIX
            body += text[j]
            j += 1
        if j >= len(text):
            return None
        first = text[i + 1 : i + 3]
        head = "^" if first.startswith("^") else ""
        close = "\\]" if first.removeprefix("^").startswith("]") else ""
        body = re.sub(r"([&~|])", r"\\\1", body)  # re's possible set operations
        self.out.append(f"[{head}{close}{body}]")
        self.last = "atom"
        return j + 1 - i


def regex_match(
    subject: str, pieces: Sequence[tuple[str, bool]]
) -> tuple[int, list[str | None]] | None:
    """(status, ``BASH_REMATCH``: None for an element only known at run time) of
    ``[[ subject =~ REGEX ]]``, REGEX given as (text, quoted) pieces; None when kvconfig
    does not decide it."""
    ere = _Ere()
    if not subject.isascii() or not all(ere.add(t, q) for t, q in pieces):
        return None
    if ere.depth or not ere.out or ere.last == "|":
        return None
    try:
        pattern = re.compile("".join(ere.out), re.S)
    except re.error:
        return None
    m = pattern.search(subject)
    if m is None:
        return 1, []
    start = m.start()
    end = m.end()
    if r"\Z" not in ere.out:  # the longest match from the leftmost start
        end = next(
            e for e in range(len(subject), start - 1, -1) if pattern.fullmatch(subject, start, e)
        )
    elif ere.alternation:
        return 0, [None]
    if ere.alternation or ere.quantified_group or end != m.end():
        return 0, [subject[start:end], *([None] * pattern.groups)]
    return 0, [m.group(0), *(g or "" for g in m.groups())]
