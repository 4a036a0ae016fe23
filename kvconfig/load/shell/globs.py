"""Shell patterns: globs as regular expressions, and the ``#``/``%``/``/`` trims and
replacements of ``${NAME...}`` that match them. Pure functions of strings.
"""

from __future__ import annotations

import re

_BRACKET = re.compile(r"\[[^\]]*\]")


def _has_glob(text: str) -> bool:
    return "*" in text or "?" in text or ("[" in text and bool(_BRACKET.search(text)))


_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
"""POSIX character classes in the C locale (POSIX.1-2017 XBD 7.3.1), as Python class
bodies (bash's ``word`` too)."""


def _quoted(text: str) -> str:
    """``text`` as a pattern that matches it literally: each character behind a backslash."""
    return "".join("\\" + c for c in text)


def _bracket(text: str, i: int) -> tuple[str | None, int] | None:
    """The bracket expression of a pattern that opens at ``text[i]`` (``[``), as a Python
    class, and where it ends; None when no ``]`` closes it (the ``[`` is then a plain
    character). A ``]`` first (after ``!``/``^``) is a member; ``[:name:]`` is a
    class; every other member is taken literally, a ``-`` between two members making a
    range; a backslash quotes the member after it. The class is None (left to run time)
    for a class name the C locale lacks (``[[:foo:]]``: bash lets the other members match,
    dash none) and for an equivalence class or collating symbol (``[[=a=]]``, ``[[.a.]]``:
    bash reads them, dash does not)."""
    j = i + 1
    negate = text[j : j + 1] in ("!", "^")
    j += negate
    members: list[str] = []
    first = j
    while j < len(text):
        c = text[j]
        if c == "]" and j > first:
            body = "".join(members)
            return ("[^" if negate else "[") + body + "]", j
        if c == "[" and text[j + 1 : j + 2] in (":", "=", "."):
            kind = text[j + 1]
            end = text.find(kind + "]", j + 2)
            if end >= 0:
                name = text[j + 2 : end]
                if kind != ":" or name not in _CLASSES:
                    closing = text.find("]", end + 2)
                    return None, closing if closing >= 0 else len(text)
                members.append(_CLASSES[name])
                j = end + 2
                continue
        if c == "\\" and j + 1 < len(text):
            j += 1
            c = text[j]
        elif c == "-" and members and j + 1 < len(text) and text[j + 1] != "]":
            members.append("-")
            j += 1
            continue
        members.append(re.escape(c))
        j += 1
    return None


def _glob_regex(text: str) -> str | None:
    """A shell pattern as a Python regular expression (None: a bracket expression left to
    run time, see ``_bracket``)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "\\" and i + 1 < len(text):
            out.append(re.escape(text[i + 1]))
            i += 1
        elif c == "[" and (found := _bracket(text, i)) is not None:
            if found[0] is None:
                return None
            out.append(found[0])
            i = found[1]
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _trim(value: str, pattern: re.Pattern[str], op: str) -> str:
    ends = range(len(value) + 1)
    if op in ("#", "##"):
        order = ends if op == "#" else reversed(ends)
        for n in order:
            if pattern.fullmatch(value[:n]):
                return value[n:]
        return value
    order = reversed(ends) if op == "%" else ends
    for n in order:
        if pattern.fullmatch(value[n:]):
            return value[:n]
    return value


def _replace(value: str, pattern: re.Pattern[str], repl: str, op: str) -> str:
    if op == "/#":
        for n in reversed(range(len(value) + 1)):
            if pattern.fullmatch(value[:n]):
                return repl + value[n:]
        return value
    if op == "/%":
        for n in range(len(value) + 1):
            if pattern.fullmatch(value[n:]):
                return value[:n] + repl
        return value
    out: list[str] = []
    i = 0
    while i <= len(value):
        for n in range(len(value), i, -1):
            if pattern.fullmatch(value[i:n]):
                out.append(repl)
                i = n
                break
        else:
            if i < len(value):
                out.append(value[i])
            i += 1
            continue
        if op == "/":
            out.append(value[i:])
            return "".join(out)
    return "".join(out)
