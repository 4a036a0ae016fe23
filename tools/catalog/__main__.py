"""``python -m tools.catalog [-o DIR | -o FILE.json]``: regenerate the installed vLLM's data."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate ``catalog.json`` and ``facts.json``; prints what was written."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.catalog",
        description="Regenerate kvconfig's backend catalog and vLLM facts from the installed vLLM.",
    )
    parser.add_argument(
        "-o",
        "--output",
        help="a folder (both files go in it) or a .json file for the catalog "
        "(default: kvconfig's shipped folder of the installed vLLM version)",
    )
    args = parser.parse_args(argv)
    from tools.catalog.generate import regenerate

    sys.stdout.write(regenerate(args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
