"""Child shells: ``sh -c SCRIPT`` and ``bash FILE`` run by a new shell, and a script the
container holds run by its path (``./start.sh``); the programs a child runs are the
script's (``adopt``).
"""

from __future__ import annotations

import contextlib
import os
from typing import Self

from kvconfig.errors import InputError
from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell.dbracket import _Tests
from kvconfig.load.shell.state import MAX_EVAL_DEPTH, Command
from kvconfig.load.shell.words import HOLE
from kvconfig.load.shell.wrappers import dialect_of, shebang, unknown_to_dash


class _Children(_Tests):
    last_child: Self
    """The shell that ran the last ``bash FILE`` or ``./FILE`` (``run_file``, ``run_held``)."""

    def run_file(
        self,
        words: list[str],
        at: int,
        unknown: list[tuple[int, str]],
        local: dict[str, str | None],
        line: int | None,
    ) -> bool:
        """``bash FILE ARGS``: a new shell reads FILE with ``$0`` its path and the
        arguments after it (``last_child``); False, and why kept, when kvconfig does not
        read the file."""
        known = all(i > at for i, _ in unknown)
        found = self.child_script(words[0], words[at], known)
        if isinstance(found, str):
            self.blind.append(found)
            return False
        path, text = found
        args = None if unknown else [str(path), *words[at + 1 :]]
        sub = self.child(words[0], args, local, line, words[:at])
        if self.held_file(words[at]) is None and self.written_file(words[at], not known) is None:
            # a file of this machine, bind-mounted or not
            sub.start_file(str(path))
        return self.run_child(sub, str(path), text, f"the script {words[at]} run by {words[0]}")

    def run_script(
        self,
        words: list[str],
        script: str | None,
        args: list[str] | None,
        local: dict[str, str | None],
        line: int | None,
    ) -> Self:
        """``sh -c SCRIPT ARGS`` (``words`` up to SCRIPT): the new shell that runs
        ``script``, the text of SCRIPT (for one partly known at run time, its known text
        around those parts, read as ``eval`` reads it; None: nothing known) with ``args``
        as ``$0 $1 ...`` (None: only known at run time)."""
        sub = self.child(words[0], args, local, line, words[:-1])
        if script is None or not HOLE.sub("", script).strip():
            self.last_unknown = "the script"
            self.blind.append(f"the script of {words[0]} -c")
            return sub
        if sub.depth > MAX_EVAL_DEPTH:
            self.blind.append(f"{words[0]} -c nested too deep")
            return sub
        try:
            tree = sub.parsed(script)
        except InputError:
            if "\ue000" not in script:
                raise  # as written: the shell refuses it
            self.blind.append(f"the script of {words[0]} -c, parsed with its run-time parts")
            return sub
        with contextlib.suppress(_Stop):
            sub.run_node(tree)
        return sub

    def run_held(
        self,
        words: list[str],
        unknown: list[tuple[int, str]],
        local: dict[str, str | None],
        line: int | None,
    ) -> bool:
        """``./start.sh ARGS``: a shell script the container holds (``held``), or a file of
        this machine that may run (``host_program``), run by its path. Its ``#!`` line
        names the shell; without one the shell running this command reads it (bash and
        dash run a file the kernel cannot execute, ENOEXEC, as a script of their own).
        False when the input does not hold it, it is not executable (the shell's status
        126) or its ``#!`` names another program."""
        held = self.held_file(words[0])
        here = self.host_program(words[0]) if held is None and not unknown else None
        held = held or here
        if held is None or not held[2]:
            return False
        path, text, _ = held
        shell = "bash" if self.dialect == "bash" else "sh"
        options = [shell]
        if text.startswith("#!"):
            options = shebang(text)
            if not options:
                return False
            shell = options[0]
        args = None if unknown else [words[0], *words[1:]]
        sub = self.child(shell, args, local, line, options)
        if here is not None:  # a file of this machine: its $0 and BASH_SOURCE are its path
            sub.start_file(path)
        return self.run_child(sub, path, text, f"the script {words[0]}")

    def run_child(self, sub: Self, path: str, text: str, what: str) -> bool:
        """Run ``text``, the file at ``path``, in the new shell ``sub`` (``last_child``);
        False, and why kept, when it does not parse."""
        sub.source, sub.key = path, os.path.basename(path)
        try:
            tree = sub.parsed(text)
        except InputError as e:
            self.blind.append(f"{what} ({e})")
            return False
        with contextlib.suppress(_Stop, _Jump):
            sub.run_node(tree)
        self.last_child = sub
        return True

    def child(
        self,
        shell: str,
        args: list[str] | None,
        local: dict[str, str | None],
        line: int | None,
        options: list[str],
    ) -> Self:
        """A new shell (``sh -c``, ``bash FILE``) started by this one: the exported
        environment and the command's own assignments, ``args`` as ``$0 $1 ...`` (None:
        only known at run time), its ``options`` (the shell first) as it reads them."""
        env = self.exported_env()
        env.update(local)
        dialect = dialect_of(shell)
        sub = type(self)(env, args, self.unknown_rest, self.source, line, self.key, dialect)
        sub.may_set = list(self.may_set)
        sub.depth = self.depth + 1
        sub.host, sub.held, sub.mounts = self.host, self.held, self.mounts
        sub.written, sub.machine = self.files(), self.machine
        sub.start_in(self.state.cwd)
        sub.steps = self.steps
        sub.state.when = self.state.when
        if dialect == "sh":
            sub.state.when = (*sub.state.when, *unknown_to_dash(options))
        sub.state.branch = self.state.branch
        sub.choices = self.choices
        sub.take_options(options[1:])  # bash -e FILE, sh -ec: as set takes them
        return sub

    def adopt(self, sub: Self, background: bool, replaces: bool, line: int | None = None) -> None:
        """The programs a child shell ran, as this script's (at ``line``, the command that
        started it, when its lines are another file's)."""
        self.choices = sub.choices
        self.steps = sub.steps
        self.blind.extend(sub.blind)
        self.unparsed.extend(sub.unparsed)
        self.commands.extend(
            Command(c.words, c.env, c.unknown, c.line if line is None else line,
                    background or c.background, c.when, c.branch, replaces and c.replaces,
                    c.rounds or self.rounds)
            for c in sub.commands
        )  # fmt: skip
        if replaces:
            raise _Stop
