"""A ``vllm serve`` command line as ``Options``, read by vLLM's own argument rules.

A pasted command (``[VAR=x ...] vllm serve MODEL --opt value ...``, or any entry point
``kvconfig.load.engines.server_start`` recognises: ``python -m
vllm.entrypoints.openai.api_server``, ``python -m dynamo.vllm``, ...) and the arguments
of an operator file's engine go through ``kvconfig.load.argv.parse_serve_args``: the
last occurrence wins, dotted keys replace the whole option, ``--config FILE`` is read
relative to the folder vLLM starts in, ``--config=FILE`` is ignored as vLLM ignores it.
What vLLM does that the text hides becomes a ``Notice`` (a finding of the plan).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from kvconfig.codes import FindingCode
from kvconfig.errors import InputError
from kvconfig.load.serve import Notice, Options

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

#: The notes of ``kvconfig.load.argv`` that become findings, by kind.
NOTE_CODES = {
    "config-equals-ignored": FindingCode.CONFIG_EQUALS_IGNORED,
    "dotted-replaces": FindingCode.DOTTED_REPLACES,
    "config-value-dropped": FindingCode.CONFIG_VALUE_DROPPED,
}


class Command(NamedTuple):
    """A pasted command, taken apart."""

    env: dict[str, str]
    """The ``VAR=x`` words before it (and after ``env``)."""
    entry: str
    """How vLLM is started (``kvconfig.load.engines.Engine.entry``)."""
    parser: str
    """``serve`` or ``api_server`` (``kvconfig.load.argv.parse_serve_args``'s ``entry``)."""
    argv: tuple[str, ...]
    """The words vLLM's parser receives, the model included."""
    defaults: Mapping[str, Any]
    """Options the launcher sets when the words leave them unset (``dynamo.vllm``)."""


def split_command(words: Sequence[str], source: str = "<command>") -> Command:
    """The environment prefix, the entry point and vLLM's words of a pasted command."""
    tokens = list(words)
    if len(tokens) == 1 and " " in tokens[0]:
        try:
            tokens = shlex.split(tokens[0])
        except ValueError as err:
            raise InputError(
                f"cannot split the command: {err}",
                source=source,
                hint="check the quotes in the pasted command",
            ) from None
    env: dict[str, str] = {}
    while tokens and _ENV_ASSIGN.match(tokens[0]):
        name, _, value = tokens.pop(0).partition("=")
        env[name] = value
    if tokens[:1] == ["env"]:
        tokens.pop(0)
        while tokens and _ENV_ASSIGN.match(tokens[0]):
            name, _, value = tokens.pop(0).partition("=")
            env[name] = value
    from kvconfig.load.operator_engine import server_start

    started = server_start(tokens)
    if started is None:
        raise InputError(
            "expected a 'vllm serve ...' command",
            source=source,
            hint="paste it after '--': kvconfig lint --platform h200 -- vllm serve MODEL ...",
        )
    entry, parser, argv = started
    defaults: Mapping[str, Any] = {}
    if entry == "dynamo.vllm":
        from kvconfig.load import dynamo_args

        split = dynamo_args.split_args(argv)
        argv, defaults = split.argv, split.defaults
    return Command(env, entry, parser, tuple(argv), defaults)


def options_from_command(argv: Sequence[str], version: str, cwd: Path) -> Options:
    """Options from a pasted ``[VAR=value ...] vllm serve MODEL --opt value ...`` command;
    vLLM starts in ``cwd``."""
    cmd = split_command(argv)
    return options_from_argv(
        cmd.argv,
        version=version,
        parser=cmd.parser,
        base=cwd,
        source="<command>",
        env=cmd.env,
        defaults=cmd.defaults,
    )


def options_from_argv(
    argv: Sequence[str],
    *,
    version: str,
    parser: str = "serve",
    base: Path,
    source: str,
    line: int | None = None,
    env: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
    read_config: Callable[[str], Any] | None = None,
) -> Options:
    """Options from the words vLLM's parser receives (after ``vllm serve``): the value
    argparse stores for each destination, the launcher's ``defaults`` for those left
    unset; every option is located at ``line``. ``read_config`` returns a ``--config``
    file's data (default: the YAML file)."""
    from kvconfig.load.argv import parse_serve_args

    args = parse_serve_args(
        argv, version=version, entry=parser, base=base, source=source, read_config=read_config
    )
    opts = Options(source, base, env=dict(env or {}))
    for key, value in args.values.items():
        opts.values[key] = value
    if args.model is not None:
        opts.values["model"] = args.model
    for key, value in (defaults or {}).items():
        opts.values.setdefault(key, value)
    opts.lines = dict.fromkeys(opts.values, line)
    for note in args.notes:
        code = NOTE_CODES.get(note.kind)
        if code is not None:
            opts.notices.append(Notice(code, note.message))
    return opts
