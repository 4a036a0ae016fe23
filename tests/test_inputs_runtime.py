"""An option that changes the plan but is only known at run time (a ConfigMap's ``$(TP)``,
a script's ``$BS`` from a Secret, ``$(cat FILE)``): the file is valid and kvconfig cannot
tell its plan, so the verdict is ``unknown`` (KV403, exit 0) in every command and in the
API, never bad input and never a guess. Which words are only known at run time is the
shell reader's and the Kubernetes reader's business (tests/test_shell_differential.py,
tests/test_inputs_shell.py); here they only feed the outcome."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from pathlib import Path

import pytest

import kvconfig
from kvconfig.cli import main
from kvconfig.schemas.fleet_plan import FleetPlan
from kvconfig.schemas.plan import Plan

ROOT = Path(__file__).resolve().parent.parent
QWEN = f"Qwen/Qwen3-8B={ROOT / 'examples' / 'models' / 'qwen3-8b'}"

_MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: qwen3}
spec:
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          env:
            - {name: TP, valueFrom: {configMapKeyRef: {name: c, key: tp}}}
          args: ["--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "$(TP)"]
"""

_SCRIPT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: qwen3}
spec:
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          command: ["/bin/sh", "-c"]
          args:
            - |
              exec vllm serve Qwen/Qwen3-8B --max-model-len $(cat /etc/len)
"""

_COMPOSE = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.33.0
    environment: [BS]
    entrypoint: ["/bin/sh", "-c"]
    command: ["exec vllm serve Qwen/Qwen3-8B --block-size $$BS"]
"""


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err):
        code = main(list(args), stdout=out)
    return code, out.getvalue(), err.getvalue()


def _file(tmp_path: Path, text: str, name: str = "d.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_configmap_value_makes_lint_unknown_not_bad_input(tmp_path: Path) -> None:
    path = _file(tmp_path, _MANIFEST)
    code, out, err = _run("lint", "--model-path", QWEN, path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        f"unknown {path}:9 Deployment/qwen3/vllm [H100 (sm90)]: KV403 runtime-value"
    )
    assert lines[1].startswith("  read: Qwen/Qwen3-8B tp=$(TP) ")  # not a default
    assert (
        f"{path}:9: Deployment/qwen3/vllm: $(TP) is only known at run time, and "
        "--tensor-parallel-size changes the plan" in out
    )
    assert "fix: write --tensor-parallel-size's value in the file" in out
    assert "helm template" in out and "--engine vllm" in out
    assert lines[-1] == "0 of 1 safe, 1 unknown"
    assert "verdict unknown, $(TP) is only known at run time" in err
    assert "Traceback" not in err


def test_a_command_substitution_in_a_script_is_unknown_in_json(tmp_path: Path) -> None:
    path = _file(tmp_path, _SCRIPT)
    code, out, _ = _run("lint", "--format", "json", "--model-path", QWEN, path)
    assert code == 0
    plan = json.loads(out)
    Plan.model_validate(plan)
    assert plan["verdict"] == "unknown"
    assert [(f["code"], f["name"]) for f in plan["findings"]] == [("KV403", "runtime-value")]
    assert (
        "$(cat /etc/len) is only known at run time, and --max-model-len"
        in (plan["findings"][0]["message"])
    )
    assert plan["operator_engine"]["name"] == "Deployment/qwen3/vllm"
    assert plan["operator_engine"]["reading"]["run_time"] == {}  # --max-model-len: not shown


def test_plan_and_export_say_unknown_as_for_kv401(tmp_path: Path) -> None:
    path = _file(tmp_path, _MANIFEST)
    for command in ("plan", "export"):
        code, out, err = _run(command, "--format", "json", "--model-path", QWEN, path)
        assert code == 0, (command, err)
        assert json.loads(out)["verdict"] == "unknown", command


def test_the_engine_mode_cannot_start_without_the_value_either(tmp_path: Path) -> None:
    """``--engine vllm`` would start vLLM with ``$(TP)`` as its argument: unknown too,
    decided before any engine runs."""
    path = _file(tmp_path, _MANIFEST)
    for engine in ("vllm", "both", "auto"):
        code, out, err = _run("lint", "--engine", engine, "--model-path", QWEN, path)
        assert code == 0, (engine, err)
        assert "KV403 runtime-value" in out.splitlines()[0], engine


def test_another_deployment_still_decides_the_exit_code(tmp_path: Path) -> None:
    unknown = _file(tmp_path, _MANIFEST, "a.yaml")
    rejected = _file(
        tmp_path,
        _MANIFEST.replace('"$(TP)"', '"1", "--block-size", "7"').replace("qwen3}", "q2}"),
        "b.yaml",
    )
    code, out, _ = _run("lint", "--model-path", QWEN, unknown, rejected)
    assert code == 1
    assert out.splitlines()[0].startswith(f"unknown {unknown}:9")


def test_a_fleet_lists_the_engine_as_not_planned(tmp_path: Path) -> None:
    path = _file(tmp_path, _MANIFEST)
    code, out, err = _run("lint", "--fleet", "--format", "json", "--model-path", QWEN, path)
    assert code == 0, err
    plan = json.loads(out)
    FleetPlan.model_validate(plan)
    assert plan["verdict"] == "unknown"
    (engine,) = plan["unplanned"]
    assert (engine["name"], engine["code"]) == ("Deployment/qwen3/vllm", "KV403")
    assert "$(TP) is only known at run time" in engine["why"]
    assert [f["code"] for f in plan["findings"]] == ["KV403"]
    assert engine["run_time"] == {"tensor-parallel-size": "$(TP)"}
    code, out, _ = _run("lint", "--fleet", "--model-path", QWEN, path)
    (line,) = [x for x in out.splitlines() if x.startswith("Deployment/qwen3/vllm")]
    assert ", TP $(TP), " in line and "TP 1" not in line, line


def test_the_api_reads_it_as_unknown(tmp_path: Path) -> None:
    path = _file(tmp_path, _MANIFEST)
    (found,) = kvconfig.load_engines([path], model_path=[QWEN])
    assert found.deployment is None
    assert isinstance(found.unsupported, kvconfig.RunTimeValue)
    assert (found.unsupported.word, found.unsupported.option) == (
        "$(TP)",
        "--tensor-parallel-size",
    )
    (outcome,) = kvconfig.plan_deployments([path], model_path=[QWEN])
    assert outcome.verdict == "unknown"
    assert kvconfig.exit_code([outcome]) == 0


def test_env_settles_a_variable_compose_passes_through(tmp_path: Path) -> None:
    """``environment: [BS]`` takes BS from the environment compose runs in: ``--env``."""
    path = _file(tmp_path, _COMPOSE, "compose.yaml")
    common = ("lint", "--platform", "h100", "--format", "json", "--model-path", QWEN)
    code, out, _ = _run(*common, path)
    assert code == 0
    plan = json.loads(out)
    assert plan["verdict"] == "unknown"
    assert "$BS is only known at run time" in plan["findings"][0]["message"]
    assert plan["operator_engine"]["reading"]["run_time"] == {"block-size": "$BS"}
    assert "pass --env BS=VALUE" in " ".join(plan["findings"][0]["fixes"])
    code, out, err = _run(*common, "--env", "BS=32", path)
    assert code == 0, err
    plan = json.loads(out)
    assert plan["verdict"] == "ok"
    assert plan["groups"][0]["block_size"] == 32
    assert plan["operator_engine"]["reading"]["block_size"] == 32
    assert "KV403" not in out


_EXTRA = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: qwen3}
spec:
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          command: ["/bin/sh", "-c"]
          args:
            - |
              exec vllm serve Qwen/Qwen3-8B --kv-transfer-config \\
              '{"kv_connector": "CONNECTOR", "kv_role": "kv_producer", '\\
              '"kv_connector_extra_config": {"port": "'"$(hostname)"'"}}'
"""


def test_a_run_time_word_in_an_extra_config_no_plan_reads_is_no_unknown(tmp_path: Path) -> None:
    """LMCache's extra configuration changes no page size: the pod's host name in it
    leaves the plan known. NIXL's is read by the fleet rules: there it is unknown."""
    for connector, verdict in (("LMCacheConnectorV1", "ok"), ("NixlConnector", "unknown")):
        path = _file(tmp_path, _EXTRA.replace("CONNECTOR", connector))
        code, out, err = _run("lint", "--format", "json", "--model-path", QWEN, path)
        assert code == 0, err
        plan = json.loads(out)
        assert plan["verdict"] == verdict, (connector, plan["findings"])
        assert plan["operator_engine"]["reading"]["connector"] == connector


def test_a_run_time_address_leaves_the_plan_known(tmp_path: Path) -> None:
    """Where a connector listens (``kv_ip``, ``kv_port``) changes no page size: the pod's
    address there leaves the plan known, for every connector; in ``kv_role`` it does not."""
    text = _EXTRA.replace('"kv_connector_extra_config": {"port": "\'"$(hostname)"\'"}}', "KV}")
    assert text != _EXTRA
    cases = (
        ("NixlConnector", '"kv_ip": "\'"$(hostname)"\'", "kv_port": "\'"$PORT"\'"', "ok"),
        ("P2pNcclConnector", '"kv_ip": "\'"$(hostname)"\'"', "ok"),
        ("NixlConnector", '"engine_id": "\'"$(hostname)"\'"', "unknown"),
    )
    for connector, extra, verdict in cases:
        path = _file(tmp_path, text.replace("CONNECTOR", connector).replace("KV", extra))
        code, out, err = _run("lint", "--format", "json", "--model-path", QWEN, path)
        assert code == 0, err
        plan = json.loads(out)
        assert plan["verdict"] == verdict, (connector, extra, plan["findings"])
        assert plan["operator_engine"]["reading"]["kv_role"] == "kv_producer"


# ----- --env for what the cluster sets ---------------------------------------------------
_FROM = "{name: TP, valueFrom: {configMapKeyRef: {name: c, key: tp}}}"


@pytest.mark.parametrize(
    "env",
    [
        _FROM,
        "{name: TP, valueFrom: {fieldRef: {fieldPath: metadata.name}}}",
        "{name: OTHER, value: x}\n          envFrom:\n            - configMapRef: {name: tuning}",
    ],
    ids=["configMap", "fieldRef", "envFrom"],
)
def test_env_settles_a_variable_the_cluster_sets(env: str) -> None:
    """``--env`` gives the value the cluster would give a variable the manifest leaves to
    it (``valueFrom``, a name ``envFrom`` may hold), as it gives compose the shell's
    variables and a launch script its caller's; the kubelet expands ``$(TP)`` from it."""
    from kvconfig.load.engines import engines_in
    from kvconfig.load.reading import reading_of

    text = _MANIFEST.replace(_FROM, env)
    (engine,) = engines_in(text, "d.yaml")
    assert reading_of(engine).run_time == {"tensor-parallel-size": "$(TP)"}
    (engine,) = engines_in(text, "d.yaml", env={"TP": "2"})
    reading = reading_of(engine)
    assert (reading.tensor, reading.run_time) == (2, {})


def _with_map(namespace: str = "", data: str = "{tp: '4'}") -> str:
    meta = f"{{name: c, namespace: {namespace}}}" if namespace else "{name: c}"
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {meta}\ndata: {data}\n---\n{_MANIFEST}"


@pytest.mark.parametrize(
    ("text", "tensor"),
    [
        (_with_map(), 4),
        (_with_map(data="{other: '4'}"), None),  # the key is not in it: the cluster decides
        (_with_map(namespace="elsewhere"), None),  # another namespace's ConfigMap
        (
            _with_map(data="{P_TP: '8'}")
            .replace(
                "{name: TP, valueFrom: {configMapKeyRef: {name: c, key: tp}}}",
                "{name: OTHER, value: x}\n"
                "          envFrom: [{configMapRef: {name: c}, prefix: P_}]",
            )
            .replace("$(TP)", "$(P_P_TP)"),
            8,
        ),
    ],
    ids=["key", "missing key", "other namespace", "envFrom with a prefix"],
)
def test_a_config_map_of_the_input_gives_the_pod_its_values(text: str, tensor: int | None) -> None:
    """A ``configMapKeyRef`` (or ``envFrom``) to a ConfigMap the same input creates in the
    pod's namespace takes its value, as the kubelet gives it; otherwise the cluster's."""
    from kvconfig.load.engines import engines_in
    from kvconfig.load.reading import reading_of

    (engine,) = engines_in(text, "d.yaml")
    reading = reading_of(engine)
    if tensor is None:
        assert reading.run_time, reading
    else:
        assert (reading.tensor, reading.run_time) == (tensor, {})


def test_lint_and_the_fleet_take_the_given_value(tmp_path: Path) -> None:
    path = _file(tmp_path, _MANIFEST)
    code, out, _ = _run("lint", "--format", "json", "--model-path", QWEN, path)
    assert code == 0
    assert "--env TP=VALUE" in " ".join(json.loads(out)["findings"][0]["fixes"])
    code, out, err = _run("lint", "--format", "json", "--model-path", QWEN, "--env", "TP=1", path)
    assert code == 0, err
    plan = json.loads(out)
    assert (plan["verdict"], plan["operator_engine"]["reading"]["tensor"]) == ("ok", 1)
    code, out, err = _run("lint", "--fleet", "--format", "json", "--model-path", QWEN,
                          "--env", "TP=1", path)  # fmt: skip
    assert code == 0, err
    fleet = json.loads(out)
    assert (fleet["verdict"], fleet["unplanned"], len(fleet["engines"])) == ("ok", [], 1)


def test_env_does_not_reach_what_the_container_does_not_define() -> None:
    """Kubernetes expands ``$(TP)`` only from the container's env: defined nowhere, vLLM
    gets the text ``$(TP)`` whatever the user passes; a value the manifest writes is its
    own."""
    from kvconfig.errors import InputError
    from kvconfig.load.engines import engines_in
    from kvconfig.load.reading import reading_of

    nowhere = _MANIFEST.replace(_FROM, "{name: OTHER, value: x}")
    for env in (None, {"TP": "2"}):
        with pytest.raises(InputError) as err:
            engines_in(nowhere, "d.yaml", env=env)
        assert "$(TP) is not defined in the container's env" in err.value.message
        assert ("--env does not reach it" in err.value.message) == (env is not None)
    literal = _MANIFEST.replace(_FROM, "{name: TP, value: '4'}")
    (engine,) = engines_in(literal, "d.yaml", env={"TP": "2"})
    assert reading_of(engine).tensor == 4


def test_a_service_link_variable_is_the_cluster_s() -> None:
    """``$(PREFILL_SERVICE_HOST)`` is set by the kubelet for a Service of that name in the
    pod's namespace: only the cluster knows whether it is, so it is a run-time value (KV403),
    where a name of no such shape is undefined (bad input)."""
    from kvconfig.errors import InputError
    from kvconfig.load.engines import engines_in
    from kvconfig.load.reading import reading_of

    for name in ("PREFILL_SERVICE_HOST", "DECODE_SERVICE_PORT_HTTP", "VLLM_PORT_8000_TCP_ADDR"):
        text = _MANIFEST.replace(_FROM, "{name: OTHER, value: x}").replace("$(TP)", f"$({name})")
        (engine,) = engines_in(text, "d.yaml")
        assert reading_of(engine).to_json()["run_time"] == {"tensor-parallel-size": f"$({name})"}
    with pytest.raises(InputError, match=r"\$\(TP_HOST\) is not defined"):
        engines_in(
            _MANIFEST.replace(_FROM, "{name: O, value: x}").replace("(TP)", "(TP_HOST)"), "d"
        )
