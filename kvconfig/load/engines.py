"""Engines in the files operators keep their vLLM arguments in.

A Kubernetes manifest (``helm template`` and ``kubectl kustomize`` output included), the
values of the vLLM production-stack and llm-d modelservice charts, a KServe
``LLMInferenceService``, an NVIDIA Dynamo ``DynamoGraphDeployment``, a docker-compose
file, a SkyPilot task and a Ray Serve LLM config each start one or more vLLM engines.
``engines_in`` finds them: one ``Engine`` per vLLM server, with the arguments vLLM's
``vllm serve`` parser would receive, the environment, the GPU the resource asks for and
the vLLM version its image names. What a file leaves to run time (a Secret's value, a
command substitution) is listed as unknown, never guessed.

docs/inputs.md says which fields each reader reads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.documents import (
    _NO_PODS,
    MAX_MANIFEST_BYTES,
    load_documents,
    read_file,
    read_stream,
)

#: ``MAX_MANIFEST_BYTES`` and ``read_stream`` are also read from here
#: (``kvconfig.load.sources``).
__all__ = [
    "MAX_MANIFEST_BYTES",
    "Engine",
    "Note",
    "engines_in",
    "engines_of",
    "is_operator_file",
    "kind_of",
    "read_stream",
    "server_start",
    "starts_something_else",
]


@dataclass(frozen=True, slots=True)
class Note:
    """Something a reader could not know, or that vLLM does differently from what the
    file suggests. The loader turns notes into findings or errors."""

    kind: str
    """``unknown-value`` (a word vLLM receives is not known until run time),
    ``unknown-vllm-version``, ``vllm-version-unsaid``, ``unknown-gpu``,
    ``several-gpus``, ``preferred-gpu``, ``launcher-default``, ``unset-variable``,
    ``not-read``."""
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
    (``python -m vllm.entrypoints.openai.api_server``), ``image entry point``
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
    """The vLLM release the image tag (or a pinned install) names, e.g. ``0.33.0``."""
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


FORMATS = (
    "kubernetes", "production-stack", "llm-d", "compose", "skypilot", "rayserve",
)  # fmt: skip


def kind_of(data: Any) -> str | None:
    """Which operator format a parsed document is, or None (a ``vllm serve`` config, a
    native kvconfig file, or something else)."""
    if not isinstance(data, dict) or "kvconfig" in data:
        return None
    if isinstance(data.get("apiVersion"), str) and isinstance(data.get("kind"), str):
        return "kubernetes"
    if isinstance(data.get("servingEngineSpec"), dict):
        return "production-stack"
    if "modelArtifacts" in data or any(
        isinstance(data.get(k), dict) and "containers" in data[k] for k in ("decode", "prefill")
    ):
        return "llm-d"
    services = data.get("services")
    if isinstance(services, dict) and any(
        isinstance(v, dict) and {"image", "build", "command", "entrypoint"} & v.keys()
        for v in services.values()
    ):
        return "compose"
    if (
        isinstance(data.get("applications"), list)
        or "llm_configs" in data
        or "model_loading_config" in data
        or {"prefill_config", "decode_config"} <= data.keys()
    ):
        return "rayserve"
    resources = data.get("resources")
    if (
        isinstance(data.get("run"), str)
        or isinstance(data.get("setup"), str)
        or (isinstance(resources, (dict, list)) and not isinstance(data.get("model"), str))
        or isinstance(data.get("envs"), dict)
        or "num_nodes" in data
    ):
        return "skypilot"
    return None


def is_operator_file(data: Any) -> bool:
    """Whether a parsed YAML document is an operator file (Kubernetes, chart values,
    compose, SkyPilot, Ray Serve) rather than a ``vllm serve --config`` file (a flat
    mapping of serve options) or a native kvconfig file (``kvconfig: 1``)."""
    return kind_of(data) is not None


def engines_in(
    text_or_path: str | Path,
    source: str,
    *,
    env: Mapping[str, str] | None = None,
    base: Path | None = None,
) -> list[Engine]:
    """Every vLLM engine in an operator file: a path, or the text itself (stdin).

    ``env`` is the environment for docker-compose interpolation beyond the ``.env`` file
    beside it (the caller decides whether that is ``os.environ``). ``base`` is the folder
    relative paths are taken from (default: the file's folder, or the working folder
    for text). Raises InputError (one line) for anything that cannot be read, and when
    no vLLM engine is found.
    """
    if isinstance(text_or_path, Path):
        text = read_file(text_or_path, source)
        folder = base or text_or_path.resolve().parent
    else:
        text = text_or_path
        folder = base or Path.cwd()
    docs, skipped = load_documents(text, source, merge_keys=_looks_like_compose(text))
    return engines_of(docs, source, folder, skipped=skipped, text=text, env=env)


def engines_of(
    docs: Sequence[_yaml.Document],
    source: str,
    folder: Path,
    *,
    skipped: Sequence[str] = (),
    text: str = "",
    env: Mapping[str, str] | None = None,
) -> list[Engine]:
    """Every vLLM engine of an operator file's parsed documents (``engines_in``, for a
    caller that has parsed the file already); ``text`` is the file's text (for the
    lines of block scalars)."""
    kept = [d for d in docs if not _no_pods(d.data)]
    skipped = [*skipped, *(str(d.data["kind"]) for d in docs if _no_pods(d.data))]
    docs = kept
    if not docs:
        if skipped:
            raise InputError(
                f"no vLLM container found: the input holds only {_kinds(skipped)}",
                source=source,
                hint="pass the manifest of the Deployment (Pod, StatefulSet, ...) that runs vLLM",
            )
        raise InputError("the input is empty", source=source, hint="pass a manifest or a file")
    kinds = [kind_of(d.data) for d in docs]
    if len(docs) > 1 or kinds[0] == "kubernetes":
        for doc, kind in zip(docs, kinds, strict=False):
            if kind != "kubernetes":
                raise InputError(
                    "expected a Kubernetes resource (apiVersion and kind) in every document "
                    "of a multi-document file",
                    source=source,
                    line=doc.lines.get(()),
                    hint="keep one document per file for chart values, compose, SkyPilot "
                    "and Ray Serve files",
                )
        from kvconfig.load.kubernetes import workloads

        return workloads.engines(docs, folder, skipped, text)
    kind = kinds[0]
    doc = docs[0]
    if kind is None:
        raise InputError(
            "not an operator file kvconfig knows",
            source=source,
            line=1,
            hint="expected a Kubernetes manifest, production-stack or llm-d values, "
            "docker-compose, SkyPilot or Ray Serve file (docs/inputs.md)",
        )
    reader: Callable[..., list[Engine]]
    if kind == "production-stack":
        from kvconfig.load.helm.production_stack import production_stack as reader
    elif kind == "llm-d":
        from kvconfig.load.helm.llm_d import llm_d as reader
    elif kind == "compose":
        from kvconfig.load.compose import engines as reader
    elif kind == "skypilot":
        from kvconfig.load.skypilot import engines as reader
    else:
        from kvconfig.load.rayserve import engines as reader
    if kind == "compose":
        return reader(doc, folder, env or {})
    return reader(doc, folder)


def _no_pods(data: Any) -> bool:
    """A Kubernetes resource that never holds a pod template (skipped unbuilt)."""
    if not isinstance(data, dict) or "apiVersion" not in data:
        return False
    kind = data.get("kind")
    return isinstance(kind, str) and kind in _NO_PODS


def _looks_like_compose(text: str) -> bool:
    return bool(re.search(r"^services:\s*$", text, re.M)) and "apiVersion:" not in text


def _kinds(kinds: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for k in kinds:
        counts[k] = counts.get(k, 0) + 1
    return ", ".join(f"{n} {k}" if n > 1 else k for k, n in counts.items())


_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
#: python's own options that take a value (before ``-m``).
_PYTHON_VALUED = frozenset({"-W", "-X", "-Q", "-c"})


def server_start(words: Sequence[str]) -> tuple[str, str, list[str]] | None:
    """(entry, parser, argv) when ``words`` start a vLLM server, else None.

    Recognised: ``vllm serve`` (any path to the ``vllm`` script),
    ``python -m vllm.entrypoints.openai.api_server``, ``python -m vllm.entrypoints.cli.main
    serve``, ``python -m dynamo.vllm`` (the arguments Dynamo passes on are split out by
    ``kvconfig.load.dynamo``), each optionally under ``uv run``.
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
    if head == "vllm":
        if len(w) >= 2 and w[1] == "serve":
            return "vllm serve", "serve", w[2:]
        return None
    if _PYTHON.match(head):
        i = 1
        while i < len(w) and w[i].startswith("-") and w[i] != "-m":
            i += 2 if w[i] in _PYTHON_VALUED else 1
        if i + 1 < len(w) and w[i] == "-m":
            module, rest = w[i + 1], w[i + 2 :]
            if module == "vllm.entrypoints.openai.api_server":
                return "api_server", "api_server", rest
            if module == "vllm.entrypoints.cli.main" and rest[:1] == ["serve"]:
                return "vllm serve", "serve", rest[1:]
            if module == "dynamo.vllm":
                return "dynamo.vllm", "api_server", rest
    return None


def starts_something_else(words: Sequence[str]) -> bool:
    """Whether ``words`` run vLLM for something other than serving (``vllm bench``)."""
    return bool(words) and os.path.basename(words[0]) == "vllm"
