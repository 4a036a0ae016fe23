"""Values files of the two Helm charts that start vLLM engines, read as their templates
render them.

**vLLM production-stack** (``helm/templates/deployment-vllm-multi.yaml`` and, for
``raySpec``, ``ray-cluster.yaml`` in vllm-project/production-stack): one Deployment per
``servingEngineSpec.modelSpec[]`` entry, whose ``vllm`` container runs
``vllm serve MODEL_URL --host 0.0.0.0 --port PORT`` followed by the flags of the
entry's ``vllmConfig`` keys (``enablePrefixCaching`` always emits
``--enable-prefix-caching`` or ``--no-enable-prefix-caching``), its ``extraArgs`` as
written, then ``--revision``, the LMCache ``--kv-transfer-config`` and the chat template.

**llm-d modelservice** (``templates/_helpers.tpl`` in llm-d-incubation/llm-d-modelservice):
the ``decode`` and ``prefill`` sections, each a list of ``containers``. A container's
``modelCommand`` decides its command line: ``vllmServe`` (``vllm serve MODEL``),
``imageDefault`` (the image's entry point with ``--model MODEL``) or ``custom`` (its own
``command`` and ``args``, the default). The chart adds ``--port``, the parallelism flags
from ``parallelism`` and ``--served-model-name``, then the container's ``args``.

Other charts: render them first (``helm template ... | kvconfig lint -``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engines import Engine, check_words, mapping


def _go(value: Any) -> str:
    """A value as Go's template ``quote`` prints it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    return str(value)


def _truthy(value: Any) -> bool:
    """Go templates' truth: false, 0, nil and empty strings, lists and maps are false."""
    return bool(value)


class _Values:
    """A values file with the line of each key."""

    def __init__(self, doc: _yaml.Document) -> None:
        self.doc = doc

    def err(self, message: str, path: tuple[str | int, ...], key: str, hint: str) -> InputError:
        return InputError(
            message, source=self.doc.source, line=self.doc.line(*path), key=key, hint=hint
        )


def production_stack(doc: _yaml.Document, base: Path) -> list[Engine]:
    """One engine per enabled ``servingEngineSpec.modelSpec[]`` entry."""
    from kvconfig.load.kubernetes import Found, Pod, read_container

    values = _Values(doc)
    spec = doc.data["servingEngineSpec"]
    if spec.get("enableEngine") is False:
        raise values.err(
            "is false: the chart starts no vLLM engine",
            ("servingEngineSpec", "enableEngine"),
            "servingEngineSpec.enableEngine",
            "set enableEngine: true, or lint the values that enable it",
        )
    models = spec.get("modelSpec")
    if not isinstance(models, list) or not models:
        raise values.err(
            "no modelSpec entries: the chart starts no vLLM engine",
            ("servingEngineSpec",),
            "servingEngineSpec.modelSpec",
            "add a modelSpec entry with name, repository, tag and modelURL",
        )
    port = str(spec.get("containerPort") or 8000)
    out: list[Engine] = []
    found: list[Found] = []
    for i, ms in enumerate(models):
        path: tuple[str | int, ...] = ("servingEngineSpec", "modelSpec", i)
        if not isinstance(ms, dict):
            raise values.err(
                "expected a mapping",
                path,
                f"modelSpec[{i}]",
                "write name, repository, tag, modelURL",
            )
        if ms.get("enabled") is False:
            continue
        name = str(ms.get("name") or f"modelSpec[{i}]")
        label = f"modelSpec/{name}"
        for required in ("repository", "tag", "modelURL"):
            if not ms.get(required):
                raise values.err(
                    "missing: the chart refuses the values",
                    path,
                    f"{label}: {required}",
                    f"set modelSpec[{i}].{required}",
                )
        ray = isinstance(ms.get("raySpec"), dict) and _truthy(ms["raySpec"].get("enabled"))
        args = _stack_args(values, ms, path, label, port, ray)
        image = f"{ms['repository']}:{_go(ms['tag'])}"
        env = _stack_env(spec, ms)
        affinity = ms.get("affinity") if isinstance(ms.get("affinity"), dict) else None
        terms = ms.get("nodeSelectorTerms")
        if affinity is None and isinstance(terms, list) and not ms.get("nodeName"):
            affinity = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            }
        container = {
            "name": "vllm",
            "image": image,
            "command": ["vllm", "serve"],
            "args": args,
            "env": env,
            "envFrom": _stack_env_from(spec, ms),
        }
        pod_spec: dict[str, Any] = {"containers": [container]}
        if affinity is not None:
            pod_spec["affinity"] = affinity
        role = {"kv_producer": "prefill", "kv_consumer": "decode"}.get(
            str((ms.get("lmcacheConfig") or {}).get("kvRole", ""))
        )
        parallelism: dict[str, int] = {}
        gpus = ms.get("requestGPU")
        if isinstance(gpus, int) and not isinstance(gpus, bool):
            parallelism["gpus"] = gpus
        if isinstance(ms.get("replicaCount"), int):
            parallelism["replicas"] = ms["replicaCount"]
        shim = _ValuesShim(doc, path, pod_spec)
        pod = Pod(shim, (), label, role=role, parallelism=parallelism)  # type: ignore[arg-type]
        out.extend(read_container(pod, 0, base, found, entry_label="production-stack"))
    return out


_STACK_FLAGS = (
    ("maxModelLen", "--max-model-len"),
    ("dtype", "--dtype"),
    ("tensorParallelSize", "--tensor-parallel-size"),
    ("maxNumSeqs", "--max-num-seqs"),
    ("gpuMemoryUtilization", "--gpu_memory_utilization"),
    ("maxLoras", "--max_loras"),
    ("runner", "--runner"),
    ("convert", "--convert"),
)
_RAY_FLAGS = (
    ("maxModelLen", "--max-model-len"),
    ("dtype", "--dtype"),
    ("tensorParallelSize", "--tensor-parallel-size"),
    ("pipelineParallelSize", "--pipeline-parallel-size"),
    ("maxNumSeqs", "--max-num-seqs"),
    ("gpuMemoryUtilization", "--gpu-memory-utilization"),
    ("maxLoras", "--max-loras"),
)


def _stack_args(  # noqa: PLR0917 (the facts of one modelSpec entry)
    values: _Values,
    ms: Mapping[str, Any],
    path: tuple[str | int, ...],
    label: str,
    port: str,
    ray: bool,
) -> list[str]:
    """The words after ``vllm serve`` the chart writes for one modelSpec entry."""
    args = [_go(ms["modelURL"]), "--host", "0.0.0.0", "--port", port]
    if ray:
        args += ["--distributed-executor-backend", "ray"]
    if _truthy(ms.get("enableLoRA")):
        args.append("--enable-lora")
    if _truthy(ms.get("enableTool")):
        args.append("--enable-auto-tool-choice")
    if _truthy(ms.get("toolCallParser")):
        args += ["--tool-call-parser", _go(ms["toolCallParser"])]
    vc = ms.get("vllmConfig")
    if _truthy(vc) and isinstance(vc, dict):
        if "enableChunkedPrefill" in vc:
            on = _truthy(vc["enableChunkedPrefill"])
            args.append("--enable-chunked-prefill" if on else "--no-enable-chunked-prefill")
        if _truthy(vc.get("enablePrefixCaching")):
            args.append("--enable-prefix-caching")
        elif not ray:
            args.append("--no-enable-prefix-caching")
        for key, flag in _RAY_FLAGS if ray else _STACK_FLAGS:
            if key in vc:
                args += [flag, _go(vc[key])]
        extra = vc.get("extraArgs")
        if extra is not None and not isinstance(extra, list):
            raise values.err(
                f"expected a list of arguments, got {extra!r}",
                (*path, "vllmConfig", "extraArgs"),
                f"{label}: vllmConfig.extraArgs",
                'write extraArgs: ["--block-size", "64"]',
            )
        args += [_go(a) for a in extra or []]
    if _truthy(ms.get("modelRevision")):
        args += ["--revision", _go(ms["modelRevision"])]
    lm = ms.get("lmcacheConfig")
    if isinstance(lm, dict) and _truthy(lm.get("enabled")):
        kv_role = str(lm.get("kvRole") or "kv_both")
        v0 = isinstance(vc, dict) and _go(vc.get("v0")) == "1"
        if ray:
            connector = (
                "LMCacheConnectorV1"
                if isinstance(vc, dict) and _go(vc.get("v1")) == "1"
                else "LMCacheConnector"
            )
            config = f'{{"kv_connector":"{connector}","kv_role":"kv_both"}}'
        elif "enablePD" in lm:
            config = (
                f'{{"kv_connector":"LMCacheConnectorV1","kv_role":"{kv_role}",'
                f'"kv_connector_extra_config":{{"discard_partial_chunks": false, '
                f'"lmcache_rpc_port": "{_go(lm.get("nixlRole"))}"}}}}'
            )
        elif v0:
            config = f'{{"kv_connector":"LMCacheConnector","kv_role":"{kv_role}"}}'
        else:
            config = f'{{"kv_connector":"LMCacheConnectorV1","kv_role":"{kv_role}"}}'
        args += ["--kv-transfer-config", config]
    if _truthy(ms.get("chatTemplate")):
        template = _go(ms["chatTemplate"])
        args += ["--chat-template", template if ray else f"/templates/{template}"]
    check_words(args, values.doc.source, values.doc.line(*path), label)
    return args


def _stack_env(spec: Mapping[str, Any], ms: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``env`` list the chart gives the vllm container (LMCache's own variables left out)."""
    hf_home = "/data" if "pvcStorage" in ms else "/tmp"
    if isinstance(spec.get("sharedPvcStorage"), dict) and spec["sharedPvcStorage"].get("enabled"):
        hf_home = "/data/shared-pvc-storage"
    env: list[dict[str, Any]] = [
        {"name": "PYTHONHASHSEED", "value": "123"},
        {"name": "HF_HOME", "value": hf_home},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    vc = ms.get("vllmConfig")
    if _truthy(vc) and isinstance(vc, dict):
        if _go(vc.get("v0")) == "1":
            env.append({"name": "VLLM_USE_V1", "value": "0"})
        else:
            directory = _go(vc.get("prometheusMultiprocDir")) or "/tmp"
            env.append({"name": "PROMETHEUS_MULTIPROC_DIR", "value": directory})
    if _truthy(ms.get("hf_token")):
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {}}})
    if _truthy(spec.get("vllmApiKey")):
        env.append({"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {}}})
    for items in (spec.get("env"), ms.get("env")):
        if isinstance(items, list):
            env.extend(items)
    return env


def _stack_env_from(spec: Mapping[str, Any], ms: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if _truthy(spec.get("configs")):
        out.append({"configMapRef": {"name": "RELEASE-configs"}})
    secret = ms.get("envFromSecret")
    if isinstance(secret, dict):
        out.append({"secretRef": {"name": secret.get("name", "?")}})
    return out


class _ValuesShim:
    """A synthetic pod spec whose lines are those of a values file entry."""

    def __init__(
        self, doc: _yaml.Document, path: tuple[str | int, ...], pod_spec: dict[str, Any]
    ) -> None:
        self.doc = doc
        self.path = path
        self.data = pod_spec
        self.source = doc.source

    def line(self, *path: str | int) -> int | None:
        return self.doc.line(*self.path)

    def err(self, message: str, path: Any, key: str, hint: str) -> InputError:
        return InputError(message, source=self.source, line=self.line(), key=key, hint=hint)


# --------------------------------------------------------------------------- llm-d


def _model_arg(values: _Values, data: Mapping[str, Any]) -> tuple[str, str, dict[str, str]]:
    """(the model word, the URI, HF variables) of ``modelArtifacts``, as ``argsByProtocol``."""
    artifacts = mapping(data.get("modelArtifacts"))
    name = _go(artifacts.get("name"))
    uri = _go(artifacts.get("uri") or "hf://{{ .Values.modelArtifacts.name }}")
    uri = uri.replace("{{ .Values.modelArtifacts.name }}", name)
    mount = _go(artifacts.get("mountPath") or "/model-cache")
    protocol, sep, rest = uri.partition("://")
    if not sep:
        raise values.err(
            f"modelArtifacts.uri {uri!r} has no scheme",
            ("modelArtifacts", "uri"),
            "modelArtifacts.uri",
            "write hf://ORG/NAME or pvc://CLAIM/PATH",
        )
    hf: dict[str, str] = {}
    if protocol == "hf":
        model = rest
        hf["HF_HOME"] = mount
    elif protocol == "pvc":
        model = f"{mount}/{rest.split('/', 1)[1] if '/' in rest else ''}"
    elif protocol == "pvc+hf":
        parts = rest.split("/")
        model = "/".join(parts[-2:])
        hf["HF_HUB_CACHE"] = "/model-cache/" + "/".join(parts[1:-2])
    else:
        raise values.err(
            f"the chart does not implement {protocol}:// model URIs",
            ("modelArtifacts", "uri"),
            "modelArtifacts.uri",
            "use hf://, pvc:// or pvc+hf://",
        )
    return model, uri, hf


def _par(parallelism: Any) -> dict[str, int]:
    """Tensor, data, data-local parallelism and workers, as the chart's helpers compute them."""
    p = parallelism if isinstance(parallelism, dict) else {}

    def num(key: str) -> int:
        value = p.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    tensor = num("tensor") or 1
    data, local, workers = num("data"), num("dataLocal"), num("workers")
    dp = data or (local * workers if local and workers else local) or 1
    dpl = local or (data // workers if data and workers else data) or 1
    return {"tensor": tensor, "data": dp, "data_local": dpl, "workers": workers or 1}


def llm_d(doc: _yaml.Document, base: Path) -> list[Engine]:
    """The vLLM containers of llm-d modelservice values: ``decode`` and ``prefill``."""
    from kvconfig.load.kubernetes import Found, Pod, read_container

    data = doc.data
    values = _Values(doc)
    routing = mapping(data.get("routing"))
    proxy = mapping(routing.get("proxy"))
    artifacts = mapping(data.get("modelArtifacts"))
    out: list[Engine] = []
    found: list[Found] = []
    for role in ("decode", "prefill"):
        section = data.get(role)
        if not isinstance(section, dict) or section.get("create") is False:
            continue
        if section.get("replicas") == 0:
            continue
        containers = section.get("containers")
        if not isinstance(containers, list):
            continue
        par = _par(section.get("parallelism"))
        if role == "prefill" or proxy.get("enabled") is False:
            port = _go(routing.get("servicePort") or 8000)
        else:
            port = _go(proxy.get("targetPort") or 8200)
        for i, container in enumerate(containers):
            if not isinstance(container, dict):
                continue
            path: tuple[str | int, ...] = (role, "containers", i)
            label = f"{role}/{container.get('name') or 'vllm'}"
            mode = container.get("modelCommand") or "custom"
            synth = dict(container)
            synth.setdefault("name", "vllm")
            env = list(container.get("env") or [])
            model, uri, hf = _model_arg(values, data) if mode != "custom" else ("", "", {})
            if mode in ("vllmServe", "imageDefault"):
                words = [model] if mode == "vllmServe" else ["--model", model]
                words += ["--port", port]
                for key, flag in (
                    ("tensor", "--tensor-parallel-size"),
                    ("data", "--data-parallel-size"),
                    ("data_local", "--data-parallel-size-local"),
                ):
                    if par[key] > 1:
                        words += [flag, str(par[key])]
                words += ["--served-model-name", _go(artifacts.get("name"))]
                words += [_go(a) for a in container.get("args") or []]
                synth["args"] = words
                if mode == "vllmServe":
                    synth["command"] = ["vllm", "serve"]
                else:
                    synth.pop("command", None)
            elif mode == "custom":
                if not container.get("command"):
                    raise values.err(
                        "modelCommand is custom (the default) but the container has no command: "
                        "the chart refuses the values",
                        path,
                        label,
                        "set modelCommand: vllmServe, or give a command",
                    )
            else:
                raise values.err(
                    f"modelCommand {mode!r} is not vllmServe, imageDefault or custom",
                    (*path, "modelCommand"),
                    label,
                    "use vllmServe, imageDefault or custom",
                )
            env += [
                {"name": "DP_SIZE", "value": str(par["data"])},
                {"name": "TP_SIZE", "value": str(par["tensor"])},
                {"name": "DP_SIZE_LOCAL", "value": str(par["data_local"])},
            ]
            if container.get("mountModelVolume"):
                env += [{"name": k, "value": v} for k, v in hf.items()]
            if artifacts.get("authSecretName"):
                env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {}}})
            synth["env"] = env
            pod_spec: dict[str, Any] = {"containers": [synth]}
            selector = section.get("nodeSelector")
            if isinstance(selector, dict) and selector:
                pod_spec["nodeSelector"] = selector
            types = section.get("acceleratorTypes")
            if isinstance(types, dict) and types.get("labelKey") and types.get("labelValues"):
                pod_spec["affinity"] = {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{
                                    "key": types["labelKey"], "operator": "In",
                                    "values": types["labelValues"],
                                }]}
                            ]
                        }
                    }
                }  # fmt: skip
            extra = section.get("extraConfig")
            if isinstance(extra, dict):
                for key in ("nodeSelector", "affinity"):
                    if isinstance(extra.get(key), dict):
                        pod_spec[key] = extra[key]
            parallelism = {k: v for k, v in par.items() if v > 1}
            if data.get("multinode"):
                parallelism["nodes"] = par["workers"]
            if isinstance(section.get("replicas"), int):
                parallelism["replicas"] = section["replicas"]
            shim = _ValuesShim(doc, path, pod_spec)
            pod = Pod(shim, (), role, role=role, parallelism=parallelism)  # type: ignore[arg-type]
            for engine in read_container(
                pod, 0, base, found, implicit_entry=mode == "imageDefault", entry_label="llm-d"
            ):
                from dataclasses import replace

                out.append(replace(engine, name=label, model_uri=uri or None))
    if not out:
        raise InputError(
            "no vLLM container found in the decode or prefill sections",
            source=doc.source,
            line=1,
            hint="add decode.containers with modelCommand: vllmServe (docs/inputs.md)",
        )
    return out
