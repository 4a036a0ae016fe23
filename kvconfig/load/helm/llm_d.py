"""llm-d modelservice values: the engines of the ``decode``, ``prefill`` and ``encode``
containers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvconfig.errors import NoEngine, describe
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import LLM_D_SIMULATOR, listing, mapping
from kvconfig.load.helm.values import _go, _Values, _ValuesShim
from kvconfig.load.operator_engine import Engine


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
    return _rendered_word(model), uri, hf


def _rendered_word(text: str) -> str:
    """The argument a rendered list item ``- TEXT`` holds: ``argsByProtocol`` writes the
    model into the pod's YAML as it is, so YAML quoting in the values
    (``hf://"{{ .Values.modelArtifacts.name }}"``) is taken off when the manifest is read."""
    import yaml

    try:
        data = yaml.safe_load(f"- {text}")
    except yaml.YAMLError:
        return text
    item = data[0] if isinstance(data, list) and len(data) == 1 else None
    return text if item is None or isinstance(item, (dict, list)) else str(item)


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


def llm_d(
    doc: _yaml.Document,
    base: Path,
    given: Mapping[str, str] | None = None,
    *,
    idle: bool = False,
) -> list[Engine]:
    """The vLLM containers of llm-d modelservice values: ``decode``, ``prefill`` and
    ``encode`` (the chart's ``encode-deployment.yaml``, from v0.5.0: an encoder of
    encode/prefill/decode disaggregation, on ``routing.servicePort`` as prefill is, neither
    a prefill nor a decode engine). A section at ``replicas: 0`` is passed over, unless
    ``idle``: then it is the Deployment the chart creates scaled to 0 (``create`` true),
    read with 0 replicas (``kvconfig.load.llmd_benchmark``)."""
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.resources import Found, Pod

    data = doc.data
    values = _Values(doc)
    routing = mapping(data.get("routing"))
    proxy = mapping(routing.get("proxy"))
    artifacts = mapping(data.get("modelArtifacts"))
    out: list[Engine] = []
    skipped: list[str] = []
    found: list[Found] = []
    for role in ("decode", "prefill", "encode"):
        section = data.get(role)
        if not isinstance(section, dict) or section.get("create") is False:
            continue
        if section.get("replicas") == 0 and not idle:
            continue
        containers = section.get("containers")
        if not isinstance(containers, list):
            continue
        par = _par(section.get("parallelism"))
        if role != "decode" or proxy.get("enabled") is False:
            port = _go(routing.get("servicePort") or 8000)
        else:
            port = _go(proxy.get("targetPort") or 8200)
        for i, container in enumerate(containers):
            if not isinstance(container, dict):
                continue
            path: tuple[str | int, ...] = (role, "containers", i)
            label = f"{role}/{container.get('name') or 'vllm'}"
            mode = container.get("modelCommand") or "custom"
            for key in ("env", "args"):
                if container.get(key) is not None and not isinstance(container[key], list):
                    raise values.err(
                        f"{key}: expected a list, got {describe(container[key])}; the chart "
                        "renders it into the container, which Kubernetes refuses",
                        (*path, key),
                        label,
                        f"write {key}: [...]",
                    )
            synth = dict(container)
            synth.setdefault("name", "vllm")
            env = list(listing(container.get("env")))
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
                words += [_go(a) for a in listing(container.get("args"))]
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
            shim = _ValuesShim(doc, path, pod_spec, given)
            pod = Pod(
                shim,  # type: ignore[arg-type]
                (),
                role,
                role=role if role != "encode" else None,
                parallelism=parallelism,
            )
            image = str(container.get("image"))
            simulated = mode == "imageDefault" and LLM_D_SIMULATOR.search(image)
            if simulated:
                skipped.append(f"{label} runs {container.get('image')}, llm-d's simulator")
                continue
            # multinode: a LeaderWorkerSet of the section's workers (decode-lws.yaml), whose
            # controller gives every pod LWS_GROUP_SIZE and the leader's address
            # (kvconfig.load.kubernetes.workloads._lws_env); the engine read is the group's
            # leader's, whose LWS_WORKER_INDEX (0) is left unset as before
            lws = bool(data.get("multinode"))
            for engine in read_container(
                pod, 0, base, found, implicit_entry=mode == "imageDefault", entry_label="llm-d",
                env_base={"LWS_GROUP_SIZE": str(par["workers"])} if lws else None,
                env_unknown=("LWS_LEADER_ADDRESS",) if lws else (),
            ):  # fmt: skip
                from dataclasses import replace

                out.append(replace(engine, name=label, model_uri=uri or None))
    if not out and skipped:
        raise NoEngine(
            f"no vLLM container found: {'; '.join(skipped)}, not vLLM",
            source=doc.source,
            line=1,
            hint="kvconfig plans vLLM engines; the simulator has no KV cache to check",
        )
    if not out:
        raise NoEngine(
            "no vLLM container found in the decode, prefill or encode sections",
            source=doc.source,
            line=1,
            hint="add decode.containers with modelCommand: vllmServe (docs/inputs.md)",
        )
    return out
