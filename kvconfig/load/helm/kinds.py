"""Which chart a values file is for, from its data alone (``kvconfig.load.documents``
asks before any reader is imported): AI on EKS's inference chart, OPEA's vLLM chart and
the Semantic Router's Dynamo chart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

OPEA_IMAGE = re.compile(r"(^|/)opea/vllm(-[a-z0-9]+)?$")
"""OPEA's vLLM images (``opea/vllm``, ``opea/vllm-gaudi``, ``opea/vllm-rocm``)."""
OPEA_SET_ENV = (
    "VLLM_CPU_KVCACHE_SPACE", "VLLM_SKIP_WARMUP", "PT_HPU_ENABLE_LAZY_COLLECTIVES",
    "OMPI_MCA_btl_vader_single_copy_mechanism", "VLLM_TORCH_PROFILER_DIR",
    "PT_HPUGRAPH_DISABLE_TENSOR_CACHE",
)  # fmt: skip
"""The OPEA chart's ConfigMap entries written when their value is set (``configmap.yaml``),
in its order."""
_OPEA_OWN = ("LLM_MODEL_ID", "extraCmdArgs", "accelDevice", "extraCmd")
_OPEA_KEYS = frozenset({
    "enabled", "replicaCount", "autoscaling", "accelDevice", "port", "shmSize", "image",
    "imagePullSecrets", "nameOverride", "fullnameOverride", "serviceAccount", "podAnnotations",
    "podSecurityContext", "securityContext", "service", "resources", "extraCmd", "extraCmdArgs",
    "livenessProbe", "readinessProbe", "startupProbe", "nodeSelector", "tolerations",
    "affinity", "evenly_distributed", "tdxEnabled", "env", "global", "LLM_MODEL_ID",
    *OPEA_SET_ENV,
})  # fmt: skip
"""Every key the OPEA chart reads (its values.yaml and templates), and a subchart's
``enabled``."""


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def is_inference_charts(data: Mapping[str, Any]) -> bool:
    """Values of AI on EKS's inference chart: an ``inference`` mapping naming a framework
    or a model server."""
    inference = data.get("inference")
    return isinstance(inference, dict) and ("framework" in inference or "modelServer" in inference)


def _opea_values(section: Any) -> bool:
    """Values of OPEA's vLLM chart: its own keys or its images, or only ``enabled`` and
    other keys the chart reads (``vllm: {enabled: false}``)."""
    if not isinstance(section, dict):
        return False
    repository = _dict(section.get("image")).get("repository")
    return (
        any(k in section for k in _OPEA_OWN)
        or bool(isinstance(repository, str) and OPEA_IMAGE.search(repository))
        or ("enabled" in section and section.keys() <= _OPEA_KEYS)
    )


def opea_sections(data: Mapping[str, Any]) -> list[str]:
    """The ``vllm``/``vllm-*`` sections of an OPEA application chart's values."""
    return [
        str(k)
        for k, v in data.items()
        if (k == "vllm" or str(k).startswith("vllm-")) and _opea_values(v)
    ]


def is_opea(data: Mapping[str, Any]) -> bool:
    """Values of OPEA's vLLM chart, alone or as a subchart's section."""
    repository = _dict(data.get("image")).get("repository")
    own = isinstance(repository, str) and bool(OPEA_IMAGE.search(repository))
    return own or bool(opea_sections(data))


def is_semantic_router_dynamo(data: Mapping[str, Any]) -> bool:
    """Values of the Semantic Router's Dynamo chart (``kvconfig.load.helm.semantic_router``):
    ``workers`` whose entries hold a ``model`` mapping with a ``path``, beside the chart's
    ``frontend`` or ``global.backendFramework``."""
    workers = data.get("workers")
    return (
        isinstance(workers, list)
        and any(isinstance(w, dict) and "path" in _dict(w.get("model")) for w in workers)
        and (
            isinstance(data.get("frontend"), dict)
            or "backendFramework" in _dict(data.get("global"))
        )
    )


def is_kv_cache_setup(data: Mapping[str, Any]) -> bool:
    """Values of llm-d-kv-cache's ``vllm-setup-helm`` chart
    (``kvconfig.load.helm.kv_cache_setup``): a ``vllm`` section naming ``model.name`` and
    ``blockSize``, beside ``kvCacheManager``."""
    vllm = _dict(data.get("vllm"))
    return "kvCacheManager" in data and "blockSize" in vllm and "name" in _dict(vllm.get("model"))
