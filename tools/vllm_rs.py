"""Write ``kvconfig/mirror/data/vllm-VERSION/vllm_rs.json``: the options ``vllm-rs serve``
(the Rust frontend shipped in the vLLM wheel as ``vllm/vllm-rs``) takes, and how many
values each takes, from its own ``--help``.

    python tools/vllm_rs.py            # under the vLLM to describe

``vllm-rs serve MODEL [OPTIONS] [-- PYTHON_ARGS]`` keeps the options it recognises on the
Rust side and forwards every other word, and every word after ``--``, to the managed
``python -m vllm.entrypoints.cli.main serve`` engine (its ``--help``, "Passthrough
arguments"). ``kvconfig.load.argv_table.vllm_rs_options`` reads the file.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_OPTION = re.compile(
    r"^\s{2,}(?:-\w, )?(?P<name>--[A-Za-z0-9][A-Za-z0-9-]*)"
    r"(?: (?P<value><[^>]+>(?P<many>\.\.\.)?)| \[(?P<optional><[^>]+>(?:\.\.\.)?)\])?\s*$"
)
_ALIASES = re.compile(r"^\s+\[aliases: (?P<names>[^\]]+)\]\s*$")


def describe(help_text: str) -> dict[str, str]:
    """Each option of ``vllm-rs serve --help``: ``0`` (a flag), ``1`` (one value), ``?``
    (an optional value), ``+`` (values up to the next option) or ``*`` (as ``+``, none
    too); aliases take the kind of the option they follow."""
    options: dict[str, str] = {}
    last = ""
    for line in help_text.splitlines():
        m = _OPTION.match(line)
        if m:
            last = m.group("name")
            kind = "0"
            if m.group("value"):
                kind = "+" if m.group("many") else "1"
            elif m.group("optional"):
                kind = "*" if m.group("optional").endswith("...") else "?"
            options[last] = kind
            continue
        a = _ALIASES.match(line)
        if a and last:
            for name in a.group("names").split(","):
                options[name.strip()] = options[last]
    options.pop("--help", None)
    return options


def main() -> int:
    import vllm

    binary = Path(vllm.__file__).parent / "vllm-rs"
    text = subprocess.run(
        [str(binary), "serve", "--help"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    if "forwards everything else to Python" not in text:
        print("this vllm-rs does not forward unknown options to Python", file=sys.stderr)
        return 1
    out = ROOT / "kvconfig" / "mirror" / "data" / f"vllm-{vllm.__version__}" / "vllm_rs.json"
    data = {"vllm": vllm.__version__, "options": dict(sorted(describe(text).items()))}
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{out}: {len(data['options'])} options")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
