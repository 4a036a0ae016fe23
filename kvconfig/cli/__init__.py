"""The ``kvconfig`` command line."""

from kvconfig.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
