"""The ``kvconfig`` command line: ``parser`` (the options), ``outcomes`` (each deployment
read and planned), ``commands`` (one handler per sub-command, and ``main``)."""

from kvconfig.cli.commands import main
from kvconfig.cli.parser import build_parser

__all__ = ["build_parser", "main"]
