"""``vllm-rs serve``: vLLM's Rust frontend, the ``vllm/vllm-rs`` binary of the vLLM wheel
(every release kvconfig knows ships it).

``vllm-rs serve MODEL [OPTIONS] [-- PYTHON_ARGS]`` launches a managed Python engine
(``python -m vllm.entrypoints.cli.main serve ...``) and serves it from Rust. Its
``--help`` ("Passthrough arguments") says which words reach that engine: the options the
Rust side recognises stay there, every other word before ``--`` and every word after it
is forwarded. Which options it recognises, and how many values each takes, is the
release's ``vllm_rs.json`` (written by ``tools/vllm_rs.py`` from the binary's own
``--help``). kvconfig reads the engine as ``vllm serve`` with the model and the forwarded
words, and keeps the Rust-side options vLLM's Python parser also takes (``--max-model-len``,
the data-parallel sizes: the managed engine is given them); one only the Rust side has
(``--grpc-port``'s Rust form, ``--engine-ready-timeout-secs``) is left out.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence

from kvconfig.load.argv_table import options
from kvconfig.mirror import versions


@functools.cache
def rust_options(version: str) -> Mapping[str, str]:
    """The options ``vllm-rs serve`` of ``version`` recognises: ``0``, ``1``, ``?``, ``+``
    or ``*`` values (none when the release's data has no such file)."""
    path = versions.folder(versions.check(version)) / "vllm_rs.json"
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8") as f:
        data: dict[str, str] = json.load(f)["options"]
    return data


def python_args(argv: Sequence[str], version: str) -> list[str]:
    """The words after ``vllm-rs serve`` as the managed engine's ``vllm serve`` words."""
    rust, python = rust_options(version), options(version)
    out: list[str] = []
    k = 0
    while k < len(argv):
        word = argv[k]
        k += 1
        if word == "--":
            return out + list(argv[k:])
        name = word.partition("=")[0]
        if name not in rust or name in python or not word.startswith("--"):
            out.append(word)
            continue
        kind = "0" if "=" in word else rust[name]  # a Rust-side option: its values go too
        if kind == "1" or (kind == "?" and k < len(argv) and not argv[k].startswith("-")):
            k += 1
        elif kind in ("+", "*"):
            while k < len(argv) and not argv[k].startswith("-"):
                k += 1
    return out
