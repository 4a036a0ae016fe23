"""A script run without running anything: what bash or dash decide from known values.

The evaluator walks the parsed script with the variables kvconfig knows. A condition
whose value it knows (``[ "$PROFILE" = throughput ]`` with ``PROFILE`` in the pod's env)
picks its branch as the shell would; one it cannot know (a Secret, ``$(...)``, a file
test, an external command's status) takes every branch, and what differs between them
(a variable, which command runs) is only known at run time: it stays unknown, never
guessed. Assignments, ``export``/``declare``/``readonly``/``local``, ``set --``,
``shift``, subshells and pipelines (their assignments do not reach the script), functions,
``eval``, ``source`` of a file read here (``files``) or one it wrote (``writes``),
``$(...)`` of the path programs (``paths``), nested ``sh -c``, bash arrays and the
wrappers that run a command
(``exec``, ``timeout``, ``numactl``, ``taskset``, ``nice``, ``stdbuf``, ``tini --``,
``dumb-init``, ``env`` ...) are followed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kvconfig.errors import InputError
from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell.simple import _Shell
from kvconfig.load.shell.state import MAX_SCRIPT_BYTES, Command
from kvconfig.load.shell.traps import survivors
from kvconfig.load.shell.wrappers import shebang

__all__ = ["LOGIN", "MAX_SCRIPT_BYTES", "Command", "Reading", "commands", "read_script"]

LOGIN = ("HOME", "USER", "LOGNAME", "SHELL", "PATH")
"""The variables a user's session on a machine always has, values only known there: POSIX
("Environment Variables": ``HOME``, ``LOGNAME``, ``PATH`` are set at login), and
``login(1)``, ``sshd`` and ``su -`` set ``USER`` and ``SHELL`` as well. A launch script
read here runs in such a session; a container's script gets its image's environment."""


@dataclass(frozen=True, slots=True)
class Reading:
    """What a script runs, and what kvconfig could not see into."""

    commands: tuple[Command, ...]
    """The programs it runs, in order (``when`` says which only may run)."""
    blind: tuple[str, ...]
    """Places where it may run something kvconfig cannot name (an unknown command name,
    ``eval`` of an unknown text, a sourced file kvconfig does not read); empty:
    ``commands`` is complete."""
    unparsed: tuple[InputError, ...] = ()
    """Texts ``eval`` was given that do not parse (bash: ``eval`` fails, the script goes
    on; dash: the script ends there), as the parser words the error."""


def read_script(
    script: str,
    env: Mapping[str, str | None] | None = None,
    args: Sequence[str] = (),
    *,
    unknown_rest: bool = False,
    source: str = "",
    line: int | None = None,
    key: str = "",
    dialect: str = "sh",
    path: str | None = None,
    held: Mapping[str, tuple[str, bool]] | None = None,
) -> Reading:
    """The programs ``script`` runs, in order, their words expanded.

    ``env`` is the environment the script starts with (None: a value kvconfig cannot
    know, e.g. from a Secret). ``args`` are ``$0 $1 ...`` (``sh -c SCRIPT ARG0 ARG1``).
    With ``unknown_rest`` (``envFrom`` is set) a variable not in ``env`` is unknown
    rather than unset. ``line`` is the file line of the script's first line, for error
    messages. ``dialect`` is ``sh`` (dash, the ``/bin/sh`` of Debian and Ubuntu images)
    or ``bash``. ``path`` is the absolute path of a launch script read on this machine
    (``kvconfig.load.shell.files``): it is ``$0``, and the path programs and ``source``
    look at this machine's files under the allowed roots, and the options its ``#!`` line
    gives its shell (``-e``, ``-u``) are in force. Raises InputError for a
    script the shell cannot parse.
    """
    if len(script) > MAX_SCRIPT_BYTES:
        raise InputError(
            f"the script is {len(script)} characters; kvconfig reads at most {MAX_SCRIPT_BYTES}",
            source=source,
            line=line,
            key=key,
            hint="keep the launch script short, or move it into the image",
        )
    start = [path, *args[1:]] if path is not None else list(args) or ["sh"]
    if path is not None:  # a user's shell on this machine: its login set these
        env = {**dict.fromkeys(LOGIN), **(env or {})}
    shell = _Shell(env or {}, start, unknown_rest, source, line, key, dialect)
    shell.held = held or {}
    if path is not None:
        shell.start_file(path)
        shell.take_options(shebang(script)[1:])  # the kernel starts the file with them
    tree = shell.parsed(script)
    with contextlib.suppress(_Stop, _Jump):
        shell.run_node(tree)
    ran = shell.commands
    if shell.exit_kills is not False:  # its EXIT trap ends the servers nothing waits for
        ran = survivors(ran, shell.waited, None if shell.exit_kills else shell.exit_why)
    return Reading(tuple(ran), tuple(shell.blind), tuple(shell.unparsed))


def commands(
    script: str,
    env: Mapping[str, str | None] | None = None,
    args: Sequence[str] = (),
    *,
    unknown_rest: bool = False,
    source: str = "",
    line: int | None = None,
    key: str = "",
    dialect: str = "sh",
    path: str | None = None,
    held: Mapping[str, tuple[str, bool]] | None = None,
) -> list[Command]:
    """The programs ``script`` runs (``read_script(...).commands``)."""
    reading = read_script(
        script, env, args, unknown_rest=unknown_rest, source=source, line=line, key=key,
        dialect=dialect, path=path, held=held,
    )  # fmt: skip
    return list(reading.commands)
