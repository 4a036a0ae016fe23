"""The environment of an llm-d-benchmark modelservice pod's ``vllm`` container:
``build_ms_env_vars`` of llm-d/llm-d-benchmark ``config/templates/jinja/_macros.j2``
(read at commit 8bc9f1dd), each value as the template prints it (Python's ``str`` of
the value, ``None`` included; a key the values lack prints nothing)."""

from __future__ import annotations

from typing import Any

from kvconfig.load.engine_fields import listing

_MISSING = object()


def _get(node: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _map(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def _first(*values: Any, last: Any) -> str:
    """Jinja's ``a | default(b | default(c))``: the first value given (None is given)."""
    for value in values:
        if value is not _MISSING:
            return str(value)
    return str(last)


def _joined(variants: list[Any], key: str) -> str:
    """``vllmVariants | map(attribute=KEY) | join(',,')``."""
    return ",,".join(str(x.get(key, "")) if isinstance(x, dict) else "" for x in variants)


def env_vars(v: dict[str, Any], role: str) -> list[dict[str, Any]]:
    """The container's ``env`` list (a ``,,`` list of variants is split where the pod
    sources ``llmdbench_env.sh``: ``kvconfig.load.shell.env_scripts``)."""
    c, common, model = _map(v, role), _map(v, "vllmCommon"), _map(v, "model")
    home = _first(_get(common, "containerHome"), last="")
    out: list[dict[str, Any]] = []

    def put(name: str, value: str) -> None:
        out.append({"name": name, "value": value})

    def pod(name: str, path: str, api: str = "") -> None:
        ref = {"apiVersion": api, "fieldPath": path} if api else {"fieldPath": path}
        out.append({"name": name, "valueFrom": {"fieldRef": ref}})

    put("VLLM_IS_DECODE" if role == "decode" else "VLLM_IS_PREFILL", "1")
    put("HOME", home)
    put("USER", "llm-d")
    if _get(v, "modelservice", "uriProtocol") != "hf":
        put("HF_HOME", _first(_get(common, "hfHome"), last=""))
    put("MODEL_NAME", _first(_get(model, "name"), last=""))
    put("MODEL_PATH", _first(_get(model, "path"), last=""))
    put("VLLM_CACHE_ROOT", _first(_get(c, "vllm", "cacheRoot"), last=home + "/vllm"))
    put(
        "VLLM_WORKER_MULTIPROC_METHOD",
        _first(_get(c, "vllm", "workerMultiprocMethod"), _get(common, "workerMultiprocMethod"),
               last="spawn"),
    )  # fmt: skip
    put(
        "VLLM_LOGGING_LEVEL",
        _first(_get(c, "vllm", "loggingLevel"), _get(common, "loggingLevel"), last="INFO"),
    )
    put("VLLM_HTTP_TIMEOUT_KEEP_ALIVE", _first(_get(c, "vllm", "httpTimeoutKeepAlive"), last=120))
    for key, name in (("allowLongMaxModelLen", "VLLM_ALLOW_LONG_MAX_MODEL_LEN"),
                      ("serverDevMode", "VLLM_SERVER_DEV_MODE")):  # fmt: skip
        flag = _get(common, "flags", key)
        if flag is not _MISSING and flag:
            put(name, str(flag))
    put("VLLM_INFERENCE_PORT", _first(_get(c, "vllm", "servicePort"),
                                      _get(common, "inferencePort"), last=""))  # fmt: skip
    put("VLLM_METRICS_PORT", _first(_get(c, "vllm", "port"), _get(common, "vllmPort"), last=""))
    put("VLLM_BLOCK_SIZE", _first(_get(model, "blockSize"), _get(common, "blockSize"), last=16))
    variants = c.get("vllmVariants")
    variants = variants if isinstance(variants, list) and variants else None
    first = variants[0] if variants and isinstance(variants[0], dict) else {}
    if variants:
        put("VLLM_MAX_MODEL_LEN", _joined(variants, "maxModelLen"))
    else:
        put("VLLM_MAX_MODEL_LEN", _first(_get(model, "maxModelLen"), _get(common, "maxModelLen"),
                                         last=4096))  # fmt: skip
    put("VLLM_LOAD_FORMAT", _first(_get(common, "loadFormat"), last="auto"))
    put(
        "VLLM_ACCELERATOR_MEM_UTIL",
        _first(_get(model, "gpuMemoryUtilization"), _get(common, "gpuMemoryUtilization"),
               last=0.95),
    )  # fmt: skip

    def sized(key: str, name: str) -> None:
        if variants and key in first:
            put(name, _joined(variants, key))
        else:
            put(name, _first(_get(model, key), _get(common, key), last=256))

    sized("maxNumSeq", "VLLM_MAX_NUM_SEQ")
    put("VLLM_TENSOR_PARALLELISM", _first(_get(c, "parallelism", "tensor"), last=1))
    sized("maxNumBatchedTokens", "VLLM_MAX_NUM_BATCHED_TOKENS")
    pod("VLLM_NIXL_SIDE_CHANNEL_HOST", "status.podIP")
    put("VLLM_NIXL_SIDE_CHANNEL_PORT", _first(_get(common, "nixlSideChannelPort"), last="5557"))
    put("UCX_TLS", _first(_get(common, "ucxTls"), last="sm,cuda_ipc,cuda_copy,tcp"))
    put("UCX_SOCKADDR_TLS_PRIORITY", _first(_get(common, "ucxSockaddrTlsPriority"), last="tcp"))
    pod("POD_IP", "status.podIP", "v1")
    pod("LLMDBENCH_POD_NS", "metadata.namespace")
    extra = c.get("extraEnvVars")
    extra = [e for e in extra if isinstance(e, dict)] if isinstance(extra, list) else []
    ranges = listing(c.get("contextLengthRanges"))
    if c.get("podLabels") or ranges:
        put(
            "LLMDBENCH_POD_LABELS",
            str(c["podLabels"]) if c.get("podLabels") else ",".join(
                f"llm-d.ai/context-length-range_eq_{r}" for r in ranges
            ),
        )  # fmt: skip
        if not c.get("podLabels"):
            put("LLMDBENCH_POD_LABELS_REQUIRED", "true")
        if not any(e.get("name") == "KUBECONFIG" for e in extra):
            context = _first(_get(v, "control", "contextSecretName"), last="llmdbench-context")
            put("KUBECONFIG", f"/etc/kubeconfig/{context}")
    for e in extra:
        if "value" in e:
            put(str(e.get("name")), str(e["value"]))
        elif "valueFrom" in e:
            out.append({"name": str(e.get("name")), "valueFrom": e["valueFrom"]})
        else:
            out.append({"name": str(e.get("name"))})
    return out
