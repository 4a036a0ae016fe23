"""The ``kvconfig`` command line: ``parser`` (the options), ``targets`` (the files,
folders, ``-`` and command it names, each read once), ``outcomes`` (each deployment
loaded and planned offline), ``engine_runs`` (the same through vLLM's own start-up),
``commands`` (one handler per sub-command, and ``main``)."""

from kvconfig.cli.commands import main
from kvconfig.cli.parser import build_parser

__all__ = ["build_parser", "main"]
