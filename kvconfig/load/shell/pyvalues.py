"""Values of the Python programs ``kvconfig.load.shell.pyprint`` reads: holes (values only
known at run time), ``str`` as ``print`` writes it, ``int``/``float``/``str`` of a value, and
``json.dumps`` of data holding holes (the Python reference, built-in functions; the
``json`` module's output, its options ``indent``, ``separators``, ``sort_keys`` and
``ensure_ascii``)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from kvconfig.errors import ProgramUnread as Unread
from kvconfig.load.shell.words import hole


@dataclass(frozen=True)
class Hole:
    """A value only known at run time; ``text``: it is a string (JSON quotes it)."""

    what: str
    text: bool


MAX_TEXT = 256 * 1024
"""Longest text a program's value or output may be (a value used twice in one value can
double its size at each statement)."""

MAX_ITEMS = 20000
"""Most items (elements, keys, values) one value may hold, counted as written out."""


MAX_WORK = 400_000
"""Most items kvconfig counts for one program, all checks together (a program of many
values each holding a large one would otherwise cost each check its whole size)."""


def bounded(value: Any, work: list[int]) -> Any:
    """``value`` when its texts together are within ``MAX_TEXT`` and its items within
    ``MAX_ITEMS``, counted with early stops
    (a list holding one list twice is written out twice), ``work`` (one item: what is left
    of ``MAX_WORK``) paying for the count; else Unread."""
    budget = [MAX_ITEMS, MAX_TEXT]

    def count(v: Any) -> None:
        budget[0] -= 1
        work[0] -= 1
        if isinstance(v, str):
            budget[1] -= len(v)
        if budget[0] < 0 or budget[1] < 0 or work[0] < 0:
            raise Unread
        if isinstance(v, dict):
            for k, x in v.items():
                count(k)
                count(x)
        elif isinstance(v, list | tuple):
            for x in v:
                count(x)

    count(value)
    return value


def plain(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def to_str(value: Any) -> str:
    """``str(value)`` as ``print`` writes it; a hole stays a hole."""
    if isinstance(value, Hole):
        return hole(value.what)
    if isinstance(value, str):
        return value
    if plain(value):
        return str(value)
    if holes(value):
        raise Unread
    if isinstance(value, list | tuple | dict) and data(value):
        return str(value)
    raise Unread


def convert(name: str, args: list[Any]) -> Any:
    if len(args) != 1:
        raise Unread
    value = args[0]
    if isinstance(value, Hole):
        return Hole(value.what, name == "str")
    if name == "str":
        if not plain(value):
            raise Unread
        return str(value)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            out = int(value) if name == "int" else float(value)
        except (ValueError, OverflowError) as e:
            raise Unread from e  # the program fails
        if name == "float" and not math.isfinite(out):
            raise Unread
        return out
    raise Unread


def data(value: Any) -> bool:
    """Plain data: what ``json.dumps`` and ``str`` write as Python would."""
    if isinstance(value, dict):
        return all(plain(k) and data(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(data(v) for v in value)
    return plain(value) or isinstance(value, Hole)


def holes(value: Any) -> bool:
    if isinstance(value, Hole):
        return True
    if isinstance(value, dict):
        return any(holes(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(holes(v) for v in value)
    return False


_DUMPS_OPTIONS = frozenset({"indent", "separators", "sort_keys", "ensure_ascii"})


def dumps(value: Any, kwargs: dict[str, Any]) -> Any:
    """``json.dumps(value, **kwargs)``; a hole in ``value`` is a hole of the text, in JSON
    quotes when it stands for a string."""
    if isinstance(value, Hole):
        return Hole(value.what, True)
    if set(kwargs) - _DUMPS_OPTIONS or not data(value):
        raise Unread
    found: list[Hole] = []

    def stand_in(v: Any) -> Any:
        if isinstance(v, Hole):
            found.append(v)
            return f"{_STAND_IN}{len(found) - 1}"
        if isinstance(v, dict):
            return {k: stand_in(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [stand_in(x) for x in v]
        return v

    text = json.dumps(stand_in(value), **kwargs)
    for k, h in enumerate(found):
        mark = f'"{_STAND_IN}{k}"'
        if text.count(mark) != 1:
            raise Unread  # the program's own text holds the stand-in
        text = text.replace(mark, f'"{hole(h.what)}"' if h.text else hole(h.what))
    return text


_STAND_IN = "kvconfig-run-time-part-"
"""What a hole is written as for ``json.dumps`` (ASCII: it escapes any other character)."""
