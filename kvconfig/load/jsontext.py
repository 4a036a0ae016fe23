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


__all__ = ["MAX_DEPTH", "loads", "too_deep"]
