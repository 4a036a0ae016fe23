"""llmaz's ``Playground`` read as the pod its controller builds from the claimed
``OpenModel``s and the ``BackendRuntime`` (kvconfig.load.llmaz; InftyAI/llmaz
``playground_controller.go``, ``backendruntime.go``, ``modelsource/modelhub.go``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kvconfig.errors import InputError, NoEngine
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

QWEN3_8B = Path(__file__).parent.parent / "examples" / "models" / "qwen3-8b"

MODEL = """apiVersion: llmaz.io/v1alpha1
kind: OpenModel
metadata: {name: %(name)s}
spec:
  familyName: qwen3
  source: {modelHub: {modelID: %(id)s}}
  inferenceConfig:
    flavors:
    - name: h100
      limits: {nvidia.com/gpu: 2}
"""

PLAYGROUND = """apiVersion: inference.llmaz.io/v1alpha1
kind: Playground
metadata: {name: pg}
spec:
  replicas: 3
%(claim)s
"""


def _input(claim: str, *models: tuple[str, str], extra: str = "") -> str:
    docs = [MODEL % {"name": n, "id": i} for n, i in models]
    return "---\n".join([*docs, PLAYGROUND % {"claim": claim}, *([extra] if extra else [])])


def test_the_default_config_of_the_chart_s_vllm_runtime() -> None:
    claim = (
        "  modelClaim: {modelName: qwen}\n  backendRuntimeConfig:\n    version: v0.8.5\n"
        "    args: [--block-size, '32', --tensor-parallel-size, '2']"
    )
    (engine,) = engines_in(_input(claim, ("qwen", "Qwen/Qwen3-8B")), "<pg>")
    assert engine.name == "Playground/pg/model-runner"
    assert engine.argv == (
        "--model", "/workspace/models/models--Qwen--Qwen3-8B", "--served-model-name", "qwen",
        "--host", "0.0.0.0", "--port", "8080", "--block-size", "32",
        "--tensor-parallel-size", "2",
    )  # fmt: skip
    assert engine.image == "vllm/vllm-openai:v0.8.5" and engine.parallelism["gpus"] == 2
    r = reading_of(engine)
    assert (r.replicas, r.tensor, r.block_size, r.model_uri) == (3, 2, 32, "hf://Qwen/Qwen3-8B")


def test_a_draft_role_picks_the_speculative_decoding_config() -> None:
    claim = (
        "  modelClaims:\n    models:\n    - {name: draft, role: draft}\n"
        "    - {name: target, role: main}"
    )
    text = _input(claim, ("target", "org/big"), ("draft", "org/small"))
    (engine,) = engines_in(text, "<pg>")
    assert engine.argv[:6] == (
        "--model", "/workspace/models/models--org--big", "--served-model-name", "target",
        "--speculative_model", "/workspace/models/models--org--small",
    )  # fmt: skip
    assert engine.image == "vllm/vllm-openai:v0.7.3"  # the chart's runtime


def test_a_backend_runtime_in_the_input_and_other_backends() -> None:
    runtime = """apiVersion: inference.llmaz.io/v1alpha1
kind: BackendRuntime
metadata: {name: vllm}
spec:
  command: [vllm, serve]
  image: my/vllm
  version: v0.33.0
  recommendedConfigs:
  - name: default
    args: ["{{ .ModelPath }}", --block-size, "64"]
"""
    claim = "  modelClaim: {modelName: qwen}"
    (engine,) = engines_in(_input(claim, ("qwen", "Qwen/Qwen3-8B"), extra=runtime), "<pg>")
    assert engine.argv == ("/workspace/models/models--Qwen--Qwen3-8B", "--block-size", "64")
    assert engine.image == "my/vllm:v0.33.0"
    sglang = claim + "\n  backendRuntimeConfig: {backendName: sglang}"
    with pytest.raises(NoEngine, match="no vLLM"):
        engines_in(_input(sglang, ("qwen", "Qwen/Qwen3-8B")), "<pg>")


def test_a_config_field_no_model_fills_is_refused_as_the_controller_refuses_it() -> None:
    claim = (
        "  modelClaim: {modelName: qwen}\n"
        "  backendRuntimeConfig: {configName: speculative-decoding}"
    )
    with pytest.raises(InputError, match=r"needs \{\{ \.DraftModelPath \}\}"):
        engines_in(_input(claim, ("qwen", "Qwen/Qwen3-8B")), "<pg>")


def test_a_model_the_input_does_not_hold_is_only_known_in_the_cluster() -> None:
    (engine,) = engines_in(_input("  modelClaim: {modelName: elsewhere}"), "<pg>")
    assert "model" in reading_of(engine).run_time


def test_lint_plans_the_loaded_model(tmp_path: Path) -> None:
    """The loader's path is the Hub model's copy: mapped as the Hub id, it is planned."""
    from kvconfig.cli.commands import main

    path = tmp_path / "pg.yaml"
    path.write_text(_input("  modelClaim: {modelName: qwen}", ("qwen", "Qwen/Qwen3-8B")))
    out = io.StringIO()
    argv = ["lint", "--format", "json", "--platform", "H100",
            "--model-path", f"Qwen/Qwen3-8B={QWEN3_8B}", str(path)]  # fmt: skip
    assert main(argv, stdout=out) == 0
    assert json.loads(out.getvalue())["verdict"] == "ok"


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("host:///workspace/Qwen2-0.5B-Instruct", "/workspace/Qwen2-0.5B-Instruct"),
        ("oss://bucket.oss-cn.aliyuncs.com/models/Qwen2-7B", "/workspace/models/models--Qwen2-7B"),
        ("s3://bucket/models/qwen.gguf", "/workspace/models/qwen.gguf"),
        ("gcs://bucket/a/b/opt-125m", "/workspace/models/models--opt-125m"),
    ],
)
def test_a_uri_model_is_where_the_loader_puts_it(uri: str, path: str) -> None:
    """``modelsource/uri.go``: a host path as it is, else the loader's copy of the
    address's last element (``pkg/util/uri.go`` parses the address)."""
    model = MODEL.replace("source: {modelHub: {modelID: %(id)s}}", f"source: {{uri: '{uri}'}}")
    text = "---\n".join(
        [model % {"name": "m"}, PLAYGROUND % {"claim": "  modelClaim: {modelName: m}"}]
    )
    (engine,) = engines_in(text, "<pg>")
    assert engine.argv[:2] == ("--model", path)
