"""``python -m kvconfig``."""

from kvconfig.cli import main

raise SystemExit(main())
