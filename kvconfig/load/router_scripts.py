"""The KV-aware routers that shell scripts start: a launch script's commands, and a
container's ``sh -c SCRIPT`` (a Dynamo v1beta1 frontend's ``bash -lc``), each read by the
one shell reader with the environment its command runs in; the routers' rules are
``kvconfig.load.routers``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load.router_rules import Router, frontend, standalone


def _module(words: list[str]) -> str | None:
    """The module ``python -m MODULE`` runs, else None."""
    import os
    import re

    if not words or not re.match(r"^python(\d+(\.\d+)?)?$", os.path.basename(words[0])):
        return None
    for i, w in enumerate(words[1:-1], start=1):
        if w == "-m":
            return words[i + 1]
        if not w.startswith("-"):
            return None
    return None


def script_routers(
    text: str, source: str, env: Mapping[str, str] | None = None, path: str | None = None
) -> list[Router]:
    """The Dynamo frontends and standalone routers a launch script starts, each read with
    the environment its command runs in (a variable only known at run time keeps its
    ``$NAME``: neither mode nor block size is guessed)."""
    from pathlib import Path

    from kvconfig.load.script_file import script_dialect
    from kvconfig.load.shell.script import commands

    label = Path(source).name or "script"
    dialect = script_dialect(text, source) or "sh"
    cmds = commands(
        text, dict(env or {}), source=source, line=1, key=label, dialect=dialect, path=path
    )
    return started(label, cmds)


def in_shell(name: str, words: list[str], cenv: Any) -> list[Router]:
    """The routers a container's ``sh -c SCRIPT`` starts (the one ``sh -c`` detector,
    ``kvconfig.load.shell.wrappers.shell_script``), the script run with the container's
    env (a variable the cluster sets only known at run time)."""
    from kvconfig.load.shell.script import commands
    from kvconfig.load.shell.wrappers import shell_script

    found = shell_script(words)
    if found is None:
        return []
    at, dialect = found
    try:
        cmds = commands(
            words[at], cenv.shell_env(), source=name, line=None, key=name, dialect=dialect,
            args=words[at + 1 :],
        )  # fmt: skip
    except InputError:
        return []  # a script the shell refuses starts nothing (the engine reader says so)
    return started(name, cmds)


def started(label: str, cmds: Sequence[Any]) -> list[Router]:
    """The Dynamo frontends and standalone routers among a script's commands."""
    out: list[Router] = []
    for cmd in cmds:
        words = list(cmd.words)
        module = _module(words)
        known = {k: v if v is not None else f"${k}" for k, v in cmd.env.items()}
        found = None
        if module in ("dynamo.router", "dynamo.prefill_router"):
            found = standalone(label, words, known)
        elif module == "dynamo.frontend":
            found = frontend(f"{label}/dynamo.frontend", words, known)
        if found is not None:
            out.append(found)
    return out
