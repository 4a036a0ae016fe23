"""AI on EKS's inference chart (awslabs/ai-on-eks-charts ``charts/inference-charts``, its
templates as of commit 12babb5 and its ``_helpers.tpl`` as of 7c3e3d4): a values file,
merged over the chart's own ``values.yaml`` as ``helm install -f FILE`` merges it, read as
the chart's templates render it.

``inference.framework`` picks the template:

- ``vllm`` and ``aibrix`` (``templates/vllm-deployment.yaml``): one Deployment of
  ``inference.modelServer.deployment.replicas`` pods; its ``vllm`` container runs
  ``/bin/sh -c "vllm serve MODEL PARAMETERS"`` on ``image.repository:image.tag``, with
  ``inference.modelServer.env`` (sorted by name) and the GPU or Neuron resources of
  ``inference.accelerator``, on the ``node.kubernetes.io/instance-type`` of
  ``deployment.instanceType``. ``aibrix`` also labels the pods for AIBrix.
- ``lws-vllm`` (``templates/lws-deployment.yaml``): a LeaderWorkerSet of
  ``deployment.replicas`` groups of ``modelParameters.pipelineParallelSize`` pods. The
  leader joins the Ray cluster (vLLM's ``multi-node-serving.sh leader``) and then runs
  ``python3 -m vllm.entrypoints.openai.api_server --port 8080 --model MODEL PARAMETERS``;
  the workers only join the cluster.
- ``ray-vllm`` and ``triton-vllm`` start vLLM inside Ray Serve or Triton, from code the
  chart writes into a ConfigMap: not read here (render the chart and lint the output).
  ``diffusers`` and ``nim`` start no vLLM engine.

PARAMETERS is the chart's ``inference-charts.modelParameters`` helper: ``--KEY VALUE``
for each ``modelParameters`` key in sorted order (Go's ``range`` over a map), the key
kebab-cased (sprig's ``kebabcase``) and the value printed by ``%v``, a boolean as the bare
``--KEY`` when true and nothing when false (the helper before 7c3e3d4 printed ``--KEY
true``, which vLLM's parser refuses: no values file of that time holds a boolean);
``aibrix`` adds ``--served-model-name SERVICE``, a ``modelPath`` ``--served-model-name
MODEL``; ``vllm.loadFormat`` adds ``--load-format``; without a ``tensorParallelSize``
the helper adds ``--tensor-parallel-size`` from the GPU request (``nvidia.com/gpu``), or
twice the Neuron request on Neuron, and none on Graviton.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError, NoEngine
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import mapping
from kvconfig.load.helm.values import _go, _truthy, coalesce, values_at
from kvconfig.load.operator_engine import Engine

_GPU = "nvidia.com/gpu"
_NEURON = "aws.amazon.com/neuron"

#: The chart's values.yaml, the keys its vLLM templates read.
_DEFAULTS: dict[str, Any] = {
    "model": "NousResearch/Llama-3.2-1B",
    "modelParameters": None,
    "vllm": {"loadFormat": None, "logLevel": "debug", "port": 8004},
    "inference": {
        "serviceName": "inference",
        "serviceNamespace": "default",
        "accelerator": "gpu",
        "framework": None,
        "modelServer": {
            "image": {"repository": "vllm/vllm-openai", "tag": "latest"},
            "deployment": {
                "replicas": 1,
                "resources": {
                    "gpu": {"requests": {_GPU: 1}, "limits": {_GPU: 1}},
                    "neuron": {"requests": {_NEURON: 1}, "limits": {_NEURON: 1}},
                },
            },
            "env": {},
        },
    },
}

READ = ("vllm", "aibrix", "lws-vllm")
_NOT_VLLM = ("diffusers", "nim")


def kebab(key: str) -> str:
    """sprig's ``kebabcase`` (huandu/xstrings): words split at a lower-to-upper change and
    before the last capital of an acronym (``HTTPServer``: http-server), at ``_``, ``-``
    and blanks, joined by ``-`` in lower case; digits stay with the word before them."""
    spaced = re.sub(r"[_\s-]+", " ", key).strip()
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", spaced)
    spaced = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", " ", spaced)
    return "-".join(spaced.lower().split())


def parameters(values: Mapping[str, Any]) -> str:
    """The words the ``inference-charts.modelParameters`` helper prints."""
    params = mapping(values.get("modelParameters"))
    inference = mapping(values.get("inference"))
    args = []
    for key in sorted(params, key=str):
        value = params[key]
        if isinstance(value, bool):  # kindIs "bool": a flag when true, nothing when false
            args.extend([f"--{kebab(str(key))}"] if value else [])
        else:
            args.append(f"--{kebab(str(key))} {_go(value)}")
    if inference.get("framework") == "aibrix":
        args.append(f"--served-model-name {_go(inference.get('serviceName'))}")
    elif _truthy(values.get("modelPath")):
        args.append(f"--served-model-name {_go(values.get('model'))}")
    load_format = values_at(values, "vllm", "loadFormat")
    if _truthy(load_format):
        args.append(f"--load-format {_go(load_format)}")
    if not _truthy(params.get("tensorParallelSize")) and inference.get("accelerator") != "graviton":
        resources = values_at(values, "inference", "modelServer", "deployment", "resources")
        if inference.get("accelerator") == "neuron":
            count = values_at(resources, "neuron", "requests")
            neuron = mapping(count).get(_NEURON)
            # sprig's mul: each side made an int64 (0 for what is not a number)
            size = str(int(neuron) * 2) if isinstance(neuron, (int, float)) else "0"
        else:
            gpus = mapping(values_at(resources, "gpu", "requests")).get(_GPU)
            size = "<nil>" if gpus is None else _go(gpus)  # sprig's toString of nil
        args.append(f"--tensor-parallel-size {size}")
    return " ".join(args).removesuffix(" ")


def inference_charts(
    doc: _yaml.Document, base: Path, given: Mapping[str, str] | None = None
) -> list[Engine]:
    """The engines the chart renders from the values file ``doc``."""
    from kvconfig.load.kubernetes import workloads

    values = coalesce(_DEFAULTS, doc.data)
    inference = mapping(values.get("inference"))
    framework = inference.get("framework")
    line = doc.line("inference", "framework") or doc.line("inference")
    if framework in _NOT_VLLM:
        raise NoEngine(
            f"framework {framework!r} of the inference chart starts no vLLM engine",
            source=doc.source,
            line=line,
            key="inference.framework",
            hint=f"kvconfig reads the frameworks {', '.join(READ)}",
        )
    if framework not in READ:
        raise InputError(
            f"framework {_go(framework) or 'unset'!r} of the inference chart is not read "
            f"(kvconfig reads {', '.join(READ)})",
            source=doc.source,
            line=line,
            key="inference.framework",
            hint="render the chart (helm template ... -f FILE) and lint the output",
        )
    top = doc.line("model") or doc.line("inference") or 1
    at = (doc.source, doc.line("modelParameters") or top)
    rendered = _lws(values, at) if framework == "lws-vllm" else _deployment(values, at)
    lines: dict[_yaml.Path_, int] = {(): top}
    return workloads.engines([_yaml.Document(doc.source, rendered, lines)], base, given=given)


def _number(values: Mapping[str, Any], path: tuple[str, ...], at: tuple[str, int | None]) -> Any:
    """A count the template writes as ``KEY: {{ VALUE }}`` (unset: empty, YAML's null)."""
    value = values_at(values, *path)
    return None if value is None else _rendered(_go(value), *at, ".".join(path))


def _image(values: Mapping[str, Any]) -> str:
    image = mapping(values_at(values, "inference", "modelServer", "image"))
    return f"{_go(image.get('repository'))}:{_go(image.get('tag'))}"


def _resources(values: Mapping[str, Any], *, neuron: bool) -> Any:
    resources = values_at(values, "inference", "modelServer", "deployment", "resources")
    return mapping(resources).get("neuron" if neuron else "gpu")


def _node_selector(values: Mapping[str, Any]) -> dict[str, Any]:
    kind = values_at(values, "inference", "modelServer", "deployment", "instanceType")
    return {"nodeSelector": {"node.kubernetes.io/instance-type": _go(kind)}} if kind else {}


def _secret_token() -> dict[str, Any]:
    return {
        "name": "HUGGING_FACE_HUB_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
    }


def _deployment(values: Mapping[str, Any], at: tuple[str, int | None]) -> dict[str, Any]:
    """``templates/vllm-deployment.yaml``; ``at``: the values file and the line errors name."""
    inference = mapping(values.get("inference"))
    env = mapping(values_at(values, "inference", "modelServer", "env"))
    name = _go(inference.get("serviceName"))
    labels = {"app.kubernetes.io/component": name}
    if inference.get("framework") == "aibrix":
        labels["model.aibrix.ai/name"] = name
    neuron = inference.get("accelerator") != "gpu"
    container: dict[str, Any] = {
        "name": "vllm",
        "image": _image(values),
        "command": ["/bin/sh", "-c"],
        "args": [
            _rendered(
                f"vllm serve {_go(values.get('model'))} {parameters(values)}", *at, "the command"
            )
        ],
        "env": [{"name": str(k), "value": _go(env[k])} for k in sorted(env, key=str)]
        + [_secret_token()],
        "resources": _resources(values, neuron=neuron),
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": _go(inference.get("serviceNamespace"))},
        "spec": {
            "replicas": _number(values, ("inference", "modelServer", "deployment", "replicas"), at),
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container], **_node_selector(values)},
            },
        },
    }


def _lws(values: Mapping[str, Any], at: tuple[str, int | None]) -> dict[str, Any]:
    """``templates/lws-deployment.yaml``; ``at``: the values file and the line errors name."""
    inference = mapping(values.get("inference"))
    gpu = inference.get("accelerator") == "gpu"
    image = _image(values)
    leader = (
        "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader "
        "--ray_cluster_size=$(LWS_GROUP_SIZE); python3 -m vllm.entrypoints.openai.api_server "
        f"--port 8080 --model {_go(values.get('model'))} {parameters(values).strip()}"
    )
    worker = (
        "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker "
        "--ray_address=$(LWS_LEADER_ADDRESS)"
    )

    def pod(name: str, script: str, role: dict[str, Any]) -> dict[str, Any]:
        container: dict[str, Any] = {
            "name": name,
            "image": image,
            "command": ["sh", "-c", script],
            "env": [_secret_token()],
        }
        if gpu:
            container["resources"] = _resources(values, neuron=False)
        return {**role, "spec": {**_node_selector(values), "containers": [container]}}

    size = _number(values, ("modelParameters", "pipelineParallelSize"), at)
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": _go(inference.get("serviceName")),
            "namespace": _go(inference.get("serviceNamespace")),
        },
        "spec": {
            "replicas": _number(values, ("inference", "modelServer", "deployment", "replicas"), at),
            "leaderWorkerTemplate": {
                "size": size,
                "leaderTemplate": pod(
                    "vllm-leader", leader, {"metadata": {"labels": {"role": "leader"}}}
                ),
                "workerTemplate": pod("vllm-worker", worker, {}),
            },
        },
    }


def _rendered(text: str, source: str, line: int | None, what: str) -> Any:
    """What the template writes as a YAML plain scalar (``- vllm serve ...``,
    ``replicas: N``), as YAML reads it back: a `` #`` starts a comment there, ``: `` a
    mapping."""
    try:
        parsed = _yaml.parse(f"- {text}\n", source).data
    except InputError:
        parsed = None
    if not isinstance(parsed, list) or len(parsed) != 1:
        raise InputError(
            f"the chart renders {what} as {text!r}, which is not one YAML value",
            source=source,
            line=line,
            hint="quote the value that holds ': ' or ' #' in the values file",
        )
    return parsed[0]
