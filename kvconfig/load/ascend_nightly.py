"""vLLM Ascend's multi-node test configs: the servers its nightly harness starts.

A config of ``tests/e2e/nightly/multi_node/internal_dp/config/`` (vllm-project/vllm-ascend;
``kvconfig.load.documents.kind_of`` knows it by a ``deployment`` list of entries with a
``server_cmd``) names a model, ``num_nodes`` and one ``deployment`` entry per node: the
node's ``envs`` and its ``server_cmd``, with ``disaggregated_prefill`` naming the prefill
and decode nodes. The harness (``internal_dp/scripts/multi_node_config.py``,
``MultiNodeConfigLoader``; the server from ``tests/e2e/conftest.py``,
``RemoteOpenAIServer``) runs on every node:

* it refuses a config without ``model``, ``deployment``, ``num_nodes``, ``npu_per_node``
  or ``benchmarks``, with a deployment entry per node missing, or one without ``envs``;
* a node's environment is its ``envs`` (each value as Python's ``str`` writes it) and the
  addresses the harness finds at run time (``LOCAL_IP``, ``MASTER_IP``, ``NIC_NAME``, the
  ``*_IFNAME`` and ``HCCL_IF_IP``);
* ``$NAME`` and ``${NAME}`` in ``server_cmd`` become that environment's value (a name it
  lacks stays as written), then the text is split as ``shlex.split`` splits it and run
  with no shell;
* a node whose command holds ``--headless`` serves no API: it is a data-parallel worker of
  another node's engine;
* with ``disaggregated_prefill``, the nodes of ``prefiller_host_index`` are prefill
  engines and those of ``decoder_host_index`` (required) decode ones.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError, NoEngine
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.ascend_harness import VARIABLE, server_env
from kvconfig.load.engine_fields import check_words
from kvconfig.load.operator_engine import Engine, Note, server_start

REQUIRED = ("model", "deployment", "num_nodes", "npu_per_node", "benchmarks")
"""``MultiNodeConfigLoader._validate_root``."""

RUN_TIME = (
    "HCCL_IF_IP", "HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME",
    "LOCAL_IP", "NIC_NAME", "MASTER_IP",
)  # fmt: skip
"""What ``DistEnvBuilder.build`` adds to a node's ``envs``: its address and interface."""


def engines(doc: _yaml.Document, base: Path) -> list[Engine]:
    data = doc.data
    if "test_cases" in data and "deployment" not in data:  # single-node cases
        from kvconfig.load import ascend_single

        return ascend_single.engines(doc, base)
    if "templates" in data and "deployment" not in data:  # one server per DP rank
        from kvconfig.load import ascend_external

        return ascend_external.engines(doc, base)
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise NoEngine(
            f"the harness refuses the config: no {', '.join(missing)} (MultiNodeConfigLoader)",
            source=doc.source,
            line=1,
            key=missing[0],
            hint="give model, deployment, num_nodes, npu_per_node and benchmarks",
        )
    deployment = data["deployment"]
    if len(deployment) != data["num_nodes"]:
        raise NoEngine(
            f"{len(deployment)} deployment entries for num_nodes {data['num_nodes']}: the "
            "harness refuses the config",
            source=doc.source,
            line=doc.line("num_nodes") or 1,
            key="num_nodes",
            hint="give one deployment entry per node",
        )
    roles = _roles(doc, data.get("disaggregated_prefill"), len(deployment))
    out: list[Engine] = []
    for k, entry in enumerate(deployment):
        out.extend(_node(doc, k, entry, roles.get(k), base))
    if not out:
        raise NoEngine(
            "every node runs vllm serve --headless: no API server",
            source=doc.source,
            line=doc.line("deployment") or 1,
            key="deployment",
            hint="one node serves the API (without --headless)",
        )
    return out


def _roles(doc: _yaml.Document, given: Any, nodes: int) -> dict[int, str]:
    """``DisaggregatedPrefillCfg``: node index -> role."""
    if not given:
        return {}
    if not isinstance(given, dict) or not given.get("decoder_host_index"):
        raise NoEngine(
            "disaggregated_prefill without decoder_host_index: the harness refuses it",
            source=doc.source,
            line=doc.line("disaggregated_prefill") or 1,
            key="disaggregated_prefill.decoder_host_index",
            hint="name the decode nodes' indexes",
        )
    prefill = given.get("prefiller_host_index") or []
    decode = given["decoder_host_index"]
    if (
        not isinstance(prefill, list)
        or not isinstance(decode, list)
        or any(not isinstance(i, int) or not 0 <= i < nodes for i in prefill + decode)
        or set(prefill) & set(decode)
    ):
        raise NoEngine(
            "node indexes that are no list of indexes, overlap or lie outside num_nodes: "
            "the harness refuses them",
            source=doc.source,
            line=doc.line("disaggregated_prefill") or 1,
            key="disaggregated_prefill",
            hint="give each node one role, by its index from 0",
        )
    return {**dict.fromkeys(prefill, "prefill"), **dict.fromkeys(decode, "decode")}


def _node(
    doc: _yaml.Document, k: int, entry: dict[str, Any], role: str | None, base: Path
) -> list[Engine]:
    label = f"deployment[{k}]"
    line = doc.line("deployment", k, "server_cmd") or doc.line("deployment", k)
    envs = entry.get("envs")
    # the harness before the internal/external-DP split (multi_node/scripts/
    # multi_node_config.py): env_common under each node's envs, which it may leave out
    common = doc.data.get("env_common") if isinstance(doc.data, dict) else None
    if isinstance(common, dict) and (envs is None or isinstance(envs, dict)):
        envs = {**common, **(envs or {})}
    if not isinstance(envs, dict):
        raise NoEngine(
            "the node has no envs: the harness refuses the config",
            source=doc.source,
            line=line or 1,
            key=f"{label}.envs",
            hint="give the node its envs mapping",
        )
    env = server_env(envs)
    command = entry.get("server_cmd")
    if not isinstance(command, str):
        raise InputError(
            "expected the command as one string",
            source=doc.source,
            line=line,
            key=f"{label}.server_cmd",
            hint="write server_cmd: vllm serve MODEL ...",
        )
    notes: list[Note] = []

    def fill(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name in RUN_TIME:
            return m.group(0)  # the node's address: known where it runs
        return env.get(name, m.group(0))

    try:
        words = shlex.split(VARIABLE.sub(fill, command))
    except ValueError as err:
        raise InputError(
            f"the harness cannot split the command ({err})",
            source=doc.source,
            line=line,
            key=f"{label}.server_cmd",
            hint="close every quote",
        ) from None
    if "--headless" in command:
        return []  # a data-parallel worker of another node's engine: no API server
    start = server_start(words)
    if start is None:
        raise NoEngine(
            "the command starts no vLLM server",
            source=doc.source,
            line=line,
            key=f"{label}.server_cmd",
            hint="write server_cmd: vllm serve MODEL ...",
        )
    entry_name, parser, argv = start
    check_words(argv, doc.source, line, label)
    for i, word in enumerate(argv):
        for m in VARIABLE.finditer(word):
            if (m.group(1) or m.group(2)) in RUN_TIME:
                said = f"{m.group(0)} in argument {i + 1} is only known at run time"
                notes.append(Note("unknown-value", said, line))
    return [
        Engine(
            name=f"{label} (node {k})",
            source=doc.source,
            line=line,
            argv=tuple(argv),
            entry=entry_name,
            parser=parser,
            env=env,
            env_unknown=RUN_TIME,
            role=role,
            parallelism={"replicas": 1},
            base=str(base),
            notes=tuple(notes),
        )
    ]
