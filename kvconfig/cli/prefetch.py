"""Many files read on every core: ``kvconfig lint FOLDER`` over a repository reads each
file in one of a few forked workers while this process plans the files already read, in
order, as if read one by one.

Reading is most of a large lint (the shell reader above all), and one file's reading
never depends on another's, so the files are dealt to ``os.cpu_count()`` workers (at
most ``MAX_WORKERS``) forked from this process: they share what it has imported and the
list of targets, and send back each file's items or its input error, with the values
``kvconfig.secrets`` learned to mask (a worker's memory is its own; what a command
prints is masked once every file is read). The files are dealt in hands, each taken by
the next free worker: the costliest files first, one a hand, then hands of cheaper ones,
smaller and smaller, so that no long script is left for last while a worker idles. This
process plans each hand as soon as it is back (``arrived``); the outcomes are put in the
targets' order.
Below ``MIN_FILES`` files, on one core, where ``fork`` is missing or while another thread
runs (a download), the files are read here, one by one.
The pool is shut down when the reading ends, whatever happens: no worker outlives the
command. A worker that dies (killed, out of memory) leaves the files it had not sent back
to this process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager

from kvconfig import secrets
from kvconfig.cli import targets as T
from kvconfig.errors import InputError
from kvconfig.load import argv_once

MIN_FILES = 48
"""Fewest files read in workers: below it, starting them costs more than it saves."""

MAX_WORKERS = 4

HANDS_PER_WORKER = 4
"""A hand's share of what is left to read, at the most, is one in this many per worker."""

SMALLEST_HAND = 1 / 64
"""A hand's share of the whole reading, at the least, per worker."""

_SCRIPTS = frozenset({".sh", ".bash", ".sbatch", ""})
SCRIPT_WEIGHT = 8
"""How much longer a shell script takes to read than a data file of the same size (it is
run; the corpus's scripts take 2.8 µs a byte, its YAML files 0.36: docs/performance.md)."""

Result = tuple[list[T.Item] | None, InputError | None]
"""A target's items, or the input error reading it raised."""

_Hand = tuple[
    list[tuple[int, list[T.Item] | None, InputError | None]], frozenset[str], argv_once.Parsed
]

_targets: Sequence[str | list[str]] = ()
_env: Mapping[str, str] | None = None


class Reading:
    """The workers' readings, each asked for by the index of its target (``get``)."""

    def __init__(self, targets: Sequence[str | list[str]]) -> None:
        self.targets = targets
        self.hand_of: dict[int, int] = {}
        self.hands: list[list[int]] = []
        self.futures: list[Future[_Hand]] = []
        self.out: dict[int, Result] = {}
        self.taken: set[int] = set()

    def get(self, index: int) -> Result | None:
        """The reading of ``targets[index]``, once its worker sent it back; None when this
        process is to read it (not dealt, or its worker died)."""
        hand = self.hand_of.pop(index, None)
        if hand is not None and hand not in self.taken:
            self.taken.add(hand)
            self._take(hand)
        return self.out.pop(index, None)

    def arrived(self) -> Iterator[tuple[int, Result]]:
        """Each dealt target's index and reading, hand by hand as the workers send them
        back (a dead worker's are left to ``get``)."""
        from concurrent.futures import as_completed

        hand_at = {future: n for n, future in enumerate(self.futures)}
        for future in as_completed(self.futures):
            hand = hand_at[future]
            if hand in self.taken:
                continue
            self.taken.add(hand)
            self._take(hand)
            for index in self.hands[hand]:
                found = self.out.pop(index, None)
                if found is not None:
                    del self.hand_of[index]
                    yield index, found

    def _take(self, hand: int) -> None:
        from concurrent.futures.process import BrokenProcessPool

        future = self.futures[hand]
        try:
            results, seen, parsed = future.result()
        except BrokenProcessPool:
            return  # a worker died (out of memory, killed): the files are read here
        secrets.remember_seen(seen)
        argv_once.remember(parsed)  # planning parses the same serve words again
        for index, items, error in results:
            target = self.targets[index]
            self.out[index] = (
                None if items is None else [item._replace(target=target) for item in items],
                error,
            )


@contextmanager
def reading(targets: Sequence[str | list[str]], env: Mapping[str, str] | None) -> Iterator[Reading]:
    """The file targets read in workers, each taken with ``Reading.arrived`` or
    ``Reading.get`` (none are when they are better read one by one, ``T.read`` in order)."""
    global _targets, _env  # what the forked workers read
    found = Reading(targets)
    files = [i for i, t in enumerate(targets) if isinstance(t, str) and t != T.STDIN]
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if len(files) < MIN_FILES or workers < 2:
        yield found
        return
    import multiprocessing  # here: a lint of a few files never pays for them
    import threading
    from concurrent.futures import ProcessPoolExecutor

    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        yield found  # a fork copies one thread: another's locks could stay held in the copy
        return
    _targets, _env = targets, env
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    try:
        for n, hand in enumerate(_deal([(_cost(targets[i]), i) for i in files], workers)):
            found.futures.append(pool.submit(_read_hand, hand))
            found.hands.append(hand)
            found.hand_of.update(dict.fromkeys(hand, n))
        yield found
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _targets, _env = (), None


def _cost(target: str | list[str]) -> int:
    """A guess at how long a file takes to read, to deal the costliest first."""
    assert isinstance(target, str)
    try:
        size = os.stat(target).st_size
    except OSError:
        return 0
    return size * (SCRIPT_WEIGHT if os.path.splitext(target)[1] in _SCRIPTS else 1)


def _deal(costs: list[tuple[int, int]], workers: int) -> list[list[int]]:
    """The hands of target indices, in the order they are to be read: by guessed cost
    ``(cost, index)``, the costliest first, each hand at most a ``HANDS_PER_WORKER``'th per
    worker of what is left to read and at least a ``SMALLEST_HAND`` per worker of all."""
    left = sum(cost for cost, _ in costs)
    least = left * SMALLEST_HAND / workers
    hands: list[list[int]] = []
    hand: list[int] = []
    share = 0
    for cost, index in sorted(costs, key=lambda c: (-c[0], c[1])):
        if hand and share + cost > max(left / (HANDS_PER_WORKER * workers), least):
            hands.append(hand)
            left -= share
            hand, share = [], 0
        hand.append(index)
        share += cost
    return [*hands, hand] if hand else hands


def read_all(
    targets: Sequence[str | list[str]], env: Mapping[str, str] | None
) -> dict[int, Result]:
    """Each file target's items or input error, by its index in ``targets``, read in the
    workers; empty when they are better read one by one."""
    with reading(targets, env) as found:
        out = {i: r for i in range(len(targets)) if (r := found.get(i)) is not None}
    return out


def _read_hand(indices: list[int]) -> _Hand:
    """In a worker: the files at ``indices`` read (the target in each item left out: the
    parent has it), what ``kvconfig.secrets`` learned meanwhile, and what vLLM's parser
    made of the serve words read (``kvconfig.load.argv_once``)."""
    out: list[tuple[int, list[T.Item] | None, InputError | None]] = []
    known = argv_once.parsed_keys()
    for index in indices:
        try:
            items = T.read(_targets[index], _env)
        except InputError as err:
            out.append((index, None, err))
            continue
        out.append((index, [item._replace(target="") for item in items], None))
    return out, secrets.seen(), argv_once.parsed_since(known)
