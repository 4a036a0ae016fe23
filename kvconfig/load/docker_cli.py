"""The ``docker run [OPTIONS] IMAGE [ARG...]`` command line: the container it starts.

The docker CLI reads its options up to the first word that is not one (the image: its
flag set does not take options after it, ``flags.SetInterspersed(false)`` in
docker/cli ``cli/command/container/run.go``); the words after the image are the
container's command, appended to the image's entry point, or replacing it where
``--entrypoint`` is given (``cli/command/container/opts.go``). Only ``-e``/``--env``
reach the container's environment: the script's own variables do not. A bind mount
(``-v /host/dir:/ctr/dir[:ro]``, ``--volume``, ``--mount type=bind,source=...,target=...``;
docker/cli ``opts/mount.go`` and ``cli/command/container/opts.go``) shows a folder of this
machine inside the container; a ``-v`` source that is not a path (no ``/``, ``.`` or
``~`` first) is a named volume, not a folder here. Which program runs is the launch
readers' question (``kvconfig.load.docker_run``, ``kvconfig.load.shell.remote``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvconfig.load.engine_fields import image_entry

if TYPE_CHECKING:  # the shell's reader of a container's script makes one
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
    at: int = 0
    """Index, in the ``docker run`` words, of the first word after the image."""
    mounts: tuple[tuple[str, str], ...] = ()
    """Bind mounts: (the folder or file of this machine, where the container sees it)."""
    detached: bool = False
    """``-d``: the script does not wait for the container."""
    command: Command | None = None
    """The server command the entry point's shell script runs (``bash -c SCRIPT``):
    ``words`` are its words, and its environment and unknown words are the container's;
    None when the entry point runs ``words`` directly."""


def container_of(words: Sequence[str]) -> Container | None:
    """The container ``words`` start when they are ``docker run`` (or ``docker container
    run``) of an image whose entry point kvconfig knows, or with ``--entrypoint``; None
    otherwise."""
    w = list(words)
    if not w or os.path.basename(w[0]) != "docker":
        return None
    skip = 2 if w[1:2] == ["run"] else 3 if w[1:3] == ["container", "run"] else 0
    if not skip:
        return None
    rest = w[skip:]
    entrypoint: str | None = None
    env: dict[str, str | None] = {}
    mounts: list[tuple[str, str]] = []
    detached = False
    i = 0
    while i < len(rest) and rest[i].startswith("-") and rest[i] != "-":
        word = rest[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("--") and "d" in word[1:] and set(word[1:]) <= _SHORT_BOOLEAN:
            detached = True
        name, value, i = _option(rest, i)
        if name is None:
            return None  # an option whose value is missing: docker refuses the command
        detached = detached or name == "--detach"
        if name == "--entrypoint":
            entrypoint = value
        elif name in ("-e", "--env") and value is not None:
            m = _ENV.match(value)
            if m:
                env[m.group(1)] = m.group(3) if m.group(2) else None
        elif name in ("-v", "--volume", "--mount") and value is not None:
            mounts.extend(_mount(name, value))
    if i >= len(rest):
        return None
    image, after = rest[i], tuple(rest[i + 1 :])
    at = skip + i + 1
    if entrypoint is not None:
        if not entrypoint:
            return None  # an empty entry point falls back to the image's command
        return Container((entrypoint, *after), image, True, env, at, tuple(mounts), detached)
    entry_point = image_entry(image)
    if entry_point is None:
        if after and _runs_itself(after):
            # an image kvconfig does not know, given a command that is itself a shell
            # script or a vLLM start: read as the container's program, as on an image with
            # no entry point or one that ends in exec "$@" (the CUDA and Python images)
            return Container(tuple(after), image, True, env, at, tuple(mounts), detached)
        return None
    return Container((*entry_point, *after), image, False, env, at, tuple(mounts), detached)


def _runs_itself(words: Sequence[str]) -> bool:
    """Whether ``words`` are a program of their own: a shell given a script, or a command
    that starts vLLM (``vllm serve``, ``python3 -m vllm.entrypoints.openai.api_server``)."""
    from kvconfig.load.operator_engine import server_start

    shell = os.path.basename(words[0]) in ("bash", "sh", "dash") and "-c" in words[1:3]
    return shell or server_start(words) is not None


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


def _mount(name: str, value: str) -> list[tuple[str, str]]:
    """The bind mount ``-v``/``--volume``/``--mount`` gives, if any."""
    if name == "--mount":
        fields = dict(f.partition("=")[::2] for f in value.split(","))
        if fields.get("type") != "bind":
            return []
        source = fields.get("source") or fields.get("src")
        target = fields.get("target") or fields.get("destination") or fields.get("dst")
        return [(source, target)] if source and target else []
    source, _, rest = value.partition(":")
    target = rest.partition(":")[0]
    if not target.startswith("/") or source[:1] not in ("/", ".", "~"):
        return []
    return [(source, target)]
