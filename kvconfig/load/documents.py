"""An operator file read and parsed: its size cap, unrendered templates, its YAML documents,
and which operator format a document is (``kind_of``: a ``vllm serve`` config is none, and
is read without importing the operator readers)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from kvconfig.errors import DuplicateKey, InputError
from kvconfig.load import jsontext
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.kubernetes import kthena_cli

MAX_MANIFEST_BYTES = 16 * 1024 * 1024
"""Largest operator file kvconfig reads (16 MiB; ``helm template`` of a large chart is a
few MiB, most of it resources without a vLLM container)."""


def read_stream(stream: BinaryIO, source: str = "<stdin>", limit: int = MAX_MANIFEST_BYTES) -> str:
    """Text from a stream (standard input), at most ``limit`` bytes."""
    try:
        raw = stream.read(limit + 1)
    except (OSError, ValueError) as err:  # closed, not readable, a device error
        raise InputError(
            f"cannot read: {getattr(err, 'strerror', None) or err}",
            source=source,
            hint="pipe the deployment into kvconfig, or pass its file",
        ) from None
    if len(raw) > limit:
        raise InputError(
            f"is over {limit} bytes; kvconfig reads at most {limit} bytes",
            source=source,
            hint="pass fewer resources, e.g. helm template --show-only templates/FILE",
        )
    return _yaml.decode(raw, source, what="the input")


def read_file(path: Path, source: str, limit: int = MAX_MANIFEST_BYTES) -> str:
    """A file's text: regular files only, at most ``limit`` bytes, UTF-8."""
    return _yaml.decode(_yaml.read_bytes(path, source, limit, what="file"), source)


_TEMPLATE = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")


def unrendered(text: str) -> tuple[int, str] | None:
    """(line, expression) of the first Go template action ``{{ ... }}`` in ``text``."""
    m = _TEMPLATE.search(text)
    if m is None:
        return None
    return text.count("\n", 0, m.start()) + 1, m.group(0)


def template_error(source: str, line: int, action: str, key: str = "") -> InputError:
    """The error for a file (or value) that still holds Helm template actions."""
    shown = action if len(action) <= 40 else action[:37] + "..."
    return InputError(
        f"unrendered template {shown}: this is a Helm chart template, not what Kubernetes receives",
        source=source,
        line=line,
        key=key,
        hint="render it first: helm template RELEASE CHART -f values.yaml | kvconfig lint -",
    )


def last_key_wins(data: Any) -> bool:
    """Whether the runtime that reads a document keeps the last value of a key given twice:
    vLLM's ``--config`` reader (PyYAML's ``safe_load``), Helm's values (helm/helm#4107),
    SkyPilot and Ray Serve (PyYAML) do; kubectl ("mapping key already defined"), compose
    (compose-go on go-yaml v3) and kvconfig's own files refuse it."""
    native = isinstance(data, dict) and "kvconfig" in data
    return not native and kind_of(data) not in ("kubernetes", "compose")


def keeping_last(parse: Callable[[bool], list[_yaml.Document]]) -> list[_yaml.Document]:
    """``parse(False)``; on a key given twice, ``parse(True)`` (its last value kept) when
    the runtime of every document it gives keeps it (``last_key_wins``), else the error."""
    try:
        return parse(False)
    except DuplicateKey as dup:
        docs = parse(True)
        if not all(last_key_wins(d.data) for d in docs):
            raise dup from None
        return docs


def load_documents(text: str, source: str) -> tuple[list[_yaml.Document], list[str]]:
    """The YAML (or JSON) documents of an operator file, and the kinds of the Kubernetes
    resources skipped unbuilt because they never hold a pod template."""
    skipped: list[str] = []
    if "{{" in text:  # a Kthena CLI template is read as the CLI renders it
        text = kthena_cli.rendered(text) or text

    def worth_reading(top: Mapping[str, str]) -> bool:
        if never_pods(top.get("kind"), top.get("apiVersion")) and top.get("kind") not in _BASES:
            skipped.append(top["kind"])
            return top.get("kind") == "ConfigMap"  # skipped, but read for the pods' env
        return True

    try:

        def parse(last_wins: bool) -> list[_yaml.Document]:
            skipped.clear()
            return _yaml.parse_all(text, source, select=worth_reading, last_wins=last_wins)

        docs = keeping_last(parse)
    except InputError as err:
        found = unrendered(text)
        if found is not None:
            raise template_error(source, found[0], found[1]) from None
        if text.lstrip()[:1] in ("{", "["):
            try:
                data = jsontext.loads(text)
            except (json.JSONDecodeError, RecursionError):
                raise err from None
            return [_yaml.Document(source, data, {})], skipped
        raise
    return docs, skipped


#: Kubernetes kinds that never hold a pod template: skipped unbuilt. KServe's
#: ``ServingRuntime`` and ``ClusterServingRuntime`` hold containers, but only as a template
#: that KServe merges into the predictor pod of an ``InferenceService`` selecting it
#: (``MergeRuntimeContainers``, kserve/kserve pkg/controller/v1beta1/inferenceservice/utils/
#: utils.go, with ``{{.Name}}`` and the like filled per service): they run nothing alone.
_NO_PODS = frozenset(
    {
        "ConfigMap", "Secret", "Service", "ServiceAccount", "Role", "RoleBinding",
        "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace",
        "Ingress", "IngressClass", "NetworkPolicy", "PersistentVolume",
        "PersistentVolumeClaim", "StorageClass", "PriorityClass", "PodDisruptionBudget",
        "HorizontalPodAutoscaler", "LimitRange", "ResourceQuota", "Endpoints",
        "EndpointSlice", "HTTPRoute", "GRPCRoute", "Gateway", "GatewayClass",
        "ServiceMonitor", "PodMonitor", "PrometheusRule", "InferencePool", "InferenceModel",
        "InferenceObjective", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
        "APIService", "Certificate", "Issuer", "ClusterIssuer", "LLMInferenceServiceConfig",
        "ServingRuntime", "ClusterServingRuntime",
    }
)  # fmt: skip

_BASES = frozenset({"LLMInferenceServiceConfig"})


def never_pods(kind: Any, api_version: Any) -> bool:
    """A Kubernetes kind that never holds a pod template (``_NO_PODS``); Knative's
    ``Service`` (``serving.knative.dev``) is a workload whose ``spec.template`` is one."""
    if not isinstance(kind, str) or api_version is None or kind not in _NO_PODS:
        return False
    return not (kind == "Service" and str(api_version).startswith("serving.knative.dev/"))


"""Kinds that hold no pod of their own but are read as bases of other resources
(KServe's ``spec.baseRefs``): built, then skipped as engines."""


FORMATS = (
    "kubernetes", "production-stack", "vllm-chart", "inference-charts", "opea",
    "semantic-router", "kv-cache-setup", "llm-d", "compose", "skypilot", "rayserve",
    "ascend-nightly", "llm-d-benchmark", "kvcached-controller", "dynamo-sdk",
)  # fmt: skip


_SKYPILOT_TASK_KEYS = frozenset({
    "name", "workdir", "event_callback", "num_nodes", "resources", "file_mounts", "service",
    "pool", "setup", "run", "envs", "secrets", "managed_secrets", "inputs", "outputs",
    "file_mounts_mapping", "config", "volumes", "volume_mounts", "api_server_access",
    "_metadata", "experimental",
})  # fmt: skip
"""The keys a SkyPilot task may have: its schema refuses any other (``get_task_schema``
in ``sky/utils/schemas.py``, ``additionalProperties: False``; ``experimental`` from
releases before ``config``), so chart values with a ``resources`` key are no task."""


DYNAMO_SDK_SERVICES = frozenset({
    "Common", "Frontend", "Processor", "Router", "Planner", "SimpleLoadBalancer",
    "VllmWorker", "PrefillWorker", "VllmPrefillWorker", "VllmDecodeWorker",
    "VllmEncodeWorker", "SGLangWorker", "SGLangDecodeWorker", "TensorRTLLMWorker",
    "TensorRTLLMPrefillWorker",
})  # fmt: skip
"""The services of NVIDIA Dynamo 0.x SDK examples (the graphs under ``examples/*/graphs``),
the sections of their ``dynamo serve -f`` configs (``kvconfig.load.dynamo_sdk``)."""


def is_sdk_config(data: Mapping[str, Any]) -> bool:
    """Whether a document is a Dynamo SDK service config: every top-level value a mapping
    (or empty), a section named for an SDK service, and one with ``ServiceArgs`` or
    ``common-configs``."""
    sections = list(data.values())
    return (
        bool(sections)
        and all(v is None or isinstance(v, dict) for v in sections)
        and any(k in DYNAMO_SDK_SERVICES for k in data)
        and any(isinstance(v, dict) and ("ServiceArgs" in v or "common-configs" in v)
                for v in sections)
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
    image = data.get("image")
    if (
        isinstance(image, dict)
        and isinstance(image.get("command"), list)
        and any(k in data for k in ("extraInit", "gpuModels", "replicaCount", "containerPort"))
    ):
        # vLLM's own chart (kvconfig.load.helm.vllm_chart): the image.command list its
        # values.schema.json requires, beside keys only that chart has
        return "vllm-chart"
    from kvconfig.load.helm import kinds

    if kinds.is_inference_charts(data):
        return "inference-charts"  # AI on EKS's chart (kvconfig.load.helm.inference_charts)
    if kinds.is_semantic_router_dynamo(data):
        return "semantic-router"  # its Dynamo chart (kvconfig.load.helm.semantic_router)
    if kinds.is_kv_cache_setup(data):
        return "kv-cache-setup"  # llm-d-kv-cache's chart (kvconfig.load.helm.kv_cache_setup)
    if kinds.is_opea(data):
        return "opea"  # OPEA's vLLM chart, alone or as a subchart (kvconfig.load.helm.opea)
    cases = data.get("test_cases")
    if (
        isinstance(cases, list)
        and cases
        and all(isinstance(c, dict) and "model" in c and ("server_cmd" in c or
                "epd_server_cmds" in c) for c in cases)
    ):  # fmt: skip
        return "ascend-nightly"  # vLLM Ascend's single-node test configs (ascend_single)
    deployment = data.get("deployment")
    if (
        isinstance(deployment, list)
        and deployment
        and all(isinstance(d, dict) and "server_cmd" in d for d in deployment)
    ):
        return "ascend-nightly"  # vLLM Ascend's multi-node test configs (ascend_nightly)
    templates = data.get("templates")
    if (
        isinstance(templates, list)
        and templates
        and all(isinstance(t, dict) and "server_cmd_template" in t for t in templates)
    ):
        return "ascend-nightly"  # ... with one server per DP rank (ascend_external)
    instances = data.get("instances")
    if (
        isinstance(instances, list)
        and instances
        and all(isinstance(i, dict) and {"model", "engine"} <= i.keys() for i in instances)
    ):
        return "kvcached-controller"  # kvcached's controller/launch.py configs
    if is_sdk_config(data):
        return "dynamo-sdk"  # Dynamo 0.x's dynamo serve -f configs (kvconfig.load.dynamo_sdk)
    stacks = data.get("scenario")
    if (
        isinstance(stacks, list)
        and stacks
        and all(isinstance(s, dict) and "name" in s for s in stacks)
    ):
        return "llm-d-benchmark"  # its scenarios (kvconfig.load.llmd_benchmark)
    if "modelArtifacts" in data or any(
        isinstance(data.get(k), dict) and "containers" in data[k] for k in ("decode", "prefill")
    ):
        return "llm-d"
    if data.get("apiVersion") in ("v1", "v2") and {"name", "version"} <= data.keys():
        return "helm-chart"  # a chart's Chart.yaml (helm.sh/docs/topics/charts): no manifest
    model = data.get("model")
    if isinstance(data.get("meta"), dict) and isinstance(model, dict) and "model_id" in model:
        return "vllm-recipe"  # a model page of vllm-project/recipes (models/ORG/MODEL.yaml)
    if isinstance(data.get("inferenceExtension"), dict):
        return "endpoint-picker"  # the Inference Extension's EPP chart values: no model server
    tests = data.get("tests")
    if (
        isinstance(tests, list)
        and tests
        and all(isinstance(t, dict) and "asserts" in t for t in tests)
    ):
        return "helm-unittest"  # a helm-unittest suite (pkg/unittest/test_suite.go): no manifest
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
    if data.keys() <= _SKYPILOT_TASK_KEYS and (
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
