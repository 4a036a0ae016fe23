"""A KV-aware router whose block size is only known at run time: read as unknown, never as
its default, and the fleet's router check says it cannot tell (KV403), not pass or fail.
The fleet reads an operator file once, for its engines and its routers alike."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kvconfig.cli.commands import main
from kvconfig.load.routers import routers_in_file, routers_of
from tests.test_realworld import STANDALONE

QWEN3_8B = Path(__file__).parent.parent / "examples" / "models" / "qwen3-8b"

#: A worker at 64-token blocks behind the corpus test's standalone router, its
#: ``--router-block-size`` BS_WORD and its container's env BS_ENV.
GRAPH = STANDALONE.lstrip() % ', --router-block-size, "BS_WORD"'
GRAPH = (
    GRAPH.replace("          command:", "          env: [BS_ENV]\n          command:")
    + """\
    Worker:
      componentType: worker
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-8B, --block-size, "64"]
"""
)

SECRET = "{name: BS, valueFrom: {secretKeyRef: {name: s, key: bs}}}"


def _graph(word: str, env: str = "{name: OTHER, value: x}") -> str:
    return GRAPH.replace("BS_WORD", word).replace("BS_ENV", env)


@pytest.mark.parametrize(
    ("word", "env", "block", "run_time"),
    [
        ("32", "{name: OTHER, value: x}", 32, None),
        ("$(BS)", "{name: BS, value: '48'}", 48, None),  # Kubernetes expands it
        ("$(BS)", SECRET, None, "$(BS)"),  # from a Secret
        ("64", SECRET.replace("BS", "DYN_ROUTER_BLOCK_SIZE"), 64, None),  # the option wins
    ],
)
def test_a_graph_router_block_size(word: str, env: str, block: int | None, run_time: Any) -> None:
    (router,) = routers_of([yaml.safe_load(_graph(word, env))])
    assert (router.block_size, router.run_time) == (block, run_time)


def test_a_graph_router_block_size_from_a_secret_variable() -> None:
    text = _graph("32", SECRET.replace("BS", "DYN_ROUTER_BLOCK_SIZE"))
    text = text.replace(', --router-block-size, "32"', "")
    (router,) = routers_of([yaml.safe_load(text)])
    assert (router.block_size, router.run_time) == (None, "$(DYN_ROUTER_BLOCK_SIZE)")
    # the value the user gives for what the cluster sets (--env), as for the engines
    (router,) = routers_of([yaml.safe_load(text)], {"DYN_ROUTER_BLOCK_SIZE": "64"})
    assert (router.block_size, router.run_time) == (64, None)
    (router,) = routers_of([yaml.safe_load(_graph("$(BS)", SECRET))], {"BS": "16"})
    assert (router.block_size, router.run_time) == (16, None)
    # a variable the container's env does not define is not given: Kubernetes leaves it
    (router,) = routers_of([yaml.safe_load(_graph("$(BS)"))], {"BS": "16"})
    assert (router.block_size, router.run_time) == (None, "$(BS)")


def test_a_v1beta1_component_runs_a_standalone_router() -> None:
    """A v1beta1 graph's component that runs ``python -m dynamo.router`` is read as in a
    v1alpha1 service, whatever its type."""
    text = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  components:
    - name: router
      type: main
      podTemplate:
        spec:
          containers:
            - name: main
              env: [{name: BS, valueFrom: {configMapKeyRef: {name: c, key: bs}}}]
              command: [python3, -m, dynamo.router, --router-block-size, "$(BS)"]
"""
    (router,) = routers_of([yaml.safe_load(text)])
    assert (router.name, router.block_size, router.run_time) == (
        "DynamoGraphDeployment/g/router/dynamo.router",
        None,
        "$(BS)",
    )
    (router,) = routers_of([yaml.safe_load(text)], {"BS": "32"})
    assert (router.block_size, router.run_time) == (32, None)


@pytest.mark.parametrize(
    ("line", "block", "run_time"),
    [
        ("python -m dynamo.router --router-block-size $X &", None, "$X"),
        ('python -m dynamo.router --block-size "$(cat f)" &', None, "$(cat f)"),
        ("python -m dynamo.prefill_router --block-size $X &", None, "$X"),
        ("DYN_ROUTER_BLOCK_SIZE=$X python -m dynamo.router &", None, "$DYN_ROUTER_BLOCK_SIZE"),
        ("python -m dynamo.frontend --router-mode kv --kv-cache-block-size $X &", None, "$X"),
        ("python -m dynamo.router --router-block-size $BS &", 16, None),  # --env BS=16
        ("python -m dynamo.router &", 128, None),
    ],
)
def test_a_script_router_block_size(line: str, block: int | None, run_time: Any) -> None:
    """In a script, a value only known at run time (``X`` is set from a command
    substitution) keeps its text: the router's block size is unknown, not its default; a
    value the caller passes (``--env BS=16``) settles it."""
    text = f"#!/bin/bash\nX=$(cat /etc/x)\n{line}\n"
    (router,) = routers_in_file(text, "launch.sh", {"BS": "16"})
    assert (router.block_size, router.run_time) == (block, run_time)


def _fleet(path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    argv = [
        "lint", "--fleet", "--format", "json", "--platform", "H100",
        "--model-path", f"Qwen/Qwen3-8B={QWEN3_8B}", *extra, str(path),
    ]  # fmt: skip
    code = main(argv, stdout=out)
    return code, json.loads(out.getvalue())


def test_the_fleet_cannot_tell_a_run_time_router(tmp_path: Path) -> None:
    path = tmp_path / "graph.yaml"
    path.write_text(_graph("$(BS)", SECRET))
    code, doc = _fleet(path)
    assert code == 0
    assert doc["verdict"] == "unknown"
    codes = [f["code"] for f in doc["findings"]]
    assert codes == ["KV403"], doc["findings"]
    message = doc["findings"][0]["message"]
    assert "block size is $(BS), only known at run time" in message
    assert "KV711" not in codes
    assert doc["router"]["block_size"] is None
    # the same router at a written size is checked: 128 against 64-token blocks fails
    path.write_text(_graph("128"))
    code, doc = _fleet(path)
    assert code == 1 and "KV711" in [f["code"] for f in doc["findings"]]
    path.write_text(_graph("64"))
    code, doc = _fleet(path)
    assert (code, doc["verdict"], doc["findings"]) == (0, "ok", [])


def test_the_fleet_reads_an_operator_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kvconfig.fleet.read import read_deployments

    path = tmp_path / "graph.yaml"
    path.write_text(_graph("32"))
    opened: list[Path] = []
    original = Path.open

    def spy(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == path.name:
            opened.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)
    fleet = read_deployments([str(path)])
    assert len(opened) == 1
    assert [e.name for e in fleet.engines] == ["DynamoGraphDeployment/g/Worker/main"]
    assert [(r.kind, r.block_size) for r in fleet.routers] == [("dynamo", 32)]
