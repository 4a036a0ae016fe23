"""vLLM production-stack values: one engine per ``servingEngineSpec.modelSpec[]`` entry."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvconfig.errors import NoEngine
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import check_words, mapping
from kvconfig.load.helm.values import _go, _truthy, _Values, _ValuesShim
from kvconfig.load.operator_engine import Engine


def production_stack(
    doc: _yaml.Document, base: Path, given: Mapping[str, str] | None = None
) -> list[Engine]:
    """One engine per enabled ``servingEngineSpec.modelSpec[]`` entry."""
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.resources import Found, Pod

    values = _Values(doc)
    spec = doc.data["servingEngineSpec"]
    if spec.get("enableEngine") is False:
        raise NoEngine(
            "is false: the chart starts no vLLM engine",
            source=doc.source,
            line=doc.line("servingEngineSpec", "enableEngine"),
            key="servingEngineSpec.enableEngine",
            hint="set enableEngine: true, or lint the values that enable it",
        )
    models = spec.get("modelSpec")
    if not isinstance(models, list) or not models:
        raise NoEngine(
            "no modelSpec entries: the chart starts no vLLM engine",
            source=doc.source,
            line=doc.line("servingEngineSpec"),
            key="servingEngineSpec.modelSpec",
            hint="add a modelSpec entry with name, repository, tag and modelURL",
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
            str(mapping(ms.get("lmcacheConfig")).get("kvRole", ""))
        )
        parallelism: dict[str, int] = {}
        gpus = ms.get("requestGPU")
        if isinstance(gpus, int) and not isinstance(gpus, bool):
            parallelism["gpus"] = gpus
        if isinstance(ms.get("replicaCount"), int):
            parallelism["replicas"] = ms["replicaCount"]
        shim = _ValuesShim(doc, path, pod_spec, given)
        pod = Pod(shim, (), label, role=role, parallelism=parallelism)  # type: ignore[arg-type]
        out.extend(read_container(pod, 0, base, found, entry_label="production-stack"))
    if all(isinstance(ms, dict) and ms.get("enabled") is False for ms in models):
        raise NoEngine(
            "every modelSpec entry has enabled: false: the chart's templates skip them "
            "and start no vLLM engine",
            source=doc.source,
            line=doc.line("servingEngineSpec", "modelSpec"),
            key="servingEngineSpec.modelSpec",
            hint="set enabled: true on the entry to deploy, or lint the values that enable it",
        )
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
