"""``--env NAME=VALUE`` on a Kubernetes manifest gives the value the cluster would give a
variable the manifest leaves to it (``valueFrom``, a name an ``envFrom`` source may hold),
as it gives compose the shell's variables and a launch script its caller's: ``$(NAME)`` in
``command``/``args`` and ``$NAME`` in the container's script take it. A ``$(NAME)`` that
the container's env does not define stays text, as Kubernetes leaves it: ``--env`` does
not reach it."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest

from kvconfig.cli import main
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

ROOT = Path(__file__).resolve().parent.parent
QWEN = f"Qwen/Qwen3-8B={ROOT / 'examples' / 'models' / 'qwen3-8b'}"

MANIFEST = """\
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
ENV
          args: ["--model", "Qwen/Qwen3-8B", "--block-size", "$(BS)"]
"""

SECRET = "          env:\n            - {name: BS, valueFrom: {secretKeyRef: {name: s, key: bs}}}"
FIELD = (
    "          env:\n            - {name: BS, valueFrom: {fieldRef: {fieldPath: metadata.name}}}"
)
CONFIGMAP = "          envFrom:\n            - configMapRef: {name: tuning}"
NOWHERE = "          env:\n            - {name: OTHER, value: x}"

SCRIPT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: qwen3}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          env:
            - {name: PROFILE, valueFrom: {configMapKeyRef: {name: c, key: profile}}}
          command: ["/bin/sh", "-c"]
          args:
            - |
              if [ "$PROFILE" = throughput ]; then BS=128; else BS=32; fi
              exec vllm serve Qwen/Qwen3-8B --block-size $BS
"""


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err):
        code = main(list(args), stdout=out)
    return code, out.getvalue(), err.getvalue()


def _reading(text: str, env: dict[str, str] | None) -> dict[str, Any]:
    (engine,) = engines_in(text, "d.yaml", env=env)
    return reading_of(engine).to_json()


@pytest.mark.parametrize("env", [SECRET, FIELD, CONFIGMAP], ids=["secret", "fieldRef", "envFrom"])
def test_a_given_value_settles_a_variable_the_cluster_sets(env: str) -> None:
    text = MANIFEST.replace("ENV", env)
    unsettled = _reading(text, None)
    assert (unsettled["block_size"], unsettled["run_time"]) == (None, {"block-size": "$(BS)"})
    settled = _reading(text, {"BS": "32"})
    assert (settled["block_size"], settled["run_time"]) == (32, {})


def test_lint_takes_the_given_value(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(MANIFEST.replace("ENV", SECRET))
    code, out, _ = _run("lint", "--format", "json", "--model-path", QWEN, str(path))
    assert code == 0
    plan = json.loads(out)
    assert plan["verdict"] == "unknown"
    assert "--env BS=VALUE" in " ".join(plan["findings"][0]["fixes"])
    code, out, err = _run(
        "lint", "--format", "json", "--model-path", QWEN, "--env", "BS=32", str(path)
    )
    assert code == 0, err
    plan = json.loads(out)
    assert plan["verdict"] == "ok"
    assert plan["groups"][0]["block_size"] == 32
    # the fleet reads the same engine with the same value
    code, out, err = _run("lint", "--fleet", "--format", "json", "--model-path", QWEN,
                          "--env", "BS=32", str(path))  # fmt: skip
    assert code == 0, err
    fleet = json.loads(out)
    assert (fleet["verdict"], fleet["unplanned"]) == ("ok", [])
    assert fleet["engines"][0]["plan"]["groups"][0]["block_size"] == 32


def test_a_variable_defined_nowhere_stays_text() -> None:
    """Kubernetes expands ``$(BS)`` only from the container's env: with BS defined nowhere
    vLLM gets the text ``$(BS)``, whatever the user passes."""
    from kvconfig.errors import InputError

    text = MANIFEST.replace("ENV", NOWHERE)
    for env in (None, {"BS": "32"}):
        with pytest.raises(InputError) as err:
            engines_in(text, "d.yaml", env=env)
        assert "$(BS) is not defined in the container's env" in err.value.message
        assert ("--env does not reach it" in err.value.message) == (env is not None)


def test_a_literal_value_is_the_manifests() -> None:
    """A variable the manifest sets itself is not the cluster's to give: ``--env`` does
    not replace it in ``$(NAME)``."""
    text = MANIFEST.replace("ENV", "          env:\n            - {name: BS, value: '64'}")
    assert _reading(text, {"BS": "32"})["block_size"] == 64


@pytest.mark.parametrize(("profile", "block"), [("throughput", 128), ("latency", 32)])
def test_the_container_script_sees_the_given_value(profile: str, block: int) -> None:
    """The one shell reader evaluates the script with the given value: its branch is
    decided, as the shell decides it."""
    assert _reading(SCRIPT, None)["run_time"] == {"block-size": "$BS"}
    assert _reading(SCRIPT, {"PROFILE": profile})["block_size"] == block
