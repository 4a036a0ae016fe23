"""The speculative-decoding options of vLLM releases before 0.9, read as those releases
read them.

Up to vLLM 0.8 a draft was named by separate options (``--speculative-model``,
``--num-speculative-tokens``, ``--speculative-draft-tensor-parallel-size``, ...). vLLM
0.8's ``EngineArgs.create_speculative_config`` folds them into the one
``speculative_config`` dictionary later releases take as ``--speculative-config``
(``model``, ``num_speculative_tokens``, ``draft_tensor_parallel_size``,
``max_model_len``, ``quantization``, ``prompt_lookup_max``/``min``), and 0.9 dropped the
separate options. Words written for such a release (``written_for``: an image
``vllm/vllm-openai:v0.7.3``) are read with a newer release's table, which refuses those
options; folding them the same way keeps the draft, so the speculative method is derived
from it as vLLM derives it (``SpeculativeConfig``: ``[ngram]`` is n-gram lookup, an EAGLE
checkpoint EAGLE, any other model a draft model).

vLLM's demo API server (``python -m vllm.entrypoints.api_server``) is in the releases up to
``versions.DEMO_API_SERVER_LAST`` only (``demo_server``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load.argv_result import ArgNote
from kvconfig.mirror import versions

_LEGACY = {
    "--speculative-model": "model",
    "--num-speculative-tokens": "num_speculative_tokens",
    "--speculative-draft-tensor-parallel-size": "draft_tensor_parallel_size",
    "--speculative-max-model-len": "max_model_len",
    "--speculative-model-quantization": "quantization",
    "--ngram-prompt-lookup-max": "prompt_lookup_max",
    "--ngram-prompt-lookup-min": "prompt_lookup_min",
}
"""The options vLLM 0.8 folds into ``speculative_config``, and the key each becomes."""
_INTEGER_KEYS = frozenset(
    {
        "num_speculative_tokens",
        "draft_tensor_parallel_size",
        "max_model_len",
        "prompt_lookup_max",
        "prompt_lookup_min",
    }
)
_RELEASE = re.compile(r"\bvLLM (\d+)\.(\d+)")
_LAST_WITH_THEM = (0, 8)


def had_them(written_for: str | None) -> bool:
    """Whether ``written_for`` names a numbered vLLM release that took the separate
    speculative options (0.8 or older)."""
    m = _RELEASE.search(written_for or "")
    return m is not None and (int(m.group(1)), int(m.group(2))) <= _LAST_WITH_THEM


OLD_BOOLEANS = frozenset({"--enable-chunked-prefill", "--multi-step-stream-outputs"})
"""Flags vLLM 0.8 and older declared with ``StoreBoolean``, ``nargs="?"``, ``const="True"``
(``vllm/engine/arg_utils.py``): a ``true`` or ``false`` after one (any case) is its value."""


def took_boolean(name: str, word: str, written_for: str | None) -> bool:
    """Whether ``word`` after ``name`` was that flag's value in the release the words were
    written for (``--enable-chunked-prefill false`` for vLLM 0.7)."""
    return had_them(written_for) and name in OLD_BOOLEANS and word.lower() in ("true", "false")


def fold_speculative(
    tokens: list[tuple[str, str]], written_for: str | None
) -> tuple[list[tuple[str, str]], list[ArgNote]]:
    """``tokens`` (words after vLLM's rewriting: dashes in option names) with the
    separate speculative options folded into one ``--speculative-config``, as the release
    the words were written for does; unchanged for any other release, without a
    ``--speculative-model``, beside an explicit ``--speculative-config``, or where a
    number is only known at run time (the options then stay and are left out as another
    release's words)."""
    if not had_them(written_for):
        return tokens, []
    names = [w.partition("=")[0] for w, _ in tokens]
    if "--speculative-model" not in names or "--speculative-config" in names:
        return tokens, []
    config: dict[str, Any] = {}
    kept: list[tuple[str, str]] = []
    origin = ""
    i = 0
    while i < len(tokens):
        word, where = tokens[i]
        name, eq, inline = word.partition("=")
        key = _LEGACY.get(name)
        if key is None:
            kept.append(tokens[i])
            i += 1
            continue
        if eq:
            value, i = inline, i + 1
        elif i + 1 < len(tokens) and not tokens[i + 1][0].startswith("-"):
            value, i = tokens[i + 1][0], i + 2
        else:
            return tokens, []  # a missing value: that release's parser says what it says
        if key in _INTEGER_KEYS:
            if not value.isdigit():
                return tokens, []
            config[key] = int(value)
        else:
            config[key] = value
        if key == "model":
            origin = where
    folded = json.dumps(config)
    note = ArgNote(
        "legacy-speculative",
        f"{written_for}'s separate speculative options make the speculative config "
        f"{folded} (vLLM 0.8's EngineArgs.create_speculative_config folds them so)",
        "--speculative-model",
    )
    return [*kept, ("--speculative-config", origin), (folded, origin)], [note]


def demo_server(version: str, written_for: str | None, source: str) -> None:
    """``python -m vllm.entrypoints.api_server``, vLLM's demo server: its engine arguments
    are read as the API server's, but releases after ``versions.DEMO_API_SERVER_LAST`` no
    longer ship the module (python exits "No module named ..."): bad input for the release
    the words are read with, or the one they were written for when it names a number."""
    said = version if written_for is None else written_for.removeprefix("vLLM ")
    if versions.at_or_before(said, versions.DEMO_API_SERVER_LAST) is False:
        raise InputError(
            f"vLLM {said} has no vllm.entrypoints.api_server, the demo API server (its last "
            f"release is {versions.DEMO_API_SERVER_LAST}): python exits with 'No module named "
            "vllm.entrypoints.api_server' and no server starts",
            source=source,
            key="-m vllm.entrypoints.api_server",
            hint="start the OpenAI-compatible server with the same arguments: "
            "python -m vllm.entrypoints.openai.api_server ARGS",
        )
