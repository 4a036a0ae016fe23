"""Shell patterns: globs as regular expressions, and the ``#``/``%``/``/`` trims and
replacements of ``${NAME...}`` that match them. Pure functions of strings.
"""

from __future__ import annotations

import re

_BRACKET = re.compile(r"\[[^\]]*\]")


def _has_glob(text: str) -> bool:
    return "*" in text or "?" in text or ("[" in text and bool(_BRACKET.search(text)))


def _glob_regex(text: str) -> str:
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
        elif c == "[":
            end = text.find("]", i + 2 if text[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = text[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
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
