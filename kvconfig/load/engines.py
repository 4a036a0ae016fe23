"""Engines in the files operators keep their vLLM arguments in.

A Kubernetes manifest (``helm template`` and ``kubectl kustomize`` output included), the
values of the vLLM production-stack and llm-d modelservice charts, a KServe
``LLMInferenceService``, an NVIDIA Dynamo ``DynamoGraphDeployment``, a docker-compose
file, a SkyPilot task, a Ray Serve LLM config and a launch script (``#!/bin/bash``) each
start one or more vLLM engines. ``engines_in`` finds them: one ``Engine`` per vLLM
server, with the arguments vLLM's ``vllm serve`` parser would receive, the environment,
the GPU the resource asks for and the vLLM version its image names. What a file leaves
to run time (a Secret's value, a command substitution) is listed as unknown, never
guessed.

docs/inputs.md says which fields each reader reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError, NoEngine
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.documents import (
    MAX_MANIFEST_BYTES,
    is_operator_file,
    kind_of,
    load_documents,
    never_pods,
    read_file,
    read_stream,
)
from kvconfig.load.operator_engine import Engine, Note, server_start, starts_something_else

#: ``MAX_MANIFEST_BYTES``, ``read_stream``, ``kind_of`` and ``is_operator_file``
#: (``kvconfig.load.documents``) are also read from here.
__all__ = [
    "MAX_MANIFEST_BYTES",
    "Engine",
    "Note",
    "engines_in",
    "engines_of",
    "is_operator_file",
    "kind_of",
    "read_file",
    "read_stream",
    "server_start",
    "starts_something_else",
]


def engines_in(
    text_or_path: str | Path,
    source: str,
    *,
    env: Mapping[str, str] | None = None,
    base: Path | None = None,
    path: Path | None = None,
) -> list[Engine]:
    """Every vLLM engine in an operator file: a path, or the text itself (stdin).

    ``env`` is the environment for docker-compose interpolation beyond the ``.env`` file
    beside it (the caller decides whether that is ``os.environ``). ``base`` is the folder
    relative paths are taken from (default: the file's folder, or the working folder
    for text). ``path`` is the file the text came from, for a launch script (its
    ``$0``; None: standard input). Raises InputError (one line) for anything that
    cannot be read, and when no vLLM engine is found.
    """
    if isinstance(text_or_path, Path):
        text = read_file(text_or_path, source)
        folder = base or text_or_path.resolve().parent
    else:
        text = text_or_path
        folder = base or Path.cwd()
    from kvconfig.load import script_file

    if script_file.script_dialect(text, source) is not None:
        path = text_or_path if isinstance(text_or_path, Path) else path
        return script_file.engines(text, source, folder, env, path)
    docs, skipped = load_documents(text, source)
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
    configs = {
        str(d.data["metadata"]["name"]): d.data.get("spec")
        for d in docs
        if isinstance(d.data, dict)
        and d.data.get("kind") == "LLMInferenceServiceConfig"
        and isinstance(d.data.get("metadata"), dict)
        and "name" in d.data["metadata"]
    }
    from kvconfig.load.kubernetes import kustomize

    if len(docs) == 1 and kustomize.is_kustomization(docs[0].data):
        built = kustomize.build(docs[0].data, folder, source)
        return engines_of(built, source, folder, env=env)
    from kvconfig.load.kubernetes import workloads
    from kvconfig.load.kubernetes.resources import config_maps, resources_of

    maps = config_maps(resources_of(docs))
    kept = [d for d in docs if not _no_pods(d.data)]
    skipped = [  # a ConfigMap is read for the pods' env, and counted skipped already
        *skipped,
        *(
            str(d.data["kind"])
            for d in docs
            if _no_pods(d.data) and d.data.get("kind") != "ConfigMap"
        ),
    ]
    docs = kept
    if not docs:
        if skipped:
            raise NoEngine(
                f"no vLLM container found: the input holds only {_kinds(skipped)}",
                source=source,
                hint="pass the manifest of the Deployment (Pod, StatefulSet, ...) that runs vLLM",
            )
        raise NoEngine("the input is empty", source=source, hint="pass a manifest or a file")
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
        return workloads.engines(docs, folder, skipped, text, configs, given=env, maps=maps)
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
    if kind in _NOT_ENGINES:
        error, message, key, hint = _NOT_ENGINES[kind]
        line = doc.lines.get((key,)) or 1
        raise error(message, source=source, line=line, key=key, hint=hint)
    reader: Callable[..., list[Engine]]
    if kind == "production-stack":
        from kvconfig.load.helm.production_stack import production_stack as reader
    elif kind == "vllm-chart":
        from kvconfig.load.helm.vllm_chart import vllm_chart as reader
    elif kind == "inference-charts":
        from kvconfig.load.helm.inference_charts import inference_charts as reader
    elif kind == "opea":
        from kvconfig.load.helm.opea import opea as reader
    elif kind == "semantic-router":
        from kvconfig.load.helm.semantic_router import semantic_router as reader
    elif kind == "kv-cache-setup":
        from kvconfig.load.helm.kv_cache_setup import kv_cache_setup as reader
    elif kind == "llm-d":
        from kvconfig.load.helm.llm_d import llm_d as reader
    elif kind == "compose":
        from kvconfig.load.compose import engines as reader
    elif kind == "skypilot":
        from kvconfig.load.skypilot import engines as reader
    elif kind == "ascend-nightly":
        from kvconfig.load.ascend_nightly import engines as reader
    elif kind == "llm-d-benchmark":
        from kvconfig.load.llmd_benchmark import engines as reader
    elif kind == "kvcached-controller":
        from kvconfig.load.kvcached_controller import engines as reader
    elif kind == "dynamo-sdk":
        from kvconfig.load.dynamo_sdk import engines as reader
    else:
        from kvconfig.load.rayserve import engines as reader
    charts = ("production-stack", "vllm-chart", "inference-charts", "opea", "semantic-router")
    if kind in ("compose", "llm-d", "kv-cache-setup", "llm-d-benchmark", *charts):
        return reader(doc, folder, env or {})
    return reader(doc, folder)


_NOT_ENGINES: dict[str, tuple[type[InputError], str, str, str]] = {
    "endpoint-picker": (
        InputError,
        "the values of the Inference Extension's endpoint-picker chart "
        "(inferenceExtension) configure a router, not a vLLM engine",
        "inferenceExtension",
        "lint the model servers' values or manifest; a router in another file than "
        "its engines is not read yet",
    ),
    "helm-chart": (
        NoEngine,
        "no vLLM engine: a Helm chart's Chart.yaml names the chart and its dependencies; "
        "it deploys nothing",
        "apiVersion",
        "lint the chart's values file, or `helm template` output",
    ),
    "vllm-recipe": (
        NoEngine,
        "no vLLM engine: a vLLM recipe (meta, model, variants, strategies) is the input "
        "of the recipes site, which builds a vllm serve command from it for the hardware, "
        "variant and features a reader picks (src/lib/command-synthesis.js)",
        "meta",
        "lint the command the recipe's page shows: kvconfig lint -- vllm serve ...",
    ),
    "helm-unittest": (
        NoEngine,
        "no vLLM engine: a helm-unittest suite (suite, templates, tests with asserts) "
        "renders the chart once per test with that test's values and checks the output; "
        "it deploys nothing",
        "tests",
        "lint the chart's values file, or `helm template` output rendered with the "
        "values you deploy",
    ),
}
"""Files kvconfig knows that start no engine: (error, message, key, hint)."""


def refusal(engine: Engine) -> str | None:
    """Why vLLM's parser refuses the engine's command (the server exits with status 2 and
    never starts), or None when it takes it (``kvconfig.load.reading.reading_of``)."""
    from kvconfig.load.reading import reading_of

    said = reading_of(engine).unreadable
    if said is None:
        return None
    return said.removeprefix(f"{engine.source}: ")  # the report names the file already


def _no_pods(data: Any) -> bool:
    """A Kubernetes resource that never holds a pod template (skipped unbuilt)."""
    return isinstance(data, dict) and never_pods(data.get("kind"), data.get("apiVersion"))


def _kinds(kinds: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for k in kinds:
        counts[k] = counts.get(k, 0) + 1
    return ", ".join(f"{n} {k}" if n > 1 else k for k, n in counts.items())
