"""JSON from untrusted text, bounded in nesting depth.

Python's ``json`` recurses once per level and raises ``RecursionError`` (not a
``ValueError``) on a deep enough document; a JSON value in a dotted option, a serve
config or ``kvconfig diff`` could crash kvconfig that way. ``loads`` refuses anything
nested deeper than ``MAX_DEPTH`` as a ``json.JSONDecodeError`` (the error every reader
already turns into its one-line input error) before decoding.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted (the YAML reader's limit too)."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def too_deep(text: str, limit: int = MAX_DEPTH) -> int | None:
    """The offset where ``text``'s brackets (outside strings) first nest past ``limit``."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = 0
    stripped = _STRING.sub(lambda m: " " * len(m.group()), text)
    for m in _BRACKET.finditer(stripped):
        depth += 1 if m.group() in "[{" else -1
        if depth > limit:
            return m.start()
    return None


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """``json.loads``, refusing documents nested deeper than ``limit``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    where = too_deep(text, limit)
    if where is not None:
        raise json.JSONDecodeError(f"nested deeper than {limit} levels", text, where)
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(f"nested deeper than {limit} levels", text, 0) from None


__all__ = ["MAX_DEPTH", "RUN_TIME_PART", "agreed", "loads", "too_deep", "with_stand_ins"]


RUN_TIME_PART = re.compile(r"\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*|`[^`]*`")
"""A part of a word only known at run time, as kvconfig's readers write it (``$PORT``,
``${X}``, ``$(cmd)``, a backquoted command): the one test of whether a value read from a
file still waits on its run time."""


def with_stand_ins(text: str) -> tuple[Any, Any] | None:
    """JSON text holding parts only known at run time (``"port": $PORT``), read twice with
    a different stand-in for them (0, then 1): what both readings agree on does not depend
    on them (``agreed``). None when either reading is no JSON."""
    try:
        return loads(RUN_TIME_PART.sub("0", text)), loads(RUN_TIME_PART.sub("1", text))
    except (ValueError, RecursionError):
        return None


def agreed(first: Any, second: Any) -> Any:
    """What two readings of a JSON text agree on: the keys of an object whose values agree
    (the others left out), any other value when both are equal, else None."""
    if isinstance(first, dict) and isinstance(second, dict):
        out = {}
        for key in first.keys() & second.keys():
            both = agreed(first[key], second[key])
            if both is not None or (first[key] is None and second[key] is None):
                out[key] = both
        return {k: out[k] for k in first if k in out}
    return first if first == second else None
