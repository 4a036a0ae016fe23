"""KServe ``InferenceService`` predictors on the Hugging Face runtime, read as the vLLM
engine its server builds (kserve/kserve ``python/huggingfaceserver/huggingfaceserver/
__main__.py``, ``config/runtimes/kserve-huggingfaceserver.yaml``)."""

from __future__ import annotations

import pytest

from kvconfig.errors import InputError
from kvconfig.load.engines import engines_in
from kvconfig.load.kserve_isvc import server_options
from kvconfig.load.reading import reading_of

ISVC = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: qwen}
spec:
  predictor:
%(predictor)s
    model:
      modelFormat: {name: %(fmt)s}
%(model)s
      args: %(args)s
      resources:
        limits: {nvidia.com/gpu: "%(gpus)s"}
"""


def _isvc(
    args: str = "[--max-num-seqs=8]",
    model: str = "      storageUri: hf://Qwen/Qwen3-8B",
    fmt: str = "huggingface",
    gpus: int = 2,
    predictor: str = "    minReplicas: 1",
) -> str:
    return ISVC % {"args": args, "model": model, "fmt": fmt, "gpus": gpus, "predictor": predictor}


def test_the_servers_model_and_the_device_count() -> None:
    # the server sets tensor_parallel_size to the visible GPU count over the arguments
    (engine,) = engines_in(_isvc(args="[--tensor-parallel-size=1, --max_length=4096]"), "<i>")
    assert engine.name == "InferenceService/qwen/kserve-container"
    assert engine.argv == (
        "--model", "/mnt/models", "--tensor-parallel-size=1", "--max-model-len=4096",
        "--tensor-parallel-size=2",
    )  # fmt: skip
    r = reading_of(engine)
    assert (r.model, r.model_uri, r.tensor, r.replicas) == (
        "/mnt/models", "hf://Qwen/Qwen3-8B", 2, None,
    )  # fmt: skip


def test_model_id_and_fixed_replicas() -> None:
    text = _isvc(
        args="[--model_id, Qwen/Qwen3-8B, --http_port=8080, --disable_lower_case]",
        model="      runtime: kserve-huggingfaceserver",
        predictor="    minReplicas: 3\n    maxReplicas: 3",
    )
    (engine,) = engines_in(text, "<i>")
    r = reading_of(engine)
    assert (r.model, r.model_uri, r.replicas, r.tensor) == ("Qwen/Qwen3-8B", None, 3, 2)
    assert "--http_port=8080" not in engine.argv


def test_the_vllm_runtime() -> None:
    (engine,) = engines_in(_isvc(fmt="vLLM", args="[--max-model-len=8192]"), "<i>")
    assert engine.argv == (
        "--port=8080", "--served-model-name=qwen", "--model=/mnt/models", "--max-model-len=8192",
    )  # fmt: skip
    assert engine.image == "vllm/vllm-openai"
    r = reading_of(engine)
    assert (r.model, r.model_uri, r.tensor) == ("/mnt/models", "hf://Qwen/Qwen3-8B", 1)


@pytest.mark.parametrize(
    ("fmt", "args", "model", "runs"),
    [
        ("huggingface", "[--backend=huggingface]", "", "--backend=huggingface"),
        ("huggingface", "[]", "      runtime: my-runtime", "runtime my-runtime"),
        ("sklearn", "[]", "", "the sklearn model format"),
        ("HuggingFace", "[]", "", "the HuggingFace model format"),
    ],
)
def test_no_vllm_engine(fmt: str, args: str, model: str, runs: str) -> None:
    with pytest.raises(InputError, match="no vLLM container found") as err:
        engines_in(_isvc(args=args, model=model, fmt=fmt), "<i>")
    assert runs in err.value.message


def test_a_multinode_predictor_takes_the_multinode_runtime() -> None:
    text = _isvc(predictor="    workerSpec: {pipelineParallelSize: 2}")
    with pytest.raises(InputError, match="multi-node runtime"):
        engines_in(text, "<i>")


def test_server_options() -> None:
    own, rest = server_options(
        ["--model_name=q", "--workers", "2", "--trust_remote_code", "--dtype", "half"]
    )
    assert own == {"model_name": "q", "workers": "2"}
    assert rest == ["--trust-remote-code", "--dtype", "half"]
