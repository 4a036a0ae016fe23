r"""An operator file's vLLM engine: the record every reader of operator files returns
(``Engine``, with its ``Note``\ s), and how a command line starts vLLM (``server_start``).

``kvconfig.load.engines`` finds the engines of a file; the readers of each format
(``kubernetes``, ``helm``, ``kserve``, ``dynamo``, ``compose``, ``skypilot``,
``rayserve``) build them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Note:
    """Something a reader could not know, or that vLLM does differently from what the
    file suggests. The loader turns notes into findings or errors."""

    kind: str
    """``unknown-value`` (a word vLLM receives is not known until run time),
    ``unknown-vllm-version``, ``vllm-version-unsaid``, ``unknown-gpu``,
    ``several-gpus``, ``preferred-gpu``, ``launcher-default``, ``unset-variable``,
    ``not-read``, ``run-time-branch`` (a shell condition only known at run time decides
    whether the command runs), ``run-time-rounds`` (it runs in each round of a shell
    loop whose rounds are only known at run time, why in ``key``), ``unknown-base`` (a
    base configuration only the cluster holds, named by ``key``: the whole command is
    only known there)."""
    message: str
    """One sentence for the report."""
    line: int | None = None
    """Line in the file, when known."""
    key: str = ""
    """The option or field concerned."""


@dataclass(frozen=True, slots=True)
class Engine:
    """One vLLM engine a file starts: what its ``vllm serve`` parser receives."""

    name: str
    """The resource and container, e.g. ``Deployment/qwen3-decode/vllm``."""
    source: str
    """The file as named (``<stdin>`` for standard input)."""
    line: int | None
    """Line of the container, service or entry that starts it."""
    argv: tuple[str, ...]
    """vLLM's arguments after ``vllm serve`` (model positional or ``--model``), in order."""
    entry: str = "vllm serve"
    """How vLLM is started: ``vllm serve``, ``api_server``
    (``python -m vllm.entrypoints.openai.api_server``), ``grpc_server``
    (``python -m vllm.entrypoints.grpc_server``), ``image entry point``
    (only ``args``: the ``vllm/vllm-openai`` image runs ``vllm serve``), ``dynamo.vllm``,
    ``ray serve``, or a chart (``production-stack``, ``llm-d``, ``kserve``)."""
    parser: str = "serve"
    """How ``kvconfig.load.argv.parse_serve_args`` reads ``argv``: ``serve`` (positional
    model) or ``api_server`` (``--model`` option, no ``serve`` rewriting)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables with literal values."""
    env_unknown: tuple[str, ...] = ()
    """Variables set from Secrets, ConfigMaps or the pod (``valueFrom``): value unknown."""
    env_from: tuple[str, ...] = ()
    """Whole sources of variables (``envFrom``, ``env_file`` not found): any variable may
    be set there, with values kvconfig cannot know."""
    gpu: tuple[str, ...] = ()
    """GPU names as the file writes them (a GPU feature discovery label value, a
    SkyPilot or Ray accelerator); several when the resource accepts any of them."""
    platforms: tuple[str, ...] = ()
    """The kvconfig platform names of ``gpu`` (``kvconfig.load.gpu_labels``)."""
    vllm_version: str | None = None
    """The vLLM release the image tag (``vllm/vllm-openai:v0.X.Y``) or a pinned install
    names."""
    image: str | None = None
    """The container image, as written."""
    role: str | None = None
    """``prefill`` or ``decode`` when the resource says so."""
    parallelism: Mapping[str, int] = field(default_factory=dict)
    """What the resource says about the engine's size: ``gpus`` (requested per pod),
    ``tensor``, ``data``, ``data_local``, ``pipeline``, ``nodes``, ``replicas``."""
    model_uri: str | None = None
    """Where the platform fetches the model from, when it is not in ``argv``
    (``hf://org/name``, ``pvc://...``, ``s3://...``)."""
    speculator_uri: str | None = None
    """Where the platform fetches the speculator (draft) model from, when the
    ``--speculative-config`` model is its local mount (KServe's ``spec.speculator``)."""
    mounts: tuple[tuple[str, str], ...] = ()
    """(path in the container, folder on this machine) of bind mounts (docker-compose)."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Options the launcher sets when the arguments leave them unset (``dynamo.vllm``:
    ``block-size`` 16), by destination with dashes."""
    base: str = "."
    """Folder that relative paths in ``argv`` are relative to (the file's folder)."""
    notes: tuple[Note, ...] = ()
    """What the reader could not know, or what vLLM will do that the text hides."""

    def to_json(self) -> dict[str, Any]:
        """A plain mapping (golden files, ``--format json``); empty fields left out."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name == "notes":
                value = [
                    {k: v for k, v in (("kind", n.kind), ("message", n.message),
                                       ("line", n.line), ("key", n.key)) if v not in ("", None)}
                    for n in value
                ]  # fmt: skip
            elif isinstance(value, tuple):
                value = [list(v) if isinstance(v, tuple) else v for v in value]
            elif isinstance(value, Mapping):
                value = dict(value)
            if value in ((), [], {}, None) and name not in ("argv", "line"):
                continue
            out[name] = value
        return out

    def __post_init__(self) -> None:
        from kvconfig.secrets import remember_env

        remember_env(self.env)


_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
#: python's own options that take a value (before ``-m``).
_PYTHON_VALUED = frozenset({"-W", "-X", "-Q", "-c"})


GRPC_SERVERS = frozenset({"vllm.entrypoints.grpc_server", "vllm.entrypoints.launchers.grpc_server"})
"""vLLM's gRPC server: ``--host``, ``--port`` and the engine's arguments (``--model`` an
option) on a ``FlexibleArgumentParser`` (``vllm/entrypoints/launchers/grpc_server.py``,
``main``; ``vllm.entrypoints.grpc_server`` re-exports it). Read with the ``api_server``
rules, whose table also holds the HTTP front end's options the gRPC parser lacks."""


def server_start(words: Sequence[str]) -> tuple[str, str, list[str]] | None:
    """(entry, parser, argv) when ``words`` start a vLLM server, else None.

    Recognised: ``vllm serve`` (any path to the ``vllm`` script; LMCache v0's
    ``lmcache_vllm serve``), ``vllm-rs serve``
    (vLLM's Rust frontend, ``kvconfig.load.vllm_rs``),
    ``python -m vllm.entrypoints.openai.api_server``, ``python -m vllm.entrypoints.cli.main
    serve``, vLLM's gRPC server (``GRPC_SERVERS``), ``python -m dynamo.vllm`` (the
    arguments Dynamo passes on are split out by ``kvconfig.load.dynamo``), each optionally
    under ``uv run``, and any of the Python modules through vLLM-MindSpore's
    ``python -m vllm_mindspore.entrypoints MODULE ARGS``.
    """
    w = list(words)
    if len(w) >= 2 and os.path.basename(w[0]) == "uv" and w[1] == "run":
        w = w[2:]
        while w and w[0].startswith("-"):
            option = w.pop(0)
            if option in ("--with", "--python", "--project", "--directory", "-p") and w:
                w.pop(0)
    if not w:
        return None
    head = os.path.basename(w[0])
    if head == "vllm-rs" and w[1:2] == ["serve"]:
        return "vllm-rs serve", "vllm-rs", w[2:]  # kvconfig.load.vllm_rs
    if head == "vllm" or (head == "lmcache_vllm" and w[1:2] == ["serve"]):
        # lmcache_vllm: LMCache v0's console script, vLLM's own CLI main once LMCache is
        # injected (LMCache/lmcache-vllm lmcache_vllm/script.py)
        if len(w) >= 2 and w[1] == "serve":
            return "vllm serve", "serve", w[2:]
        return None
    if _PYTHON.match(head):
        i = 1
        while i < len(w) and w[i].startswith("-") and w[i] != "-m":
            i += 2 if w[i] in _PYTHON_VALUED else 1
        if i + 1 < len(w) and w[i] == "-m":
            module, rest = w[i + 1], w[i + 2 :]
            if module == "vllm_mindspore.entrypoints" and rest:
                # vLLM-MindSpore's launcher runs the module it names as __main__, with
                # "import vllm_mindspore" put first, on the words after it
                # (mindspore-ai/vllm-mindspore vllm_mindspore/entrypoints/__main__.py)
                module, rest = rest[0], rest[1:]
            if module == "vllm.entrypoints.openai.api_server":
                return "api_server", "api_server", rest
            if module == "vllm.entrypoints.api_server":  # the demo server (argv: its release)
                return "demo api_server", "demo_api_server", rest
            if module in GRPC_SERVERS:
                return "grpc_server", "api_server", rest
            if module == "vllm.entrypoints.cli.main" and rest[:1] == ["serve"]:
                return "vllm serve", "serve", rest[1:]
            if module == "dynamo.vllm":
                return "dynamo.vllm", "api_server", rest
    return None


def starts_something_else(words: Sequence[str]) -> bool:
    """Whether ``words`` run vLLM for something other than serving (``vllm bench``)."""
    return bool(words) and os.path.basename(words[0]) == "vllm"
