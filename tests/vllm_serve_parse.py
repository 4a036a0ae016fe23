"""Parse serve argument lists with vLLM's real ``vllm serve`` parser, in a fresh process.

    python tests/vllm_serve_parse.py < cases.json > results.json

``cases.json`` maps a name to the words after ``vllm serve``; each result is the
parser's namespace (values made JSON: enums as their value, config objects as their
fields) or the error it raised. ``"__options__"`` in the output is the option table of
``tools/argv.py``. Runs with ``VLLM_TARGET_DEVICE=cpu``, as ``vllm serve`` needs a
platform to build its parser.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
import io
import json
import os
import sys
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
ROOT = Path(__file__).resolve().parent.parent


def plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value if isinstance(value.value, (int, str)) else value.name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def main() -> int:
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    top = FlexibleArgumentParser(description="vLLM CLI")
    sub = top.add_subparsers(required=False, dest="subparser")
    ServeSubcommand().subparser_init(sub)
    cases = json.load(sys.stdin)
    out: dict[str, Any] = {}
    for name, argv in cases.items():
        try:
            with redirect_stderr(io.StringIO()):
                ns = vars(top.parse_args(["serve", *argv]))
            ns.pop("dispatch_function", None)
            out[name] = {"ok": plain(ns)}
        except SystemExit as err:
            out[name] = {"error": f"SystemExit {err.code}"}
        except Exception as err:
            out[name] = {"error": f"{type(err).__name__}: {err}"}
    spec = importlib.util.spec_from_file_location("vllm_argv", ROOT / "tools" / "argv.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out["__options__"] = module.describe()["options"]
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
