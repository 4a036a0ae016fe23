"""llmaz's ``Playground`` (``inference.llmaz.io/v1alpha1``): the pod its controller builds
from the ``OpenModel``s it claims and a ``BackendRuntime``.

llmaz (InftyAI/llmaz ``pkg/controller/inference/playground_controller.go``) fetches the
claimed models (``spec.modelClaim``, or ``spec.modelClaims.models``, the ``main`` role
first: ``helper.FetchModelsByPlayground``), takes the ``BackendRuntime`` named by
``spec.backendRuntimeConfig.backendName`` (default ``vllm``) and runs one container
``model-runner`` with the runtime's ``command`` and the arguments of one of its
``recommendedConfigs``: ``backendRuntimeConfig.configName``, else ``speculative-decoding``
when a model is claimed with the ``draft`` role and ``default`` otherwise
(``helper.DetectArgFrom``), each ``{{ .ModelPath }}``, ``{{ .ModelName }}`` and
``{{ .DraftModelPath }}`` filled in (``backendruntime.go``: ``renderFlags``), then
``backendRuntimeConfig.args``. The image is the runtime's ``image:version``
(``backendRuntimeConfig.version`` wins). A model from the Hub is loaded to
``/workspace/models/models--ORG--NAME`` (``modelsource/modelhub.go``; its ``filename``
when set; the Hub id itself with the ``llmaz.io/skip-model-loader`` annotation), one of
a ``uri`` to the loader's copy of its last element (a ``host://`` path as it is), its
name the ``OpenModel``'s. The replicas are ``spec.replicas`` (1 by default); the GPUs, the
limits of the main model's first inference flavor.

A ``BackendRuntime`` in the same input is used as written; without one, ``vllm`` is the
one llmaz's chart installs (``chart/templates/backends/vllm.yaml`` on
``vllm/vllm-openai:v0.7.3``, ``chart/values.global.yaml``). Another backend starts no
vLLM. A claimed model not in the input is only known in the cluster: the engine's words
are then only known at run time.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.load.engine_fields import listing, mapping
from kvconfig.load.kubernetes.resources import strings

if TYPE_CHECKING:
    from kvconfig.load.kubernetes.resources import Found, Resource
    from kvconfig.load.operator_engine import Engine

#: The ``vllm`` BackendRuntime llmaz's chart installs: its command, image and configs.
CHART_VLLM: dict[str, Any] = {
    "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
    "image": "vllm/vllm-openai",
    "version": "v0.7.3",
    "recommendedConfigs": [
        {"name": "default", "args": [
            "--model", "{{ .ModelPath }}", "--served-model-name", "{{ .ModelName }}",
            "--host", "0.0.0.0", "--port", "8080",
        ]},
        {"name": "speculative-decoding", "args": [
            "--model", "{{ .ModelPath }}", "--served-model-name", "{{ .ModelName }}",
            "--speculative_model", "{{ .DraftModelPath }}", "--host", "0.0.0.0",
            "--port", "8080", "--num_speculative_tokens", "5", "-tp", "1",
        ]},
    ],
}  # fmt: skip

MODELS_DIR = "/workspace/models/"
SKIP_LOADER = "llmaz.io/skip-model-loader"
_FIELD = re.compile(r"\{\{\s*\.(\w+)\s*\}\}")


def is_playground(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("kind") == "Playground"
        and str(data.get("apiVersion", "")).startswith("inference.llmaz.io/")
    )


def _named(resources: list[Resource], kind: str, group: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in resources:
        data = r.data
        if data.get("kind") == kind and str(data.get("apiVersion", "")).startswith(group):
            out[str(mapping(data.get("metadata")).get("name"))] = data
    return out


def _model_path(model: dict[str, Any], skip: bool) -> tuple[str, str | None]:
    """(the path the runtime loads the model from, its ``hf://`` URI when from the Hub)."""
    source = mapping(mapping(model.get("spec")).get("source"))
    hub = mapping(source.get("modelHub"))
    if hub.get("modelID"):
        model_id = str(hub["modelID"])
        uri = f"hf://{model_id}" if hub.get("name") in (None, "Huggingface") else None
        if skip:
            return model_id, uri
        if hub.get("filename"):
            return MODELS_DIR + str(hub["filename"]), uri
        return MODELS_DIR + "models--" + model_id.replace("/", "--"), uri
    return _uri_path(str(source.get("uri") or ""), skip), None


def _uri_path(uri: str, skip: bool) -> str:
    """Where a model of ``source.uri`` is loaded (``modelsource/uri.go``, the address
    parsed by ``pkg/util/uri.go``): a ``host://`` path as it is; the URI itself when the
    loader is skipped; else the loader's copy, ``/workspace/models/models--NAME`` for the
    address's last element (a ``.gguf`` file under its own name)."""
    protocol, sep, address = uri.partition("://")
    if not sep or "://" in address:
        return uri or "$(MODEL_PATH)"  # the webhook refuses it: only the cluster knows
    if protocol.upper() == "HOST":
        return address
    if skip:
        return uri
    if protocol.upper() == "OSS":  # <bucket>.<endpoint>/<modelPath>
        address = address.partition(".")[2]
    if protocol.upper() in ("OSS", "S3", "GCS"):
        address = address.partition("/")[2]
    last = address.split("/")[-1]
    return MODELS_DIR + (last if ".gguf" in address else "models--" + last)


def engines(
    res: Resource,
    resources: list[Resource],
    base: Path,
    found: list[Found],
    block_lines: frozenset[int],
) -> list[Engine]:
    """The engine of a Playground served by vLLM (none for its other backends)."""
    from kvconfig.load.dynamo import _Shim
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.resources import Pod

    data = res.data
    name = str(mapping(data.get("metadata")).get("name", "unnamed"))
    spec = mapping(data.get("spec"))
    config = mapping(spec.get("backendRuntimeConfig"))
    backend = str(config.get("backendName") or "vllm")
    runtimes = _named(resources, "BackendRuntime", "inference.llmaz.io/")
    runtime = mapping(runtimes[backend].get("spec")) if backend in runtimes else None
    if runtime is None:
        if backend != "vllm":
            return []  # another engine (sglang, llama.cpp, ...)
        runtime = CHART_VLLM
    claims = _claims(spec)
    models = _named(resources, "OpenModel", "llmaz.io/")
    missing = [m for m, _ in claims if m not in models]
    skip = mapping(mapping(data.get("metadata")).get("annotations")).get(SKIP_LOADER) == "true"
    fields: dict[str, str] = {}
    uri = None
    for model, role in claims:
        path, model_uri = (_model_path(models[model], skip) if model in models
                           else (f"$(OPENMODEL_{model})", None))  # fmt: skip
        if role == "main":
            fields.update(ModelPath=path, ModelName=model)
            uri = model_uri
        elif "DraftModelPath" not in fields:
            fields["DraftModelPath"] = path
    chosen = str(config.get("configName") or (
        "speculative-decoding" if any(r == "draft" for _, r in claims) else "default"
    ))  # fmt: skip
    recommended = [mapping(c) for c in listing(runtime.get("recommendedConfigs"))]
    match = next((c for c in recommended if c.get("name") == chosen), None)
    if match is None:
        raise res.err(
            f"the BackendRuntime {backend} has no recommended config {chosen!r}: llmaz's "
            "controller refuses the Playground",
            ("spec",), "backendRuntimeConfig", "name one of its recommendedConfigs",
        )  # fmt: skip
    args = [_FIELD.sub(lambda m: fields.get(m.group(1), m.group(0)), str(a))
            for a in listing(match.get("args"))]  # fmt: skip
    unfilled = next((m.group(0) for a in args if (m := _FIELD.search(a))), None)
    if unfilled is not None:  # renderFlags: "missing flag or the flag has format error"
        raise res.err(
            f"the {chosen} config of the BackendRuntime {backend} needs {unfilled}, which "
            "the Playground's models do not give: llmaz's controller refuses it",
            ("spec",), "modelClaim", "claim a main model (and a draft one for its draft path)",
        )  # fmt: skip
    args += strings(
        config.get("args"), res, ("spec", "backendRuntimeConfig", "args"), "backendRuntimeConfig"
    )
    env = [*listing(runtime.get("envs")), *listing(config.get("envs"))]
    version = config.get("version") or runtime.get("version") or "latest"
    container: dict[str, Any] = {
        "name": "model-runner",
        "image": f"{runtime.get('image')}:{version}",
        "command": list(listing(runtime.get("command"))),
        "args": args,
        "env": env,
    }
    main = models.get(claims[0][0]) if claims else None
    flavors = (
        mapping(mapping(main.get("spec")).get("inferenceConfig")).get("flavors") if main else None
    )
    if isinstance(flavors, list) and flavors and isinstance(flavors[0], dict):
        limits = mapping(flavors[0].get("limits"))
        if limits:
            container["resources"] = {"limits": dict(limits)}
    if missing:
        container["env"] = [*env, *({"name": f"OPENMODEL_{m}", "valueFrom": {
            "fieldRef": {"fieldPath": "metadata.name"}}} for m in missing)]  # fmt: skip
    shim = _Shim(res, ("spec",), {"containers": [container]}, ("spec",))
    replicas = spec.get("replicas")
    pod = Pod(
        shim,  # type: ignore[arg-type]
        (),
        f"Playground/{name}",
        parallelism={"replicas": replicas if isinstance(replicas, int) else 1},
        block_lines=block_lines,
    )
    return [replace(e, model_uri=uri) for e in read_container(pod, 0, base, found)]


def _claims(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(model name, role) of the claimed models, the main one first (``fetchModels``)."""
    claim = mapping(spec.get("modelClaim"))
    if claim.get("modelName"):
        return [(str(claim["modelName"]), "main")]
    out: list[tuple[str, str]] = []
    for raw in listing(mapping(spec.get("modelClaims")).get("models")):
        ref = mapping(raw)
        role = str(ref.get("role") or "main")
        item = (str(ref.get("name")), role)
        out = [item, *out] if role == "main" else [*out, item]
    return out
