"""vLLM's own Helm chart (examples/online_serving/chart-helm): its values read as
``templates/deployment.yaml`` renders them."""

from __future__ import annotations

import pytest
import yaml

from kvconfig.errors import InputError
from kvconfig.load.documents import kind_of
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

VALUES = """
image:
  repository: vllm/vllm-openai
  tag: v0.10.1
  command: ["vllm", "serve", "Qwen/Qwen3-8B", "--block-size", "32", "--tensor-parallel-size", "2"]
  env: [{name: VLLM_LOGGING_LEVEL, value: DEBUG}]
containerPort: 8000
replicaCount: 3
resources:
  requests: {cpu: 4, memory: 16Gi, nvidia.com/gpu: %(gpu)s}
  limits: {cpu: 4, memory: 16Gi, nvidia.com/gpu: %(gpu)s}
gpuModels: [NVIDIA-H100-80GB-HBM3]
extraInit:
  modelDownload: {enabled: false}
"""


def test_the_values_are_vllm_charts() -> None:
    assert kind_of(yaml.safe_load(VALUES % {"gpu": 2})) == "vllm-chart"
    # an image mapping alone (a SkyPilot task, other charts) is not
    assert kind_of({"image": {"repository": "x"}, "resources": {}}) != "vllm-chart"


def test_the_container_runs_image_command() -> None:
    (engine,) = engines_in(VALUES % {"gpu": 2}, "<values>")
    assert engine.argv[:1] == ("Qwen/Qwen3-8B",)
    assert engine.image == "vllm/vllm-openai:v0.10.1"
    assert engine.vllm_version == "0.10.1"
    assert engine.env.get("VLLM_LOGGING_LEVEL") == "DEBUG"
    assert engine.platforms == ("H100",)
    r = reading_of(engine)
    assert (r.replicas, r.tensor, r.block_size) == (3, 2, 32)


def test_no_gpu_unless_requests_and_limits_both_ask() -> None:
    """chart.resources writes nvidia.com/gpu only when both are > 0 (Go's int), and only
    then the gpu.product affinity."""
    (engine,) = engines_in(VALUES % {"gpu": 0}, "<values>")
    assert engine.platforms == ()


def test_a_missing_image_tag_is_the_templates_error() -> None:
    data = yaml.safe_load(VALUES % {"gpu": 1})
    del data["image"]["tag"]
    with pytest.raises(InputError, match="must be defined") as caught:
        engines_in(yaml.safe_dump(data), "<values>")
    assert caught.value.key == "image.tag"
