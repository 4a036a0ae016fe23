"""Programs that run another program: ``exec``, ``timeout``, ``numactl``, ``tini --`` ...

Each entry names the options that take a value, so the wrapped command is found where the
wrapper itself finds it (the first word that is not one of its options). Sources: the
manual pages of coreutils (``timeout``, ``nice``, ``stdbuf``, ``env``, ``nohup``),
util-linux (``taskset``; ``setsid``, whose options take no value), numactl, tini (``tini
[OPTIONS] -- PROGRAM``), dumb-init, and canhazgpu (``chg run [OPTIONS] -- COMMAND``: it
reserves GPUs, sets ``CUDA_VISIBLE_DEVICES`` and runs the command; without ``--`` kvconfig
does not tell the command apart), and Slurm's ``srun`` (srun(1): the options that take a
value, short or long; pyxis's ``--container-*``): a job step runs its program once per
task, so kvconfig reads the program only for a step of one task (``-n 1``,
``--ntasks=1``); any other count is only known where the job runs. NVIDIA Nsight Systems'
``nsys profile [SWITCHES] PROGRAM ARGS`` runs PROGRAM under the profiler. ``sudo [OPTIONS]
[NAME=VALUE ...] COMMAND`` (sudo(8)) runs COMMAND as another user; its listing, editing and
validating options run none. The environment sudo passes on depends on the sudoers policy
(``env_reset``, ``env_keep``), which kvconfig does not read: the script's exported
variables are taken as passed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh"})
"""Programs that run a script given with ``-c``."""

_SRUN_NAMES = """account acctg-freq bb bbf begin cluster-constraint clusters comment
    constraint container container-id core-spec cores-per-socket cpu-bind cpu-freq cpus-per-gpu
    cpus-per-task deadline delay-boot dependency distribution error exclude export
    extra-node-info gid gpu-bind gpu-freq gpus gpus-per-node gpus-per-socket gpus-per-task gres
    gres-flags hint input jobid job-name licenses mail-type mail-user mcs-label mem mem-bind
    mem-per-cpu mem-per-gpu mincpus mpi network nodefile nodelist nodes ntasks ntasks-per-core
    ntasks-per-gpu ntasks-per-node ntasks-per-socket open-mode output partition power prefer
    priority profile qos reservation segment signal slurmd-debug sockets-per-node switches
    task-epilog task-prolog thread-spec threads-per-core time time-min tmp tres-bind
    tres-per-task uid wait wckey container-image container-mounts container-name
    container-workdir container-env container-save"""
_SRUN_LONG = frozenset("--" + name for name in _SRUN_NAMES.split())
"""srun's long options that take a value (srun(1); ``--container-*``: NVIDIA pyxis)."""

_SUDO_NAMES = "close-from chdir group host prompt chroot role type command-timeout other-user user"
_SUDO_LONG = frozenset("--" + name for name in _SUDO_NAMES.split())
"""sudo's long options that take a value (sudo(8))."""

_SUDO_NO_COMMAND = frozenset({"-e", "--edit", "-l", "--list", "-v", "--validate", "-V",
                              "--version", "-K", "--remove-timestamp", "-h", "--help"})  # fmt: skip
"""sudo's options that run no command (sudoedit, listing, validating, help; ``-h HOST``
only goes with ``-l``)."""

_VALUED: dict[str, frozenset[str]] = {
    "exec": frozenset({"-a"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "timeout": frozenset({"-k", "-s", "--kill-after", "--signal"}),
    "numactl": frozenset(
        {"-N", "-m", "-C", "-i", "-p", "-c", "--cpunodebind", "--membind", "--physcpubind"}
        | {"--interleave", "--preferred", "--preferred-many", "--cpubind"}
    ),
    "taskset": frozenset(),
    "setsid": frozenset(),
    "nice": frozenset({"-n", "--adjustment"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "tini": frozenset({"-p", "-e"}),
    "dumb-init": frozenset({"-r", "--rewrite"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "ionice": frozenset({"-c", "-n", "--class", "--classdata"}),
    "srun": frozenset({f"-{c}" for c in "AbBcCdDeGiJLmMnNopqrStTwWx"} | _SRUN_LONG),
    "sudo": frozenset({f"-{c}" for c in "CDgpRrtTUu"} | _SUDO_LONG),
}
_POSITIONAL = {"timeout": 1, "taskset": 1}
"""Wrappers with a positional argument before the command (duration, CPU mask)."""


def unwrap(
    words: Sequence[str],
) -> tuple[list[str] | None, dict[str, str | None], bool, int]:
    """(the command that runs, ``env NAME=VALUE`` settings, run by ``exec``, words removed).

    None as the command: the words run no program kvconfig can name (``command -v``,
    ``taskset -p``, ``env -S``). A wrapper with nothing after it is the program itself
    (``env`` prints the environment), but ``exec`` alone only applies its redirections and
    the script goes on: no command.
    """
    w = list(words)
    extra: dict[str, str | None] = {}
    replaces = False
    removed = 0
    while w:
        head = os.path.basename(w[0])
        if head == "chg" and w[1:2] == ["run"]:  # canhazgpu: chg run [OPTIONS] -- COMMAND
            if "--" not in w:
                return None, extra, replaces, removed
            k = w.index("--") + 1
            w, removed = w[k:], removed + k
            extra["CUDA_VISIBLE_DEVICES"] = None  # the GPUs it reserves, at run time
            continue
        if head == "nsys" and w[1:2] == ["profile"]:
            # Nsight Systems' profile command: its switches each take a value (--opt=value
            # or -o value; the Nsight Systems User Guide, "CLI Profile Command Switch
            # Options"), then the application and its arguments
            k = 2
            while k < len(w) and w[k].startswith("-") and w[k] != "--":
                k += 1 if "=" in w[k] or w[k] in ("-h", "--help") else 2
            k += w[k : k + 1] == ["--"]
            if k >= len(w):
                return None, extra, replaces, removed
            w, removed = w[k:], removed + k
            continue
        if head not in _VALUED:
            break
        valued = _VALUED[head]
        k = 1
        positional = _POSITIONAL.get(head, 0)
        while k < len(w):
            word = w[k]
            if word == "--":
                k += 1
                break
            if head in ("env", "sudo") and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", word):
                name, _, value = word.partition("=")
                extra[name] = value
                k += 1
                continue
            if word.startswith("-") and len(word) > 1 and head not in ("nohup",):
                if head == "command" and word in ("-v", "-V"):
                    return None, extra, replaces, removed
                if head == "taskset" and "p" in word.lstrip("-") and not word.startswith("--"):
                    return None, extra, replaces, removed
                if head == "env" and (word in ("-S", "--split-string") or word.startswith("-S")):
                    return None, extra, replaces, removed
                if head == "sudo" and word in _SUDO_NO_COMMAND:
                    return None, extra, replaces, removed
                name = word.split("=", 1)[0]
                k += 2 if name in valued and "=" not in word and name == word else 1
                continue
            if positional:
                positional -= 1
                k += 1
                continue
            break
        if head == "srun" and k < len(w) and _tasks(w[1:k]) != 1:
            return None, extra, replaces, removed  # a copy per task: only known there
        if k >= len(w):  # nothing after it: exec only redirects, env prints, ...
            if head == "exec":
                return [], extra, replaces, removed + k
            break
        if head == "exec":
            replaces = True
        w = w[k:]
        removed += k
    return w, extra, replaces, removed


def _tasks(options: Sequence[str]) -> int | None:
    """The tasks of an ``srun`` step its options give (``-n N``, ``-nN``, ``--ntasks N``,
    ``--ntasks=N``; the last wins); None when they do not say."""
    count = None
    for i, word in enumerate(options):
        value = None
        if word in ("-n", "--ntasks") and i + 1 < len(options):
            value = options[i + 1]
        elif word.startswith("--ntasks="):
            value = word.partition("=")[2]
        elif word.startswith("-n") and not word.startswith("--") and len(word) > 2:
            value = word[2:]
        if value is not None:
            count = int(value) if value.isdigit() else None
    return count


def after_options(words: Sequence[str], dialect: str) -> tuple[int, str, list[str]]:
    """(index of the first word after a shell's options, the letters given with ``-``,
    the names ``-o``/``+o`` took), as bash and dash read their arguments and ``set`` its
    own: options come first, ``--`` ends them, ``-o NAME`` takes the next word (in a
    cluster: bash when it ends in ``o``, ``-eo pipefail``; dash once per ``o``, its
    ``options()``), and so do bash's ``-O NAME``, ``--rcfile FILE`` and ``--init-file
    FILE``."""
    letters = ""
    names: list[str] = []
    i = 1
    while i < len(words):
        word = words[i]
        if word in ("-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if word == "--":
            i += 1
            break
        if word[:1] in "-+" and len(word) > 1:
            cluster = not word.startswith("--")
            if cluster and word[0] == "-":
                letters += word[1:]
            taken = int(word.count("o") if dialect == "sh" else word.endswith("o"))
            taken = taken if cluster else 0
            names += words[i + 1 : i + 1 + taken]
            i += 1 + taken
            continue
        break
    return i, letters, names


def script_of(words: Sequence[str]) -> int | None:
    """Index of the script in ``sh -c SCRIPT ...`` (``-xc``, ``-o pipefail -c``, ``-lc``,
    ``-lc -- SCRIPT``): the first word after the options when ``-c`` was among them."""
    if not words or os.path.basename(words[0]) not in SHELLS:
        return None
    i, letters, _names = after_options(words, dialect_of(words[0]))
    return i if "c" in letters and i < len(words) else None


def file_of(words: Sequence[str]) -> int | None:
    """Index of the script file in ``bash FILE ARGS`` / ``sh FILE ARGS``: the first word
    after the options, when no ``-c`` or ``-s`` (commands from a string or standard
    input) was given (bash's "Invoking Bash", dash's argument rules)."""
    if not words or os.path.basename(words[0]) not in SHELLS:
        return None
    i, letters, _names = after_options(words, dialect_of(words[0]))
    return i if not {"c", "s"} & set(letters) and i < len(words) else None


def shell_script(words: Sequence[str]) -> tuple[int, str] | None:
    """The one ``sh -c`` detector (Kubernetes, compose): (index of the script, dialect).

    The words may start with wrappers (``tini --``, ``dumb-init``, ``exec``); the
    dialect is ``bash`` for bash and ``sh`` (dash, the ``/bin/sh`` of Debian and Ubuntu
    images, vLLM's included) otherwise.
    """
    inner, _, _, removed = unwrap(words)
    if inner is None:
        return None
    at = script_of(inner)
    if at is None:
        return None
    dialect = dialect_of(inner[0])
    return removed + at, dialect


def dialect_of(shell: str) -> str:
    """bash for bash, dash's rules for any other ``sh`` (``kvconfig.load.shell``)."""
    return "bash" if os.path.basename(shell) == "bash" else "sh"


_DASH_OPTIONS = frozenset(
    {"errexit", "noglob", "ignoreeof", "interactive", "monitor", "noexec", "stdin", "xtrace"}
    | {"verbose", "vi", "emacs", "noclobber", "allexport", "notify", "nounset", "privileged"}
    | {"nolog", "debug"}
)
"""The ``-o`` names dash 0.5.12 knows (``dash -c 'set -o'``): with another (``pipefail``)
``set`` fails and, a special builtin, ends the script; so does ``dash -o NAME``."""


def unknown_to_dash(words: Sequence[str]) -> list[str]:
    """The conditions for a shell's options, or ``set``'s (``words``, the shell or ``set``
    first) to let dash go on: each ``-o NAME`` dash does not know."""
    return [
        f"sh knowing 'set -o {name}' (dash, the sh of Debian and Ubuntu images, stops there)"
        for name in after_options(words, "sh")[2]
        if name not in _DASH_OPTIONS
    ]


def shebang(text: str) -> list[str]:
    """The shell a script's ``#!`` line names and the options it gives it (``#!/bin/bash
    -e``: ``-e`` is in force from the first line, as when the kernel starts the file);
    empty when the line names no shell."""
    named = text.split("\n", 1)[0][2:].split() if text.startswith("#!") else []
    if named and os.path.basename(named[0]) == "env":
        named = named[1:]
    if not named or os.path.basename(named[0]) not in SHELLS:
        return []
    return named


def option_after(options: list[str], letter: str, name: str, now: bool) -> bool:
    """Whether ``set OPTIONS`` leaves the option ``-LETTER`` (``-o NAME``) in force
    (``-u``, ``-eu``, ``-o nounset`` on; ``+u``, ``+o nounset`` off)."""
    for i, word in enumerate(options):
        if word[:1] not in "-+" or word.startswith("--"):
            continue
        if letter in word[1:]:
            now = word[0] == "-"
        if "o" in word[1:] and options[i + 1 : i + 2] == [name]:
            now = word[0] == "-"
    return now
