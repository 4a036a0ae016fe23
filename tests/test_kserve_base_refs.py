"""KServe ``spec.baseRefs`` naming an ``LLMInferenceServiceConfig`` that is not in the input:
the config lives in the cluster (the service's namespace or KServe's: ``getConfig`` in
``pkg/controller/v1alpha2/llmisvc/config_merge.go``), so kvconfig cannot tell how vLLM
starts: verdict unknown (KV403, exit 0), never bad input and never a guess from the
service alone. A well-known preset is the command kvconfig already builds."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from pathlib import Path

import pytest

import kvconfig
from kvconfig.cli import main
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

ROOT = Path(__file__).resolve().parent.parent
QWEN = f"Qwen/Qwen3-8B={ROOT / 'examples' / 'models' / 'qwen3-8b'}"

SERVICE = """\
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: qwen3}
spec:
  model: {uri: "hf://Qwen/Qwen3-8B", name: Qwen/Qwen3-8B}
  baseRefs:
    - name: BASE
  template:
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    containers:
      - name: main
"""

CONFIG = """\
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceServiceConfig
metadata: {name: my-base}
spec:
  template:
    containers:
      - name: main
        env:
          - {name: VLLM_ADDITIONAL_ARGS, value: "--block-size 32"}
---
"""


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err):
        code = main(list(args), stdout=out)
    return code, out.getvalue(), err.getvalue()


def test_a_base_in_the_cluster_is_cannot_tell(tmp_path: Path) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(SERVICE.replace("BASE", "my-base"))
    (engine,) = engines_in(path, str(path))
    assert reading_of(engine).run_time == {"spec.baseRefs": "my-base"}
    code, out, err = _run("lint", "--format", "json", "--model-path", QWEN, str(path))
    assert code == 0, err
    plan = json.loads(out)
    assert plan["verdict"] == "unknown"
    (finding,) = plan["findings"]
    assert finding["code"] == "KV403"
    assert (
        "my-base (an LLMInferenceServiceConfig in the cluster, not in the input)"
        in (finding["message"])
    )
    assert any("kubectl get llminferenceserviceconfig my-base" in f for f in finding["fixes"])
    assert plan["operator_engine"]["reading"]["run_time"] == {"spec.baseRefs": "my-base"}
    code, out, _ = _run("lint", "--model-path", QWEN, str(path))
    assert code == 0 and "over my-base (not in the input)" in out
    (outcome,) = kvconfig.plan_deployments([str(path)], model_path=[QWEN])
    assert outcome.verdict == "unknown"


def test_the_fleet_keeps_the_engine_as_cannot_tell(tmp_path: Path) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(SERVICE.replace("BASE", "my-base"))
    code, out, err = _run("lint", "--fleet", "--format", "json", "--model-path", QWEN, str(path))
    assert code == 0, err
    fleet = json.loads(out)
    assert fleet["verdict"] == "unknown"
    (unplanned,) = fleet["unplanned"]
    assert unplanned["code"] == "KV403" and "spec.baseRefs" in unplanned["why"]


def test_the_base_given_in_the_input_is_merged() -> None:
    text = CONFIG + SERVICE.replace("BASE", "my-base")
    (engine,) = engines_in(text, "<both>")
    reading = reading_of(engine)
    assert (reading.block_size, reading.run_time) == (32, {})


@pytest.mark.parametrize("preset", ["kserve-config-llm-template", "kserve-config-llm-scheduler"])
def test_a_well_known_preset_is_known(preset: str) -> None:
    (engine,) = engines_in(SERVICE.replace("BASE", preset), "svc.yaml")
    assert reading_of(engine).run_time == {}
