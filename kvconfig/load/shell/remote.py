"""Commands a script runs somewhere else (or, through a terminal multiplexer, detached on
this machine: ``kvconfig.load.shell.multiplexers``): ``docker exec CONTAINER COMMAND ...`` runs
COMMAND in a running container (docker's ``cli/command/container/exec.go``: options
first, then the container, then the command, given as words and run without a shell),
and ``ssh HOST COMMAND ...`` runs COMMAND on HOST, its words joined by spaces and read by
the remote user's login shell (OpenSSH ``ssh(1)``: "a complete command line ... executed
by the remote shell").

There the environment is the container's or the remote login's, which kvconfig does not
see: only ``docker exec -e NAME=VALUE`` settings are known, every other variable is only
known at run time, and the folder is unknown. The script does not wait for ``docker exec
-d`` or ``ssh -f``: their programs run in the background, as with ``&``. The programs found
there are the script's (a vLLM server started through them is an engine).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from kvconfig.errors import InputError
from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.docker_cli import container_of
from kvconfig.load.engine_fields import image_entry
from kvconfig.load.shell.multiplexers import screen_run, tmux_keys, tmux_run, typed
from kvconfig.load.shell.output import _Output
from kvconfig.load.shell.state import _State
from kvconfig.load.shell.words import HOLE, _Word, hole, one_field
from kvconfig.load.shell.wrappers import SHELLS

_DOCKER_EXEC_VALUED = frozenset(
    {"-e", "--env", "--env-file", "-u", "--user", "-w", "--workdir", "--detach-keys"}
)
_READS = frozenset({"env", "ssh", "docker", *SHELLS})
"""Programs that read the known text around a run-time word's parts (besides the
script's functions): ``env NAME=...``, a remote or new shell."""
_SSH_VALUED = frozenset("BbcDEeFIiJLlmOopQRSWw")
"""``ssh`` options that take a value (``ssh(1)``, its getopt string)."""


@dataclass(frozen=True)
class Remote:
    """Where a command's words run elsewhere."""

    at: int
    """Index of the first word of the command run there."""
    env: dict[str, str | None]
    """The settings given with it (``docker exec -e``)."""
    detached: bool
    """The script does not wait for it (``docker exec -d``, ``ssh -f``)."""
    joined: bool
    """Its words are joined and read by a shell (``ssh``)."""
    mounts: tuple[tuple[str, str], ...] = ()
    """Folders of this machine seen there, and where (``docker run -v``)."""
    kind: str = "ssh"
    """``ssh``, ``docker exec``, ``docker run``, ``tmux`` or ``screen``."""
    local: bool = False
    """It runs on this machine (``tmux``, ``screen``): the script's files are there."""
    inherits: bool = False
    """It gets the script's exported environment (``screen``)."""
    folder: str | None = None
    """Where it starts on this machine: ``.`` for the script's folder; None: unknown."""
    keys: bool = False
    """Its words are keys typed into a shell (``tmux send-keys``)."""


def remote_of(words: Sequence[str]) -> Remote | None:
    """The command ``words`` run in a container or on another host, or None."""
    if not words:
        return None
    head = os.path.basename(words[0])
    if head == "docker":
        k = 1
        if words[1:3] == ["container", "exec"]:
            k = 3
        elif words[1:2] == ["exec"]:
            k = 2
        else:
            return _docker_run(words)
        return _docker_exec(words, k)
    if head == "ssh":
        return _ssh(words)
    if head == "tmux" and (run := tmux_run(words)) is not None:
        k, env, folder = run
        joined = len(words) - k == 1  # one argument: read by the default shell
        return Remote(k, env, True, joined, kind="tmux", local=True, folder=folder)
    if head == "tmux" and (keys := tmux_keys(words)) is not None:
        return Remote(keys, {}, True, True, kind="tmux", local=True, keys=True)
    if head == "screen" and (at := screen_run(words)) is not None:
        return Remote(at, {}, True, False, kind="screen", local=True, inherits=True, folder=".")
    return None


def _docker_exec(words: Sequence[str], k: int) -> Remote | None:
    env: dict[str, str | None] = {}
    detached = False
    while k < len(words) and words[k].startswith("-") and words[k] != "-":
        word = words[k]
        name, eq, value = word.partition("=")
        if name in _DOCKER_EXEC_VALUED:
            if not eq:
                if k + 1 >= len(words):
                    return None
                value = words[k + 1]
                k += 1
            if name in ("-e", "--env"):
                key, has, given = value.partition("=")
                env[key] = given if has else None  # -e NAME: the caller's value
            k += 1
            continue
        if name in ("-d", "--detach"):
            detached = True
        elif not name.startswith("--") and re.fullmatch(r"-[dit]+", name):
            detached = detached or "d" in name
        elif name not in ("-i", "--interactive", "-t", "--tty", "--privileged"):
            return None  # an option kvconfig does not know the shape of
        k += 1
    if k + 1 >= len(words):
        return None  # no container or no command
    return Remote(k + 1, env, detached, joined=False, kind="docker exec")


def _docker_run(words: Sequence[str]) -> Remote | None:
    """``docker run IMAGE bash FILE ...`` (or ``sh -c SCRIPT``) of an image whose entry
    point runs its command as given: the shell runs in the new container."""
    container = container_of(words)
    if container is None or container.entrypoint or image_entry(container.image) != ():
        return None
    if not container.words or os.path.basename(container.words[0]) not in SHELLS:
        return None
    return Remote(
        container.at, container.env, container.detached, False, container.mounts, "docker run"
    )


def _ssh(words: Sequence[str]) -> Remote | None:
    k = 1
    detached = False
    while k < len(words) and words[k].startswith("-") and len(words[k]) > 1:
        word = words[k]
        if word == "--":
            k += 1
            break
        for i, c in enumerate(word[1:], start=1):
            if c in _SSH_VALUED:
                if i == len(word) - 1:
                    k += 1  # the value is the next word
                break
            if c == "N":
                return None  # no command
            detached = detached or c == "f"
        k += 1
    if k + 1 >= len(words):
        return None  # no host or no command: a login shell
    return Remote(k + 1, {}, detached, joined=True)


class _Remote(_Output):
    also_set: list[str] = []  # noqa: RUF012 (set per command)
    """Variables ``env`` may set besides, for the command being run."""
    field_texts: dict[int, str] = {}  # noqa: RUF012 (set per command)
    """The known text around the run-time parts of the command's run-time words, by
    index (``expand_template``): what a shell elsewhere (``ssh``, ``docker exec``), a new
    shell (``bash -c``) or a function reads of them."""

    def run_time_field(
        self, word: _Word, field: str, what: str, before: list[str], split: list[str]
    ) -> list[str]:
        """The field of ``word``, only known at run time (``what``), as the command takes
        it: after ``env``, ``NAME=$X`` is a setting known up to ``=`` (NAME itself may be
        one of several on the sides of a run-time choice: each may be set; unquoted, a
        blank in the value would end it, ``split``)."""
        programs = set(map(os.path.basename, before))
        if programs.isdisjoint(_READS) and programs.isdisjoint(self.state.functions):
            return [field]  # the known text matters to none of them: not computed
        texts = self.expand_template(word)
        if len(texts) == 1 and HOLE.search(texts[0]):
            self.field_texts[len(before)] = texts[0]
        if "env" not in programs:
            return [field]
        names = [re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", t) for t in texts]
        if not all(names):
            return [field]
        settings = sorted({m.group(1) for m in names if m})
        self.also_set = settings[1:]
        if not one_field(word):
            split.append(settings[0])
        return [f"{settings[0]}={hole(what)}"]

    def run_remote(
        self, words: Sequence[str], unknown: Sequence[tuple[int, str]], where: Remote,
        background: bool, shift: int, *, line: int | None,
    ) -> int | None:  # fmt: skip
        """Run ``words[where.at:]`` where ``where`` says, each word only known at run time
        (``unknown``) standing for text only known there (for ``ssh``, its known text
        around its run-time parts; ``shift``: the words a wrapper took before ``words``);
        what it runs is at ``line``, the command's."""
        late = {i: what for i, what in unknown}

        def text_of(i: int, w: str) -> str:
            if i not in late:
                return w
            return self.field_texts.get(i + shift) or hole(late[i])

        parts = [text_of(i, w) for i, w in enumerate(words)][where.at :]
        if where.keys:
            text = typed(parts) or ""
        elif where.joined:
            text = " ".join(parts)
        else:  # argv: each word exactly as given
            text = " ".join(w if HOLE.fullmatch(w) else shlex.quote(w) for w in parts)
        outer_line, self.line0 = self.line0, line if self.line0 is not None else None
        try:
            tree = self.parsed(text)
        except InputError as err:
            self.unparsed.append(err)
            self.line0 = outer_line
            return None
        mounts = []  # a relative source is taken from the folder docker runs in
        for source, target in where.mounts:
            here = self.path_here(source) if self.host and source[:1] != "~" else None
            if here is not None:
                mounts.append((here, target))
        saved = (self.state, self.unknown_rest, self.backgrounded, self.host, self.mounts)
        machine = self.machine
        host = words[where.at - 1] if where.at - 1 not in late else None
        env = {**self.exported_env(), **where.env} if where.inherits else dict(where.env)
        self.state = _State(env, set(env), None)
        self.state.when, self.state.branch = saved[0].when, saved[0].branch
        self.unknown_rest = saved[1] if where.inherits else True
        self.backgrounded += int(background or where.detached)
        if where.local:  # this machine's files, in the script's folder or another
            self.start_in(saved[0].cwd if where.folder == "." else where.folder)
        else:
            self.machine = self.machine_of(host, where.kind)
            self.host, self.mounts = False, tuple(mounts)  # its files are the container's
        try:
            with contextlib.suppress(_Stop, _Jump), self.subshell():
                self.run_node(tree)
        finally:
            self.state, self.unknown_rest, self.backgrounded, self.host, self.mounts = saved
            self.machine = machine
            self.line0 = outer_line
        return None
