"""vLLM Ascend's external data-parallel test configs: one vLLM server per DP rank.

A config of ``tests/e2e/nightly/multi_node/external_dp/config/`` (vllm-project/vllm-ascend;
``kvconfig.load.documents.kind_of`` knows it by a ``templates`` list of entries with a
``server_cmd_template``) gives, per node, its data-parallel layout (``config``) and its
launch template (``templates``): the node's ``envs`` and the arguments after ``vllm serve
MODEL``. The harness (``external_dp/scripts``: ``external_dp_config.py``,
``ExternalDPConfigLoader`` and ``RankResolver``; ``runtime.py``, ``ServerCommandBuilder``)
runs on every node:

* it refuses a config without ``model``, ``num_nodes`` (above 0), ``npu_per_node``,
  ``routing``, ``config``, ``templates`` or ``benchmarks``; a ``config`` or ``templates``
  entry per node missing or a ``node_index`` not its place; a ``routing.type`` other than
  ``disaggregated_prefill``, whose ``groups`` must name ``prefiller`` and ``decoder`` nodes,
  each node in one group; a size below 1, a node using more devices (``dp_size_local`` x
  ``tp_size`` x ``cp_size`` x ``sp_size`` x ``pp_size``) than ``npu_per_node``, or DP ranks
  past ``dp_size``; a template without ``envs`` or a ``server_cmd_template`` list;
* each node runs ``dp_size_local`` servers, local rank r being DP rank ``dp_rank_start + r``
  on port ``port_start + r`` (``RankResolver._expand_node``): ``vllm serve MODEL`` and the
  node's template, as argv with no shell, its role the node's group;
* in a string, ``${NODE_<i>_IP}``, ``${LOCAL_IP}`` and ``${MASTER_IP}`` are the cluster's
  addresses (run time) and ``${LWS_WORKER_INDEX}`` the node's index; then ``${NAME}`` is one
  of the rank's variables (``MODEL``, ``PORT``, ``DP_SIZE``, ``DP_RANK``, ``TP_SIZE``,
  ``VISIBLE_DEVICES`` ...; another name is the harness's KeyError), then ``$NAME`` is, in an
  env value, the harness's own environment or the values before it (missing: empty), in an
  argument, the rank's environment (missing: KeyError);
* a server's environment is its node's ``envs`` rendered so and the node's addresses
  (``build_dist_envs``: ``LOCAL_IP``, ``MASTER_IP``, ``NIC_NAME``, ``HCCL_IF_IP`` and the
  ``*_IFNAME``), known only where it runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kvconfig.errors import NoEngine
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import check_words
from kvconfig.load.operator_engine import Engine, Note, server_start

REQUIRED = ("model", "num_nodes", "npu_per_node", "routing", "config", "templates", "benchmarks")
"""``ExternalDPConfigLoader._validate_root``."""

RUN_TIME = (
    "HCCL_IF_IP", "HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME",
    "LOCAL_IP", "NIC_NAME", "MASTER_IP",
)  # fmt: skip
"""``build_dist_envs``: the node's address and interface."""

_CLUSTER = re.compile(r"\$\{(NODE_(\d+)_IP|LOCAL_IP|MASTER_IP|LWS_WORKER_INDEX)\}")
"""``CLUSTER_PLACEHOLDER_RE``."""
_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``TEMPLATE_VAR_RE``."""
_BARE = re.compile(r"(?<!\$)\$([A-Za-z_][A-Za-z0-9_]*)")
"""``ENV_VAR_RE``."""
_LATE = re.compile("\x00([A-Za-z0-9_]+)\x01")
"""A run-time address kept while the rest is rendered."""
_ROLES = {"prefiller": "prefill", "decoder": "decode"}


def _refused(doc: _yaml.Document, what: str, key: str, hint: str, *path: str | int) -> NoEngine:
    return NoEngine(
        f"the harness refuses the config: {what} (ExternalDPConfigLoader)",
        source=doc.source,
        line=(doc.line(*path) if path else doc.line(key.split(".", maxsplit=1)[0])) or 1,
        key=key,
        hint=hint,
    )


def engines(doc: _yaml.Document, base: Path) -> list[Engine]:
    data = doc.data
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise _refused(doc, f"no {', '.join(missing)}", missing[0], "give " + ", ".join(REQUIRED))
    nodes, templates, count = data["config"], data["templates"], data["num_nodes"]
    if not isinstance(count, int) or count <= 0:
        raise _refused(doc, "num_nodes is no count above 0", "num_nodes", "give num_nodes: N")
    if type(data["npu_per_node"]) is not int:  # int(...) in the loader: a whole number
        raise _refused(
            doc, "npu_per_node is no whole number", "npu_per_node", "give npu_per_node: N"
        )
    for key, given in (("config", nodes), ("templates", templates)):
        if not isinstance(given, list) or len(given) != count:
            raise _refused(
                doc, f"{key} holds no entry per node", key, f"give {count} entries, one a node"
            )
    roles = _roles(doc, data["routing"], count)
    out: list[Engine] = []
    for k, (node, template) in enumerate(zip(nodes, templates, strict=True)):
        out.extend(_node(doc, k, node, template, roles[k], data, base))
    return out


def _roles(doc: _yaml.Document, routing: Any, nodes: int) -> dict[int, str]:
    """``_validate_routing`` and ``RankResolver._role_by_node_index``."""
    groups = routing.get("groups") if isinstance(routing, dict) else None
    if not isinstance(routing, dict) or routing.get("type") != "disaggregated_prefill":
        raise _refused(
            doc, "routing.type is not disaggregated_prefill", "routing.type",
            "the harness starts P/D systems only: type: disaggregated_prefill",
        )  # fmt: skip
    if not isinstance(groups, dict) or not groups.get("prefiller") or not groups.get("decoder"):
        raise _refused(
            doc, "routing.groups names no prefiller and decoder nodes", "routing.groups",
            "give groups: {prefiller: [0], decoder: [1]}",
        )  # fmt: skip
    roles: dict[int, str] = {}
    for name, indexes in groups.items():
        if not isinstance(indexes, list) or any(
            type(i) is not int or not 0 <= i < nodes or i in roles for i in indexes
        ):
            raise _refused(
                doc, f"routing.groups.{name} holds an index outside num_nodes or in two groups",
                f"routing.groups.{name}", "give each node one group, by its index from 0",
            )  # fmt: skip
        roles.update(dict.fromkeys(indexes, str(name)))
    if len(roles) != nodes:
        lacking = [i for i in range(nodes) if i not in roles]
        raise _refused(
            doc, f"no group names node {lacking[0]}", "routing.groups", "put every node in a group"
        )
    return roles


def _size(doc: _yaml.Document, node: dict[str, Any], name: str, k: int, default: int) -> int:
    value = node.get(name, default)
    if type(value) is not int or value < (0 if name == "dp_rank_start" else 1):
        raise _refused(
            doc, f"{name} {value!r} of node {k} is no size", f"config[{k}].{name}",
            "give a whole number, 1 or more", "config", k, name,
        )  # fmt: skip
    return value


def _node(  # noqa: PLR0917 (one node's servers)
    doc: _yaml.Document,
    k: int,
    node: Any,
    template: Any,
    group: str,
    data: dict[str, Any],
    base: Path,
) -> list[Engine]:
    label = f"templates[{k}]"
    if not isinstance(node, dict) or node.get("node_index", k) != k:
        raise _refused(doc, f"config[{k}].node_index is not {k}", f"config[{k}].node_index",
                       "list the nodes in order of their index")  # fmt: skip
    if not isinstance(template, dict) or not isinstance(template.get("envs"), dict):
        raise _refused(doc, f"{label} has no envs", f"{label}.envs", "give the node its envs")
    args = template.get("server_cmd_template")
    if not isinstance(args, list):
        key = f"{label}.server_cmd_template"
        raise _refused(doc, f"{key} is no list", key, "list the arguments after vllm serve MODEL")
    sizes = {n: _size(doc, node, n, k, 1) for n in ("dp_size", "dp_size_local", "tp_size")}
    sizes |= {n: _size(doc, node, n, k, 1) for n in ("cp_size", "sp_size", "pp_size")}
    first = _size(doc, node, "dp_rank_start", k, 0)
    per_rank = sizes["tp_size"] * sizes["cp_size"] * sizes["sp_size"] * sizes["pp_size"]
    if per_rank * sizes["dp_size_local"] > data["npu_per_node"] or (
        first + sizes["dp_size_local"] > sizes["dp_size"]
    ):
        raise _refused(
            doc, f"node {k} uses more devices than npu_per_node, or ranks past dp_size",
            f"config[{k}]", "fit dp_size_local x tp_size in npu_per_node", "config", k,
        )  # fmt: skip
    for name in ("port_start", "dp_rpc_port", "dp_address"):
        if name not in node:
            raise _refused(doc, f"config[{k}] has no {name} (KeyError)", f"config[{k}].{name}",
                           f"give the node its {name}", "config", k)  # fmt: skip
    line = doc.line("templates", k, "server_cmd_template") or doc.line("templates", k)
    port = node["port_start"]
    out = []
    for local in range(sizes["dp_size_local"]):
        names = {
            "MODEL": str(data["model"]),
            "PORT_START": str(port),
            "PORT": str(port + local) if type(port) is int else str(port),
            "DP_SIZE": str(sizes["dp_size"]),
            "DP_SIZE_LOCAL": str(sizes["dp_size_local"]),
            "DP_RANK_START": str(first),
            "DP_RANK": str(first + local),
            "LOCAL_RANK": str(local),
            "TP_SIZE": str(sizes["tp_size"]),
            "CP_SIZE": str(sizes["cp_size"]),
            "SP_SIZE": str(sizes["sp_size"]),
            "PP_SIZE": str(sizes["pp_size"]),
            "DP_ADDRESS": _cluster(str(node.get("dp_address")), k),
            "DP_RPC_PORT": str(node.get("dp_rpc_port")),
            "VISIBLE_DEVICES": ",".join(map(str, range(local * per_rank, (local + 1) * per_rank))),
            "NODE_INDEX": str(k),
            "CONFIG_INDEX": str(k),
        }
        out.append(_server(doc, k, local, group, names, template, line, base))
    return out


def _server(  # noqa: PLR0917 (one rank's server)
    doc: _yaml.Document,
    k: int,
    local: int,
    group: str,
    names: dict[str, str],
    template: dict[str, Any],
    line: int | None,
    base: Path,
) -> Engine:
    label = f"templates[{k}]"
    env: dict[str, str] = {}
    late = set(RUN_TIME)
    for key, value in {**template["envs"], **dict.fromkeys(RUN_TIME, "")}.items():
        if key in RUN_TIME:
            env[str(key)] = f"${key}"
            continue
        if not isinstance(value, str):
            env[str(key)] = str(value)
            continue
        text = _braced(doc, _cluster(value, k), names, f"{label}.envs.{key}", line)
        unknown = [m.group(1) for m in _BARE.finditer(text) if m.group(1) not in env]
        if unknown or _LATE.search(text):
            late.add(str(key))  # the harness's own environment, or an address
        env[str(key)] = _BARE.sub(lambda m: env.get(m.group(1), m.group(0)), _shown(text))
    argv = ["vllm", "serve", names["MODEL"]]
    notes: list[Note] = []
    for i, arg in enumerate(template["server_cmd_template"], start=3):
        text = _braced(doc, _cluster(str(arg), k), names, f"{label}.server_cmd_template", line)
        for m in _BARE.finditer(text):
            if m.group(1) not in env:
                raise _refused(
                    doc, f"${m.group(1)} is in no env of the node (KeyError)",
                    f"{label}.server_cmd_template", "set it in the node's envs",
                    "templates", k, "server_cmd_template",
                )  # fmt: skip
        refs = {m.group(1) for m in _BARE.finditer(text)}
        text = _BARE.sub(lambda m: env[m.group(1)], text)
        if _LATE.search(text) or refs & late:
            notes.append(Note("unknown-value", f"argument {i} is only known at run time", line))
        argv.append(_shown(text))
    start = server_start(argv)
    assert start is not None  # vllm serve: always a server
    entry, parser, words = start
    check_words(words, doc.source, line, label)
    return Engine(
        name=f"{label} (node {k}, DP rank {names['DP_RANK']})",
        source=doc.source,
        line=line,
        argv=tuple(words),
        entry=entry,
        parser=parser,
        env=env,
        env_unknown=tuple(sorted(late)),
        role=_ROLES.get(group),
        parallelism={"replicas": 1},
        base=str(base),
        notes=tuple(notes),
    )


def _cluster(text: str, k: int) -> str:
    """``replace_cluster_placeholders``: the addresses stay for run time; the LWS worker
    index is the node's."""
    return _CLUSTER.sub(lambda m: str(k) if m.group(1) == "LWS_WORKER_INDEX" else
                        f"\x00{m.group(1)}\x01", text)  # fmt: skip


def _braced(
    doc: _yaml.Document, text: str, names: dict[str, str], key: str, line: int | None
) -> str:
    """``${NAME}`` of the rank's variables (``_render_variables``, no name missing)."""
    for m in _BRACED.finditer(text):
        if m.group(1) not in names:
            raise NoEngine(
                f"the harness refuses the config: ${{{m.group(1)}}} is no template variable "
                "(KeyError)",
                source=doc.source,
                line=line or 1,
                key=key,
                hint="use ${MODEL}, ${PORT}, ${DP_SIZE}, ${DP_RANK}, ${TP_SIZE} ... or $ENV",
            )
    return _BRACED.sub(lambda m: names[m.group(1)], text)


def _shown(text: str) -> str:
    return _LATE.sub(lambda m: "${" + m.group(1) + "}", text)
