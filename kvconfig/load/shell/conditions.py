"""The ``test`` / ``[ ]`` / ``[[ ]]`` builtin: its status from the words alone, None where
the answer reads the system (a file test) or is only known at run time.
"""

from __future__ import annotations

import re


def _int(text: str) -> int | None:
    m = re.fullmatch(r"[ \t]*([-+]?[0-9]+)[ \t]*", text)
    return int(m.group(1)) if m else None


def _test(args: list[str], dialect: str, dbracket: bool) -> int | None:
    """The status of ``test ARGS`` (2: a usage error), None when it reads the system."""
    if not args:
        return 1
    if args[0] == "!" and len(args) > 1 and not (len(args) == 3 and args[1] in _BINARY):
        inner = _test(args[1:], dialect, dbracket)
        return None if inner is None else (2 if inner == 2 else int(inner == 0))
    if len(args) == 1:
        return 0 if args[0] else 1
    if len(args) == 2:
        op, value = args
        if op == "-n":
            return 0 if value else 1
        if op == "-z":
            return 0 if not value else 1
        if op in _UNARY:
            return None
        return 2
    if len(args) == 3 and args[1] in _BINARY:
        left, op, right = args
        if op in ("=", "=="):
            if op == "==" and dialect != "bash":
                return 2
            if dbracket:
                return None
            return 0 if left == right else 1
        if op == "!=":
            if dbracket:
                return None
            return 0 if left != right else 1
        if op in ("<", ">"):
            return None
        a, b = _int(left), _int(right)
        if a is None or b is None:
            return 2 if not dbracket else None
        result = {
            "-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b,
        }.get(op)  # fmt: skip
        return None if result is None else (0 if result else 1)
    if len(args) >= 3 and ("-a" in args or "-o" in args) and not dbracket:
        return None
    return None if dbracket else 2


_UNARY = frozenset(
    [
        "-b",
        "-c",
        "-d",
        "-e",
        "-f",
        "-g",
        "-h",
        "-k",
        "-p",
        "-r",
        "-s",
        "-t",
        "-u",
        "-w",
        "-x",
        "-L",
        "-O",
        "-G",
        "-N",
        "-S",
        "-v",
        "-R",
        "-o",
    ]
)
_BINARY = frozenset(
    ["=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef"]
)
