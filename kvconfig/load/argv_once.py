"""Each list of serve words parsed once in a process: a lint reads an engine's words more
than once (its reading, its options, its plan), and vLLM's parser rules
(``kvconfig.load.argv``) give the same answer every time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load.argv import parse_serve_args
from kvconfig.load.argv_result import ServeArgs

_PARSED: dict[tuple[Any, ...], ServeArgs | InputError] = {}
"""What vLLM's parser made of words already read, or why it refused them."""

_MOST = 4096
"""The most word lists kept: then the memo starts again."""


Parsed = dict[tuple[Any, ...], ServeArgs | InputError]


def parsed_keys() -> frozenset[tuple[Any, ...]]:
    """The keys of the word lists parsed so far (for ``parsed_since``)."""
    return frozenset(_PARSED)


def parsed_since(keys: frozenset[tuple[Any, ...]]) -> Parsed:
    """The words parsed here that are not among ``keys`` (a worker process sends them to
    its parent, which would otherwise parse them again: ``kvconfig.cli.prefetch``)."""
    return {key: value for key, value in _PARSED.items() if key not in keys}


def remember(parsed: Parsed) -> None:
    """Take what another process's parser made of its words (``parsed_since``)."""
    if len(_PARSED) + len(parsed) >= _MOST:
        _PARSED.clear()
    _PARSED.update(parsed)


def parse_once(
    argv: Sequence[str], version: str, entry: str, source: str, written_for: str | None
) -> ServeArgs:
    """``parse_serve_args`` of ``argv``, each list of words parsed once in a process (a
    lint reads an engine more than once); a ``--config FILE`` among them is taken as
    empty (``reading_of``), and the file is read where the options are
    (``kvconfig.load.command.options_from_argv``)."""
    key = (tuple(argv), version, entry, source, written_for)
    parsed = _PARSED.get(key)
    if parsed is None:
        try:
            parsed = parse_serve_args(
                argv, version=version, entry=entry, read_config=lambda _path: {},
                source=source, written_for=written_for,
            )  # fmt: skip
        except InputError as exc:
            parsed = exc
        if len(_PARSED) >= _MOST:
            _PARSED.clear()
        _PARSED[key] = parsed
    if isinstance(parsed, InputError):
        raise parsed.with_traceback(None)
    return parsed
