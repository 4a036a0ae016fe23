"""Many files read on every core: ``kvconfig lint FOLDER`` over a repository reads each
file in one of a few forked workers, then plans them in order, as if read one by one.

Reading is most of a large lint (the shell reader above all), and one file's reading
never depends on another's, so the files are dealt to ``os.cpu_count()`` workers (at
most ``MAX_WORKERS``) forked from this process: they share what it has imported and the
list of targets, and send back each file's items or its input error, with the values
``kvconfig.secrets`` learned to mask (a worker's memory is its own). Below ``MIN_FILES``
files, on one core, where ``fork`` is missing or while another thread runs (a download),
the files are read here, one by one.
The pool is shut down before the results are used: no worker outlives the command. A
worker that dies (killed, out of memory) leaves the reading to this process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from kvconfig import secrets
from kvconfig.cli import targets as T
from kvconfig.errors import InputError

MIN_FILES = 48
"""Fewest files read in workers: below it, starting them costs more than it saves."""

MAX_WORKERS = 4

HANDS_PER_WORKER = 8
"""The files are dealt in this many hands a worker, each taken by the next free worker: a
few long scripts do not keep one worker busy while the other waits."""

Result = tuple[list[T.Item] | None, InputError | None]
"""A target's items, or the input error reading it raised."""

_targets: Sequence[str | list[str]] = ()
_env: Mapping[str, str] | None = None


def read_all(
    targets: Sequence[str | list[str]], env: Mapping[str, str] | None
) -> dict[int, Result]:
    """Each file target's items or input error, by its index in ``targets``; empty when
    they are better read one by one (``T.read`` in order)."""
    global _targets, _env  # what the forked workers read
    files = [i for i, t in enumerate(targets) if isinstance(t, str) and t != T.STDIN]
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if len(files) < MIN_FILES or workers < 2:
        return {}
    import multiprocessing  # here: a lint of a few files never pays for them
    import threading
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return {}  # a fork copies one thread: another's locks could stay held in the copy
    _targets, _env = targets, env
    hands = [files[k :: HANDS_PER_WORKER * workers] for k in range(HANDS_PER_WORKER * workers)]
    context = multiprocessing.get_context("fork")
    try:
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            parts = list(pool.map(_read_hand, hands))
    except BrokenProcessPool:
        return {}  # a worker died (out of memory, killed): the files are read here
    finally:
        _targets, _env = (), None
    out: dict[int, Result] = {}
    for results, seen in parts:
        secrets.remember_seen(seen)
        for index, items, error in results:
            target = targets[index]
            out[index] = (
                None if items is None else [item._replace(target=target) for item in items],
                error,
            )
    return out


def _read_hand(
    indices: list[int],
) -> tuple[list[tuple[int, list[T.Item] | None, InputError | None]], frozenset[str]]:
    """In a worker: the files at ``indices`` read (the target in each item left out: the
    parent has it), and what ``kvconfig.secrets`` learned meanwhile."""
    out: list[tuple[int, list[T.Item] | None, InputError | None]] = []
    for index in indices:
        try:
            items = T.read(_targets[index], _env)
        except InputError as err:
            out.append((index, None, err))
            continue
        out.append((index, [item._replace(target="") for item in items], None))
    return out, secrets.seen()
