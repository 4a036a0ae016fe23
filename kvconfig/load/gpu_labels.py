"""GPU names as operator files write them, turned into the platforms kvconfig knows.

Kubernetes nodes carry the GPU's product name in a label: NVIDIA's GPU feature discovery
sets ``nvidia.com/gpu.product`` to the name the driver reports with spaces as dashes
(``NVIDIA-H100-80GB-HBM3``, ``NVIDIA-GH200-480GB``, ``Tesla-T4``, with ``-MIG-1g.10gb``
or ``-SHARED`` appended on partitioned or shared GPUs); GKE sets
``cloud.google.com/gke-accelerator`` (``nvidia-h100-80gb``); AMD's labeller
``amd.com/gpu.product-name``; Karpenter ``karpenter.k8s.aws/instance-gpu-name`` (``h100``);
Volcengine VKE ``machine.cluster.vke.volcengine.com/gpu-name`` (``NVIDIA-L20``); the
instance type (``node.kubernetes.io/instance-type``: ``p5.48xlarge``, ``a3-highgpu-8g``,
``BM.GPU.H100.8``, ``Standard_ND96isr_H100_v5``; Karpenter's ``instance-family``) where
all of its GPUs are one model.
SkyPilot writes ``H100:8`` or ``A100-80GB``, Ray Serve ``A100-80G`` or
``AMD-Instinct-MI300X-OAM``. Each becomes one name of ``kvconfig.load.platforms``
(``H100``, ``GH200``...), or None when kvconfig does not know the GPU.
"""

from __future__ import annotations

import functools
import re

from kvconfig.load.platforms import known_names

#: Node labels that name the GPU product (or an instance type that has one GPU model), in
#: the order they are trusted.
GPU_LABELS = (
    "nvidia.com/gpu.product",
    "cloud.google.com/gke-accelerator",
    "amd.com/gpu.product-name",
    "karpenter.k8s.aws/instance-gpu-name",
    "machine.cluster.vke.volcengine.com/gpu-name",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "karpenter.k8s.aws/instance-family",
)

#: Labels whose value is an instance type: they name a GPU only for GPU instance types.
INSTANCE_LABELS = frozenset(
    {
        "node.kubernetes.io/instance-type",
        "beta.kubernetes.io/instance-type",
        "karpenter.k8s.aws/instance-family",
    }
)

#: Cloud instance types (and AWS instance families) whose GPUs are all of one model: AWS
#: EC2 accelerated computing instances, Google Cloud's GPU machine types, Oracle Cloud's
#: GPU shapes, Azure's GPU-accelerated N-series sizes (docs/inputs.md names the pages).
INSTANCE_GPUS = (
    (re.compile(r"^p6-b200(\.|$)"), "B200"),
    (re.compile(r"^p6e-gb200(\.|$)"), "GB200"),
    (re.compile(r"^p5en?(\.|$)|^p5e(\.|$)"), "H200"),
    (re.compile(r"^p5(\.|$)"), "H100"),
    (re.compile(r"^p4de?(\.|$)"), "A100"),
    (re.compile(r"^p3(dn)?(\.|$)"), "V100"),
    (re.compile(r"^g6e(\.|$)"), "L40S"),
    (re.compile(r"^g6(\.|$)"), "L4"),
    (re.compile(r"^g5(\.|$)"), "A10G"),
    (re.compile(r"^g4dn(\.|$)"), "T4"),
    (re.compile(r"^a3-ultragpu-"), "H200"),
    (re.compile(r"^a3-(high|mega|edge)gpu-"), "H100"),
    (re.compile(r"^a4-highgpu-"), "B200"),
    (re.compile(r"^a4x-highgpu-"), "GB200"),
    (re.compile(r"^a2-(high|ultra|mega)gpu-"), "A100"),
    (re.compile(r"^g2-standard-"), "L4"),
    (re.compile(r"^(BM|VM)\.GPU\.(?P<gpu>H100|H200|B200|GB200|L40S|A10|MI300X)(\.|$)"), ""),
    (re.compile(r"^BM\.GPU(4\.|\.A100)"), "A100"),
    # Azure N-series sizes that name their GPU (Standard_ND96isr_H100_v5,
    # Standard_NC24ads_A100_v4, Standard_ND128isr_NDR_GB200_v6), and the two that do not
    (
        re.compile(
            r"^Standard_N[CDV]\d+[a-z]*((?:_[A-Za-z]+)*?)_(?P<gpu>A100|H100|H200|GB200|GB300|"
            r"MI300X|T4|A10|V100)_v\d+$",
            re.I,
        ),
        "",
    ),
    (re.compile(r"^Standard_ND96asr_v4$", re.I), "A100"),
    (re.compile(r"^Standard_NC\d+s_v3$|^Standard_ND40rs_v2$", re.I), "V100"),
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


def instance_gpu(value: str) -> str | None:
    """The GPU of a cloud instance type (``p5.48xlarge``, ``a3-highgpu-8g``,
    ``BM.GPU.H100.8``), or None when the type is not one kvconfig knows."""
    for pattern, gpu in INSTANCE_GPUS:
        m = pattern.match(value.strip())
        if m is not None:
            return gpu or m.group("gpu").upper()
    return None


def platform_of(label: str) -> str | None:
    """The kvconfig platform name of a GPU label, accelerator name or cloud instance type,
    or None."""
    gpu = instance_gpu(label)
    if gpu is not None:
        label = gpu
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
