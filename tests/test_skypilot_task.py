"""SkyPilot tasks: how many copies run, and accelerator counts that are not numbers."""

from __future__ import annotations

import pytest

from kvconfig.load.engines import engines_in

TASK = """\
resources:
  accelerators: {accelerators}
{service}
run: |
  vllm serve Qwen/Qwen3-8B --tensor-parallel-size $SKYPILOT_NUM_GPUS_PER_NODE
"""


@pytest.mark.parametrize(
    ("service", "replicas"),
    [("", 1), ("service:\n  replicas: 3\n  readiness_probe: /v1/models", None)],
)
def test_a_task_without_a_service_runs_once(service: str, replicas: int | None) -> None:
    """sky serve up refuses a task without a service section; sky launch runs it once."""
    (engine,) = engines_in(TASK.format(accelerators="H100:2", service=service), "task.yaml")
    assert engine.parallelism.get("replicas") == replicas


def test_a_yaml_bool_is_not_a_gpu_count() -> None:
    text = TASK.format(accelerators="{H100: false}", service="")
    (engine,) = engines_in(text, "task.yaml")
    assert engine.parallelism.get("gpus") == 1


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        ({"resources": {"accelerators": "H100:8"}, "run": "vllm serve m"}, "skypilot"),
        ({"num_nodes": 2, "envs": {"A": "1"}, "secrets": {"HF_TOKEN": None}}, "skypilot"),
        # chart values beside a resources key: SkyPilot's task schema refuses the others
        ({"replicaCount": 1, "image": {"tag": "v1"}, "resources": {"limits": {}}}, None),
        ({"num_nodes": 2, "tensor_parallel_size": 8}, None),
    ],
)
def test_a_task_has_only_the_keys_skypilots_schema_allows(
    data: dict[str, object], kind: str | None
) -> None:
    from kvconfig.load.documents import kind_of

    assert kind_of(data) == kind
