"""Closest-name suggestions for misspelt keys, backends, platforms and architectures.

``difflib`` is imported when a suggestion is made: a clean ``kvconfig lint`` makes none."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence


def closest(word: str, choices: Iterable[str], key: Callable[[str], str] = str.lower) -> str | None:
    """The choice closest to ``word``, or None when nothing is close."""
    return _closest(word, tuple(choices), key)


@functools.lru_cache(maxsize=256)
def _closest(word: str, choices: tuple[str, ...], key: Callable[[str], str]) -> str | None:
    # cached: a folder's files often misspell the same option against the same table
    import difflib

    options = {key(c): c for c in choices}
    hits = difflib.get_close_matches(key(word), list(options), n=1, cutoff=0.6)
    return options[hits[0]] if hits else None


def did_you_mean(word: str, choices: Iterable[str], key: Callable[[str], str] = str.lower) -> str:
    """``did you mean 'x'?`` or an empty string."""
    hit = closest(word, choices, key)
    return f"did you mean {hit!r}?" if hit else ""


def same_first_word(word: str, choices: Sequence[str]) -> str:
    """``did you mean`` among the choices that start like ``word`` (sliding_attention ->
    sliding_window), else among all of them."""
    import difflib

    head = word.lower().split("_")[0]
    pool = [c for c in choices if c.split("_")[0] == head]
    hits = difflib.get_close_matches(word.lower(), pool, n=1, cutoff=0.0) if pool else []
    return f"did you mean {hits[0]!r}?" if hits else did_you_mean(word, choices)
