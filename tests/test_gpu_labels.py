"""GPU names from the node labels and instance types of the clouds operators use."""

from __future__ import annotations

import pytest

from kvconfig.load.engines import engines_in
from kvconfig.load.gpu_labels import platform_of

# (label value as clouds write it, the GPU it names); the instance types are from AWS's
# accelerated computing instances, Google Cloud's GPU machine types, Oracle Cloud's
# GPU shapes and Azure's N-series sizes; NVIDIA-L20 from an AIBrix Volcengine manifest
# (tests/realworld).
CASES = [
    ("NVIDIA-H100-80GB-HBM3", "H100"),
    ("nvidia-h100-80gb", "H100"),
    ("NVIDIA-L20", "L20"),
    ("p5.48xlarge", "H100"),
    ("p5en.48xlarge", "H200"),
    ("p4d.24xlarge", "A100"),
    ("g6e.12xlarge", "L40S"),
    ("g5.2xlarge", "A10G"),
    ("p5", "H100"),
    ("a3-highgpu-8g", "H100"),
    ("a3-ultragpu-8g", "H200"),
    ("a4-highgpu-8g", "B200"),
    ("BM.GPU.H100.8", "H100"),
    ("BM.GPU.A100-v2.8", "A100"),
    ("BM.GPU.MI300X.8", "MI300X"),
    ("Standard_ND96isr_H100_v5", "H100"),
    ("Standard_NC40ads_H100_v5", "H100"),
    ("Standard_ND96isr_H200_v5", "H200"),
    ("Standard_ND128isr_NDR_GB200_v6", "GB200"),
    ("Standard_ND96isr_MI300X_v5", "MI300X"),
    ("Standard_NC24ads_A100_v4", "A100"),
    ("Standard_ND96asr_v4", "A100"),
    ("Standard_NC6s_v3", "V100"),
    ("Standard_NC4as_T4_v3", "T4"),
    ("Standard_D4s_v3", None),
    ("ecs.g3il.xlarge", None),
    ("m5.large", None),
]


@pytest.mark.parametrize(("value", "gpu"), CASES)
def test_platform_of(value: str, gpu: str | None) -> None:
    assert platform_of(value) == gpu


MANIFEST = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: v}}
spec:
  template:
    spec:
      nodeSelector: {{{label}: {value}}}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args: [Qwen/Qwen3-8B]
"""


@pytest.mark.parametrize(
    ("label", "value", "platforms"),
    [
        ("machine.cluster.vke.volcengine.com/gpu-name", "NVIDIA-L20", ("L20",)),
        ("node.kubernetes.io/instance-type", "p5.48xlarge", ("H100",)),
        ("node.kubernetes.io/instance-type", "BM.GPU.H100.8", ("H100",)),
        ("karpenter.k8s.aws/instance-family", "g6e", ("L40S",)),
        ("node.kubernetes.io/instance-type", "Standard_ND96isr_H100_v5", ("H100",)),
        ("node.kubernetes.io/instance-type", "m5.large", ()),
    ],
)
def test_node_selector(label: str, value: str, platforms: tuple[str, ...]) -> None:
    (engine,) = engines_in(MANIFEST.format(label=label, value=value), "<m>")
    assert engine.platforms == platforms
    assert not [n for n in engine.notes if n.kind == "unknown-gpu"]
