"""The ``kvconfig`` command line: ``parser`` (the options), ``targets`` (the files,
folders, ``-`` and command it names, each read once), ``outcomes`` (each deployment
loaded and planned offline), ``engine_runs`` (the same through vLLM's own start-up),
``commands`` (one handler per sub-command, and the command line's ``main``)."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import TextIO

from kvconfig.cli.parser import build_parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    """Run the CLI (``kvconfig.cli.commands.main``); returns the exit code.

    Python's cyclic garbage collector is paused while the command runs: a command imports
    most of its modules when it starts (classes, functions and tables, never garbage),
    and the collector's passes over them cost a cold ``kvconfig lint`` about 4 ms of its
    0.1 s. What a run leaves in cycles is small (about 10,000 objects, 0.3 MiB, for the
    93 files of ``tests/realworld/files``), and left to the collector when the run ends.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        from kvconfig.cli.commands import main as run

        return run(argv, stdout)
    finally:
        if paused:
            gc.enable()


def run() -> int:
    """The ``kvconfig`` program (its console script and ``python -m kvconfig``): ``main``,
    then every object left is frozen (``gc.freeze``), as the process ends at once. The
    interpreter's collections at exit would otherwise walk every object the run made,
    about 0.5 s after linting the 650 files of ``tests/realworld/files``
    (docs/performance.md); the objects are still freed, only not searched for cycles."""
    code = main()
    gc.freeze()
    return code


__all__ = ["build_parser", "main", "run"]
