"""``python -m kvconfig``."""

from kvconfig.cli import run

raise SystemExit(run())
