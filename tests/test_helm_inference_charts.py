"""AI on EKS's inference chart, read as Helm renders it (kvconfig.load.helm.inference_charts).

The expectations are Helm's, sprig's and xstrings' documented behaviour, cited per test;
the chart's own values files are in the real-file corpus (tests/realworld)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvconfig.errors import InputError, NoEngine
from kvconfig.load.engines import engines_in
from kvconfig.load.helm.inference_charts import kebab, parameters
from kvconfig.load.helm.values import _go, coalesce, go_float
from kvconfig.load.reading import reading_of


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        # helm/helm#12195 (Helm 3.12.1): 999999 renders as 999999, 1000000 as 1e+06
        (999999, "999999"),
        (1000000, "1e+06"),
        # roxy-wi/IncidentRelay#79: a chart default of 1048576 rendered as 1.048576e+06
        (1048576, "1.048576e+06"),
        # Go's strconv 'g' with the shortest digits: %e below 1e-4
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (0.8, "0.8"),
        (8192, "8192"),
        (2.0, "2"),
    ],
)
def test_numbers_print_as_go_prints_a_float64(value: float, printed: str) -> None:
    assert go_float(float(value)) == printed
    assert _go(value) == printed


def test_lists_and_maps_print_as_go_s_v() -> None:
    assert _go(["a", 1, True]) == "[a 1 true]"
    assert _go({"b": 2, "a": "x"}) == "map[a:x b:2]"


@pytest.mark.parametrize(
    ("key", "kebabbed"),
    [
        # huandu/xstrings' documented samples of its case conversion (sprig's kebabcase)
        ("FirstName", "first-name"),
        ("HTTPServer", "http-server"),
        ("NoHTTPS", "no-https"),
        ("GO_PATH", "go-path"),
        ("GO PATH", "go-path"),
        ("GO-PATH", "go-path"),
        ("maxModelLen", "max-model-len"),
        ("gpuMemoryUtilization", "gpu-memory-utilization"),
    ],
)
def test_keys_are_kebab_cased_as_sprig_does(key: str, kebabbed: str) -> None:
    assert kebab(key) == kebabbed


def test_a_values_file_merges_over_the_chart_s_values_as_helm_does() -> None:
    chart = {"a": {"b": 1, "c": 2}, "d": 3, "e": [1, 2]}
    merged = coalesce(chart, {"a": {"c": 5}, "d": None, "e": [9]})
    assert merged == {"a": {"b": 1, "c": 5}, "e": [9]}


def test_parameters_are_sorted_with_the_gpu_request_as_tensor_parallel_size() -> None:
    values = coalesce(
        {"inference": {"accelerator": "gpu", "modelServer": {"deployment": {"resources": {
            "gpu": {"requests": {"nvidia.com/gpu": 4}}}}}}},
        {"modelParameters": {"maxModelLen": 4096, "enforceEager": True, "trustRemoteCode": False}},
    )  # fmt: skip
    # the helper's kindIs "bool" branch (_helpers.tpl, 7c3e3d4): a true flag is bare, a
    # false one is left out
    assert parameters(values) == "--enforce-eager --max-model-len 4096 --tensor-parallel-size 4"
    values["modelPath"] = "/models/qwen"
    values["model"] = "Qwen/Qwen3-8B"
    assert parameters(values).endswith("--served-model-name Qwen/Qwen3-8B --tensor-parallel-size 4")
    values["inference"]["accelerator"] = "graviton"
    assert "--tensor-parallel-size" not in parameters(values)


def _values(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "values-test.yaml"
    path.write_text(text)
    return path


def test_a_deployment_with_a_gpu_count_and_a_block_size(tmp_path: Path) -> None:
    path = _values(
        tmp_path,
        """\
model: Qwen/Qwen3-8B
modelParameters:
  blockSize: 32
  maxModelLen: 8192
inference:
  serviceName: qwen
  framework: vllm
  modelServer:
    deployment:
      replicas: 3
      resources:
        gpu:
          requests: {nvidia.com/gpu: 2}
          limits: {nvidia.com/gpu: 2}
""",
    )
    (engine,) = engines_in(path, str(path))
    r = reading_of(engine).to_json()
    assert (r["model"], r["tensor"], r["block_size"], r["replicas"]) == ("Qwen/Qwen3-8B", 2, 32, 3)
    assert engine.image == "vllm/vllm-openai:latest"  # the chart's default image


def test_a_leaderworkerset_is_one_engine_over_its_group(tmp_path: Path) -> None:
    path = _values(
        tmp_path,
        """\
model: Qwen/Qwen3-8B
modelParameters:
  pipelineParallelSize: 2
  tensorParallelSize: 4
inference:
  framework: lws-vllm
""",
    )
    (engine,) = engines_in(path, str(path))
    r = reading_of(engine).to_json()
    assert (r["tensor"], r["pipeline"], r["replicas"]) == (4, 2, 1)


def test_a_comment_in_a_rendered_plain_scalar_cuts_the_command(tmp_path: Path) -> None:
    """The Deployment's args line is a YAML plain scalar: `` #`` starts a comment."""
    path = _values(
        tmp_path,
        """\
model: Qwen/Qwen3-8B
modelParameters:
  servedModelName: "qwen #tuned"
  tensorParallelSize: 1
inference:
  framework: vllm
""",
    )
    (engine,) = engines_in(path, str(path))
    assert engine.argv[-2:] == ("--served-model-name", "qwen")


def test_frameworks_without_vllm_and_those_not_read(tmp_path: Path) -> None:
    path = _values(tmp_path, "model: x\ninference:\n  framework: diffusers\n")
    with pytest.raises(NoEngine, match="starts no vLLM engine"):
        engines_in(path, str(path))
    path = _values(tmp_path, "model: x\ninference:\n  framework: ray-vllm\n")
    with pytest.raises(InputError, match="not read") as err:
        engines_in(path, str(path))
    assert err.value.line == 3 and "helm template" in str(err.value)


# OPEA's vLLM chart (kvconfig.load.helm.opea), against Helm's merge and dependency rules

_CHART = """\
apiVersion: v2
name: app
version: 0-latest
dependencies:
  - name: vllm
    repository: "file://../common/vllm"
    condition: vllm.enabled
  - name: vllm
    alias: vllm-small
    repository: "file://../common/vllm"
    condition: vllm-small.enabled
"""


def test_an_application_chart_s_aliases_and_conditions_decide_its_vllm_deployments(
    tmp_path: Path,
) -> None:
    (tmp_path / "Chart.yaml").write_text(_CHART)
    (tmp_path / "values.yaml").write_text(
        "vllm:\n  enabled: false\n  LLM_MODEL_ID: Qwen/Qwen3-8B\nvllm-small:\n  enabled: false\n"
    )
    path = tmp_path / "gaudi-values.yaml"
    path.write_text(
        "vllm:\n  enabled: true\n  image: {repository: opea/vllm-gaudi}\n"
        '  extraCmdArgs: ["--block-size", "128"]\n'
    )
    (engine,) = engines_in(path, str(path))  # vllm-small stays disabled (values.yaml)
    r = reading_of(engine).to_json()
    # the model from the application chart's values.yaml, the arguments from the file
    assert (r["model"], r["block_size"], r["replicas"]) == ("Qwen/Qwen3-8B", 128, 1)
    assert engine.image == "opea/vllm-gaudi:latest"
    assert engine.argv[:2] == ("--block-size", "128")


def test_a_values_file_alone_runs_each_vllm_section_not_disabled(tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(
        "vllm:\n  LLM_MODEL_ID: Qwen/Qwen3-8B\n  replicaCount: 2\n"
        "vllm-guard:\n  LLM_MODEL_ID: Qwen/Qwen3-0.6B\n  enabled: false\n"
    )
    (engine,) = engines_in(path, str(path))
    r = reading_of(engine).to_json()
    assert (r["model"], r["replicas"]) == ("Qwen/Qwen3-8B", 2)
    assert engine.image == "opea/vllm:latest"  # vLLM's CPU image: entry point vllm serve


def test_no_enabled_section_is_no_engine(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text(_CHART)
    path = tmp_path / "values.yaml"
    path.write_text("vllm:\n  enabled: false\n  LLM_MODEL_ID: Qwen/Qwen3-8B\n")
    # vllm-small's condition names no value here: Helm then keeps the dependency
    (engine,) = engines_in(path, str(path))
    assert engine.name.startswith("Deployment/RELEASE-vllm-small")
    path.write_text("vllm:\n  enabled: false\nvllm-small:\n  enabled: false\n")
    with pytest.raises(NoEngine, match="no vLLM section"):
        engines_in(path, str(path))


def test_a_chart_s_chart_yaml_deploys_nothing(tmp_path: Path) -> None:
    path = tmp_path / "Chart.yaml"
    path.write_text(_CHART)
    with pytest.raises(NoEngine, match="deploys nothing"):
        engines_in(path, str(path))


def test_a_subchart_section_that_is_no_mapping_is_bad_input(tmp_path: Path) -> None:
    """Helm keeps a user's non-table value for a subchart's key and the chart's templates
    then fail on it: kvconfig names the key."""
    (tmp_path / "Chart.yaml").write_text(_CHART)
    path = tmp_path / "values-x.yaml"
    path.write_text("vllm: 0\nvllm-small:\n  enabled: false\n")
    with pytest.raises(InputError, match="expected a mapping") as err:
        engines_in(path, str(path))
    assert err.value.key == "vllm"


def test_a_chart_file_linked_out_of_the_folder_is_not_read(tmp_path: Path) -> None:
    """The Chart.yaml beside a values file is read only where it lies there, links
    followed (kvconfig.load.roots): one linking elsewhere leaves the file read alone."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "Chart.yaml").write_text(_CHART)
    here = tmp_path / "here"
    here.mkdir()
    (here / "Chart.yaml").symlink_to(elsewhere / "Chart.yaml")
    path = here / "values.yaml"
    path.write_text("vllm:\n  enabled: false\n  LLM_MODEL_ID: Qwen/Qwen3-8B\n")
    # read alone, the disabled section runs nothing; through the chart, vllm-small would
    with pytest.raises(NoEngine, match="no vLLM section"):
        engines_in(path, str(path))
