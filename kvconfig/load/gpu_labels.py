"""GPU names as operator files write them, turned into the platforms kvconfig knows.

Kubernetes nodes carry the GPU's product name in a label: NVIDIA's GPU feature discovery
sets ``nvidia.com/gpu.product`` to the name the driver reports with spaces as dashes
(``NVIDIA-H100-80GB-HBM3``, ``NVIDIA-GH200-480GB``, ``Tesla-T4``, with ``-MIG-1g.10gb``
or ``-SHARED`` appended on partitioned or shared GPUs); GKE sets
``cloud.google.com/gke-accelerator`` (``nvidia-h100-80gb``); AMD's labeller
``amd.com/gpu.product-name``; Karpenter ``karpenter.k8s.aws/instance-gpu-name`` (``h100``).
SkyPilot writes ``H100:8`` or ``A100-80GB``, Ray Serve ``A100-80G`` or
``AMD-Instinct-MI300X-OAM``. Each becomes one name of ``kvconfig.load.platforms``
(``H100``, ``GH200``...), or None when kvconfig does not know the GPU.
"""

from __future__ import annotations

import functools
import re

from kvconfig.load.platforms import known_names

#: Node labels that name the GPU product, in the order they are trusted.
GPU_LABELS = (
    "nvidia.com/gpu.product",
    "cloud.google.com/gke-accelerator",
    "amd.com/gpu.product-name",
    "karpenter.k8s.aws/instance-gpu-name",
)

_PREFIXES = ("NVIDIA", "TESLA", "GEFORCE", "AMD", "INSTINCT", "RADEON", "QUADRO")
_PARTITION = re.compile(r"-(MIG-.*|SHARED)$")


def _key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text).upper()


@functools.cache
def _names() -> dict[str, str]:
    names = {_key(n): n for n in known_names() if n not in ("cpu", "xpu")}
    names.pop("GFX90A", None)
    names.pop("GFX942", None)
    names.pop("GFX950", None)
    return names


def platform_of(label: str) -> str | None:
    """The kvconfig platform name of a GPU label or accelerator name, or None."""
    text = label.strip().split(":", 1)[0]
    text = re.sub(r"[\s_]+", "-", text).upper()
    text = _PARTITION.sub("", text)
    tokens = [t for t in text.split("-") if t]
    while tokens and tokens[0] in _PREFIXES:
        tokens.pop(0)
    names = _names()
    for n in range(len(tokens), 0, -1):
        found = names.get("".join(tokens[:n]))
        if found is not None:
            return found
    return None
