"""vLLM Ascend's single-node test configs: the servers its nightly harness starts per case.

A config of ``tests/e2e/nightly/single_node/models/configs/`` (vllm-project/vllm-ascend;
``kvconfig.load.documents.kind_of`` knows it by a ``test_cases`` list whose entries name a
``model`` and a ``server_cmd`` or ``epd_server_cmds``) is read as the harness runs it
(``tests/e2e/nightly/single_node/models/scripts``: ``single_node_config.py``,
``SingleNodeConfigLoader``; ``test_single_node.py``; ``tests/e2e/conftest.py``,
``RemoteOpenAIServer`` and ``RemoteEPDServer``):

* it refuses a config whose ``test_cases`` is missing, not a list or empty, and a case
  without ``name`` (a non-empty string), ``model`` and ``envs``, or, by its
  ``service_mode``, without ``server_cmd`` (``openai``, the default) or without
  ``epd_server_cmds`` and ``epd_proxy_args`` (``epd``);
* a port variable (``SERVER_PORT``, ``ENCODE_PORT``, ``PD_PORT``, ``PROXY_PORT``) unset or
  ``DEFAULT_PORT`` is a free port it picks (only known at run time); then ``$NAME`` and
  ``${NAME}`` in each argument are the case's ``envs`` (another name stays as written);
* the cases run one after another, each with the environment ``VLLM_WORKER_MULTIPROC_METHOD
  =spawn`` and its ``envs``: an ``openai`` case starts ``vllm serve MODEL`` with
  ``server_cmd`` then ``server_cmd_extra``, as argv with no shell; an ``epd`` case starts
  ``vllm serve`` with each list of ``epd_server_cmds`` (each must give ``--port``), the
  i-th with ``ASCEND_RT_VISIBLE_DEVICES=i``, behind an EPD proxy that is no vLLM engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvconfig.errors import NoEngine
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.ascend_harness import VARIABLE, server_env
from kvconfig.load.engine_fields import check_words
from kvconfig.load.operator_engine import Engine, Note, server_start

PORTS = ("SERVER_PORT", "ENCODE_PORT", "PD_PORT", "PROXY_PORT")
"""``SingleNodeConfig.__post_init__``: a free port for each unset or ``DEFAULT_PORT``."""


def _refused(doc: _yaml.Document, what: str, key: str, *path: str | int) -> NoEngine:
    return NoEngine(
        f"the harness refuses the config: {what} (SingleNodeConfigLoader)",
        source=doc.source,
        line=doc.line(*path) or 1,
        key=key,
        hint="write the case as the harness's configs do",
    )


def engines(doc: _yaml.Document, base: Path) -> list[Engine]:
    cases = doc.data.get("test_cases")
    if not isinstance(cases, list) or not cases:
        raise _refused(doc, "test_cases is no list of cases", "test_cases", "test_cases")
    out: list[Engine] = []
    for k, case in enumerate(cases):
        label = f"test_cases[{k}]"
        mode = case.get("service_mode", "openai") if isinstance(case, dict) else None
        needed = ["name", "model", "envs"]
        needed += ["epd_server_cmds", "epd_proxy_args"] if mode == "epd" else ["server_cmd"]
        missing = [n for n in needed if not isinstance(case, dict) or n not in case]
        if missing:
            raise _refused(doc, f"{label} has no {', '.join(missing)}", label, "test_cases", k)
        name = case["name"]
        if not isinstance(name, str) or not name.strip() or not isinstance(case["envs"], dict):
            raise _refused(doc, f"{label}: a name and an envs mapping", label, "test_cases", k)
        out += _case(doc, k, case, base)
    return out


def _case(doc: _yaml.Document, k: int, case: dict[str, Any], base: Path) -> list[Engine]:
    label = f"test_cases[{k}]"
    envs = dict(case["envs"])
    late = {p for p in PORTS if envs.get(p) in ("DEFAULT_PORT", None)}
    envs.update({p: f"${p}" for p in late})
    env = server_env(envs)

    def expand(values: Any, key: str) -> list[str]:
        if not isinstance(values, list):
            raise _refused(doc, f"{label}.{key} is no list of arguments", f"{label}.{key}",
                           "test_cases", k, key)  # fmt: skip
        return [VARIABLE.sub(lambda m: str(envs.get(m.group(1) or m.group(2), m.group(0))),
                              str(a)) for a in values]  # fmt: skip

    line = doc.line("test_cases", k)
    if case.get("service_mode", "openai") != "epd":
        words = expand(case["server_cmd"], "server_cmd")
        words += expand(case.get("server_cmd_extra") or [], "server_cmd_extra")
        argv = ["vllm", "serve", str(case["model"]), *words]
        return [_engine(doc, f"{label} ({case['name']})", argv, env, late, line, base)]
    commands = case["epd_server_cmds"]
    if isinstance(commands, list) and not all(isinstance(c, list) for c in commands):
        commands = [commands]  # RemoteEPDServer: one server's arguments
    out = []
    for i, command in enumerate(commands if isinstance(commands, list) else [None]):
        words = expand(command, f"epd_server_cmds[{i}]")
        if "--port" not in words:
            raise _refused(doc, f"epd_server_cmds[{i}] gives no --port", label, "test_cases", k)
        device_env = {**env, "ASCEND_RT_VISIBLE_DEVICES": str(i)}
        name = f"{label}.epd_server_cmds[{i}] ({case['name']})"
        out.append(_engine(doc, name, ["vllm", "serve", *words], device_env, late, line, base))
    return out


def _engine(  # noqa: PLR0917 (one server)
    doc: _yaml.Document,
    name: str,
    argv: list[str],
    env: dict[str, str],
    late: set[str],
    line: int | None,
    base: Path,
) -> Engine:
    notes = [
        Note("unknown-value", f"argument {i + 1} is only known at run time (a free port)", line)
        for i, arg in enumerate(argv)
        if any(f"${p}" in arg for p in late)
    ]
    start = server_start(argv)
    assert start is not None  # vllm serve: always a server
    entry, parser, words = start
    check_words(words, doc.source, line, name)
    return Engine(
        name=name,
        source=doc.source,
        line=line,
        argv=tuple(words),
        entry=entry,
        parser=parser,
        env=env,
        env_unknown=tuple(sorted(late)),
        parallelism={"replicas": 1},
        base=str(base),
        notes=tuple(notes),
    )
