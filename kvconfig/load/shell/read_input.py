"""What the ``read`` builtin takes from its input (bash ``builtins/read.def``, dash
``readcmd`` in ``src/miscbltin.c``, POSIX ``read``): its options, the text up to the
delimiter, and that text split for its names. ``kvconfig.load.shell.scope`` runs it."""

from __future__ import annotations

import re

from kvconfig.load.shell.fields import split_value

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _read_options(args: list[str], dialect: str) -> tuple[bool, str, str, list[str]] | None:
    """(``-r``, the delimiter, the ``-a`` array, the names) of ``read ARGS``; None for an
    option kvconfig does not read (``-n``, ``-t``, ``-u`` ...; dash has only ``-r``/``-p``)."""
    raw, delim, array, k = False, "\n", "", 0
    allowed = "rpsade" if dialect == "bash" else "rp"
    while k < len(args) and args[k].startswith("-") and args[k] != "-":
        option, k = args[k], k + 1
        if option == "--":
            break
        for n, letter in enumerate(option[1:], start=1):
            if letter not in allowed:
                return None
            raw = raw or letter == "r"
            if letter in "pad":
                value = option[n + 1 :]
                if not value and n + 1 == len(option):
                    if k >= len(args):
                        return None
                    value, k = args[k], k + 1
                if letter == "a":
                    array = value
                elif letter == "d":
                    delim = value[:1] or "\0"
                break
    names = args[k:]
    if not all(_NAME.fullmatch(n) for n in [*names, *([array] if array else [])]):
        return None
    if dialect != "bash" and (array or not names):
        return None  # dash: read needs a name
    return raw, delim, array, names


def _take(text: str, delim: str, raw: bool, ifs: str) -> tuple[str, int, int] | None:
    """(what ``read`` takes from ``text``, its status: 1 when the input ends first, where
    in ``text`` the rest starts);
    None when an escaped character would be kept from splitting (only known here as
    text, not as fields)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and not raw:
            nxt = text[i + 1 : i + 2]
            if nxt != "\n" and (not nxt or nxt in ifs or nxt == delim):
                return None
            out.append(nxt if nxt != "\n" else "")  # backslash-newline: the line goes on
            i += 2
            continue
        if c == delim:
            return "".join(out), 0, i + 1
        out.append(c)
        i += 1
    return "".join(out), 1, len(text)


def _fields(line: str, ifs: str, count: int) -> list[str]:
    """``line`` split for ``count`` names (POSIX ``read``)."""
    ws = "".join(c for c in ifs if c in " \t\n")
    values: list[str] = []
    i = 0
    while i < len(line) and line[i] in ws:
        i += 1
    for _ in range(count - 1):
        j = i
        while j < len(line) and line[j] not in ifs:
            j += 1
        values.append(line[i:j])
        while j < len(line) and line[j] in ws:
            j += 1
        if j < len(line) and line[j] in ifs:
            j += 1
            while j < len(line) and line[j] in ws:
                j += 1
        i = j
    rest = line[i:].rstrip(ws) if ws else line[i:]
    if rest and rest[-1] in ifs and rest[-1] not in ws and len(split_value(rest, ifs)) == 1:
        rest = split_value(rest, ifs)[0]
    return [*values, rest]
