"""KubeRay ``RayService`` (its ``spec.serveConfigV2``), Ray Serve LLM's data-parallel
builder (``args.llm_config``) and fixed autoscaling bounds, and KServe's serving runtimes
(templates that run nothing alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvconfig.errors import InputError
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

RAYSERVICE = """\
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: svc
spec:
  serveConfigV2: |
    applications:
    - name: app
      import_path: ray.serve.llm:build_openai_app
      args:
        llm_configs:
        - model_loading_config:
            model_id: small
            model_source: Qwen/Qwen3-8B
          engine_kwargs:
            tensor_parallel_size: 2
            {extra}
          deployment_config:
            num_replicas: 3
  rayClusterConfig:
    headGroupSpec:
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray-llm:2.52.0-py311-cu128
"""


def test_a_rayservice_is_read_through_its_serve_config() -> None:
    (engine,) = engines_in(RAYSERVICE.format(extra="max_model_len: 1024"), "svc.yaml")
    reading = reading_of(engine)
    assert engine.name == "RayService/svc/app/small"
    assert (reading.model, reading.tensor, reading.replicas) == ("Qwen/Qwen3-8B", 2, 3)
    # the literal block keeps the file's lines: the config's entry is on line 12
    assert engine.line == 12


def test_an_engine_argument_vllm_refuses_is_located_in_the_file() -> None:
    with pytest.raises(InputError) as err:
        engines_in(RAYSERVICE.format(extra="device: auto"), "svc.yaml")
    assert "device" in err.value.message
    assert (
        err.value.key
        == "spec.serveConfigV2: applications[0].args.llm_configs[0].engine_kwargs.device"
    )
    assert err.value.line == 17


def test_invalid_yaml_in_the_serve_config_is_located_in_the_file() -> None:
    with pytest.raises(InputError) as err:
        engines_in(RAYSERVICE.format(extra="max_model_len: [1024"), "svc.yaml")
    assert err.value.key == "spec.serveConfigV2"
    assert err.value.line == 18
    assert "line 17" in str(err.value)  # the file's line, not the text's


def test_a_rayservice_of_custom_code_names_its_application() -> None:
    custom = RAYSERVICE.replace("ray.serve.llm:build_openai_app", "serve_app:model").replace(
        "llm_configs", "model_args"
    )
    with pytest.raises(InputError) as err:
        engines_in(custom.format(extra=""), "svc.yaml")
    assert "RayService/svc runs the Serve application serve_app:model" in err.value.message


def test_a_quoted_serve_config_is_located_at_its_key() -> None:
    text = (
        "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: q}\nspec:\n"
        '  serveConfigV2: "llm_configs: [{model_loading_config: {model_id: m, '
        'model_source: Qwen/Qwen3-8B}}]"\n'
    )
    (engine,) = engines_in(text, "q.yaml")
    assert (engine.name, engine.line) == ("RayService/q/q/m", 5)


DP = """\
applications:
  - args:
      llm_config:
        model_loading_config:
          model_id: moe
          model_source: Qwen/Qwen3-8B
        deployment_config:
          {deployment}
        engine_kwargs:
          data_parallel_size: 2
    import_path: ray.serve.llm:build_dp_openai_app
    name: dp
"""


@pytest.mark.parametrize(
    ("deployment", "replicas"),
    [
        ("num_replicas: 2", 2),
        ("autoscaling_config: {min_replicas: 4, max_replicas: 4}", 4),
        ("autoscaling_config: {min_replicas: 1, max_replicas: 4}", None),
        ("num_replicas: auto", None),
    ],
)
def test_the_dp_builders_config_and_fixed_replica_counts(
    deployment: str, replicas: int | None
) -> None:
    (engine,) = engines_in(DP.format(deployment=deployment), "dp.yaml")
    reading = reading_of(engine)
    assert (reading.data, reading.replicas) == (2, replicas)


def test_the_dp_builders_config_may_be_a_file(tmp_path: Path) -> None:
    (tmp_path / "llm.yaml").write_text(
        "model_loading_config: {model_id: moe, model_source: Qwen/Qwen3-8B}\n"
        "engine_kwargs: {data_parallel_size: 4}\n"
    )
    (tmp_path / "serve.yaml").write_text(
        "applications:\n- args: {llm_config: llm.yaml}\n  import_path: x:y\n"
    )
    (engine,) = engines_in(tmp_path / "serve.yaml", "serve.yaml")
    assert reading_of(engine).data == 4


@pytest.mark.parametrize("kind", ["ServingRuntime", "ClusterServingRuntime"])
def test_a_serving_runtime_runs_nothing_alone(kind: str) -> None:
    text = (
        f"apiVersion: serving.kserve.io/v1alpha1\nkind: {kind}\nmetadata: {{name: r}}\n"
        "spec:\n  containers:\n  - name: kserve-container\n"
        "    command: [python, -m, vllm.entrypoints.openai.api_server]\n"
        "    args: ['--model=/mnt/models']\n"
    )
    with pytest.raises(InputError) as err:
        engines_in(text, "runtime.yaml")
    assert f"holds only {kind}" in err.value.message


CLUSTER_ENV = """\
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: env
spec:
  serveConfigV2: |
    llm_configs:
    - model_loading_config: {model_id: m, model_source: Qwen/Qwen3-8B}
      runtime_env: {env_vars: {VLLM_LOGGING_LEVEL: DEBUG}}
  rayClusterConfig:
    headGroupSpec:
      template:
        spec:
          containers:
          - name: ray-head
            env: [{name: VLLM_ATTENTION_BACKEND, value: TRITON_ATTN}]
    workerGroupSpecs:
    - groupName: a
      template:
        spec:
          containers:
          - name: ray-worker
            env:
            - {name: VLLM_ATTENTION_BACKEND, value: FLASHINFER}
            - {name: VLLM_LOGGING_LEVEL, value: INFO}
            - {name: SHARED, value: "1"}
            resources: {limits: {nvidia.com/gpu: 1}}
    - groupName: b
      template:
        spec:
          containers:
          - name: ray-worker
            env:
            - {name: VLLM_ATTENTION_BACKEND, value: FLASHINFER}
            - {name: SHARED, value: "2"}
            resources: {requests: {amd.com/gpu: 1}}
"""


def test_a_replica_inherits_what_every_gpu_groups_ray_container_agrees_on() -> None:
    (engine,) = engines_in(CLUSTER_ENV, "env.yaml")
    # the head asks for no GPU: its TRITON_ATTN is not where the replicas run
    assert engine.env["VLLM_ATTENTION_BACKEND"] == "FLASHINFER"
    # the two GPU groups differ: which one runs the replica is Ray's scheduling
    assert "SHARED" in engine.env_unknown and "SHARED" not in engine.env
    # runtime_env is set over the node's environment
    assert engine.env["VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert "VLLM_LOGGING_LEVEL" not in engine.env_unknown


@pytest.mark.parametrize(
    ("resources", "count"),
    [
        ({"limits": {"amd.com/gpu": 2}}, 2),
        ({"limits": {"cpu": "4"}, "requests": {"nvidia.com/gpu": "8"}}, 8),
        ({"limits": {"nvidia.com/gpu": 1}}, 1),
        ({"limits": {"cpu": "4"}}, None),
    ],
)
def test_the_gpus_a_container_asks_for(resources: dict[str, object], count: int | None) -> None:
    from kvconfig.load.kubernetes.containers import gpu_count

    assert gpu_count({"resources": resources}) == count


@pytest.mark.parametrize("key", ["model", "served_model_name"])
def test_ray_refuses_the_model_in_engine_kwargs(key: str) -> None:
    text = (
        "llm_configs:\n- model_loading_config: {model_id: m, model_source: Qwen/Qwen3-8B}\n"
        f"  engine_kwargs: {{{key}: other}}\n"
    )
    with pytest.raises(InputError) as err:
        engines_in(text, "serve.yaml")
    assert err.value.key == f"llm_configs[0].engine_kwargs.{key}"
    assert err.value.line == 3


PD = """\
applications:
- name: pd
  import_path: {builder}
  args:
    prefill_config:
      model_loading_config: {{model_id: Qwen/Qwen3-8B}}
      engine_kwargs: {{tensor_parallel_size: 1}}
    decode_config:
      model_loading_config: {{model_id: Qwen/Qwen3-8B}}
      engine_kwargs:
        kv_transfer_config: {{kv_connector: LMCacheConnectorV1, kv_role: kv_consumer}}
"""


@pytest.mark.parametrize(
    ("builder", "prefill"),
    [
        (
            "ray.llm._internal.serve.deployments.prefill_decode_disagg.prefill_decode_disagg:build_app",
            ("NixlConnector", "kv_both"),
        ),
        ("ray.serve.llm:build_pd_openai_app", (None, None)),
    ],
)
def test_the_first_pd_builder_gives_nixl_where_a_config_names_no_connector(
    builder: str, prefill: tuple[str | None, str | None]
) -> None:
    engines = engines_in(PD.format(builder=builder), "pd.yaml")
    got = {e.role: (reading_of(e).connector, reading_of(e).kv_role) for e in engines}
    assert got == {"prefill": prefill, "decode": ("LMCacheConnectorV1", "kv_consumer")}


def test_a_pd_config_may_be_a_file(tmp_path: Path) -> None:
    (tmp_path / "llm.yaml").write_text(
        "model_loading_config: {model_id: Qwen/Qwen3-8B}\n"
        "engine_kwargs: {tensor_parallel_size: 2}\n"
    )
    (tmp_path / "serve.yaml").write_text(
        "applications:\n- args: {prefill_config: llm.yaml, decode_config: llm.yaml}\n"
        "  import_path: ray.serve.llm:build_pd_openai_app\n"
    )
    engines = engines_in(tmp_path / "serve.yaml", "serve.yaml")
    assert sorted((e.role, reading_of(e).tensor) for e in engines) == [
        ("decode", 2),
        ("prefill", 2),
    ]


@pytest.mark.parametrize(
    ("where", "found"),
    [("serve/configs/llm", True), ("serve/llm", True), ("llm", True), ("../llm", False)],
)
def test_a_relative_llm_config_is_found_from_a_working_folder_above_the_file(
    tmp_path: Path, where: str, found: bool
) -> None:
    """Serve opens ``./configs/llm.yaml`` from its working folder, which the file does not
    name: the Serve config's own folder, else the nearest folder above it in the
    repository that holds the path; outside the repository nothing is read."""
    from kvconfig.load import roots

    repo = tmp_path / "repo"
    (repo / "serve" / "configs").mkdir(parents=True)
    holder = (repo / where).parent
    holder.mkdir(parents=True, exist_ok=True)
    (holder / "configs").mkdir(exist_ok=True)
    (holder / "configs" / "llm.yaml").write_text(
        "model_loading_config: {model_id: Qwen/Qwen3-8B}\n"
        "engine_kwargs: {tensor_parallel_size: 4}\n"
    )
    serve = repo / "serve" / "configs" / "serve.yaml"
    serve.write_text(
        "applications:\n- args: {llm_config: ./configs/llm.yaml}\n"
        "  import_path: ray.serve.llm:build_dp_openai_app\n"
    )
    with roots.reading_within((repo,)):
        if not found:
            with pytest.raises(InputError, match=r"llm\.yaml"):
                engines_in(serve, "serve.yaml")
            return
        engines = engines_in(serve, "serve.yaml")
    assert [reading_of(e).tensor for e in engines] == [4]
