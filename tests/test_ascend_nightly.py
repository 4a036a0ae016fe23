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


def test_the_older_harness_s_env_common_fills_every_node(tmp_path: Path) -> None:
    """The harness before the internal/external-DP split (``multi_node/scripts/
    multi_node_config.py``): ``env_common`` under each node's ``envs``, which a node may
    leave out."""
    text = CONFIG.replace("benchmarks: {}\n", "benchmarks: {}\nenv_common: {PORT: 9000, X: c}\n")
    text = text.replace("  - envs: {PORT: 8081}\n", "  -\n")
    found = engines_in(text, str(tmp_path / "c.yaml"), base=tmp_path)
    assert [e.argv[e.argv.index("--port") + 1] for e in found] == ["8080", "9000"]
    assert found[1].env["X"] == "c" and found[0].env["PORT"] == "8080"


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


EXTERNAL = """test_name: t
model: "m/x"
num_nodes: 2
npu_per_node: 16
routing:
  type: disaggregated_prefill
  groups: {prefiller: [0], decoder: [1]}
config:
  - {node_index: 0, port_start: 7100, dp_rpc_port: 12321, dp_size: 2, dp_size_local: 2,
     dp_rank_start: 0, tp_size: 4, dp_address: "${NODE_0_IP}"}
  - {node_index: 1, port_start: 7200, dp_rpc_port: 12322, dp_size: 4, dp_size_local: 3,
     dp_rank_start: 1, tp_size: 2, dp_address: "${LOCAL_IP}"}
env_common: &common
  SERVER_PORT: "${PORT}"
  ASCEND_RT_VISIBLE_DEVICES: "${VISIBLE_DEVICES}"
  OWN: "$HOME/x"
  LATER: "$SERVER_PORT"
templates:
  - envs: {<<: *common, FLAG: true}
    server_cmd_template: [--port, $SERVER_PORT, --data-parallel-size, "${DP_SIZE}",
      --data-parallel-rank, "${DP_RANK}", --data-parallel-address, "${DP_ADDRESS}",
      --tensor-parallel-size, "${TP_SIZE}", --served-model-name, "w${LWS_WORKER_INDEX}",
      --kv-transfer-config, '{"kv_connector": "NixlConnector", "kv_role": "kv_producer"}']
  - envs: *common
    server_cmd_template: [--port, $LATER, --data-parallel-size, "${DP_SIZE}",
      --data-parallel-rank, "${DP_RANK}", --tensor-parallel-size, "${TP_SIZE}",
      --data-parallel-address, "${DP_ADDRESS}"]
benchmarks: {}
"""


def test_external_dp_runs_one_server_per_rank(tmp_path: Path) -> None:
    """``RankResolver._expand_node`` and ``ServerCommandBuilder.build`` (vllm-ascend
    ``tests/e2e/nightly/multi_node/external_dp/scripts``): ``dp_size_local`` servers a node,
    DP rank ``dp_rank_start + r`` on port ``port_start + r``, devices ``r*devices_per_rank``
    on; ``${NAME}`` of the rank's variables, ``$NAME`` of its env; addresses at run time."""
    found = engines_in(EXTERNAL, str(tmp_path / "c.yaml"), base=tmp_path)
    assert [(e.name, e.role) for e in found] == [
        ("templates[0] (node 0, DP rank 0)", "prefill"),
        ("templates[0] (node 0, DP rank 1)", "prefill"),
        ("templates[1] (node 1, DP rank 1)", "decode"),
        ("templates[1] (node 1, DP rank 2)", "decode"),
        ("templates[1] (node 1, DP rank 3)", "decode"),
    ]
    first, last = found[1], found[4]
    assert first.argv[:13] == (
        "m/x", "--port", "7101", "--data-parallel-size", "2", "--data-parallel-rank", "1",
        "--data-parallel-address", "${NODE_0_IP}", "--tensor-parallel-size", "4",
        "--served-model-name", "w0",
    )  # fmt: skip
    assert first.env["ASCEND_RT_VISIBLE_DEVICES"] == "4,5,6,7"
    assert first.env["FLAG"] == "True"  # str(True)
    assert first.env["OWN"] == "$HOME/x" and "OWN" in first.env_unknown  # the harness's own
    assert any("argument" in n.message for n in first.notes)  # the address
    assert last.argv[:3] == ("m/x", "--port", "7202") and last.env["LATER"] == "7202"
    assert last.env["ASCEND_RT_VISIBLE_DEVICES"] == "4,5"
    assert last.argv[-1] == "${LOCAL_IP}" and "LOCAL_IP" in last.env_unknown


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("benchmarks: {}\n", ""), "no benchmarks"),
        (("num_nodes: 2", "num_nodes: 3"), "config holds no entry per node"),
        (("npu_per_node: 16", "npu_per_node: x"), "npu_per_node is no whole number"),
        (("node_index: 1,", "node_index: 2,"), r"config\[1\].node_index is not 1"),
        (("type: disaggregated_prefill", "type: round_robin"), "not disaggregated_prefill"),
        (("decoder: [1]", "decoder: [0]"), "in two groups"),
        (("decoder: [1]", "decoder: []"), "no prefiller and decoder"),
        (("dp_size_local: 3", "dp_size_local: 4"), "ranks past dp_size"),
        (("tp_size: 4", "tp_size: 16"), "more devices than npu_per_node"),
        (("tp_size: 2", "tp_size: 0"), "no size"),
        (('"w${LWS_WORKER_INDEX}"', '"${TP}"'), r"\$\{TP\} is no template variable"),
        (("--port, $LATER", "--port, $NOPE"), r"\$NOPE is in no env"),
        (("dp_rpc_port: 12322, ", ""), "no dp_rpc_port"),
        (("  - envs: *common\n", "  - envs: null\n"), "has no envs"),
    ],
)
def test_an_external_dp_config_the_harness_refuses_starts_nothing(
    tmp_path: Path, change: tuple[str, str], why: str
) -> None:
    text = EXTERNAL.replace(*change)
    assert text != EXTERNAL
    with pytest.raises(NoEngine, match=why):
        engines_in(text, str(tmp_path / "c.yaml"), base=tmp_path)


SINGLE = """test_cases:
  - name: "a"
    model: "m/x"
    envs: {SERVER_PORT: "DEFAULT_PORT", TP: 4, FLAG: true}
    server_cmd: ["--port", "$SERVER_PORT", "--tensor-parallel-size", "${TP}", "--x", "$FLAG"]
    server_cmd_extra: ["--block-size", "128", "--y", "$UNSET"]
  - name: "b"
    model: "m/y"
    service_mode: epd
    envs: {ENCODE_PORT: 9001}
    epd_server_cmds:
      - ["--port", "$ENCODE_PORT", "--model", "m/y"]
      - ["--port", "$PD_PORT", "--model", "m/y", "--tensor-parallel-size", "2"]
    epd_proxy_args: ["--port", "$PROXY_PORT"]
"""


def test_single_node_cases_start_the_servers_the_harness_starts(tmp_path: Path) -> None:
    """``tests/e2e/nightly/single_node``: an ``openai`` case runs ``vllm serve MODEL`` with
    ``server_cmd`` then ``server_cmd_extra``; an ``epd`` case one ``vllm serve`` per
    ``epd_server_cmds`` list; ``$NAME`` from the case's ``envs`` (``str(value)``), a port
    left ``DEFAULT_PORT`` or unset a free port (run time)."""
    found = engines_in(SINGLE, str(tmp_path / "c.yaml"), base=tmp_path)
    assert [e.name for e in found] == [
        "test_cases[0] (a)",
        "test_cases[1].epd_server_cmds[0] (b)",
        "test_cases[1].epd_server_cmds[1] (b)",
    ]
    first, encoder, pd = found
    assert list(first.argv) == [
        "m/x", "--port", "$SERVER_PORT", "--tensor-parallel-size", "4", "--x", "True",
        "--block-size", "128", "--y", "$UNSET",
    ]  # fmt: skip
    assert "SERVER_PORT" in first.env_unknown and first.env["VLLM_WORKER_MULTIPROC_METHOD"]
    assert (
        encoder.argv[:2] == ("--port", "9001") and encoder.env["ASCEND_RT_VISIBLE_DEVICES"] == "0"
    )
    assert pd.argv[1] == "$PD_PORT" and pd.env["ASCEND_RT_VISIBLE_DEVICES"] == "1"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("    envs: {ENCODE_PORT: 9001}\n", ""), "has no envs"),
        (('    epd_proxy_args: ["--port", "$PROXY_PORT"]\n', ""), "has no epd_proxy_args"),
        (('["--port", "$ENCODE_PORT", "--model", "m/y"]', '["--model", "m/y"]'), "no --port"),
        (('name: "a"', 'name: ""'), "a name"),
    ],
)
def test_a_single_node_case_the_harness_refuses_starts_nothing(
    tmp_path: Path, change: tuple[str, str], why: str
) -> None:
    text = SINGLE.replace(*change)
    assert text != SINGLE
    with pytest.raises(NoEngine, match=why):
        engines_in(text, str(tmp_path / "c.yaml"), base=tmp_path)
