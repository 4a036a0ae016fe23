"""A launch script (``#!/bin/bash`` ... ``vllm serve ... &``): the servers it starts.

vLLM's own P/D examples and many operators start their engines from a shell script
rather than a manifest. The script is read by the one shell evaluator
(``kvconfig.load.shell``) as bash (or dash, for a ``sh`` shebang) runs it, in the
environment the user passes (``--env``; a variable neither passed nor set by the script
is unset, as in a clean shell). Every server started in the background, or in a loop,
runs (``kvconfig.load.shell.servers``); servers that run one after the other, or
alternatives that differ in more than some words, are refused as for a container's
script. A script names no role, so an engine's role is the one its
``--kv-transfer-config`` says: ``kv_producer`` is the prefill engine and ``kv_consumer``
the decode engine of a pair (vLLM's ``KVTransferConfig.is_kv_producer`` /
``is_kv_consumer``); ``kv_both`` names none. A ``docker run`` of a vLLM image starts the
image's ``vllm serve`` with the words after the image (``kvconfig.load.docker_run``), in
the environment its ``-e`` options give.

A script that runs NVIDIA Dynamo's ``python -m dynamo.vllm`` workers is read as Dynamo's
launcher reads each command line (``kvconfig.load.dynamo_args.split_args``): its own
options (``--connector``, ``--is-prefill-worker``, ``--disaggregation-mode``) are taken
out, the role is the one they give, and every worker of the script runs the one
``dynamo.vllm`` installed, so the launcher defaults one worker's ``--connector`` shows
hold for all of them (``one_launcher``); with prefill workers, the others are the decode
workers (``decode_workers``, Dynamo's ``main.py``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from kvconfig.errors import InputError, NoEngine
from kvconfig.load.docker_cli import container_of
from kvconfig.load.docker_run import is_vllm_start, vllm_command
from kvconfig.load.engine_fields import check_words, image_version
from kvconfig.load.operator_engine import Engine, Note
from kvconfig.load.shell.state import Command

_SHEBANG = re.compile(
    r"\A(?:[ \t]*\r?\n)*#![ \t]*(?:/\S*/)?(?:env[ \t]+(?:-\S+[ \t]+)*)?(bash|sh|dash)\b"
)
"""A ``#!`` line naming a shell, first in the file or after blank lines only: there the
kernel does not honour it (``execve`` fails with ENOEXEC), so the shell that starts the
file runs it itself (POSIX ``sh`` "Command Search and Execution"; bash's
``execute_cmd.c`` runs it in a subshell), and ``bash FILE`` reads the line as a
comment: the file is the script the line names, whose shell is the one it names."""

_ROLES = {"kv_producer": "prefill", "kv_consumer": "decode"}
"""The role of a pair that a ``kv_role`` names."""


_SUFFIXES = (".sh", ".bash")
"""The names of shell scripts that carry no ``#!`` line."""


def script_dialect(text: str, name: str = "") -> str | None:
    """``bash`` or ``sh`` when ``text`` is a shell script, else None: its ``#!`` line
    names the shell; without one, a file ``name``d ``.sh`` or ``.bash`` is a script that
    bash runs (bash's manual, "Shell Scripts": ``bash FILE``, and a file without ``#!``
    started from bash, which runs it in a copy of itself)."""
    m = _SHEBANG.match(text)
    if m is None:
        return "bash" if name.endswith(_SUFFIXES) and not text.startswith("#!") else None
    return "bash" if m.group(1) == "bash" else "sh"


def _detached(cmd: Command) -> Command:
    """``docker run -d``: the container runs on in the background and the command returns
    once it is started (docker run's reference, ``--detach``), as ``&`` does."""
    if cmd.background:
        return cmd
    container = container_of(cmd.words)
    return replace(cmd, background=True) if container and container.detached else cmd


_ROUNDS = (
    "this vLLM command runs in each round of a loop, and how many rounds run is only known "
    "at run time: %s"
)


def engines(
    text: str,
    source: str,
    base: Path,
    env: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> list[Engine]:
    """One engine per vLLM server the script starts; ``path``: the script's file (its
    ``$0``, and what ``source`` and ``readlink -f`` see: ``kvconfig.load.shell.files``),
    None for a script read from standard input."""
    from kvconfig.load.shell import servers
    from kvconfig.load.shell.script import commands

    dialect = script_dialect(text, source) or "sh"
    label = Path(source).name or "script"
    cmds = commands(
        text, dict(env or {}), source=source, line=1, key=label, dialect=dialect,
        path=None if path is None else os.path.abspath(path),
    )  # fmt: skip
    cmds = [_detached(c) for c in cmds]
    chosen, problem = servers(cmds, is_vllm_start)
    if problem:
        raise InputError(
            f"{problem}; kvconfig cannot tell which one runs",
            source=source,
            line=chosen[1].line,
            key=label,
            hint="start each vLLM server in the background (&), or keep one command",
        )
    if not chosen:
        raise NoEngine(
            "no vLLM server found: the script starts no 'vllm serve'",
            source=source,
            line=1,
            hint="kvconfig reads a script that starts 'vllm serve', "
            "'python -m vllm.entrypoints.openai.api_server' or a vLLM image (docker run)",
        )
    out = []
    for k, found in enumerate(chosen):
        start, container, cmd = vllm_command(found, source)
        entry, parser, argv = start
        name = label if len(chosen) == 1 else f"{label}#{k + 1}"
        check_words(argv, source, cmd.line, name)
        offset = len(cmd.words) - len(argv)
        notes = tuple(
            Note(
                "unknown-value",
                f"{what} in argument {i - offset + 1} is only known at run time",
                cmd.line,
            )
            for i, what in cmd.unknown
            if i >= offset
        )
        if cmd.rounds:  # started in each round of a loop: how many start is unknown
            notes = (*notes, Note("run-time-rounds", _ROUNDS % cmd.rounds, cmd.line, cmd.rounds))
        run_env = dict(cmd.env) if container is None else container.env
        version, vnotes = image_version(container.image if container else None, cmd.line)
        role: str | None = None
        defaults: dict[str, object] = {}
        if entry == "dynamo.vllm":
            from kvconfig.load import dynamo_args

            split = dynamo_args.split_args(argv, cmd.line, source)
            argv, role, defaults = split.argv, split.role, split.defaults
            notes = (*notes, *split.notes)
        engine = Engine(
            name=name,
            source=source,
            line=cmd.line,
            argv=tuple(argv),
            entry=entry if container is None or container.entrypoint else "image entry point",
            parser=parser,
            role=role,
            defaults=defaults,
            env={k: v for k, v in run_env.items() if v is not None},
            env_unknown=tuple(sorted(k for k, v in run_env.items() if v is None)),
            vllm_version=version,
            image=container.image if container else None,
            parallelism={} if cmd.rounds else {"replicas": 1},
            base=str(base),
            notes=notes + tuple(vnotes),
        )
        out.append(with_kv_role(engine))
    from kvconfig.load.dynamo_args import decode_workers, one_launcher

    return decode_workers(one_launcher(out))


def with_kv_role(engine: Engine) -> Engine:
    """``engine`` with the role its ``--kv-transfer-config`` names when nothing else names
    one: vLLM makes a ``kv_producer`` the prefill side of a pair and a ``kv_consumer`` the
    decode side (``vllm/config/kv_transfer.py``: ``is_kv_producer``, ``is_kv_consumer``);
    ``kv_both``, no connector or a value known only at run time name none."""
    from kvconfig.load.reading import reading_of

    if engine.role is not None:
        return engine
    role = _ROLES.get(reading_of(engine).kv_role or "")
    return replace(engine, role=role) if role else engine
