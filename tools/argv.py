"""Write ``kvconfig/mirror/data/vllm-VERSION/argv.json``: every option string the installed
vLLM's ``vllm serve`` parser registers (hidden ``--no-...`` forms included), with its
destination, how many values it takes and, for flags, the value it stores.

    python tools/argv.py            # under the vLLM to describe

``kvconfig.load.argv_table`` reads the file to split a serve command line as vLLM does;
``tests/test_inputs_argv.py`` checks it against the installed parser.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def describe() -> dict[str, Any]:
    """The option table of the installed vLLM's serve parser."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import vllm
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from kvconfig.engine.startup import serve_function

    make_arg_parser = serve_function("make_arg_parser")

    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    options: dict[str, list[Any]] = {}
    for option, action in sorted(parser._option_string_actions.items()):
        if isinstance(action, argparse._HelpAction):
            continue
        nargs = action.nargs
        if nargs == 0:
            if hasattr(action, "negative_option_strings"):  # EnableDisableAction
                stored: Any = option not in action.negative_option_strings
            elif isinstance(action, argparse.BooleanOptionalAction):
                stored = not option.startswith("--no-")
            else:
                stored = action.const
            options[option] = [action.dest, "0", stored]
        else:
            if nargs == "?":
                third: Any = action.const
            else:
                third = "append" if isinstance(action, argparse._AppendAction) else "store"
            options[option] = [action.dest, "1" if nargs is None else str(nargs), third]
    return {"vllm_version": vllm.__version__, "options": options}


def main() -> int:
    data = describe()
    out = ROOT / "kvconfig" / "mirror" / "data" / f"vllm-{data['vllm_version']}" / "argv.json"
    rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in data["options"].items())
    text = f'{{"vllm_version": {json.dumps(data["vllm_version"])}, "options": {{\n{rows}\n}}}}\n'
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}: {len(data['options'])} option strings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
