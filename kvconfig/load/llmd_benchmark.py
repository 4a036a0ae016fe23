"""llm-d-benchmark scenarios: the vLLM engines ``llmdbenchmark standup`` deploys (the
tool's source read at commit 8bc9f1dd).

A scenario (``config/scenarios/**.yaml`` of llm-d/llm-d-benchmark; ``kind_of`` knows it by
a ``scenario`` list of mappings with a ``name``) lists stacks. For each, standup merges its
values (``kvconfig.load.llmd_benchmark_values``: the tool's defaults, the scenario's
``shared`` block, the stack, each ``common`` block expanded) and renders them with the
Jinja templates of ``config/templates/jinja``; the deploy method is the first of
``nok8s``, ``kustomize``, ``standalone``, then ``modelservice`` (``llmdbenchmark/cli.py``,
``_resolve_deploy_methods``). On the modelservice method, ``13_ms-values.yaml.j2`` (with
``_macros.j2``) renders llm-d-modelservice values, which this reader builds for the parts
that decide the engines and reads with the llm-d values reader
(``kvconfig.load.helm.llm_d``, the chart's own rules):

* ``decode`` and ``prefill``: ``create`` is the section's ``enabled`` (else replicas above
  0); a created section at 0 replicas is a Deployment scaled to 0 (the chart's
  ``prefill-deployment.yaml`` creates it), read with 0 replicas; ``parallelism`` as
  given (its ``tensor`` is the chart's ``TP_SIZE``);
* the ``vllm`` container: ``modelCommand`` (default ``custom``), for ``custom`` the
  command ``vllmCommon.shell -c`` and the text of ``build_vllm_command``: the preprocess
  script (``vllm.customPreprocessCommand`` or ``vllmCommon.preprocessScript``), then ``;``
  (``&&`` with ``contextLengthRanges``), then ``vllm.customCommand`` trimmed, or the
  default ``vllm serve`` command the macro writes (model ``model.cacheBase/model.path``,
  or ``model.huggingfaceId`` with ``modelservice.uriProtocol: hf``; the port variable,
  ``$VLLM_BLOCK_SIZE``, ``$VLLM_MAX_MODEL_LEN``, ``$VLLM_TENSOR_PARALLELISM``, the
  ``vllmCommon.flags`` and ``vllm.additionalFlags``); either followed by
  ``--kv-transfer-config`` from ``vllmCommon.kvTransfer`` and ``--kv-events-config``
  from ``vllmCommon.kvEvents`` when enabled;
* its env: ``build_ms_env_vars`` (``MODEL_PATH``, ``VLLM_BLOCK_SIZE`` from
  ``model.blockSize``, ``VLLM_TENSOR_PARALLELISM``, the ``vllmVariants`` lists joined
  with ``,,``, ``extraEnvVars`` ...); the ``llmdbench_env.sh`` a command sources is the
  tool's own (``kvconfig.load.shell.env_scripts``);
* ``${accelerator.*}`` and every ``${dotted.path}`` are the values' own, for the
  accelerator profile ``auto`` resolves to on ``nvidia.com/gpu`` nodes (``nvidia``, which
  has no overlay: the defaults' CUDA fragments); the GPU label ``auto`` is the cluster's
  (no GPU name), the resource ``auto`` is ``nvidia.com/gpu``.

Not read: ``kustomize.enabled`` (an upstream llm-d guide is deployed), the
``standalone``, ``nok8s`` and Fast Model Actuation (``fma``) methods, and an explicit
accelerator profile with an overlay (``intel-xpu``, which swaps the model): each says so.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError, NoEngine, describe
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import listing
from kvconfig.load.llmd_benchmark_env import env_vars
from kvconfig.load.llmd_benchmark_values import OVERLAID, stack_values
from kvconfig.load.operator_engine import Engine


def engines(doc: _yaml.Document, base: Path, given: dict[str, str] | None = None) -> list[Engine]:
    """The engines of every stack of a scenario, stack by stack."""
    data = doc.data
    shared = data.get("shared") or {}
    if not isinstance(shared, dict):
        raise InputError(
            "shared: expected a mapping; the renderer refuses the scenario",
            source=doc.source, line=doc.line("shared") or 1, key="shared",
            hint="write shared: {...} or leave it out",
        )  # fmt: skip
    out: list[Engine] = []
    several = len(data["scenario"]) > 1
    for i, stack in enumerate(data["scenario"]):
        common = stack.get("common")
        if common is not None and not isinstance(common, dict):
            raise InputError(
                "common: expected a mapping; the renderer refuses the scenario",
                source=doc.source, line=doc.line("scenario", i, "common") or 1,
                key=f"scenario[{i}].common", hint="write common: {...}",
            )  # fmt: skip
        values = stack_values(shared, stack)
        for key in ("model", "decode", "prefill", "vllmCommon", "accelerator", "routing"):
            if not isinstance(values.get(key), dict):
                raise InputError(
                    f"{key}: expected a mapping, got {describe(values.get(key))}; the "
                    "templates cannot render it",
                    source=doc.source, line=doc.line("scenario", i, key) or doc.line("scenario", i),
                    key=f"scenario[{i}].{key}", hint=f"write {key}: {{...}}",
                )  # fmt: skip
        _method(doc, i, values)
        for engine in _stack_engines(doc, i, values, base, given):
            name = f"{stack['name']}/{engine.name}" if several else engine.name
            out.append(dataclasses.replace(engine, name=name))
    return out


def _method(doc: _yaml.Document, i: int, values: dict[str, Any]) -> None:
    """The deploy method standup takes (``_resolve_deploy_methods``): only
    ``modelservice`` is read."""

    def on(key: str) -> bool:
        section = values.get(key)
        return isinstance(section, dict) and bool(section.get("enabled"))

    line = doc.line("scenario", i) or 1
    where = f"scenario[{i}]"
    if on("nok8s"):
        raise NoEngine(
            "nok8s.enabled: standup starts the stack's containers on a host without "
            "Kubernetes (the nok8s method); not read yet",
            source=doc.source, line=line, key=f"{where}.nok8s",
            hint="lint the vllm serve command the nok8s containers run",
        )  # fmt: skip
    if on("kustomize"):
        raise NoEngine(
            "kustomize.enabled: standup applies the upstream llm-d guide "
            f"{(values.get('kustomize') or {}).get('guideName') or ''!s} instead, and "
            "ignores the rest of the stack",
            source=doc.source, line=line, key=f"{where}.kustomize",
            hint="lint the guide's manifests (kubectl kustomize GUIDE | kvconfig lint -)",
        )  # fmt: skip
    if on("standalone"):
        raise NoEngine(
            "standalone.enabled: the standalone method (14_standalone-deployment) is not "
            "read yet",
            source=doc.source, line=line, key=f"{where}.standalone",
            hint="lint the rendered Deployment: llmdbenchmark plan, then kvconfig lint it",
        )  # fmt: skip
    if not on("modelservice"):
        what = "Fast Model Actuation launchers (fma)" if on("fma") else "no deploy method"
        raise NoEngine(
            f"modelservice is not enabled: the stack deploys {what}; not read yet",
            source=doc.source, line=line, key=f"{where}.modelservice.enabled",
            hint="kvconfig reads the modelservice method of a scenario",
        )  # fmt: skip
    accel = values.get("accelerator") or {}
    profile = accel.get("profile") if isinstance(accel, dict) else None
    if isinstance(profile, str) and (
        profile in OVERLAID or (profile.startswith("intel-") and profile != "intel-gaudi")
    ):
        raise NoEngine(
            f"accelerator.profile {profile}: its overlay (config/templates/values/overlays/"
            "intel-xpu.yaml) replaces the model, image and commands; not read yet",
            source=doc.source, line=line, key=f"{where}.accelerator.profile",
            hint="kvconfig reads a scenario for profile auto on NVIDIA GPUs",
        )  # fmt: skip


def _stack_engines(
    doc: _yaml.Document,
    i: int,
    values: dict[str, Any],
    base: Path,
    given: dict[str, str] | None,
) -> list[Engine]:
    from kvconfig.load.helm.llm_d import llm_d

    chart = chart_values(values)
    lines: dict[tuple[str | int, ...], int] = {}
    for role in ("decode", "prefill"):
        at = doc.line("scenario", i, "modelservice", role) or doc.line("scenario", i, role)
        at = at or doc.line("scenario", i)
        if at is not None:
            lines[(role,)] = at
    lines[()] = doc.line("scenario", i) or 1
    rendered = _yaml.Document(doc.source, chart, lines)
    created = [r for r in ("decode", "prefill") if chart[r].get("create")]
    fma = bool((values.get("fma") or {}).get("enabled"))
    if not created:
        raise NoEngine(
            "the stack creates neither a decode nor a prefill Deployment (their enabled "
            "false, or no replicas)" + ("; its Fast Model Actuation launchers (fma) are "
                                        "not read yet" if fma else ""),
            source=doc.source, line=lines[()], key=f"scenario[{i}]",
            hint="enable decode or prefill in the stack",
        )  # fmt: skip
    try:
        return llm_d(rendered, base, given, idle=True)
    except NoEngine as err:
        if "no vLLM container found in the decode" not in str(err):
            raise
        raise NoEngine(
            f"the {' and '.join(created)} command starts no vLLM server kvconfig knows "
            "(a script of the image, say)",
            source=doc.source, line=lines[()], key=f"scenario[{i}]",
            hint="kvconfig reads vllm serve and python -m vllm.entrypoints.* commands",
        ) from None  # fmt: skip


def chart_values(v: dict[str, Any]) -> dict[str, Any]:
    """The llm-d-modelservice values ``13_ms-values.yaml.j2`` renders, the parts that
    decide the engines."""
    model, routing = _map(v, "model"), _map(v, "routing")
    proxy, service = _map(routing, "proxy"), _map(v, "modelservice")
    hf = service.get("uriProtocol") == "hf"
    name = model.get("name")
    uri = (
        f"hf://{model.get('huggingfaceId', name)}"
        if hf
        else f"pvc://{_map(_map(v, 'storage'), 'modelPvc').get('name')}/{model.get('path')}"
    )
    out: dict[str, Any] = {
        "modelArtifacts": {"name": name, "uri": uri, "mountPath": "/model-cache"},
        "multinode": bool(_map(v, "multinode").get("enabled")),
        "routing": {
            "servicePort": routing.get("servicePort"),
            "proxy": {
                "enabled": proxy.get("enabled", True),
                "targetPort": proxy.get("targetPort", _map(_map(v, "decode"), "vllm").get("port")),
            },
        },
    }
    for role in ("decode", "prefill"):
        out[role] = _role(v, role)
    return out


def _map(parent: Any, key: str) -> dict[str, Any]:
    value = parent.get(key) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else {}


def _role(v: dict[str, Any], role: str) -> dict[str, Any]:
    c = _map(v, role)
    replicas = c.get("replicas", 0)
    create = bool(c["enabled"]) if "enabled" in c else _int(replicas) > 0
    if not create:
        return {"create": False}
    vllm = _map(c, "vllm")
    images = _map(_map(v, "images"), "vllm")
    mode = vllm.get("modelCommand", "custom")
    container: dict[str, Any] = {
        "name": "vllm",
        "image": f"{images.get('repository')}:{images.get('tag')}",
        "mountModelVolume": bool(c.get("mountModelVolume")),
        "modelCommand": mode,
        "env": env_vars(v, role),
    }
    gpus = _gpus(v, c)
    if gpus is not None:
        container["resources"] = {"limits": dict(gpus), "requests": dict(gpus)}
    if mode == "custom":
        container["command"] = [str(_map(v, "vllmCommon").get("shell")), "-c"]
        container["args"] = [command(v, role) + "\n"]
    elif mode == "imageDefault" and vllm.get("additionalFlags"):
        container["args"] = list(vllm["additionalFlags"])
    section: dict[str, Any] = {
        "create": True,
        "replicas": replicas,
        "parallelism": dict(_map(c, "parallelism")),
        "containers": [container],
    }
    selector = c.get("nodeSelector")
    if isinstance(selector, dict) and selector:
        section["nodeSelector"] = selector
    kind = _map(c, "acceleratorType")
    label = kind.get("labelValues") or ([kind["labelValue"]] if "labelValue" in kind else [])
    if kind.get("labelKey") and label and "auto" not in label:  # auto: the cluster's labels
        section["acceleratorTypes"] = {"labelKey": kind["labelKey"], "labelValues": label}
    return section


def _gpus(v: dict[str, Any], c: dict[str, Any]) -> dict[str, str] | None:
    """The accelerator the ``vllm`` container asks for: the section's own limit, else
    ``accelerator.count`` (the section's ``accelerator.count`` first), else tensor x
    dataLocal, on the section's or the top-level ``accelerator.resource`` (``auto``: the
    device plugin's resource ``cluster_resource_resolver.py`` finds, ``nvidia.com/gpu``
    on NVIDIA nodes)."""
    accel, own = _map(v, "accelerator"), _map(c, "accelerator")
    par = _map(c, "parallelism")
    count = (
        _int(accel["count"])
        if "count" in accel
        else _int(par.get("tensor")) * _int(par.get("dataLocal"))
    )
    if "accelerator" in c:
        count = _int(own.get("count", count))
    resource = str(own.get("resource") or accel.get("resource") or "")
    resource = "nvidia.com/gpu" if resource == "auto" else resource  # the cluster's: NVIDIA
    limits = _map(_map(c, "resources"), "limits")
    if resource and resource in limits:
        return {resource: str(limits[resource])}
    if resource and count > 0 and accel.get("type") != "cpu":
        return {resource: str(count)}
    return None


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _flag(text: str) -> str:
    return f" \\\n  {text}"


def command(v: dict[str, Any], role: str) -> str:
    """``build_vllm_command``: the text the container's shell runs."""
    c, common, model = _map(v, role), _map(v, "vllmCommon"), _map(v, "model")
    vllm, flags = _map(c, "vllm"), _map(common, "flags")
    pre = vllm.get("customPreprocessCommand")
    pre = common.get("preprocessScript") if pre is None else pre
    sep = "&&" if c.get("contextLengthRanges") else ";"
    kv = _kv(v)
    custom = vllm.get("customCommand")
    if custom is not None:
        return f"{pre} {sep} {str(custom).strip()}{kv}"
    proxy = _map(_map(v, "routing"), "proxy")
    inference = proxy.get("enabled", True) is False or role == "prefill"
    port = "$VLLM_INFERENCE_PORT" if inference else "$VLLM_METRICS_PORT"
    if _map(v, "modelservice").get("uriProtocol") == "hf":
        ref = model.get("huggingfaceId", model.get("name"))
    else:
        ref = f"{model.get('cacheBase')}/{model.get('path')}"
    text = (
        f"{pre} {sep} vllm serve {ref} \\\n  --host {common.get('host')} \\\n"
        f"  --served-model-name {model.get('name')} \\\n  --port {port} \\\n"
        "  --block-size $VLLM_BLOCK_SIZE \\\n  --max-model-len $VLLM_MAX_MODEL_LEN"
    )
    if _int(_map(c, "parallelism").get("tensor")) > 0:
        text += _flag("--tensor-parallel-size $VLLM_TENSOR_PARALLELISM")
    try:
        memory = float(model.get("gpuMemoryUtilization"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        memory = 0.0
    if memory > 0:
        text += _flag("--gpu-memory-utilization $VLLM_ACCELERATOR_MEM_UTIL")
    for key, flag in (
        ("enforceEager", "--enforce-eager"),
        ("disableLogRequests", "--no-enable-log-requests"),
        ("disableUvicornAccessLog", "--disable-uvicorn-access-log"),
        ("noPrefixCaching", "--no-enable-prefix-caching"),
        ("enablePrefixCaching", "--enable-prefix-caching"),
    ):
        if flags.get(key):
            text += _flag(flag)
    if flags.get("chatTemplate"):
        text += _flag(f"--chat-template '{flags['chatTemplate']}'")
    if flags.get("chatTemplateContentFormat"):
        text += _flag(f"--chat-template-content-format {flags['chatTemplateContentFormat']}")
    text += kv
    for extra in listing(vllm.get("additionalFlags")):
        text += _flag(str(extra))
    return text


def _kv(v: dict[str, Any]) -> str:
    """``build_kv_transfer_config`` and ``build_kv_events_config``, when enabled."""
    common, model = _map(v, "vllmCommon"), _map(v, "model")
    out = ""
    transfer, events = _map(common, "kvTransfer"), _map(common, "kvEvents")
    if transfer.get("enabled"):
        text = f'{{"kv_connector":"{transfer.get("connector")}","kv_role":"{transfer.get("role")}"'
        if transfer.get("extraConfig"):
            extra = json.dumps(transfer["extraConfig"], separators=(",", ":"))
            text += f',"kv_connector_extra_config":{extra}'
        out += _flag(f"--kv-transfer-config '{text}}}'")
    if events.get("enabled"):
        service = events.get("serviceName", f"{v.get('model_id_label')}-router-epp")
        ns = _map(v, "namespace").get("name")
        ns = "llmdbench" if ns == "auto" else ns
        endpoint = f"tcp://{service}.{ns}.svc.cluster.local:{events.get('port')}"
        topic = f"{events.get('topicPrefix')}@$(POD_IP):$(VLLM_INFERENCE_PORT)@{model.get('name')}"
        text = (
            f'{{"enable_kv_cache_events":true,"publisher":"{events.get("publisher")}",'
            f'"endpoint":"{endpoint}","topic":"{topic}"}}'
        )
        out += _flag(f"--kv-events-config '{text}'")
    return out
