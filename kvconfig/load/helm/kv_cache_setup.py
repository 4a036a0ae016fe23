"""llm-d-kv-cache's ``vllm-setup-helm`` chart (llm-d/llm-d-kv-cache ``vllm-setup-helm``): its
values, read as ``templates/deployment.yaml`` renders them.

One Deployment of ``vllm.replicaCount`` pods; its container ``vllm`` runs
``vllm.image.repository:vllm.image.tag`` (``chart.vllmImage``) as ``/bin/sh -c SCRIPT``, the
script one ``vllm serve vllm.model.name`` line continued with backslashes:
``--host 0.0.0.0 --port 8000 --trust-remote-code``, ``--enable-chunked-prefill`` (or
``--no-enable-chunked-prefill`` when ``vllm.enableChunkedPrefill`` is empty),
``--max_num_batched_tokens``, ``--gpu-memory-utilization``, ``--tensor-parallel-size`` and
``--max_model_len`` when their values are set, ``--kv-transfer-config`` of
``lmcache.connector`` and ``lmcache.role`` when ``lmcache.enabled`` (which also exports
``LMCACHE_DISTRIBUTED_URL`` first), ``--block-size vllm.blockSize``, and with
``kvCacheManager.enabled`` the ``--kv-events-config`` publishing to the release's
kv-cache-manager Service and ``--prefix-caching-hash-algo sha256_cbor``. Its environment:
``HOME`` and ``HF_HOME`` the persistence mount, ``POD_IP`` (the pod's, at run time), the
``HF_TOKEN`` Secret, LMCache's settings, ``PYTHONHASHSEED`` with the kv-cache-manager, then
``vllm.extraEnv`` by sorted key (Go's ``range`` over a map). The kv-cache-manager indexes
the engines' KV events and answers scoring queries; it routes no requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import mapping
from kvconfig.load.helm.values import _go, _truthy, _ValuesShim, go_int
from kvconfig.load.operator_engine import Engine


def kv_cache_setup(
    doc: _yaml.Document, base: Path, given: Mapping[str, str] | None = None
) -> list[Engine]:
    """The engine of the chart's one Deployment."""
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.resources import Found, Pod

    data = doc.data
    vllm = mapping(data.get("vllm"))
    model = mapping(vllm.get("model"))
    lmcache = mapping(data.get("lmcache"))
    manager = mapping(data.get("kvCacheManager"))
    lines = []
    if _truthy(lmcache.get("enabled")):
        lines.append("export LMCACHE_DISTRIBUTED_URL=${POD_IP} &&")
    lines += [f"vllm serve {_go(model.get('name'))}", "--host 0.0.0.0", "--port 8000"]
    lines.append("--trust-remote-code")
    chunked = _truthy(vllm.get("enableChunkedPrefill"))
    lines.append("--enable-chunked-prefill" if chunked else "--no-enable-chunked-prefill")
    lines.append(f"--max_num_batched_tokens {_go(vllm.get('maxNumBatchedTokens'))}")
    for key, option in (
        ("gpuMemoryUtilization", "--gpu-memory-utilization"),
        ("tensorParallelSize", "--tensor-parallel-size"),
    ):
        if _truthy(vllm.get(key)):
            lines.append(f"{option} {_go(vllm[key])}")
    if _truthy(model.get("maxModelLen")):
        lines.append(f"--max_model_len {_go(model['maxModelLen'])}")
    if _truthy(lmcache.get("enabled")):
        config = (
            f'{{"kv_connector":"{_go(lmcache.get("connector"))}",'
            f'"kv_role":"{_go(lmcache.get("role"))}"}}'
        )
        lines.append(f"--kv-transfer-config '{config}'")
    lines.append(f"--block-size {_go(vllm.get('blockSize'))}")
    if _truthy(manager.get("enabled")):
        port = _go(mapping(manager.get("service")).get("port"))
        url = f"tcp://RELEASE-kv-cache-manager.NAMESPACE.svc.cluster.local:{port}"
        events = (
            f'{{\\"enable_kv_cache_events\\":{_go(manager["enabled"])},\\"publisher\\":\\"zmq\\",'
            f'\\"endpoint\\":\\"{url}\\",\\"topic\\":\\"kv@${{POD_IP}}@{_go(model.get("name"))}\\"}}'
        )
        lines += [f'--kv-events-config "{events}"', "--prefix-caching-hash-algo sha256_cbor"]
    script = "".join(line + " \\\n" for line in lines)
    mount = _go(mapping(data.get("persistence")).get("mountPath"))
    env: list[dict[str, Any]] = [
        {"name": "HOME", "value": mount},
        {"name": "HF_HOME", "value": mount},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "secret", "key": "token"}}},
    ]
    if _truthy(manager.get("enabled")):
        env.append({"name": "PYTHONHASHSEED", "value": _go(data.get("pythonHashSeed"))})
    extra = mapping(vllm.get("extraEnv"))
    env += [{"name": str(k), "value": _go(extra[k])} for k in sorted(extra, key=str)]
    image = mapping(vllm.get("image"))
    container: dict[str, Any] = {
        "name": "vllm",
        "image": f"{_go(image.get('repository'))}:{_go(image.get('tag'))}",
        "command": ["/bin/sh", "-c"],
        "args": [script],
        "env": env,
    }
    resources = mapping(vllm.get("resources"))
    if resources:
        container["resources"] = resources
    parallelism: dict[str, int] = {}
    gpus = go_int(mapping(resources.get("limits")).get("nvidia.com/gpu"))
    if gpus > 0:
        parallelism["gpus"] = gpus
    replicas = vllm.get("replicaCount")
    if isinstance(replicas, int) and not isinstance(replicas, bool):
        parallelism["replicas"] = replicas
    shim = _ValuesShim(doc, ("vllm",), {"containers": [container]}, given)
    pod = Pod(shim, (), "chart/vllm", parallelism=parallelism)  # type: ignore[arg-type]
    found: list[Found] = []
    return read_container(pod, 0, base, found)
