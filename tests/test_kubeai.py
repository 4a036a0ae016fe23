"""KubeAI's ``Model`` (``kubeai.org/v1``), read as the pod its controller builds
(substratusai/kubeai ``internal/modelcontroller/engine_vllm.go``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

QWEN3_8B = Path(__file__).parent.parent / "examples" / "models" / "qwen3-8b"

MODEL = """
apiVersion: kubeai.org/v1
kind: Model
metadata: {name: qwen}
spec:
  features: [TextGeneration]
  url: %(url)s
  engine: %(engine)s
  args: [--tensor-parallel-size=2, --block-size=32]
  env: {VLLM_USE_V1: "1", NCCL_DEBUG: INFO}
  resourceProfile: %(profile)s
%(extra)s
"""


def _model(
    url: str = "hf://Qwen/Qwen3-8B",
    engine: str = "VLLM",
    profile: str = "nvidia-gpu-h100:2",
    extra: str = "",
) -> str:
    return MODEL % {"url": url, "engine": engine, "profile": profile, "extra": extra}


def test_the_controllers_arguments() -> None:
    (engine,) = engines_in(_model(extra="  minReplicas: 1"), "<model>")
    assert engine.entry == "api_server"
    assert engine.argv == (
        "--model=Qwen/Qwen3-8B", "--served-model-name=qwen", "--tensor-parallel-size=2",
        "--block-size=32",
    )  # fmt: skip
    assert engine.env == {"NCCL_DEBUG": "INFO", "VLLM_USE_V1": "1"}
    assert engine.image == "vllm/vllm-openai:v0.8.3"  # the chart's nvidia-gpu image
    assert engine.platforms == ("H100",)
    assert engine.parallelism["gpus"] == 2
    r = reading_of(engine)
    assert (r.model, r.model_uri, r.replicas, r.tensor, r.block_size) == (
        "Qwen/Qwen3-8B", "hf://Qwen/Qwen3-8B", 1, 2, 32,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "replicas"),
    [
        ("", 0),  # minReplicas unset: scaled to zero until a request comes
        ("  minReplicas: 2", 2),
        ("  minReplicas: 1\n  replicas: 3", 3),
        ("  minReplicas: 2\n  replicas: 1", 2),
        ("  minReplicas: 1\n  replicas: 5\n  maxReplicas: 4", 4),
    ],
)
def test_replicas_within_the_bounds(extra: str, replicas: int) -> None:
    (engine,) = engines_in(_model(extra=extra), "<model>")
    assert reading_of(engine).replicas == replicas


@pytest.mark.parametrize(
    ("url", "extra", "first"),
    [
        ("s3://bucket/qwen", "", ["--model=s3://bucket/qwen", "--load-format=runai_streamer"]),
        ("pvc://models/qwen3", "", ["--model=/model"]),
        ("hf://Qwen/Qwen3-8B", "  cacheProfile: efs", ["--model=/models/qwen-$(KUBEAI_MODEL_UID)"]),
    ],
)
def test_the_model_flag_of_each_source(url: str, extra: str, first: list[str]) -> None:
    (engine,) = engines_in(_model(url=url, extra=extra), "<model>")
    assert engine.argv[0] == first[0]
    assert list(engine.argv[2 : 2 + len(first) - 1]) == first[1:]
    if "cacheProfile" in extra:  # the Model's UID: known once the API server stores it
        assert "KUBEAI_MODEL_UID" in engine.env_unknown


def test_adapters_turn_lora_on() -> None:
    extra = "  adapters: [{name: a, url: hf://org/adapter}]"
    (engine,) = engines_in(_model(extra=extra), "<model>")
    assert engine.argv[-1] == "--enable-lora"
    assert engine.env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"


@pytest.mark.parametrize(
    ("profile", "image", "platforms"),
    [
        ("amd-gpu-mi300x:8", "substratusai/vllm-rocm:nightly_main_20250120", ("MI300X",)),
        ("nvidia-gpu-gh200:1", "substratusai/vllm-gh200:v0.8.3", ("GH200",)),
        ("nvidia-gpu-l4:1", "vllm/vllm-openai:v0.8.3", ("L4",)),
    ],
)
def test_the_resource_profile_names_image_and_gpu(
    profile: str, image: str, platforms: tuple[str, ...]
) -> None:
    (engine,) = engines_in(_model(profile=profile), "<model>")
    assert (engine.image, engine.platforms) == (image, platforms)


def test_other_engines_start_no_vllm() -> None:
    from kvconfig.errors import InputError

    with pytest.raises(InputError, match="no vLLM container"):
        engines_in(_model(engine="OLlama"), "<model>")


def test_lint_plans_the_model(tmp_path: Path) -> None:
    from kvconfig.cli.commands import main

    path = tmp_path / "model.yaml"
    path.write_text(_model(extra="  minReplicas: 1"))
    out = io.StringIO()
    argv = ["lint", "--format", "json", "--model-path", f"Qwen/Qwen3-8B={QWEN3_8B}", str(path)]
    assert main(argv, stdout=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["platform"]["name"] == "H100"  # from the resource profile, no --platform
    assert doc["verdict"] == "ok" and doc["groups"][0]["block_size"] == 32


def test_a_cache_profile_plans_the_url_s_model(tmp_path: Path) -> None:
    """With a cache profile the server loads ``/models/NAME-$(KUBEAI_MODEL_UID)``: the UID
    is only known once the API server stores the Model, but the loader job copied the
    url's model there, so the plan is the url's model's (no KV403)."""
    from kvconfig.cli.commands import main

    path = tmp_path / "model.yaml"
    path.write_text(_model(extra="  minReplicas: 1\n  cacheProfile: efs"))
    out = io.StringIO()
    argv = ["lint", "--format", "json", "--model-path", f"Qwen/Qwen3-8B={QWEN3_8B}", str(path)]
    assert main(argv, stdout=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["verdict"] == "ok" and doc["groups"][0]["block_size"] == 32
    (engine,) = engines_in(path.read_text(), "<model>")
    assert reading_of(engine).run_time == {}
    other = _model(url="s3://bucket/qwen", extra="  cacheProfile: efs")
    (engine,) = engines_in(other, "<model>")
    assert "model" in reading_of(engine).run_time  # no Hugging Face id: the path decides


def test_an_unknown_gpu_is_named_when_no_platform_is_given(tmp_path: Path) -> None:
    """A file that names its GPU by a name kvconfig has no platform for: the error says
    which GPU, rather than that none was given."""
    import contextlib

    from kvconfig.cli.commands import main

    path = tmp_path / "model.yaml"
    path.write_text(_model(profile="nvidia-gpu-rtx4070-8gb:1", extra="  minReplicas: 1"))
    err = io.StringIO()
    argv = ["lint", "--model-path", f"Qwen/Qwen3-8B={QWEN3_8B}", str(path)]
    with contextlib.redirect_stderr(err):
        assert main(argv, stdout=io.StringIO()) == 2
    assert "does not know the GPU 'rtx4070-8gb'" in err.getvalue()
    assert err.getvalue().count("\n") == 1


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (_model(url="Qwen/Qwen3-8B"), "url"),
        (_model(profile="nvidia-gpu-h100"), "resourceProfile"),
        (_model().replace("args: [--tensor-parallel-size=2, --block-size=32]", "args: -x"), "args"),
    ],
)
def test_what_the_controller_refuses_is_bad_input(text: str, key: str) -> None:
    """A URL that is not SCHEME://REF, a profile without its multiple, args that are not
    a list of strings: KubeAI builds no pod; one line naming the key."""
    from kvconfig.errors import InputError

    with pytest.raises(InputError) as err:
        engines_in(text, "<model>")
    assert err.value.key == key and "\n" not in str(err.value)
