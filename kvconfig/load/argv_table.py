"""vLLM's ``vllm serve`` option table (the release's ``argv.json``), and engine keyword
arguments written back as the serve words that set them."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from kvconfig.mirror import versions

#: One option string: its destination, how many values it takes ("0", "1", "?", "+")
#: and, for flags, the value it stores; for valued options "store" or "append"; for
#: "?" the value stored when none follows.
OptionSpec = tuple[str, str, Any]


@functools.cache
def options(version: str) -> Mapping[str, OptionSpec]:
    """Every option string of ``vllm serve`` in ``version``, hidden ``--no-`` forms too
    (the release's ``argv.json``)."""
    path = versions.folder(versions.check(version)) / "argv.json"
    with path.open(encoding="utf-8") as f:
        rows = json.load(f)["options"]
    return {k: (str(v[0]), str(v[1]), v[2]) for k, v in rows.items()}


def third_is_not_append(table: Mapping[str, OptionSpec], name: str) -> bool:
    """Whether repeating option ``name`` replaces its value (not an appending option)."""
    spec = table.get(name)
    return spec is None or spec[2] != "append"


def argv_from_kwargs(kwargs: Mapping[str, Any], version: str = versions.DEFAULT) -> list[str]:
    """Engine keyword arguments (``engine_kwargs``) as the serve words that set them.

    True and False become the flag that stores them, None is left out (the default),
    mappings become JSON, lists one word per item for ``nargs='+'`` options.
    """
    table = options(version)
    out: list[str] = []
    for raw_key, value in kwargs.items():
        option = "--" + str(raw_key).replace("_", "-")
        spec = table.get(option)
        if value is None:
            continue
        if isinstance(value, bool) and spec is not None and spec[1] == "0":
            if spec[2] is value:
                out.append(option)
                continue
            dest = spec[0]
            flip = next(
                (o for o, s in table.items() if s[0] == dest and s[1] == "0" and s[2] is value),
                None,
            )
            if flip is not None:
                out.append(flip)
            continue
        if isinstance(value, (dict, list)) and not (
            isinstance(value, list) and spec is not None and spec[1] == "+"
        ):
            out += [option, json.dumps(value)]
        elif isinstance(value, list):
            out += [option, *(_word(v) for v in value)]
        else:
            out += [option, _word(value)]
    return out


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def names_vllm_options(data: Any) -> bool:
    """Whether a YAML document that is no operator file is a native kvconfig file (a
    ``kvconfig`` key) or a ``vllm serve --config`` file: a mapping with a key that is one
    of vLLM's options (in any release kvconfig knows)."""
    if not isinstance(data, dict) or not data:
        return False
    if "kvconfig" in data:
        return True
    names = {"--" + str(k).partition(".")[0].replace("_", "-") for k in data}
    return any(n in options(v) for v in versions.KNOWN for n in names)


NEVER_AN_OPTION = re.compile(r"^--.*[A-Z]")
"""A long option with a capital letter: vLLM's long options are the snake_case fields of
its engine and frontend argument dataclasses, written with dashes (``EngineArgs.
add_cli_args``), in every release, so no release took one (``--maxModelLen``)."""


def other_release(name: str, version: str, written_for: str, value: str) -> str:
    """An ``other-release`` note: an option (``value``: what follows its name) that
    ``version``'s table refuses, in words written for another release."""
    return (
        f"{name}{value}: kvconfig reads {written_for}'s arguments with vLLM {version}'s "
        f"option table, which refuses it; kvconfig cannot tell what {written_for} does with "
        "it and leaves it out (check the plan with that release: --engine vllm)"
    )
