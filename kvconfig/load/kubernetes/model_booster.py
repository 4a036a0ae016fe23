"""Volcano Kthena's ``ModelBooster`` (``workload.serving.volcano.sh``): the ``ModelServing``
its controller makes of it (volcano-sh/kthena ``pkg/model-booster-controller/convert``,
``model_serving.go`` and ``templates/vllm.yaml``, ``vllm-pd.yaml``, as of commit 3cc0572),
then read as any ``ModelServing`` (``kvconfig.load.kubernetes.kthena``).

``spec.backend`` of type ``vLLM`` becomes one role ``leader`` of the ``server`` worker's
``replicas`` groups, ``pods - 1`` Ray workers each; ``vLLMDisaggregated`` becomes the roles
``prefill`` and ``decode`` of the workers of those types. The backend's ``replicas`` are the
ModelServing's. Each engine container runs its worker's ``image`` with the command
``python3 -m vllm.entrypoints.openai.api_server --model PATH`` followed by the worker's
``config`` as ``--key value`` in sorted key order (``_`` made ``-``; an empty value writes
the key alone; other values as Go's ``%v`` prints what ``encoding/json`` decoded: numbers
are float64). PATH is where the downloader puts the model: the ``cacheURI``'s path, then
the MD5 of ``modelURI``. A server worker of several pods first starts the Ray head
(``examples/online_serving/multi-node-serving.sh leader``, joined into one ``bash -c``
line, the engine command with ``--distributed_executor_backend ray``). When a worker asks
for ``nvidia.com/gpu`` and ``KTHENA_SKIP_ENGINE_DEPENDENCY_INSTALL`` is not true, a
``MooncakeConnector`` or ``NixlConnector`` engine first installs its package: the command
becomes ``bash -c "pip install ... && WORDS"``, the words joined by spaces unquoted, as the
controller writes it. The engine's environment is the backend's ``env``, then the pod name,
namespace, ``VLLM_USE_V1=1`` and the Redis settings, then the role's own.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from kvconfig.errors import InputError
from kvconfig.load.engine_fields import listing, mapping
from kvconfig.load.helm.values import _go

if TYPE_CHECKING:
    from kvconfig.load.operator_engine import Engine

_RAY_SCRIPT = "examples/online_serving/multi-node-serving.sh"
_XPUS = ("nvidia.com/gpu", "huawei.com/ascend-1980")
"""The devices ``GetDeviceNum`` counts (``utils.XPUList``)."""


def is_model_booster(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("kind") == "ModelBooster"
        and str(data.get("apiVersion", "")).startswith("workload.serving.volcano.sh/")
    )


def cache_path(uri: str) -> str:
    """``GetCachePath``: the cache URI's host and path, slashes trimmed, under ``/``
    (``hostpath://tmp/cache`` is ``/tmp/cache``); empty without a scheme."""
    parts = urlsplit(uri)
    if not uri or not parts.scheme or "://" not in uri:
        return ""
    inner = (parts.netloc + parts.path).strip("/")
    return "/" + inner if inner else ""


def mount_path(uri: str) -> str:
    """``GetMountPath``: ``/`` and the MD5 of the model URI."""
    return "/" + hashlib.md5(uri.encode(), usedforsecurity=False).hexdigest()


def _err(res: Any, message: str, *path: str | int) -> InputError:
    return InputError(
        message,
        source=res.source,
        line=res.line(*path) if path else res.line(),
        key=".".join(str(p) for p in path),
        hint="see Kthena's ModelBooster reference",
    )


def model_serving(res: Any) -> dict[str, Any]:
    """The ``ModelServing`` the controller makes of the ``ModelBooster`` ``res``."""
    data = res.data
    backend = mapping(mapping(data.get("spec")).get("backend"))
    kind = backend.get("type")
    for listed in ("workers", "env"):
        if backend.get(listed) is not None and not isinstance(backend.get(listed), list):
            raise _err(res, "expected a list", "spec", "backend", listed)
    workers = [w for w in listing(backend.get("workers")) if isinstance(w, dict)]
    by_type = {str(w.get("type") or "server"): w for w in workers}
    if kind not in ("vLLM", "vLLMDisaggregated"):
        raise _err(res, f"not support model backend type: {kind}", "spec", "backend", "type")
    env = [e for e in listing(backend.get("env")) if isinstance(e, dict)]
    path = cache_path(str(backend.get("cacheURI") or "")) + mount_path(
        str(backend.get("modelURI") or "")
    )
    gpu = any(_quantity(mapping(w.get("resources")).get("limits"), "nvidia.com/gpu") > 0
              for w in by_type.values())  # fmt: skip
    skip = _env_bool(env, "KTHENA_SKIP_ENGINE_DEPENDENCY_INSTALL")
    name = str(mapping(data.get("metadata")).get("name") or "")
    backend_name = str(backend.get("name") or "")
    meta = {
        "name": f"{name}-{backend_name}" if backend_name else name,
        "namespace": mapping(data.get("metadata")).get("namespace"),
    }

    def command(worker: dict[str, Any]) -> list[str]:
        words = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", path]
        words += _config_args(res, worker.get("config"))
        server = by_type.get("server")
        pods = _int(server.get("pods")) if server is not None else 0
        if pods > 1 and server is not None:
            words += ["--distributed_executor_backend", "ray"]
            devices = sum(_quantity(mapping(server.get("resources")).get("limits"), x)
                          for x in _XPUS)  # fmt: skip
            head = f"{_RAY_SCRIPT} leader --ray_cluster_size={pods} --num-gpus={devices}"
            words = ["bash", "-c", f"chmod u+x {_RAY_SCRIPT} && {head} && {' '.join(words)}"]
        connector = _connector(worker.get("config"))
        if gpu and not skip and connector in ("MooncakeConnector", "NixlConnector"):
            install = (
                "pip install mooncake-transfer-engine"
                if connector == "MooncakeConnector"
                else "PIP_DISABLE_PIP_VERSION_CHECK=1 pip install -U --no-cache-dir nixl"
            )
            words = ["bash", "-c", f"{install} && {' '.join(words)}"]
        return words

    def engine_env(*extra: dict[str, Any]) -> list[dict[str, Any]]:
        standard: list[dict[str, Any]] = [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "VLLM_USE_V1", "value": "1"},
            *(
                {"name": f"REDIS_{k}", "valueFrom": {"configMapKeyRef": {
                    "name": "redis-config", "key": f"REDIS_{k}", "optional": True}}}
                for k in ("HOST", "PORT")
            ),
            {"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {
                "name": "redis-secret", "key": "REDIS_PASSWORD", "optional": True}}},
        ]  # fmt: skip
        return [*env, *standard, *extra]

    def pod(container_name: str, worker: dict[str, Any], env_list: list[Any]) -> dict[str, Any]:
        container: dict[str, Any] = {
            "name": container_name,
            "image": worker.get("image"),
            "command": command(worker),
            "env": env_list,
            "resources": worker.get("resources") or {},
        }
        spec: dict[str, Any] = {"containers": [container]}
        for field in ("affinity", "tolerations"):
            if worker.get(field):
                spec[field] = worker[field]
        return {"spec": spec}

    if kind == "vLLM":
        server = by_type.get("server")
        if server is None:
            raise _err(res, f"server worker not found in backend: {backend_name}", "spec")
        pods = _int(server.get("pods"))
        worker_pod = {"spec": {"containers": [{
            "name": f"{backend_name.lower()}-vllm-worker",
            "image": server.get("image"),
            "command": ["bash", "-c", f"chmod u+x {_RAY_SCRIPT} && {_RAY_SCRIPT} worker "
                        "--ray_address=$(ENTRY_ADDRESS)"],
            "env": env,
            "resources": server.get("resources") or {},
        }]}}  # fmt: skip
        roles = [{
            "name": "leader",
            "replicas": _int(server.get("replicas")),
            "entryTemplate": pod("engine", server, engine_env()),
            "workerReplicas": max(pods - 1, 0),
            "workerTemplate": worker_pod,
        }]  # fmt: skip
    else:
        for role in ("prefill", "decode"):
            if role not in by_type:
                raise _err(res, f"{role} worker not found in backend", "spec", "backend")
        offline = {"name": "HF_HUB_OFFLINE", "value": "1"}
        pod_ip = {"name": "HCCL_IF_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
        eth0 = [
            {"name": n, "value": "eth0"}
            for n in ("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME")
        ]
        own: dict[str, list[dict[str, Any]]] = {
            "prefill": [offline, pod_ip],
            "decode": [offline, *eth0],
        }
        roles = [
            {
                "name": role,
                "replicas": _int(by_type[role].get("replicas")),
                "entryTemplate": pod("vllm", by_type[role], engine_env(*own[role])),
                "workerReplicas": 0,
                "workerTemplate": {"spec": {"containers": []}},
            }
            for role in ("prefill", "decode")
        ]
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": meta,
        "spec": {"replicas": _int(backend.get("replicas")), "template": {"roles": roles}},
    }


def with_model_uri(res: Any, engines: list[Engine]) -> list[Engine]:
    """The engines, each with the ``modelURI`` its downloader init container fetches into
    the path the engine serves."""
    uri = mapping(mapping(res.data.get("spec")).get("backend")).get("modelURI")
    if not isinstance(uri, str) or not uri:
        return engines
    return [replace(e, model_uri=uri) for e in engines]


def _config_args(res: Any, config: Any) -> list[str]:
    """``ConvertVLLMArgsFromJson``: ``--key value`` per key in sorted order."""
    if config is None:
        return []
    if not isinstance(config, dict):
        raise _err(res, "failed to unmarshal config: expected a mapping", "spec", "backend")
    words: list[str] = []
    for key in sorted(config, key=str):
        words.append("--" + str(key).replace("_", "-"))
        value = _json_value(config[key])
        if value != "":
            words.append(value)
    return words


def _json_value(value: Any) -> str:
    """A config value as the controller prints it: JSON decodes numbers to float64."""
    if isinstance(value, str):
        return value
    if value is None:
        return "<nil>"
    return _go(json.loads(json.dumps(value)))


def _connector(config: Any) -> str:
    text = mapping(config).get("kv-transfer-config")
    if not isinstance(text, str):
        return ""
    try:
        parsed = json.loads(text)
    except ValueError:
        return ""
    found = parsed.get("kv_connector") if isinstance(parsed, dict) else None
    return found if isinstance(found, str) else ""


def _env_bool(env: list[dict[str, Any]], name: str) -> bool:
    """``GetEnvValueOrDefault[bool]``: the first entry's value by Go's ``ParseBool``."""
    for entry in env:
        if entry.get("name") == name:
            return str(entry.get("value", "")) in ("1", "t", "T", "TRUE", "true", "True")
    return False


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _quantity(limits: Any, name: str) -> int:
    """A whole resource quantity (``"2"``, 2); 0 when absent or not a whole number."""
    value = mapping(limits).get(name)
    try:
        return int(str(value))
    except ValueError:
        return 0
