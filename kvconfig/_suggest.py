"""Closest-name suggestions for misspelt keys, backends, platforms and architectures."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable


def closest(word: str, choices: Iterable[str], key: Callable[[str], str] = str.lower) -> str | None:
    """The choice closest to ``word``, or None when nothing is close."""
    options = {key(c): c for c in choices}
    hits = difflib.get_close_matches(key(word), list(options), n=1, cutoff=0.6)
    return options[hits[0]] if hits else None


def did_you_mean(word: str, choices: Iterable[str], key: Callable[[str], str] = str.lower) -> str:
    """``did you mean 'x'?`` or an empty string."""
    hit = closest(word, choices, key)
    return f"did you mean {hit!r}?" if hit else ""
