"""llm-d-benchmark's values for one stack of a scenario, merged as ``llmdbenchmark standup``
merges them before it renders its templates (``kvconfig.load.llmd_benchmark`` reads the
engines of the result).

Sources, in llm-d/llm-d-benchmark (read at commit 8bc9f1dd):

* ``config/templates/values/defaults.yaml``: the values every stack starts from.
  ``DEFAULTS`` holds the ones that decide how a vLLM server of the modelservice method is
  started (model, ports, the vLLM flags, the accelerator profile's command fragments,
  the decode and prefill sections, the images); ``OWNED`` lists the keys (and their
  sub-keys) of the ``decode`` and ``prefill`` sections there, which a ``common`` block
  seeds; ``PRESETS`` the parallelism of each ``resourcePresets`` entry.
* ``llmdbenchmark/parser/render_plans.py``, ``RenderPlans``: ``deep_merge`` (a key
  given no value keeps the value below it; mappings merge; anything else is replaced),
  ``_expand_stack_common``, ``_process_stack`` (defaults, then ``shared``, then the
  stack, then ``_hoist_modelservice_sections``), ``_apply_accelerator_profile``,
  ``_apply_resource_preset``, ``_resolve_model_id_label`` and
  ``_substitute_config_variables`` (``${dotted.path}`` replaced by the value there).
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from typing import Any

_SINGLE = {"data": 1, "dataLocal": 1, "tensor": 1, "workers": 1}

_PREAMBLE = (
    "export LD_LIBRARY_PATH=$(find / -name libcuda.so.1 -printf '%h\\n' 2>/dev/null"
    " | sed ':a; N; $!ba; s/\\n/:/g'):${LD_LIBRARY_PATH}\n"
    "export LIBRARY_PATH=$(find / -name libcuda.so.1 -printf '%h\\n' 2>/dev/null"
    " | head -1):${LIBRARY_PATH}\n"
)
"""``accelerator.runtimePreamble`` of the defaults (the CUDA profile's)."""


def _role(enabled: bool, replicas: int) -> dict[str, Any]:
    return {
        "enabled": enabled,
        "replicas": replicas,
        "acceleratorType": {"labelKey": "nvidia.com/gpu.product", "labelValue": "auto"},
        "parallelism": dict(_SINGLE),
        "vllm": {
            "port": 8200,
            "servicePort": 8000,
            "workerMultiprocMethod": "spawn",
            "loggingLevel": "INFO",
            "customCommand": None,
            "customPreprocessCommand": None,
            "additionalFlags": [],
        },
        "mountModelVolume": True,
        "nodeSelector": {},
        "extraEnvVars": [],
    }


DEFAULTS: dict[str, Any] = {
    "modelservice": {"enabled": True, "uriProtocol": "pvc"},
    "standalone": {"enabled": False},
    "kustomize": {"enabled": False},
    "fma": {"enabled": False},
    "nok8s": {"enabled": False},
    "multinode": {"enabled": False},
    "namespace": {"name": "auto"},
    "model": {
        "name": "facebook/opt-125m",
        "shortName": "facebook-opt-125m",
        "path": "models/facebook/opt-125m",
        "huggingfaceId": "facebook/opt-125m",
        "maxModelLen": 16384,
        "blockSize": 64,
        "gpuMemoryUtilization": 0.95,
        "cacheBase": "/model-cache",
    },
    "storage": {"modelPvc": {"name": "model-pvc"}},
    "accelerator": {
        "type": "nvidia",
        "resource": "nvidia.com/gpu",
        "runtimePreamble": _PREAMBLE,
        "dtypeArgs": "--dtype bfloat16",
        "executionArgs": "",
        "blockSizeArgs": "--block-size $VLLM_BLOCK_SIZE",
        "memoryUtilizationArgs": "--gpu-memory-utilization $VLLM_ACCELERATOR_MEM_UTIL",
        "kvBufferDeviceJson": "",
    },
    "images": {"vllm": {"repository": "docker.io/vllm/vllm-openai", "tag": "v0.26.0"}},
    "routing": {
        "servicePort": 8000,
        "connector": "nixlv2",
        "proxy": {"enabled": True, "targetPort": 8200},
    },
    "vllmCommon": {
        "inferencePort": 8000,
        "host": "0.0.0.0",
        "preprocessScript": "/bin/true",
        "kvTransfer": {"enabled": False, "connector": "NixlConnector", "role": "kv_both"},
        "kvEvents": {"enabled": False, "publisher": "zmq", "port": 5557, "topicPrefix": "kv"},
        "containerHome": "/tmp",
        "hfHome": "/tmp/huggingface",
        "shell": "/bin/bash",
        "nixlSideChannelPort": "5557",
        "ucxTls": "sm,cuda_ipc,cuda_copy,tcp",
        "ucxSockaddrTlsPriority": "tcp",
        "flags": {
            "enforceEager": True,
            "disableLogRequests": True,
            "disableUvicornAccessLog": True,
            "allowLongMaxModelLen": "1",
            "serverDevMode": "1",
        },
    },
    "decode": _role(True, 1),
    "prefill": _role(False, 0),
}
"""What ``config/templates/values/defaults.yaml`` sets of the keys the reader uses."""

_VLLM_KEYS = ["additionalFlags", "customCommand", "customPreprocessCommand",
              "imagePullPolicy", "loggingLevel", "port", "servicePort",
              "workerMultiprocMethod"]  # fmt: skip
OWNED: dict[str, list[str] | None] = {
    "enabled": None, "replicas": None, "autoscaling": ["enabled"], "nodeSelector": [],
    "acceleratorType": ["labelKey", "labelValue"],
    "parallelism": ["data", "dataLocal", "tensor", "workers"],
    "resources": ["limits", "requests"], "shm": ["size"],
    "probes": ["liveness", "readiness", "startup"], "vllm": _VLLM_KEYS,
    "mountModelVolume": None, "additionalVolumeMounts": None, "additionalVolumes": None,
    "extraEnvVars": None, "extraContainerConfig": [], "extraPodConfig": [],
    "initContainers": None, "monitoring": ["podmonitor"],
}  # fmt: skip
"""The keys of the defaults' ``decode`` section (``prefill`` has them all but ``shm``),
with the sub-keys of those holding a mapping: what ``_method_owned_keys`` finds there."""

PRESETS = {
    "small": _SINGLE,
    "medium": _SINGLE,
    "large": {"data": 1, "dataLocal": 1, "tensor": 4, "workers": 4},
    "xlarge": {"data": 1, "dataLocal": 1, "tensor": 8, "workers": 8},
}
"""The parallelism each ``resourcePresets`` entry gives ``decode`` and ``prefill``."""

HOISTED = ("common", "gateway", "router", "routing", "httpRoute", "inferenceExtension",
           "prefill", "decode", "multinode")  # fmt: skip
"""``_MODELSERVICE_HOISTED``: sections a scenario may nest under ``modelservice``."""

OVERLAID = ("intel-xpu",)
"""Profiles with an overlay in ``config/templates/values/overlays`` (``intel-*`` other
than ``intel-gaudi`` take ``intel-xpu``'s): not read (the overlay swaps the model)."""


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``RenderPlans.deep_merge``: a None value keeps the base's; mappings merge."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if value is None:
            continue
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def expand_common(layer: Mapping[str, Any]) -> dict[str, Any]:
    """``_expand_stack_common``: a layer's ``common`` seeds the keys the ``decode`` and
    ``prefill`` sections own (their known sub-keys only; never ``enabled``) where the
    layer does not set them there, then merges into the layer's root."""
    out = copy.deepcopy(dict(layer))
    common = out.pop("common", None)
    if not isinstance(common, dict):
        return out
    for key, value in common.items():
        if key == "enabled" or key not in OWNED:
            continue
        for section in ("decode", "prefill"):
            if key == "shm" and section == "prefill":
                continue
            block = out.setdefault(section, {})
            if not isinstance(block, dict) or key in block:
                continue
            inherited = copy.deepcopy(value)
            allowed = OWNED[key]
            if allowed is not None and isinstance(inherited, dict):
                inherited = {k: v for k, v in inherited.items() if k in allowed}
                if not inherited:
                    continue
            block[key] = inherited
    return deep_merge(out, common)


def hoist(values: dict[str, Any]) -> dict[str, Any]:
    """``_hoist_modelservice_sections``: ``modelservice.decode`` and the like merged over
    the top-level section of the same name."""
    service = values.get("modelservice")
    if isinstance(service, dict):
        for key in HOISTED:
            if key in service:
                nested = service.pop(key)
                top = values.get(key)
                values[key] = deep_merge(
                    top if isinstance(top, dict) else {}, nested if isinstance(nested, dict) else {}
                )
    return values


def stack_values(shared: Mapping[str, Any], stack: Mapping[str, Any]) -> dict[str, Any]:
    """One stack's values as ``_process_stack`` makes them, before its templates."""
    own = {k: v for k, v in stack.items() if k != "name"}
    values = deep_merge(deep_merge(DEFAULTS, expand_common(shared)), expand_common(own))
    values = hoist(values)
    preset = values.get("resourcePreset")
    if isinstance(preset, str) and preset in PRESETS:
        for role in ("decode", "prefill"):
            section = values.setdefault(role, {})
            if isinstance(section, dict):
                values[role] = deep_merge(section, {"parallelism": PRESETS[preset]})
    _model_id_label(values)
    return substitute(values)


def _model_id_label(values: dict[str, Any]) -> None:
    """``_resolve_model_id_label`` (the namespace ``auto`` is ``llmdbench``)."""
    model: dict[str, Any] = values["model"] if isinstance(values.get("model"), dict) else {}
    name = str(model.get("name") or "")
    space: dict[str, Any] = values["namespace"] if isinstance(values.get("namespace"), dict) else {}
    ns = str(space.get("name") or "")
    ns = "llmdbench" if ns == "auto" else ns
    if name:
        ident = name.replace("/", "-").replace(".", "-")
        digest = hashlib.sha256(f"{ns}/{ident}".encode() if ns else ident.encode()).hexdigest()
        values["model_id_label"] = f"{ident[:8]}-{digest[:8]}-{ident[-8:]}".lower()
    else:
        values["model_id_label"] = str(model.get("shortName") or "")


_DOTTED = re.compile(r"\$\{(\w+(?:\.\w+)+)\}")


def substitute(values: dict[str, Any]) -> dict[str, Any]:
    """``_substitute_config_variables``: every ``${a.b}`` in a string is the scalar at
    that path of the values, as Python's ``str`` writes it; one that names nothing (or a
    mapping or list) stays as written."""

    def text(value: str) -> str:
        def one(m: re.Match[str]) -> str:
            node: Any = values
            for part in m.group(1).split("."):
                if not isinstance(node, dict) or part not in node:
                    return m.group(0)
                node = node[part]
            if isinstance(node, (dict, list)) or node is None:
                return m.group(0)
            return str(node)

        return _DOTTED.sub(one, value)

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in list(items):
            if isinstance(value, str):
                node[key] = text(value)
            elif isinstance(value, (dict, list)):
                walk(value)

    walk(values)
    return values
