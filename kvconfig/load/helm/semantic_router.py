"""vLLM Semantic Router's Dynamo chart (vllm-project/semantic-router
``deploy/kubernetes/dynamo/helm-chart``, chart ``dynamo-vllm``, as of commit 3d48f8c).

A values file is merged over the chart's ``values.yaml`` (``_DEFAULTS``, its keys the
templates read) as Helm merges it: a ``workers`` list replaces the chart's.
``templates/dynamo-graph-deployment.yaml`` then renders one v1alpha1
``DynamoGraphDeployment`` on ``image.repository:image.tag``:

* a ``Frontend`` service when ``frontend.enabled``, ``frontend.replicas`` copies, whose
  main container runs ``sh -c`` the ``dynamo-vllm.frontendCommand`` helper: ``sleep 15 &&
  export CUDA_VISIBLE_DEVICES=GPU && export LD_LIBRARY_PATH=... && python3 -m
  dynamo.frontend --http-port PORT --router-mode MODE``;
* one worker service per ``workers`` entry, named by ``name`` (default ``workerN``, or
  ``prefillworkerN``/``decodeworkerN`` for those types) without dashes and title-cased,
  ``replicas | default 1`` copies, a GPU by default, whose main container runs ``sh -c``
  the ``dynamo-vllm.workerCommand`` helper: ``... python3 -m dynamo.vllm --model PATH``,
  ``--tensor-parallel-size`` when set, ``--enforce-eager`` unless ``enforceEager`` is set
  false, ``--max-model-len`` and ``--gpu-memory-utilization`` (``%.2f``) when set,
  ``--is-prefill-worker`` for ``workerType: prefill``, ``--connector`` (default
  ``null``), then ``extraArgs``.

The rendered graph is read as any Dynamo graph (``kvconfig.load.dynamo``), and its routers
too (``kvconfig.load.routers``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import mapping
from kvconfig.load.helm.values import _go, coalesce, go_int

if TYPE_CHECKING:
    from kvconfig.load.operator_engine import Engine

_LIBS = "export LD_LIBRARY_PATH=/nvidia-driver-libs:/usr/local/cuda/lib64:$LD_LIBRARY_PATH"
_GPU = {"requests": {"gpu": "1"}, "limits": {"gpu": "1"}}

_DEFAULTS: dict[str, Any] = {
    "global": {"backendFramework": "vllm", "logLevel": "info"},
    "huggingface": {"token": "", "existingSecret": "", "existingSecretKey": "HF_TOKEN"},
    "image": {"repository": "nvcr.io/nvidia/ai-dynamo/vllm-runtime", "tag": "0.6.1.post1"},
    "frontend": {
        "enabled": True, "replicas": 1, "dynamoNamespace": "dynamo-vllm", "routerMode": "kv",
        "httpPort": 8000, "gpuDevice": 0, "extraEnv": [],
    },
    "workers": [
        {
            "name": f"{kind}-worker-{i}", "workerType": kind, "replicas": 1,
            "gpuDevice": i + 1, "connector": "null",
            "model": {
                "path": "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "tensorParallelSize": 1,
                "enforceEager": True, "maxModelLen": None, "gpuMemoryUtilization": 0.9,
                "extraArgs": [],
            },
            "resources": {"requests": {"gpu": "1"}, "limits": {"gpu": "1"}},
        }
        for i, kind in enumerate(("prefill", "decode"))
    ],
}  # fmt: skip
"""The chart's ``values.yaml``: the keys its templates read for the graph's services."""


def render(data: Mapping[str, Any]) -> dict[str, Any]:
    """The ``DynamoGraphDeployment`` the chart renders from the values ``data``."""
    values = coalesce(_DEFAULTS, dict(data))
    image = mapping(values.get("image"))
    ref = f"{_go(image.get('repository'))}:{_go(image.get('tag'))}"
    services: dict[str, Any] = {}
    frontend = mapping(values.get("frontend"))
    if frontend.get("enabled"):
        command = (
            f"sleep 15 && export CUDA_VISIBLE_DEVICES={go_int(frontend.get('gpuDevice'))} && "
            f"{_LIBS} && python3 -m dynamo.frontend --http-port "
            f"{go_int(frontend.get('httpPort'))} --router-mode {_s(frontend.get('routerMode'))}"
        )
        services["Frontend"] = _service(
            "frontend", frontend.get("replicas"), ref, command, frontend.get("extraEnv"), _GPU
        )
    workers = values.get("workers")
    for index, entry in enumerate(workers if isinstance(workers, list) else []):
        worker = mapping(entry)
        kind = worker.get("workerType") or "both"
        default = f"{kind}worker{index}" if kind in ("prefill", "decode") else f"worker{index}"
        name = _title(_go(worker.get("name") or default).replace("-", ""))
        env = [
            {"name": "DYNAMO_WORKER_MODEL", "value": _go(mapping(worker.get("model")).get("path"))},
            {"name": "DYNAMO_WORKER_TYPE", "value": _go(kind)},
            *(e for e in _list(worker.get("extraEnv")) if isinstance(e, dict)),
        ]
        resources = worker.get("resources")
        gpus = {
            side: {"gpu": _go(mapping(mapping(resources).get(side)).get("gpu") or "1")}
            for side in ("requests", "limits")
        }
        replicas = worker.get("replicas") or 1
        services[name] = _service(
            "worker",
            replicas,
            ref,
            _worker_command(worker, index),
            env,
            gpus if resources else _GPU,
        )
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "dynamo-vllm"},
        "spec": {"backendFramework": _go(mapping(values.get("global")).get("backendFramework")),
                 "services": services},
    }  # fmt: skip


def semantic_router(
    doc: _yaml.Document, base: Path, given: Mapping[str, str] | None = None
) -> list[Engine]:
    """The engines of the graph the chart renders from the values file ``doc``."""
    from kvconfig.load.kubernetes import workloads

    rendered = render(doc.data)
    lines: dict[_yaml.Path_, int] = {(): doc.line("workers") or 1}
    return workloads.engines([_yaml.Document(doc.source, rendered, lines)], base, given=given)


def _worker_command(worker: Mapping[str, Any], index: int) -> str:
    """The ``dynamo-vllm.workerCommand`` helper."""
    model = mapping(worker.get("model"))
    gpu = go_int(worker.get("gpuDevice") or index + 1)
    cmd = (
        f"sleep 15 && export CUDA_VISIBLE_DEVICES={gpu} && {_LIBS} && python3 -m dynamo.vllm "
        f"--model {_s(model.get('path'))}"
    )
    if model.get("tensorParallelSize"):
        cmd += f" --tensor-parallel-size {go_int(model['tensorParallelSize'])}"
    if model.get("enforceEager") if "enforceEager" in model else True:
        cmd += " --enforce-eager"
    if model.get("maxModelLen"):
        cmd += f" --max-model-len {go_int(model['maxModelLen'])}"
    memory = model.get("gpuMemoryUtilization")
    if memory:
        cmd += f" --gpu-memory-utilization {_two_places(memory)}"
    if worker.get("workerType") == "prefill":
        cmd += " --is-prefill-worker"
    cmd += f" --connector {_s(worker.get('connector') or 'null')}"
    for arg in _list(model.get("extraArgs")) if model else []:
        cmd += f" {_s(arg)}"
    return cmd


def _service(  # noqa: PLR0917 (one service of the template, field by field)
    kind: str, replicas: Any, image: str, command: str, env: Any, gpus: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "componentType": kind,
        "replicas": go_int(replicas) if isinstance(replicas, (int, float)) else replicas,
        "resources": dict(gpus),
        "extraPodSpec": {
            "mainContainer": {
                "image": image,
                "command": ["/bin/sh", "-c"],
                "args": [command],
                "env": [
                    {"name": str(e.get("name")), "value": _go(e.get("value"))}
                    for e in _list(env)
                    if isinstance(e, dict)
                ],
            }
        },
    }


def _s(value: Any) -> str:
    """``printf "%s"`` of a value: a string as it is, nil as Go prints it."""
    return "%!s(<nil>)" if value is None else _go(value)


def _two_places(value: Any) -> str:
    """``printf "%.2f"`` of a number (a string: Go's ``%!f(string=...)``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "string" if isinstance(value, str) else type(value).__name__
        return f"%!f({kind}={_go(value)})"
    return f"{float(value):.2f}"


def _title(text: str) -> str:
    """sprig's ``title`` (Go's ``strings.Title``): each letter after a separator (not a
    letter, digit or underscore) upper-cased."""
    return re.sub(r"(?:^|(?<=[^A-Za-z0-9_]))([a-z])", lambda m: m.group(1).upper(), text)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
