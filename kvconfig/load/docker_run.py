"""``docker run [OPTIONS] IMAGE [ARG...]`` in a launch script: what the container runs.

Operators start vLLM from a script as often through ``docker run`` as directly::

    docker run --gpus all --ipc host -e CUDA_VISIBLE_DEVICES=0 \\
        vllm/vllm-openai:v0.33.0 Qwen/Qwen3-8B --kv-transfer-config '{...}'

The container's command is the words after the image, after its entry point or
replacing it (``kvconfig.load.docker_cli``). vLLM's images
(``vllm/vllm-openai``, and builds on them such as ``lmcache/vllm-openai``) have the
entry point ``["vllm", "serve"]`` (vLLM ``docker/Dockerfile``, LMCache
``docker/Dockerfile``), so the words after such an image are ``vllm serve``'s arguments.

An image kvconfig does not know, given a command that starts vLLM itself (``vllm serve
...``, ``python3 -m vllm.entrypoints.openai.api_server ...``) or a shell script (``bash -c
'...'``), runs that command: the images vLLM is built into have no entry point or one that
ends in ``exec "$@"``. Bare arguments after such an image need its entry point, which is
not known here: no server is read.

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
from collections.abc import Collection, Sequence
from dataclasses import replace

from kvconfig.errors import InputError
from kvconfig.load.docker_cli import Container, container_of
from kvconfig.load.operator_engine import server_start
from kvconfig.load.shell.state import Command


def container_start(words: Sequence[str], unknown: Collection[int] = ()) -> Container | None:
    """The container ``words`` start when they are ``docker run`` (or ``docker container
    run``) of an image whose entry point kvconfig knows, else None; a shell entry point's
    script is read (``_entry``). ``unknown``: the indices of words only known at run
    time."""
    container = container_of(words)
    if container is None or not container.entrypoint:
        return container
    first = container.at - 1  # the entry point's first word, at -1 of the command
    return _entry(container, {k - first for k in unknown if k > first})


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
    return replace(container, words=cmd.words, env=dict(cmd.env), command=cmd)


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
