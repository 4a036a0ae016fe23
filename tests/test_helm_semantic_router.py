"""The Semantic Router's Dynamo chart, read as Helm renders it
(kvconfig.load.helm.semantic_router).

The expectations are the chart's templates (``dynamo-graph-deployment.yaml``,
``_helpers.tpl``), sprig's and Go's documented behaviour, cited per test; two of the chart's
example values files are in the real-file corpus (tests/realworld)."""

from __future__ import annotations

import pytest

from kvconfig.load.engines import engines_in
from kvconfig.load.helm.semantic_router import _title, _two_places, render
from kvconfig.load.reading import reading_of
from kvconfig.load.routers import routers_in_file

_LIBS = "export LD_LIBRARY_PATH=/nvidia-driver-libs:/usr/local/cuda/lib64:$LD_LIBRARY_PATH"


@pytest.mark.parametrize(
    ("text", "titled"),
    [
        ("her royal highness", "Her Royal Highness"),  # Go's strings.Title example
        ("tinyllamaprefill", "Tinyllamaprefill"),
        ("worker0", "Worker0"),
        ("a1b c_d e.f", "A1b C_d E.F"),  # digits and _ join a word, other punctuation splits
    ],
)
def test_service_names_are_title_cased_as_go_does(text: str, titled: str) -> None:
    assert _title(text) == titled


@pytest.mark.parametrize(
    ("value", "printed"),
    [(0.9, "0.90"), (1, "1.00"), (0.125, "0.12"), (0.375, "0.38"), ("x", "%!f(string=x)")],
)
def test_memory_prints_as_printf_two_places(value: object, printed: str) -> None:
    # Go's fmt rounds the exact binary value to nearest, ties to even, as Python does
    assert _two_places(value) == printed


def test_the_chart_s_own_values_render_its_graph() -> None:
    graph = render({})
    services = graph["spec"]["services"]
    assert list(services) == ["Frontend", "Prefillworker0", "Decodeworker1"]
    front = services["Frontend"]["extraPodSpec"]["mainContainer"]
    assert front["image"] == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1.post1"
    assert front["args"] == [
        f"sleep 15 && export CUDA_VISIBLE_DEVICES=0 && {_LIBS} && python3 -m dynamo.frontend "
        "--http-port 8000 --router-mode kv"
    ]
    prefill = services["Prefillworker0"]["extraPodSpec"]["mainContainer"]["args"][0]
    assert prefill == (
        f"sleep 15 && export CUDA_VISIBLE_DEVICES=1 && {_LIBS} && python3 -m dynamo.vllm "
        "--model TinyLlama/TinyLlama-1.1B-Chat-v1.0 --tensor-parallel-size 1 --enforce-eager "
        "--gpu-memory-utilization 0.90 --is-prefill-worker --connector null"
    )


def test_a_values_file_s_workers_replace_the_chart_s() -> None:
    """Helm replaces a list; sprig's ``default`` takes 0 and null as empty (a GPU device 0
    becomes the worker's index + 1, replicas 0 becomes 1); ``enforceEager`` set null or false
    leaves the flag out; a worker of type ``both`` is no prefill worker."""
    text = (
        "global: {backendFramework: vllm}\nworkers:\n"
        "  - {workerType: both, gpuDevice: 0, replicas: 0, connector: nixl,\n"
        "     model: {path: Qwen/Qwen3-8B, enforceEager: null, maxModelLen: 4096,\n"
        "             extraArgs: [--block-size, '64']}}\n"
        "  - {workerType: prefill, model: {path: Qwen/Qwen3-8B, enforceEager: false}}\n"
    )
    import yaml

    services = render(yaml.safe_load(text))["spec"]["services"]
    assert list(services) == ["Frontend", "Worker0", "Prefillworker1"]
    both = services["Worker0"]
    assert both["replicas"] == 1
    assert both["extraPodSpec"]["mainContainer"]["args"][0].endswith(
        "CUDA_VISIBLE_DEVICES=1 && " + _LIBS + " && python3 -m dynamo.vllm --model "
        "Qwen/Qwen3-8B --max-model-len 4096 --connector nixl --block-size 64"
    )
    prefill = services["Prefillworker1"]["extraPodSpec"]["mainContainer"]["args"][0]
    assert "--enforce-eager" not in prefill and "CUDA_VISIBLE_DEVICES=2" in prefill
    readings = {e.name.split("/")[2]: reading_of(e) for e in engines_in(text, "v.yaml")}
    assert readings["Worker0"].block_size == 64 and readings["Worker0"].role == "decode"
    assert readings["Prefillworker1"].role == "prefill"
    assert [(r.kind, r.block_size) for r in routers_in_file(text, "v.yaml")] == [("dynamo", None)]
