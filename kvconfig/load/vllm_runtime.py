"""production-stack's operator resource ``VLLMRuntime``: the Deployment its controller builds.

The operator (vllm-project/production-stack, ``operator/internal/controller/
vllmruntime_controller.go``) runs one container ``vllm`` with command
``/opt/venv/bin/vllm serve`` and image ``deploymentConfig.image.registry/name``, on
``deploymentConfig.replicas`` pods. Its arguments, in the controller's order: the model
URL, ``--host 0.0.0.0 --port PORT``, ``--enable-lora``, ``--enable-auto-tool-choice``,
``--tool-call-parser``, ``--[no-]enable-chunked-prefill``, ``--[no-]enable-prefix-caching``
(always one of the two), ``--max-model-len``, ``--dtype``, ``--tensor-parallel-size``,
``--max-num-seqs``, ``--gpu_memory_utilization``, ``--max_loras`` (each when set),
``vllmConfig.extraArgs``, ``--chat-template``, and with ``lmCacheConfig.enabled`` the
``--kv-transfer-config`` of ``LMCacheConnectorV1`` (``vllmConfig.v1``; else
``LMCacheConnector``) with ``kv_role`` ``kv_both``. Its environment: ``VLLM_USE_V1``
(``1``/``0``), the LoRA and LMCache variables, then ``vllmConfig.env``. The GPUs are
``deploymentConfig.resources.gpu`` of ``gpuType`` (default ``nvidia.com/gpu``).

The operator's CRD (``operator/config/crd/bases/production-stack.vllm.ai_vllmruntimes.yaml``)
requires ``spec.deploymentConfig`` (with ``image`` and ``resources``), ``spec.model``
(with ``modelURL``) and ``spec.vllmConfig``: the API server refuses a resource without
them ("Required value"), so no Deployment is built; kvconfig refuses it the same way
(``_required``). A resource in an older layout (``spec.image``, ``spec.replicas``) is one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.load.engine_fields import listing, mapping

if TYPE_CHECKING:
    from kvconfig.load.kubernetes.resources import Found, Resource
    from kvconfig.load.operator_engine import Engine


def _int(value: Any) -> int:
    """A Go integer field: 0 when unset."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _args(spec: dict[str, Any]) -> tuple[list[str], list[dict[str, str]]]:
    """(the container's args, its env) as the controller builds them."""
    model, cfg, lm = (
        mapping(spec.get("model")),
        mapping(spec.get("vllmConfig")),
        mapping(spec.get("lmCacheConfig")),
    )
    args = _engine_args(model, cfg)
    args += [str(w) for w in listing(cfg.get("extraArgs"))]
    if model.get("chatTemplate"):
        args += ["--chat-template", "/etc/chat-template.json"]
    v1 = cfg.get("v1") is True
    env = [{"name": "VLLM_USE_V1", "value": "1" if v1 else "0"}]
    if model.get("enableLoRA") is True:
        env.append({"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "True"})
    if lm.get("enabled") is True:
        connector = "LMCacheConnectorV1" if v1 else "LMCacheConnector"
        args += ["--kv-transfer-config", f'{{"kv_connector":"{connector}","kv_role":"kv_both"}}']
    return args, env + _env(cfg)


def _node_args(node: dict[str, Any], role: str) -> tuple[list[str], list[dict[str, str]]]:
    """(args, env) of a P/D node (``topology.prefill`` or ``topology.decode``) as the
    operator that had them builds them (``buildVLLMArgsForNode``,
    ``buildEnvironmentVariablesForNode``): the prefill node ``kv_producer``, the decode
    node ``lmCacheConfig.kvRole`` (``kv_consumer`` unset); ``LMCacheConnectorV1`` with
    its RPC port unless ``vllmConfig.v1`` is false; then ``extraArgs``."""
    model, cfg, lm = (
        mapping(node.get("model")),
        mapping(node.get("vllmConfig")),
        mapping(node.get("lmCacheConfig")),
    )
    args = _engine_args(model, cfg)
    if lm.get("enabled") is True:
        kv_role = "kv_producer" if role == "prefill" else str(lm.get("kvRole") or "kv_consumer")
        if cfg.get("v1") is False:
            config: dict[str, Any] = {"kv_connector": "LMCacheConnector", "kv_role": kv_role}
        else:
            port = str(lm.get("rpcPort") or ("producer1" if role == "prefill" else "consumer1"))
            extra: dict[str, Any] = {"discard_partial_chunks": False, "lmcache_rpc_port": port}
            if role != "prefill":
                extra["skip_last_n_tokens"] = _int(lm.get("skipLastNTokens")) or 1
            config = {"kv_connector": "LMCacheConnectorV1", "kv_role": kv_role,
                      "kv_connector_extra_config": extra}  # fmt: skip
        args += ["--kv-transfer-config", json.dumps(config, separators=(",", ":"))]
    args += [str(w) for w in listing(cfg.get("extraArgs"))]
    env = [{"name": "VLLM_USE_V1", "value": "0"}] if cfg.get("v1") is False else []
    if model.get("enableLoRA") is True:
        env.append({"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "True"})
    return args, env + _env(cfg)


def _env(cfg: dict[str, Any]) -> list[dict[str, str]]:
    """``vllmConfig.env``."""
    return [
        {"name": str(e.get("name")), "value": str(e.get("value", ""))}
        for e in listing(cfg.get("env"))
        if isinstance(e, dict)
    ]


def _engine_args(model: dict[str, Any], cfg: dict[str, Any]) -> list[str]:
    """The model URL and the options both layouts build from ``model`` and ``vllmConfig``."""
    args = [
        str(model.get("modelURL", "")),
        "--host",
        "0.0.0.0",
        "--port",
        str(_int(cfg.get("port"))),
    ]
    if model.get("enableLoRA") is True:
        args.append("--enable-lora")
    if model.get("enableTool") is True:
        args.append("--enable-auto-tool-choice")
    if model.get("toolCallParser"):
        args += ["--tool-call-parser", str(model["toolCallParser"])]
    for key, option in (
        ("enableChunkedPrefill", "chunked-prefill"),
        ("enablePrefixCaching", "prefix-caching"),
    ):
        args.append(f"--enable-{option}" if cfg.get(key) is True else f"--no-enable-{option}")
    for where, key, option in (
        (model, "maxModelLen", "--max-model-len"),
        (model, "dtype", "--dtype"),
        (cfg, "tensorParallelSize", "--tensor-parallel-size"),
        (model, "maxNumSeqs", "--max-num-seqs"),
        (cfg, "gpuMemoryUtilization", "--gpu_memory_utilization"),
        (cfg, "maxLoras", "--max_loras"),
    ):
        value = where.get(key)
        if (isinstance(value, str) and value) or _int(value) > 0:
            args += [option, str(value)]
    return args


_REQUIRED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("spec",), "deploymentConfig"),
    (("spec",), "model"),
    (("spec",), "vllmConfig"),
    (("spec", "deploymentConfig"), "image"),
    (("spec", "deploymentConfig"), "resources"),
    (("spec", "model"), "modelURL"),
)
"""(object, field) pairs the CRD's openAPIV3Schema lists as required."""


def _required(res: Resource) -> None:
    """Refuse a ``VLLMRuntime`` without a field its CRD requires, as the API server does
    (the schema's root requires no ``spec``: only a ``spec`` that is there is checked)."""
    if not isinstance(res.data.get("spec"), dict):
        return
    for path, field in _REQUIRED:
        node: Any = res.data
        for key in path:
            node = mapping(node.get(key)) if isinstance(node, dict) else {}
        if field not in node:
            where = ".".join((*path, field))
            raise res.err(
                f"VLLMRuntime has no {where}, which production-stack's CRD requires: the API "
                "server refuses the resource and the operator starts no engine",
                path,
                where,
                "write spec.deploymentConfig (image, resources, replicas), spec.model "
                "(modelURL) and spec.vllmConfig as the operator's samples do "
                "(operator/config/samples)",
            )


def engines(
    res: Resource, base: Path, found: list[Found], block_lines: frozenset[int]
) -> list[Engine]:
    """The engine of a ``VLLMRuntime``; with ``enablePDDisaggregation``, one per node of
    its ``topology``."""
    data = res.data
    name = str(mapping(data.get("metadata")).get("name", "unnamed"))
    spec = mapping(data.get("spec"))
    if spec.get("enablePDDisaggregation") is True:
        topology = spec.get("topology")
        out: list[Engine] = []
        for role in ("prefill", "decode") if isinstance(topology, dict) else ():
            node = mapping(topology.get(role))  # type: ignore[union-attr]
            args, env = _node_args(node, role)
            label = f"VLLMRuntime/{name}-{role}"
            at = ("spec", "topology", role)
            out += _deployment(res, base, found, block_lines, node, args, env, label, at, role)
        return out  # no topology: the controller returns an error, nothing is built
    _required(res)
    args, env = _args(spec)
    return _deployment(res, base, found, block_lines, spec, args, env, f"VLLMRuntime/{name}",
                       ("spec",), None)  # fmt: skip


def _deployment(  # noqa: PLR0917 (the controller's Deployment)
    res: Resource,
    base: Path,
    found: list[Found],
    block_lines: frozenset[int],
    spec: dict[str, Any],
    args: list[str],
    env: list[dict[str, str]],
    label: str,
    at: tuple[str, ...],
    role: str | None,
) -> list[Engine]:
    """The engine of the Deployment the controller builds from ``spec`` (the resource's, or
    a P/D node's): its image, GPUs, node affinity and replicas."""
    from kvconfig.load.dynamo import _Shim
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.resources import Pod

    deploy = mapping(spec.get("deploymentConfig"))
    image = mapping(deploy.get("image"))
    resources = mapping(deploy.get("resources"))
    container: dict[str, Any] = {
        "name": "vllm",
        "image": f"{image.get('registry', '')}/{image.get('name', '')}",
        "command": ["/opt/venv/bin/vllm", "serve"],
        "args": args,
        "env": env,
    }
    if resources.get("gpu"):
        gpu_type = str(resources.get("gpuType") or "nvidia.com/gpu")
        container["resources"] = {"limits": {gpu_type: resources["gpu"]}}
    pod_spec: dict[str, Any] = {"containers": [container]}
    terms = deploy.get("nodeSelectorTerms")
    if terms:
        pod_spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }
    shim = _Shim(res, at, pod_spec, at)
    parallelism = {"replicas": _int(deploy.get("replicas"))}
    pod = Pod(shim, (), label, role=role, parallelism=parallelism, block_lines=block_lines)  # type: ignore[arg-type]
    return read_container(pod, 0, base, found)
