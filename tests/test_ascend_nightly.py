"""vLLM Ascend's multi-node test configs, read as its nightly harness runs them
(``kvconfig.load.ascend_nightly``): per node, ``$NAME`` filled from the node's ``envs`` as
``MultiNodeConfig._expand_env`` fills it, then split as ``shlex.split`` splits it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from kvconfig.errors import NoEngine
from kvconfig.load.engines import engines_in

CONFIG = """model: "m/x"
num_nodes: 3
npu_per_node: 16
benchmarks: {}
disaggregated_prefill:
  prefiller_host_index: [0]
  decoder_host_index: [1, 2]
deployment:
  - envs: {PORT: 8080, FLAG: true, SPACE: "a b"}
    server_cmd: >
      vllm serve "m/x" --port $PORT --data-parallel-address $LOCAL_IP
      --served-model-name ${FLAG} --tokenizer "$SPACE" --seed $UNSET
      --kv-transfer-config '{"kv_connector": "NixlConnector", "kv_role": "kv_producer"}'
  - envs: {PORT: 8081}
    server_cmd: "vllm serve m/x --port $PORT --tensor-parallel-size 2"
  - envs: {}
    server_cmd: "vllm serve m/x --headless --data-parallel-start-rank 2"
"""


def _expand_as_the_harness(cmd: str, envs: dict[str, str]) -> list[str]:
    """``MultiNodeConfig._expand_env`` and ``RemoteOpenAIServer``'s ``shlex.split``."""
    pattern = re.compile(r"\$(\w+)|\$\{(\w+)\}")
    return shlex.split(pattern.sub(lambda m: envs.get(m.group(1) or m.group(2), m.group(0)), cmd))


def test_each_node_runs_its_command_filled_from_its_envs(tmp_path: Path) -> None:
    import yaml

    found = engines_in(CONFIG, str(tmp_path / "c.yaml"), base=tmp_path)
    assert [(e.name, e.role) for e in found] == [
        ("deployment[0] (node 0)", "prefill"),
        ("deployment[1] (node 1)", "decode"),
    ]  # node 2 is a headless data-parallel worker: no API server
    data = yaml.safe_load(CONFIG)
    for e, entry in zip(found, data["deployment"], strict=False):
        envs = {k: str(v) for k, v in entry["envs"].items()}  # str(True) is "True"
        assert ["vllm", "serve", *e.argv] == _expand_as_the_harness(entry["server_cmd"], envs)
    first = found[0]
    assert "True" in first.argv and "a b" in first.argv and "$UNSET" in first.argv
    assert "$LOCAL_IP" in first.argv and "LOCAL_IP" in first.env_unknown
    assert any("$LOCAL_IP" in n.message for n in first.notes)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("benchmarks: {}\n", ""), "no benchmarks"),
        (("num_nodes: 3", "num_nodes: 2"), "3 deployment entries for num_nodes 2"),
        (("  - envs: {}\n", "  - envs:\n"), "the node has no envs"),
        (("decoder_host_index: [1, 2]", "decoder_host_index: [0, 1]"), "overlap"),
        (("decoder_host_index: [1, 2]", "decoder_host_index: 1"), "no list"),
    ],
)
def test_a_config_the_harness_refuses_starts_nothing(
    tmp_path: Path, change: tuple[str, str], why: str
) -> None:
    text = CONFIG.replace(*change)
    assert text != CONFIG
    with pytest.raises(NoEngine, match=why):
        engines_in(text, str(tmp_path / "c.yaml"), base=tmp_path)
