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
    env += [
        {"name": str(e.get("name")), "value": str(e.get("value", ""))}
        for e in listing(cfg.get("env"))
        if isinstance(e, dict)
    ]
    return args, env


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
    """The engine of a ``VLLMRuntime``."""
    from kvconfig.load.dynamo import _Shim
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.resources import Pod

    _required(res)
    data = res.data
    name = str(mapping(data.get("metadata")).get("name", "unnamed"))
    spec = mapping(data.get("spec"))
    deploy = mapping(spec.get("deploymentConfig"))
    image = mapping(deploy.get("image"))
    resources = mapping(deploy.get("resources"))
    args, env = _args(spec)
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
    shim = _Shim(res, ("spec",), pod_spec, ("spec",))
    parallelism = {"replicas": _int(deploy.get("replicas"))}
    label = f"VLLMRuntime/{name}"
    pod = Pod(shim, (), label, parallelism=parallelism, block_lines=block_lines)  # type: ignore[arg-type]
    return read_container(pod, 0, base, found)
