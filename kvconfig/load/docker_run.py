"""``docker run [OPTIONS] IMAGE [ARG...]`` in a launch script: what the container runs.

Operators start vLLM from a script as often through ``docker run`` as directly::

    docker run --gpus all --ipc host -e CUDA_VISIBLE_DEVICES=0 \\
        vllm/vllm-openai:v0.33.0 Qwen/Qwen3-8B --kv-transfer-config '{...}'

The docker CLI reads its options up to the first word that is not one (the image: its
flag set does not take options after it, ``flags.SetInterspersed(false)`` in
docker/cli ``cli/command/container/run.go``); the words after the image are the
container's command, appended to the image's entry point, or replacing it where
``--entrypoint`` is given (``cli/command/container/opts.go``). vLLM's images
(``vllm/vllm-openai``, and builds on them such as ``lmcache/vllm-openai``) have the
entry point ``["vllm", "serve"]`` (vLLM ``docker/Dockerfile``, LMCache
``docker/Dockerfile``), so the words after such an image are ``vllm serve``'s arguments.
Only ``-e``/``--env`` reach the container's environment: the script's own variables do
not.

An entry point that is a shell given a script (``--entrypoint bash IMAGE -c 'SCRIPT'``,
``--entrypoint /bin/sh IMAGE -c ...``) runs that script in the container: kvconfig reads
it as that shell would (``kvconfig.load.shell``: bash, or dash for ``sh``, the
``/bin/sh`` of the Ubuntu-based vLLM images), with only the ``-e`` variables in its
environment, the words after it as ``$0 $1 ...``, and no file of this machine; the vLLM
server it starts is the container's. A script word, or an argument after it, only known
at run time leaves the container unread.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from kvconfig.errors import InputError
from kvconfig.load.engine_fields import image_entry
from kvconfig.load.operator_engine import server_start
from kvconfig.load.shell.state import Command

#: ``docker run``'s options that take no value (docker/cli ``cli/command/container``:
#: ``run.go`` and ``opts.go``; ``--disable-content-trust`` from
#: ``cli/command/trust.go``); every other option of ``docker run`` takes one.
_BOOLEAN = frozenset(
    {
        "--detach",
        "--interactive",
        "--tty",
        "--publish-all",
        "--quiet",
        "--rm",
        "--privileged",
        "--read-only",
        "--init",
        "--oom-kill-disable",
        "--no-healthcheck",
        "--sig-proxy",
        "--disable-content-trust",
        "--use-api-socket",
        "--help",
    }
)
#: One-letter options without a value (``-d``, ``-i``, ``-t``, ``-P``, ``-q``); pflag lets
#: them be grouped (``-dit``), the last of a group may be one that takes a value.
_SHORT_BOOLEAN = frozenset("ditPq")
_ENV = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(=(.*))?\Z", re.S)


@dataclass(frozen=True)
class Container:
    """What ``docker run`` starts: the words the container runs, its image and env."""

    words: tuple[str, ...]
    """The entry point and command (``vllm serve ARGS`` for a vLLM image)."""
    image: str
    """The image, as written."""
    entrypoint: bool
    """Whether ``--entrypoint`` replaced the image's entry point."""
    env: dict[str, str | None]
    """``-e NAME=VALUE`` (``-e NAME`` passes the caller's value: unknown here)."""
    command: Command | None = None
    """The server command the entry point's shell script runs (``bash -c SCRIPT``):
    ``words`` are its words, and its environment and unknown words are the container's;
    None when the entry point runs ``words`` directly."""


def container_start(words: Sequence[str], unknown: Collection[int] = ()) -> Container | None:
    """The container ``words`` start when they are ``docker run`` (or ``docker container
    run``) of an image whose entry point kvconfig knows, else None. ``unknown``: the
    indices of words only known at run time."""
    w = list(words)
    if not w or os.path.basename(w[0]) != "docker":
        return None
    rest = w[2:] if w[1:2] == ["run"] else w[3:] if w[1:3] == ["container", "run"] else None
    if rest is None:
        return None
    entrypoint: str | None = None
    env: dict[str, str | None] = {}
    i = 0
    while i < len(rest) and rest[i].startswith("-") and rest[i] != "-":
        word = rest[i]
        if word == "--":
            i += 1
            break
        name, value, i = _option(rest, i)
        if name is None:
            return None  # an option whose value is missing: docker refuses the command
        if name == "--entrypoint":
            entrypoint = value
        elif name in ("-e", "--env") and value is not None:
            m = _ENV.match(value)
            if m:
                env[m.group(1)] = m.group(3) if m.group(2) else None
    if i >= len(rest):
        return None
    image, after = rest[i], tuple(rest[i + 1 :])
    if entrypoint is not None:
        if not entrypoint:
            return None  # an empty entry point falls back to the image's command
        first = len(w) - len(after) - 1  # the entry point's first word, at -1 of ``after``
        late = {k - first for k in unknown if k > first}
        return _entry(Container((entrypoint, *after), image, True, env), late)
    entry_point = image_entry(image)
    if entry_point is not None:
        return Container((*entry_point, *after), image, False, env)
    return None


def _entry(container: Container, unknown: set[int]) -> Container | None:
    """The container whose entry point runs ``container.words``: a shell's script read
    (``command``) when the entry point is ``bash``/``sh``/``dash`` given ``-c``."""
    from kvconfig.load.shell import servers
    from kvconfig.load.shell.script import read_script
    from kvconfig.load.shell.wrappers import script_of

    words = container.words
    shell = os.path.basename(words[0])
    at = script_of(words) if shell in ("bash", "sh", "dash") else None
    if at is None:
        return container
    if any(k >= at for k in unknown):
        return None  # the script, or its $0 $1 ..., only known at run time
    try:
        reading = read_script(
            words[at], container.env, words[at + 1 :], dialect="bash" if shell == "bash" else "sh"
        )
    except InputError:
        return None  # a script the shell cannot parse starts nothing
    chosen, problem = servers(reading.commands, is_vllm_start)
    if problem or len(chosen) != 1 or server_start(chosen[0].words) is None:
        return None
    cmd = chosen[0]
    return Container(cmd.words, container.image, True, dict(cmd.env), cmd)


def _option(rest: list[str], i: int) -> tuple[str | None, str | None, int]:
    """(the option's name, its value, the index after it) for ``rest[i]``; name None when
    the value is missing."""
    word = rest[i]
    if word.startswith("--"):
        name, eq, value = word.partition("=")
        if eq or name in _BOOLEAN:
            return name, value if eq else None, i + 1
        if i + 1 >= len(rest):
            return None, None, i + 1
        return name, rest[i + 1], i + 2
    letters = word[1:]
    for k, letter in enumerate(letters):
        if letter in _SHORT_BOOLEAN:
            continue
        attached = letters[k + 1 :]
        if attached:
            return f"-{letter}", attached.removeprefix("="), i + 1
        if i + 1 >= len(rest):
            return None, None, i + 1
        return f"-{letter}", rest[i + 1], i + 2
    return f"-{letters[-1:]}", None, i + 1


def vllm_start(
    words: Sequence[str], unknown: Collection[int] = ()
) -> tuple[tuple[str, str, list[str]] | None, Container | None]:
    """How ``words`` start vLLM (``server_start``'s entry, parser and argv): directly, or
    in the container a ``docker run`` starts (then also that container). ``unknown``:
    the indices of words only known at run time."""
    start = server_start(words)
    if start is not None:
        return start, None
    container = container_start(words, unknown)
    if container is None:
        return None, None
    return server_start(container.words), container


def is_vllm_start(cmd: Command) -> bool:
    """Whether the command starts vLLM (``vllm_start``), its unknown words as they are."""
    return vllm_start(cmd.words, [i for i, _ in cmd.unknown])[0] is not None


def vllm_command(
    cmd: Command, source: str
) -> tuple[tuple[str, str, list[str]], Container | None, Command]:
    """``vllm_start`` of a server command (``is_vllm_start``), and the command that runs
    vLLM: ``cmd``, or the one its container's shell script runs (at ``cmd``'s line)."""
    start, container = vllm_start(cmd.words, [i for i, _ in cmd.unknown])
    if start is None:  # alternatives merged: the container's script only known at run time
        raise InputError(
            "the script the container's entry point runs is only known at run time",
            source=source,
            line=cmd.line,
            hint="give docker run one script (--entrypoint bash IMAGE -c 'vllm serve ...')",
        )
    if container is not None and container.command is not None:
        return start, container, replace(container.command, line=cmd.line)
    return start, container, cmd
