"""The working folder: ``cd``, ``pwd``, ``$PWD`` and ``$OLDPWD``, as bash and dash keep them.

A shell starts in the folder it was started from, and sets ``$PWD`` to it (bash's
``set_working_directory``, dash's ``getpwd``); that folder is the caller's, only known at
run time, so ``$PWD`` starts unknown. ``cd DIR`` (POSIX ``cd``; bash ``builtins/cd.def``,
dash ``src/cd.c``) goes to ``DIR``: an absolute name, a name taken from the current
folder (``CDPATH`` set: searched there first, only known at run time), ``$HOME`` with no
operand, ``$OLDPWD`` for ``-``. With ``-L``, the default, the new ``$PWD`` is the name
with its ``.`` and ``..`` removed as text (POSIX ``cd`` step 8; a leading ``//`` is
kept); with ``-P`` links are followed. It sets ``$OLDPWD`` to the folder it left (bash: the
value of ``$PWD``; dash: the folder itself) and ``$PWD`` to the new one; when it fails
(no such folder) nothing changes and its status is 1 in bash, 2 in dash. ``pwd`` prints
the current folder (not ``$PWD`` as assigned), ``-P`` with links followed. A subshell's
``cd`` stays in the subshell, as every assignment does.

Whether ``cd`` succeeds is known only where kvconfig sees the folder: a launch script
read here (``host``) going to a folder of its repository (under the allowed roots,
``kvconfig.load.roots``). Anywhere else ``cd`` is a choice only known at run time: it
went (``$PWD`` the new folder) or it failed (nothing changed), and what the two
disagree on stays unknown. ``pushd``/``popd`` leave the folder unknown.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from pathlib import Path

from kvconfig.load.roots import inside
from kvconfig.load.shell import nodes as N
from kvconfig.load.shell.paths import canonical
from kvconfig.load.shell.scope import _Scope

_STARTED = "the folder the script is started from"


class _Dirs(_Scope):
    host = False
    """The script is a launch script read on this machine, beside its repository."""
    held: Mapping[str, tuple[str, bool]] = {}
    """Files of the container running the commands whose text the input gives, by their
    absolute path: (text, executable); a Kubernetes pod's ConfigMap keys mounted as files
    (``kvconfig.load.kubernetes.volumes``). The folders above them are there."""

    def start_in(self, cwd: str | None) -> None:
        """A nested shell starts in the folder ``cwd`` (None: only known at run time)."""
        self.state.cwd = cwd
        self.assign("PWD", cwd, f"$PWD ({_STARTED})")

    def path_here(self, name: str) -> str | None:
        """``name`` as an absolute path, taken from the current folder (None: unknown)."""
        if name.startswith("/"):
            return name
        cwd = self.state.cwd
        return None if cwd is None or not name else posixpath.join(cwd, name)

    def cd_target(self, args: list[str]) -> tuple[str | None, bool]:
        """(the folder ``cd ARGS`` goes to, absolute, before ``.``/``..`` are removed, or
        None when only known at run time; whether ``-P`` follows links)."""
        physical = False
        while args and args[0].startswith("-") and args[0] != "-":
            option = args.pop(0)
            if option == "--":
                break
            if not set(option[1:]) <= {"L", "P"}:
                return None, False  # bash's -e and -@, or an invalid option
            physical = option[-1] == "P"  # the last of -L and -P counts
        if len(args) > 1:
            return None, physical
        if not args:
            _is_set, name = self.lookup("HOME")
        elif args[0] == "-":
            _is_set, name = self.lookup("OLDPWD")
        else:
            name = args[0]
        if not name:
            return None, physical  # unset, unknown or empty: each shell goes its own way
        searched = name.split("/", 1)[0] not in ("", ".", "..")  # POSIX cd, step 5
        if searched and self.lookup("CDPATH")[1] != "":
            return None, physical  # CDPATH is searched first
        return self.path_here(name), physical

    def known_dir(self, target: str, physical: bool) -> str | None:
        """``$PWD`` after going to ``target`` when kvconfig knows the folder is there: one
        of the launch script's repository, on this machine, or in a container a folder
        holding a file the input mounts there (``held``); None otherwise."""
        if target.startswith("//") and not target.startswith("///"):
            return None  # a leading // is kept by the shells, not by the links followed
        if not self.host:  # a container's folder that holds a file the input mounts there
            logical = posixpath.normpath(target)
            inside_ = logical.rstrip("/") + "/"
            return logical if any(p.startswith(inside_) for p in self.held) else None
        logical = target if physical else posixpath.normpath(target)
        real = canonical(logical, existing=True)
        if real is None or not os.path.isdir(real) or not inside(Path(logical)):
            return None
        return real if physical else logical

    def change_dir(self, args: list[str], known: bool, sure: bool = False) -> int | None:
        """``cd ARGS``; ``sure``: only when kvconfig knows it goes (``$(cd DIR && pwd)``)."""
        target, physical = self.cd_target(list(args)) if known else (None, False)
        if sure and args[-1:] == ["-"]:
            return None  # cd - prints the folder: more than pwd's output
        new = None if target is None else self.known_dir(target, physical)
        if new is not None:
            self.went(new)
            return 0
        if sure:
            return None
        if target is not None and not physical:
            new = posixpath.normpath(target)
        reason = f"cd {' '.join(args)}".strip() + " (whether the folder is there)"
        self.last_unknown = "whether cd succeeds"
        failed = 1 if self.dialect == "bash" else 2
        if self.deferring:  # cd DIR && ... / cd DIR || ...: the and-or list takes both ways
            self.pending = lambda: self.went(new, reason)
            return None

        def run(goes: object) -> int:
            if not goes:
                return failed
            self.went(new, reason)
            return 0

        return self.fork([[True], [False]], reason, run)

    def went(self, new: str | None, why: str = "") -> None:
        old = self.lookup("PWD")[1] if self.dialect == "bash" else self.state.cwd
        self.assign("OLDPWD", old, why or "$OLDPWD")
        self.state.cwd = new
        self.assign("PWD", new, why)

    def lost_dir(self, what: str) -> None:
        """``pushd``/``popd``: the folder is only known at run time."""
        self.state.cwd = None
        self.assign("OLDPWD", None, what)
        self.assign("PWD", None, what)

    def print_dir(self, args: list[str]) -> str | None:
        """What ``pwd ARGS`` prints (None: only known at run time)."""
        if any(a not in ("-L", "-P") for a in args):
            return None
        cwd = self.state.cwd
        if cwd is None or "-P" not in args:
            return cwd
        return canonical(cwd, existing=True) if self.host else None


def cd_pwd(node: N.Node) -> tuple[N.Node, N.Node] | None:
    """The two commands of ``$(cd DIR && pwd)`` or ``$(cd DIR; pwd)``, whatever they run."""
    if isinstance(node, N.AndOr) and [op for op, _ in node.rest] == ["&&"]:
        return node.first, node.rest[0][1]
    if isinstance(node, N.Sequence) and [bg for _, bg in node.items] == [False, False]:
        return node.items[0][0], node.items[1][0]
    return None


def quiet_cd(node: N.Node) -> bool:
    """``$(cd DIR >/dev/null 2>&1 && pwd)``, ``&>/dev/null``: the redirections are the
    ``cd``'s, to ``/dev/null``, so the output is still ``pwd``'s (``cd`` prints a folder only
    for ``cd -`` or one found through ``CDPATH``; bash's and dash's ``cd``)."""
    pair = cd_pwd(node)
    if pair is None or not all(isinstance(n, N.Simple) for n in pair):
        return False
    cd, pwd = pair
    assert isinstance(cd, N.Simple) and isinstance(pwd, N.Simple)
    return (
        cd.words[0].raw() == "cd"
        and not any(w.stdout or w.stdin or w.writes for w in pwd.words)
        and all(t.raw() == "/dev/null" for w in cd.words for _op, t in w.writes)
        and not any(w.stdin or w.here for w in cd.words)
    )
