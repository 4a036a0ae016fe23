"""Write ``kvconfig/mirror/data/vllm-VERSION/json_options.json``: the ``vllm serve``
options whose value vLLM's parser reads as JSON, and how it checks it.

    python tools/json_options.py     # under the vLLM to describe

vLLM builds these options in ``vllm/engine/arg_utils.py`` (``_compute_kwargs``): a field
typed by a config dataclass is parsed by ``TypeAdapter(cls).validate_json`` (``dataclass``,
with the class's JSON schema and name), a ``dict`` field by ``json.loads`` (``json``), a
``dict | str`` field by ``json.loads`` when the text looks like ``{...}`` (``json-or-str``).
``kvconfig.mirror.json_options`` reads the file.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def describe() -> dict[str, Any]:
    """The JSON-valued options of the installed vLLM's serve parser."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import vllm
    from pydantic import TypeAdapter
    from vllm.engine import arg_utils
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from kvconfig.engine.startup import serve_function

    make_arg_parser = serve_function("make_arg_parser")

    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    kinds: dict[str, dict[str, Any]] = {}
    for option, action in sorted(parser._option_string_actions.items()):
        if not option.startswith("--") or action.type is None:
            continue
        kind = _kind(action.type, arg_utils)
        if kind is None:
            continue
        entry: dict[str, Any] = {"dest": action.dest, "kind": kind[0]}
        if kind[1] is not None:
            entry["class"] = kind[1].__name__
            try:
                entry["schema"] = TypeAdapter(kind[1]).json_schema()
            except Exception:  # a validator pydantic cannot describe: JSON object only
                entry["schema"] = None
        kinds[option] = entry
    return {"vllm_version": vllm.__version__, "options": kinds}


def _kind(parse: Any, arg_utils: Any) -> tuple[str, Any] | None:
    """(kind, dataclass) of one option's type function (unwrapping ``optional_type``)."""
    cells = [c.cell_contents for c in getattr(parse, "__closure__", None) or ()]
    name = getattr(parse, "__name__", "")
    if name == "_optional_type" and cells:
        return _kind(cells[0], arg_utils)
    if name == "parse_dataclass":
        defaults = parse.__defaults__ or ()
        return ("dataclass", defaults[0]) if defaults else None
    if parse is json.loads:
        return ("json", None)
    if parse is arg_utils.union_dict_and_str:
        return ("json-or-str", None)
    if name == "_parse_type" and cells and cells[0] is json.loads:
        return ("json", None)
    return None


def main() -> int:
    data = describe()
    out = ROOT / "kvconfig" / "mirror" / "data" / f"vllm-{data['vllm_version']}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "json_options.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out / 'json_options.json'} ({len(data['options'])} options)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
