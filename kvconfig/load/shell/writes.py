"""The files a script writes as it runs, and reads back: a launch script it writes with
``cat > FILE <<EOF`` (or ``cat >> FILE``, ``echo ... > FILE``) and then runs (``bash
FILE``, ``source FILE``, ``./FILE`` after ``chmod +x``), or copies to another host
(``scp FILE HOST:PATH``) and runs there (``ssh HOST bash PATH``).

A redirection ``>FILE`` opens FILE for writing before the command runs (POSIX 2.7.2;
``>>`` appends, 2.7.3): what the command prints is the file's text. kvconfig knows that
text for ``cat`` reading a here-document or here-string (its unquoted expansions as the
shell expands them, run-time parts kept as holes), ``echo`` of known words without
options or backslashes (bash and dash print them alike), and a command of redirections
alone or ``:`` (an empty file). Any other command writing FILE, and ``tee``, ``sed -i``,
``rm``, ``mv`` or ``cp`` from a file not known, leave its text only known at run time:
a script then run from it is not read (its name stays in ``blind``), never a stale copy
on this machine.

Files live on a machine: the script's own, another host (``ssh HOST``, ``scp
... HOST:PATH``), a running container (``docker exec``) or a new one (``docker run``).
A file written on one side of a run-time choice is known only where the reader runs on
the same side (its choices extend the writer's).
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell.dirs import _Dirs
from kvconfig.load.shell.state import MAX_SCRIPT_BYTES
from kvconfig.load.shell.words import _Word, holes_named

_REMOTE = re.compile(r"(?:[^@/:]+@)?([^@/:]+):(.*)", re.DOTALL)
"""``scp``'s ``[user@]host:path`` (a name with a slash before any colon is a local path)."""
_MODE_X = re.compile(r"[ugoa]*\+[rwxXst]*x[rwxXst]*|0?[0-7]?[1357][0-7]{2}")
"""``chmod`` modes that let the owner run the file (``+x``, ``u+x``, ``755``)."""
_SCP_FLAGS = re.compile(r"-[346ABCOpqRrTv]+")
"""``scp`` options that take no value (``scp(1)``)."""
_COUNTER = itertools.count()


@dataclass(frozen=True)
class _File:
    text: str | None
    """Its text; None: only known at run time (``why``)."""
    why: str
    branch: tuple[tuple[int, int], ...]
    """The run-time choices it was written under."""
    executable: bool = False


class _Writes(_Dirs):
    written: dict[tuple[str, str], _File] | None = None
    """The files written so far, by (machine, absolute path): shared with child shells."""
    machine = ""
    """Where the commands being read run: "" the script's own machine."""

    def files(self) -> dict[tuple[str, str], _File]:
        if self.written is None:
            self.written = {}
        return self.written

    def file_key(
        self, name: str, machine: str | None = None, late: bool = False
    ) -> tuple[str, str] | None:
        """Where ``name`` is, as the files are kept: an absolute path, or for a name only
        known at run time (``late``, written as what it names: ``$HOME/out/run.sh``) that
        text, which names the same file wherever the script writes it the same way."""
        where = self.machine if machine is None else machine
        if late:
            cwd = self.state.cwd
            if cwd is not None and not name.startswith(("/", "$", "~")):
                name = posixpath.join(cwd, name)
            return (where, "?" + name) if name else None
        here = self.path_here(name) if name else None
        if here is None or "\0" in here:
            return None
        return (where, posixpath.normpath(here))

    def put(
        self, name: str, text: str | None, why: str, append: bool = False, late: bool = False
    ) -> None:
        """FILE now holds ``text`` (None: only known at run time, ``why``)."""
        key = self.file_key(name, late=late)
        if key is None:
            return
        old = self.files().get(key)
        branch = self.state.branch
        if append:
            if old is None or old.text is None or text is None:
                text, why = None, why if old is None or old.text is not None else old.why
            else:
                text = old.text + text
        if text is not None and len(text) > MAX_SCRIPT_BYTES:
            text, why = None, f"{name} grew past {MAX_SCRIPT_BYTES} characters"
        if old is not None and not _within(old.branch, branch) and not _within(branch, old.branch):
            text, why = None, f"{name} written differently on two sides of a run-time choice"
        executable = old is not None and old.executable
        self.files()[key] = _File(text, why, branch, executable)

    def written_file(self, name: str, late: bool = False) -> tuple[str, str, bool] | str | None:
        """(path, text, executable) of a file the script wrote and kvconfig knows the text
        of; why not, for one it wrote otherwise; None for a file it did not write."""
        key = self.file_key(name, late=late)
        found = None if key is None or self.written is None else self.written.get(key)
        if found is None or key is None:
            return None
        if found.text is None:
            return f"{name} written by the script at run time ({found.why})"
        if not _within(found.branch, self.state.branch):
            return f"{name} written only on one side of a run-time choice"
        return (name if late else key[1]), found.text, found.executable

    def printed_here(self, here: Sequence[_Word]) -> str | None:
        """The text of the command's here-document or here-string, each run-time part a
        hole; None when it has none."""
        if not here:
            return None
        saved = self.state  # its ${X:=v} are the shell's own only as here_text says
        self.state = saved.copy()
        try:
            texts = self.expand_template(here[-1])
        finally:
            self.state = saved
        return texts[0] + ("" if here[-1].doc else "\n") if len(texts) == 1 else None

    def redirected(
        self, words: Sequence[_Word], expanded: list[str] | None, here: Sequence[_Word]
    ) -> None:
        """The files the command's ``>FILE`` redirections write (``expanded``: its words,
        None when some are only known at run time; ``here``: its here-document)."""
        targets = [(op, w) for word in words for op, w in word.writes]
        if not targets or all(w.raw() == "/dev/null" for _, w in targets):
            return
        try:
            text = None if expanded is None else _printed(expanded, self.printed_here(here))
        except _Stop:  # set -u and an unset name in it: the command fails (its shell's own)
            text = None
        if expanded is not None and len(expanded) == 2 and expanded[0] == "cat":
            copied = self.written_file(expanded[1])  # cat FILE > COPY
            text = copied[1] if isinstance(copied, tuple) else None
        why = f"the output of {expanded[0]}" if expanded else "the output of a command"
        for k, (op, target) in enumerate(targets):
            saved = self.state  # the name's errors and effects are not followed here
            self.state = saved.copy()
            try:
                name, _what = self.expand_string(target)
                texts = self.expand_template(target) if name is None else ()
            except _Stop:
                continue
            finally:
                self.state = saved
            late = name is None
            if name is None:  # a name only known at run time: kept as written
                if len(texts) != 1:
                    continue
                name = holes_named(texts[0])[0]
            # bash writes the output to the last of several redirections; the others are
            # emptied (>) or left (>>)
            last = k == len(targets) - 1
            self.put(name, text if last else "", why, op.endswith(">>"), late)

    def changed(self, words: list[str], late: set[int]) -> None:
        """Files a program changes: ``rm``, ``mv``, ``cp``, ``scp``, ``chmod``, ``tee`` and
        ``sed -i`` (``late``: the indexes of words only known at run time, written as
        what they name)."""
        head = posixpath.basename(words[0])
        if 0 in late:
            return
        options = [w for i, w in enumerate(words) if i and w.startswith("-") and i not in late]
        names = [(w, i in late) for i, w in enumerate(words) if i and w not in options]
        if head == "rm":
            for name, is_late in names:
                self.forget(name, is_late)
        elif head == "tee" or (
            head == "sed" and any(o.startswith(("-i", "--in-place")) for o in options)
        ):
            for name, is_late in names[head == "sed" :]:
                self.put(name, None, f"written by {head}", late=is_late)
        elif (
            head in ("cp", "mv", "scp")
            and len(names) == 2
            and all(head == "scp" and _SCP_FLAGS.fullmatch(o) for o in options)
        ):
            self.copy(names[0], names[1], head)
        elif head == "chmod" and len(names) >= 2 and _MODE_X.fullmatch(names[0][0]):
            for name, is_late in names[1:]:
                key = self.file_key(name, late=is_late)
                old = None if key is None else self.files().get(key)
                if key is not None and old is not None:
                    self.files()[key] = _File(old.text, old.why, old.branch, True)

    def forget(self, name: str, late: bool) -> None:
        """FILE (or a folder and all under it) is gone (``rm``)."""
        key = self.file_key(name, late=late)
        if key is None:
            return
        for held in [k for k in self.files() if k[0] == key[0]]:
            if held[1] == key[1] or held[1].startswith(key[1].rstrip("/") + "/"):
                self.files()[held] = _File(None, "removed by rm", self.state.branch)

    def copy(self, source: tuple[str, bool], target: tuple[str, bool], head: str) -> None:
        """``cp``/``mv``/``scp SOURCE TARGET``, one file each (``[user@]host:/path`` for
        ``scp``; a relative remote path is in the remote user's home, not known here)."""
        ends: list[tuple[str, str] | None] = []
        for name, late in (source, target):
            remote = _REMOTE.fullmatch(name) if head == "scp" else None
            if remote is None:
                ends.append(self.file_key(name, late=late))
            elif late or remote.group(2).startswith("/"):
                ends.append(self.file_key(remote.group(2), f"ssh:{remote.group(1)}", late))
            else:
                ends.append(None)
        old_key, new_key = ends
        old = None if old_key is None else self.files().get(old_key)
        if new_key is not None:
            why = f"copied by {head} from a file not written by the script"
            self.files()[new_key] = old or _File(None, why, self.state.branch)
        if head == "mv" and old_key is not None:
            self.files()[old_key] = _File(None, "moved away by mv", self.state.branch)

    def machine_of(self, host: str | None, kind: str) -> str:
        """The machine ``ssh HOST`` or ``docker exec CONTAINER`` runs on (a new one each
        time when the name is only known at run time, or for ``docker run``)."""
        if host is None or kind == "docker run":
            return f"{kind}:#{next(_COUNTER)}"
        return f"{kind}:{host.rpartition('@')[2]}"


def _within(outer: tuple[tuple[int, int], ...], inner: tuple[tuple[int, int], ...]) -> bool:
    """Whether every run-time choice of ``outer`` is taken the same way in ``inner``."""
    return inner[: len(outer)] == outer


def _printed(words: list[str], here: str | None) -> str | None:
    """What a command prints, when kvconfig knows it."""
    if not words or words[0] == ":":
        return ""
    head, args = posixpath.basename(words[0]), words[1:]
    if head == "cat" and args in ([], ["-"]):
        return here
    if head == "echo" and here is None and not any(a.startswith("-") for a in args[:1]):
        return None if any("\\" in a for a in args) else " ".join(args) + "\n"
    return None
