"""What a launch script reads from the machine it runs on: ``$(...)`` of the path programs
(``kvconfig.load.shell.paths``) and the files it reads with ``source`` or ``.``.

A launch script read here (``host``) runs beside its repository: its ``$0`` is its own
path, as when it is started by its full path (bash's manual, "Invoking Bash": ``$0`` is
the name of the file of commands), so ``$(dirname "$(readlink -f "$0")")`` is its folder, and so is
``$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)`` (bash's ``BASH_SOURCE``: the script, a
sourced file as named, the file that defined the running function).
A container's ``sh -c`` script runs on a filesystem kvconfig does not see: there ``$0``
is the word after the script (``sh -c SCRIPT NAME``) and nothing is read.

``source FILE`` / ``. FILE`` runs FILE's commands in the current shell (bash's manual,
"Bourne Shell Builtins"; POSIX ``dot``): the functions and variables it sets stay, its
``exit`` ends the script, its ``return`` ends the file. kvconfig does the same when FILE
is known here: an absolute name, or one with a slash taken from the current folder when
kvconfig knows it (``kvconfig.load.shell.dirs``: after ``cd "$(dirname "$0")"``; the
folder the script is started from only the caller knows; a name without a slash is
searched on ``$PATH`` first, bash's ``sourcepath``, POSIX), a regular file under the allowed roots
(``kvconfig.load.roots``), at most ``MAX_SCRIPT_BYTES`` long, nested at most
``MAX_EVAL_DEPTH`` deep, that parses. Any other file may set any variable: it stays
opaque, and the reason is kept (``blind``).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from kvconfig.errors import InputError
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.roots import inside
from kvconfig.load.shell import nodes as N
from kvconfig.load.shell.dirs import cd_pwd, quiet_cd
from kvconfig.load.shell.env_scripts import EnvScript, env_script
from kvconfig.load.shell.paths import PROGRAMS, output
from kvconfig.load.shell.state import MAX_EVAL_DEPTH, MAX_SCRIPT_BYTES
from kvconfig.load.shell.words import HOLE, _Part, _source_form, _Word, hole_names
from kvconfig.load.shell.writes import _Writes
from kvconfig.load.yamlfile import decode, read_bytes

_REDIRECT = re.compile(r"[<>]")
_HARMLESS = re.compile(r"[ \t]2>(?:/dev/null|&1)(?=[ \t]|$)")
"""Redirections that leave a path program's output as it is (its errors only)."""
_CAT_HERE = re.compile(r"\s*cat[ \t]+<<")
"""``$(cat <<EOF ...)``, ``$(cat <<< TEXT)``: its input is the script's own text
(``kvconfig.load.shell.output``)."""
_PYTHON = re.compile(r"\s*(?:[A-Za-z_]\w*=\S*[ \t]+)*(?:\S*/)?python[0-9.]*[ \t]")
"""``$(python3 - <<'PY' ...)``, ``$(python3 -c '...')``: the program's text may hold ``<``
and ``>``; its own redirections are the command's (``kvconfig.load.shell.pyprint``)."""


class _Files(_Writes):
    sourcing = 0
    """How many ``source`` files are being read now (``return`` ends the innermost)."""
    defined_in: dict[int, str] | None = None
    """The sourced file each function was defined in (by its body), for ``BASH_SOURCE``."""
    substituting = 0
    """How deep the ``$(...)`` being computed now are nested (at most ``MAX_EVAL_DEPTH``)."""
    subst_status: int | None = None
    """The status of the last ``$(...)``: 0 when kvconfig computed it from a program it
    models (``kvconfig.load.shell.paths``), else only known at run time."""
    elsewhere = 0
    """How many functions of a sourced file are running now (their lines are that file's)."""
    mounts: tuple[tuple[str, str], ...] = ()
    """Folders of this machine the container running the commands sees, and where
    (``docker run -v``, ``kvconfig.load.shell.remote``)."""

    def held_file(self, name: str) -> tuple[str, str, bool] | None:
        """(path, text, executable) of the file ``name`` names in the container, when the
        input holds it or the script wrote it (``kvconfig.load.shell.writes``); None when
        it does not, or the name is only known at run time."""
        written = self.written_file(name)
        if written is not None:
            return None if isinstance(written, str) else written
        if self.host or not self.held:
            return None
        here = self.path_here(name)
        if here is None or "\0" in here:
            return None
        path = posixpath.normpath(here)
        found = self.held.get(path)
        return None if found is None else (path, *found)

    def mounted(self, name: str) -> str | None:
        """The file of this machine a container sees at ``name`` through a bind mount."""
        for source, target in sorted(self.mounts, key=lambda m: -len(m[1])):
            inside_ = target.rstrip("/")
            if name == inside_ or name.startswith(inside_ + "/"):
                return source.rstrip("/") + name[len(inside_) :]
        return None

    def start_file(self, path: str) -> None:
        """Read the script as the launch script at ``path`` (absolute), on this machine:
        ``$0`` is ``path``, and bash's ``BASH_SOURCE`` (the files of the commands running
        now, innermost first: the script, a sourced file as its name was given, the file
        that defined a function) starts with it."""
        self.host = True
        self.defined_in = {}
        if self.dialect == "bash":
            self.state.arrays["BASH_SOURCE"] = [path]

    def call(self, name: str, args: list[str], local: dict[str, str | None]) -> int | None:
        file = (self.defined_in or {}).get(id(self.state.functions[name]))
        stack = self.state.arrays.get("BASH_SOURCE") if self.host else None
        if stack:
            self.state.arrays["BASH_SOURCE"] = [file or stack[-1], *stack]
        self.elsewhere += file is not None
        try:
            return super().call(name, args, local)
        finally:
            self.elsewhere -= file is not None
            if stack:
                self.state.arrays["BASH_SOURCE"] = stack

    def at(self, line: int) -> int | None:
        """A line of the script; None inside a sourced file or one of its functions (their
        lines are not the script's)."""
        return None if self.sourcing or self.elsewhere else super().at(line)

    def reason(self, line: int, what: str) -> str:
        if not self.sourcing:
            return super().reason(line, what)
        why = self.last_unknown or "a command's status"
        return f"{what} on line {line} of {self.source} ({why} only known at run time)"

    def part_value(
        self, part: _Part, tilde: bool, assignment: bool = False
    ) -> tuple[str | None, str]:
        if part.kind == "cmd":
            value = self.substitution(part.text)
            if value is not None and HOLE.search(value):  # output with run-time parts
                return None, hole_names(value)[0]
            return (None, _source_form(part)) if value is None else (value, "")
        return super().part_value(part, tilde, assignment)

    def part_template(self, part: _Part, tilde: bool) -> str:
        if part.kind == "cmd":  # its known output around run-time parts
            value = self.substitution(part.text)
            if value is not None:
                return value
        return super().part_template(part, tilde)

    def substitution(self, text: str) -> str | None:
        """The output of ``$(text)`` when it runs one path program on known words (in a
        subshell: nothing it expands reaches the script), its trailing newlines removed
        as the shell removes them; None otherwise."""
        self.subst_status = None
        if self.substituting >= MAX_EVAL_DEPTH:
            return None
        self.substituting += 1
        try:
            return self.substituted(text)
        finally:
            self.substituting -= 1

    def substituted(self, text: str) -> str | None:
        try:
            node: N.Node = self.parsed(text)
        except InputError:
            return None
        while isinstance(node, N.Sequence) and len(node.items) == 1 and not node.items[0][1]:
            node = node.items[0][0]
        redirects = _REDIRECT.search(_HARMLESS.sub(" ", text)) and not (
            _CAT_HERE.match(text) or _PYTHON.match(text)
        )
        if redirects and not quiet_cd(node):
            return None
        return self.output_of(node)

    def output_of(self, node: N.Node) -> str | None:
        """What ``$(...)`` of ``node`` prints, when kvconfig computes it."""
        pair = cd_pwd(node)
        if pair is not None:
            cd, pwd = self.program_words(pair[0]), self.program_words(pair[1])
            if cd is None or pwd is None or cd[0] != "cd" or pwd[0] != "pwd":
                return None
            saved = self.state  # $(cd DIR && pwd): a subshell
            self.state = saved.copy()
            try:
                went = self.change_dir(cd[1:], True, sure=True)
                return self.print_dir(pwd[1:]) if went == 0 else None
            finally:
                self.state = saved
        words = self.program_words(node)
        if words is not None and words[0] == "pwd":
            return self.print_dir(words[1:])
        if words is None or words[0] not in PROGRAMS:
            return None
        printed = output(words, self.host, self.state.cwd)
        if printed is None:
            return None
        self.subst_status = 0  # a program kvconfig models prints only when it succeeds
        return printed.rstrip("\n")

    def program_words(self, node: N.Node, functions: bool = False) -> list[str] | None:
        """The words of a simple command that runs a program (no assignment before it, no
        function of that name unless ``functions``), expanded on a copy of the state (a
        subshell), or None."""
        if not isinstance(node, N.Simple) or node.opaque or not node.words:
            return None
        first = node.words[0].parts[0] if node.words[0].parts else None
        if first is None or (first.kind == "lit" and re.match(r"[A-Za-z_]\w*\+?=", first.text)):
            return None

        def known(w: _Word) -> list[str] | None:
            fields, unknown = self.expand_word(w)
            return None if unknown else fields

        words = self.in_a_subshell(node.words, known)
        if not words or (words[0] in self.state.functions and not functions):
            return None
        return words

    def in_a_subshell(
        self, words: Sequence[_Word], expand: Callable[[_Word], list[str] | None]
    ) -> list[str] | None:
        """``expand`` of each of ``words`` in turn, on a copy of the state (a subshell's
        expansions leave the script alone): their texts, or None when one gives None or
        stops the shell."""
        saved = self.state
        self.state = saved.copy()
        out: list[str] = []
        try:
            for w in words:
                got = expand(w)
                if got is None:
                    return None
                out.extend(got)
        except _Stop:
            return None
        finally:
            self.state = saved
        return out

    def source_file(self, head: str, words: list[str], known: bool) -> int | None:
        """``source FILE`` / ``. FILE``: its commands run here when kvconfig can read it."""
        target = words[1] if len(words) > 1 else ""
        written = self.written_file(target, late=not known) if len(words) == 2 else None
        if isinstance(written, str):
            return self.unread(head, target, written)
        held = written or (self.held_file(target) if known and len(words) == 2 else None)
        if held is not None:
            path, text = Path(held[0]), held[1]
        else:
            found, why = self.sourced_path(target, words, known)
            if found is None:
                script = env_script(target, len(words) - 2, not known) if target else None
                if script is not None:
                    return self.env_script_sourced(script, target)
                return self.unread(head, target or "?", why)
            path = found
            try:
                text = _script_text(path)
            except InputError as e:
                return self.unread(head, target, f"not read: {e}")
        saved = (self.source, self.line0, self.key)
        self.source, self.line0, self.key = str(path), 1, path.name
        try:
            try:
                tree = self.parsed(text)
            except InputError as e:
                self.source, self.line0, self.key = saved
                return self.unread(head, target, f"it does not parse: {e}")
            self.depth += 1
            self.sourcing += 1
            stack = self.state.arrays.get("BASH_SOURCE")
            before = {id(body) for body in self.state.functions.values()}
            if stack is not None:
                self.state.arrays["BASH_SOURCE"] = [target, *stack]
            try:
                return self.within("function", lambda: self.run_node(tree))
            finally:
                self.depth -= 1
                self.sourcing -= 1
                if stack is not None:
                    self.state.arrays["BASH_SOURCE"] = stack
                for body in self.state.functions.values():
                    if id(body) not in before and self.defined_in is not None:
                        self.defined_in.setdefault(id(body), target)
        finally:
            self.source, self.line0, self.key = saved

    def child_script(self, head: str, name: str, known: bool) -> tuple[Path, str] | str:
        """``bash FILE ARGS`` (or ``sh``, ``dash``): the file a new shell reads its
        commands from and its text, or why kvconfig does not read it. The shell opens FILE
        from its working folder (bash then searches ``$PATH`` for a name not found
        there): kvconfig reads an absolute name, or one taken from a current folder it
        knows (``kvconfig.load.shell.dirs``), found here as ``source`` finds its file."""
        what = f"the script {name} run by {head}"
        written = self.written_file(name, late=not known)
        if isinstance(written, str):
            return f"{what} ({written})"
        held = written or (self.held_file(name) if known else None)
        if held is not None:
            return Path(held[0]), held[1]
        here = self.path_here(name) if known else name
        if here is None:
            return f"{what} (taken from the folder it runs in, only known at run time)"
        name = here
        path, why = self.sourced_path(name, [head, name], known)
        if path is None:
            return f"{what} ({why})"
        try:
            return path, _script_text(path)
        except InputError as e:
            return f"{what} (not read: {e})"

    def host_program(self, name: str) -> tuple[str, str, bool] | None:
        """(path, text, True) of a file of this machine that a launch script read here runs
        by its path (``"$DIR/bench.sh"``, ``./run.sh``): found as ``source`` finds a file,
        and one its owner may run (the kernel refuses any other, status 126); None
        otherwise."""
        if not self.host or "/" not in name:
            return None
        path, _ = self.sourced_path(name, ["exec", name], True)
        if path is None or not os.access(path, os.X_OK):
            return None
        try:
            return str(path), _script_text(path), True
        except InputError:
            return None

    def file_text(self, name: str) -> str | None:
        """The text of a file a program reads (``sed EXPR FILE``), when kvconfig reads it
        as ``source`` would (held by the container, or this machine's under the allowed
        roots); None otherwise."""
        if isinstance(self.written_file(name), str):
            return None
        held = self.held_file(name)
        if held is not None:
            return held[1]
        path, _ = self.sourced_path(name, ["cat", name], True)
        if path is None:
            return None
        try:
            return _script_text(path)
        except InputError:
            return None

    def env_script_sourced(self, script: EnvScript, target: str) -> int | None:
        """A tool's environment script (``kvconfig.load.shell.env_scripts``): only the
        variables it may set are unknown after it, those not set before included."""
        why = f"{target} ({script.what})"
        for name, value in list(self.state.vars.items()):
            if name in self.state.readonly:
                continue
            if script.sets.fullmatch(name):
                self.assign(name, None, why)
            elif script.variants and script.variants.fullmatch(name) and ",," in (value or ""):
                lws = "LWS_LEADER_ADDRESS" in self.state.vars  # the pod's index picks one
                self.assign(name, None if lws else str(value).split(",,")[0], why)
        self.may_set.append(script.sets)
        return script.status

    def unread(self, head: str, target: str, why: str) -> int | None:
        """A file kvconfig does not read: it may set any variable, and it may end the
        script (its ``exit``; dash stops at a ``.`` file it cannot open, POSIX 2.8.1)."""
        what = f"the file {target} read by {head}"
        self.state.when = (*self.state.when, f"{what} not ending the script")
        return self.opaque(f"{what} ({why})")

    def sourced_path(self, target: str, words: list[str], known: bool) -> tuple[Path | None, str]:
        """(the file ``source`` reads, or None and why kvconfig does not read it)."""
        if not known:
            return None, "its name is only known at run time"
        if not self.host:
            target = self.mounted(target) or ""
            if not target:
                return None, "a file of the machine that runs the script, not read here"
        if len(words) != 2:
            return None, "arguments given to the file" if len(words) > 2 else "no file named"
        if "/" not in target:
            return None, "searched on $PATH at run time"
        here = self.path_here(target)
        if here is None:
            return None, "taken from the current folder, only known at run time"
        if self.depth >= MAX_EVAL_DEPTH:
            return None, f"files read by source nested deeper than {MAX_EVAL_DEPTH}"
        path = Path(here) if "\0" not in here else None
        if path is None or not inside(path):
            return None, "outside the repository: kvconfig reads only under the allowed roots"
        try:
            if not path.is_file():
                return None, "no such file here"
            if path.stat().st_size > MAX_SCRIPT_BYTES:
                return None, f"longer than {MAX_SCRIPT_BYTES} bytes"
        except OSError:
            return None, "not readable here"
        return path, ""


def _script_text(path: Path) -> str:
    """The one bounded reader of a file a script reads: a regular file, at most the script
    cap, UTF-8 (InputError otherwise)."""
    return decode(read_bytes(path, str(path), MAX_SCRIPT_BYTES, what="file"), str(path))
