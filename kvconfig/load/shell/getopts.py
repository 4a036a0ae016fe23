"""``getopts OPTSTRING NAME [ARG...]``, one call, as bash and dash run it (POSIX
``getopts``; bash's ``builtins/getopts.def``, dash's ``options.c``), for a script whose
arguments are known: ``while getopts "m:p:" opt; do case $opt in ...`` reads a launch
script's options, and with none given (the script run alone) it ends at once and the
defaults stand.

Each call takes the argument at ``OPTIND`` (from 1): past the end, ``--`` (skipped), a
word that is not an option, or ``-`` alone ends the options (status 1, NAME ``?``; bash
also unsets ``OPTARG``). An option in OPTSTRING sets NAME to it, and ``OPTARG`` to its
value when it takes one (``m:``: the rest of the word, else the next argument); an
unknown option or a missing value sets NAME to ``?`` (``:`` for a missing value when
OPTSTRING starts with ``:``, the silent mode, where ``OPTARG`` names the option). Several
options in one word (``-ab``) need the shells' hidden place inside the word: that call is
left to run time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from kvconfig.load.shell.state import _State
from kvconfig.load.shell.words import HOLE


class _Shell(Protocol):
    state: _State
    dialect: str

    def lookup(self, name: str) -> tuple[bool, str | None]: ...

    def assign(self, name: str, value: str | None, why: str = "") -> None: ...


@dataclass(frozen=True)
class Step:
    """What one ``getopts`` call does."""

    status: int
    name: str
    """The value it gives NAME."""
    optarg: str | None
    """``OPTARG``'s new value; None: unset (bash at the end; dash leaves it)."""
    optind: int
    ended: bool


def step(optstring: str, args: list[str], optind: int) -> Step | None:
    """The call with ``args`` (the positional parameters, or the arguments after NAME) at
    ``optind``; None when it is only known at run time (grouped options)."""
    silent = optstring.startswith(":")
    spec = optstring[1:] if silent else optstring
    at = optind - 1
    if at < 0 or at >= len(args):
        return Step(1, "?", None, optind, True)
    word = args[at]
    if word == "--":
        return Step(1, "?", None, optind + 1, True)
    if not word.startswith("-") or word == "-":
        return Step(1, "?", None, optind, True)
    letter = word[1]
    where = spec.find(letter) if letter != ":" else -1
    takes = where >= 0 and spec[where + 1 : where + 2] == ":"
    if where < 0:
        if len(word) > 2:
            return None  # -xy: the shell keeps its place inside the word
        return Step(0, "?", letter if silent else None, optind + 1, False)
    if not takes:
        if len(word) > 2:
            return None
        return Step(0, letter, None, optind + 1, False)
    if len(word) > 2:
        return Step(0, letter, word[2:], optind + 1, False)
    if at + 1 < len(args):
        return Step(0, letter, args[at + 1], optind + 2, False)
    if silent:
        return Step(0, ":", letter, optind + 1, False)
    return Step(0, "?", None, optind + 1, False)


def getopts(shell: _Shell, optstring: str, name: str, given: list[str] | None) -> int | str:
    """One ``getopts`` call in ``shell`` when its arguments and ``OPTIND`` are known (its
    status); "other" when not (the caller leaves NAME and ``OPTARG`` to run time)."""
    if given is None and shell.state.args is None:
        return "other"
    args = given if given is not None else (shell.state.args or [])[1:]
    is_set, optind = shell.lookup("OPTIND")
    if not is_set:
        optind = "1"  # every shell starts with OPTIND=1
    if (
        any(HOLE.search(a) for a in args)
        or optind is None
        or not optind.isdigit()
        or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
    ):
        return "other"
    done = step(optstring, args, int(optind))
    if done is None:
        return "other"
    shell.assign(name, done.name)
    shell.assign("OPTIND", str(done.optind))
    if done.optarg is not None:
        shell.assign("OPTARG", done.optarg)
    elif not done.ended or shell.dialect == "bash":
        shell.state.vars.pop("OPTARG", None)
    return done.status


__all__ = ["Step", "getopts", "step"]
