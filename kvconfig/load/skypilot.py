"""SkyPilot task YAML: the ``run`` script, its ``envs`` and the GPU it asks for.

A task (SkyPilot's task YAML reference) runs ``setup`` then ``run`` as bash scripts on
each node, with ``envs`` (and ``secrets``) exported. ``resources.accelerators`` names the
GPU: ``H100:8``, ``{H100: 8}``, or a list or set of alternatives; ``resources.any_of`` and
``resources.ordered`` list alternative resources. SkyPilot also exports
``SKYPILOT_NUM_GPUS_PER_NODE`` and ``SKYPILOT_NUM_NODES`` (known from the resources) and
``SKYPILOT_NODE_RANK``/``SKYPILOT_NODE_IPS`` (known only at run time). A count left out
is one GPU (``H100`` is ``H100:1``: SkyPilot's ``docs/source/compute/gpus.rst``). SkyPilot
launches the task on one of the alternatives; when their GPU counts differ, the run
script sees a different ``SKYPILOT_NUM_GPUS_PER_NODE`` on each, so the task is read as
one engine per count (``skypilot/NAME (4 GPUs)``), each with the GPUs of that count. A
task without a ``service`` section runs once (one replica); with one, the count depends
on the command (``sky launch`` or ``sky serve up``), so it is left open unless the service
keeps one fixed replica, one either way. The vLLM version
comes from a ``docker:vllm/vllm-openai:vX.Y.Z`` ``image_id``, or from a pinned
``vllm==X.Y.Z`` in ``setup``. A ``run`` script that starts vLLM with ``docker run`` of a
vLLM image is read as a launch script's (``kvconfig.load.docker_run``): the image's ``vllm
serve``, its tag's version, the container's ``-e`` environment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.errors import InputError, NoEngine
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.docker_run import is_vllm_start, vllm_command
from kvconfig.load.engine_fields import (
    check_words,
    gpu_fields,
    image_version,
    known_versions,
    listing,
)
from kvconfig.load.operator_engine import Engine, Note

if TYPE_CHECKING:
    from kvconfig.load.router_rules import Router

_PIN = re.compile(r"\bvllm(?:\[[^\]]*\])?==(\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?)")


def _accelerators(value: Any) -> list[tuple[str, int | None]]:
    """(name, count) alternatives of ``accelerators``."""
    out: list[tuple[str, int | None]] = []
    if isinstance(value, str):
        name, _, count = value.partition(":")
        out.append((name.strip(), int(count) if count.strip().isdigit() else 1))
    elif isinstance(value, dict):
        for name, count in value.items():
            if count is None and ":" in str(name):
                # {H100:8, H200:8}: YAML reads each "H100:8" as a key without a value;
                # SkyPilot's own examples write sets this way and it reads NAME:COUNT
                out.extend(_accelerators(str(name)))
            else:  # {A100, H100} is a set: one GPU of either
                # YAML's true/false are bools, which Python counts as ints: not a count
                real = isinstance(count, int) and not isinstance(count, bool)
                out.append((str(name), count if real else 1))
    elif isinstance(value, list):
        for item in value:
            out.extend(_accelerators(item))
    return out


def _resources(data: dict[str, Any]) -> tuple[list[tuple[str, int | None]], str | None]:
    res = data.get("resources")
    options = res if isinstance(res, list) else [res] if isinstance(res, dict) else []
    accelerators: list[tuple[str, int | None]] = []
    image: str | None = None
    for option in options:
        if not isinstance(option, dict):
            continue
        accelerators += _accelerators(option.get("accelerators"))
        for alternative in [*listing(option.get("any_of")), *listing(option.get("ordered"))]:
            if isinstance(alternative, dict):
                accelerators += _accelerators(alternative.get("accelerators"))
        if isinstance(option.get("image_id"), str):
            image = option["image_id"]
    return accelerators, image


def engines(doc: _yaml.Document, base: Path) -> list[Engine]:
    """The vLLM server the task's ``run`` script starts (or, when it starts none, one its
    ``setup`` leaves running in the background): one engine per GPU count of the task's
    accelerator alternatives (one when they agree, or name none)."""
    data = doc.data
    name = str(data.get("name") or Path(doc.source).stem)
    label = f"skypilot/{name}"
    run = data.get("run")
    if not isinstance(run, str):
        run = ""
    if not run.strip() and not (isinstance(data.get("setup"), str) and data["setup"].strip()):
        raise NoEngine(
            "the task has no run script, so it starts no vLLM server",
            source=doc.source,
            line=doc.line("run") or 1,
            key="run",
            hint="add run: vllm serve MODEL ...",
        )
    accelerators, image_id = _resources(data)
    env = task_env(data)
    by_count: dict[int | None, list[str]] = {}
    for gpu_name, count in accelerators:
        by_count.setdefault(count, []).append(gpu_name)
    if not by_count:
        by_count[None] = []
    found = []
    for count, names in by_count.items():
        env["SKYPILOT_NUM_GPUS_PER_NODE"] = str(count) if count is not None else None
        each = label if len(by_count) == 1 else f"{label} ({count} GPU{'' if count == 1 else 's'})"
        found.append(
            _engine(
                doc, data, each, run=run, env=dict(env), gpus=names, image_id=image_id, base=base
            )
        )
    return found


def task_env(data: dict[str, Any]) -> dict[str, str | None]:
    """The variables a task's ``run`` script starts with: its ``envs`` (known) and
    ``secrets`` (their values are not in the file)."""
    env: dict[str, str | None] = {}
    for section in ("envs", "secrets"):
        block = data.get(section)
        if isinstance(block, dict):
            for key, value in block.items():
                known = section == "envs" and value is not None
                env[str(key)] = (
                    (str(value).lower() if isinstance(value, bool) else str(value))
                    if known
                    else None
                )
    return env


def task_routers(data: dict[str, Any], given: Mapping[str, str]) -> list[Router]:
    """The KV-aware routers a task's ``run`` script starts (a Dynamo frontend on the node
    of rank 0), read with the task's environment, ``given`` (``--env``, as ``sky launch
    --env``) over it, and SkyPilot's per-node variables only known at run time."""
    from kvconfig.load.router_scripts import started
    from kvconfig.load.shell.script import LOGIN, commands

    run = data.get("run")
    if not isinstance(run, str):
        return []
    env = {**task_env(data), **given}
    for key, value in {**_per_node(data), "SKYPILOT_NUM_GPUS_PER_NODE": None}.items():
        env.setdefault(key, value)
    for name in LOGIN:
        env.setdefault(name, None)
    label = f"skypilot/{data.get('name') or 'task'}"
    try:
        cmds = commands(run, env, source=label, line=None, key=label, dialect="bash")
    except InputError:
        return []  # a script the shell refuses starts nothing (the engine reader says so)
    return started(label, cmds)


def _per_node(data: dict[str, Any]) -> dict[str, str | None]:
    """The variables SkyPilot sets on every node of the task: the node count (from
    ``num_nodes``) and those only known at run time (rank, IPs, task id)."""
    from kvconfig.load.shell.words import hole

    nodes = data.get("num_nodes", 1)
    known = isinstance(nodes, int) and not isinstance(nodes, bool) and 0 < nodes <= 1024
    # SKYPILOT_NODE_IPS: "one IP address per line" for each node (SkyPilot's docs,
    # docs/source/running-jobs/environment-variables.rst): the IPs are only known at run
    # time, their lines are not ($(echo "$SKYPILOT_NODE_IPS" | wc -l) is the node count)
    ips = "\n".join([hole("an IP of $SKYPILOT_NODE_IPS")] * nodes) if known else None
    return {
        "SKYPILOT_NUM_NODES": str(nodes) if isinstance(nodes, int) else None,
        "SKYPILOT_NODE_RANK": None,
        "SKYPILOT_NODE_IPS": ips,
        "SKYPILOT_TASK_ID": None,
    }


def _engine(
    doc: _yaml.Document,
    data: dict[str, Any],
    label: str,
    *,
    run: str,
    env: dict[str, str | None],
    gpus: list[str],
    image_id: str | None,
    base: Path,
) -> Engine:
    """The engine of the task on the GPUs ``gpus`` (their count is in ``env``)."""
    from kvconfig.load.shell.script import LOGIN, commands

    env.update(_per_node(data))
    for name in LOGIN:  # the node's login set these (HOME, USER, PATH ...), at run time
        env.setdefault(name, None)
    run_line = doc.line("run")
    script_line = (run_line + 1) if run_line is not None else None
    from kvconfig.load.shell import servers

    cmds = commands(run, env, source=doc.source, line=script_line, key=label, dialect="bash")
    chosen, problem = servers(cmds, is_vllm_start)
    setup = data.get("setup")
    if not chosen and isinstance(setup, str):
        # a server setup starts in the background (setsid ... &) outlives setup and
        # serves the task: SkyPilot runs setup, then run, on the same nodes
        setup_line = doc.line("setup")
        cmds = commands(setup, env, source=doc.source, key=label, dialect="bash",
                        line=(setup_line + 1) if setup_line is not None else None)  # fmt: skip
        chosen, problem = servers(cmds, is_vllm_start)
    starts = []
    for found in chosen:
        start, container, cmd = vllm_command(found, doc.source)
        starts.append((start, cmd, container))
    if problem:
        raise InputError(
            f"{problem}; kvconfig cannot tell which one runs",
            source=doc.source,
            line=starts[1][1].line,
            key=label,
            hint="keep one vLLM server per task",
        )
    if not starts and not run.strip():
        raise NoEngine(
            "the task has no run script, so it starts no vLLM server",
            source=doc.source,
            line=run_line or 1,
            key="run",
            hint="add run: vllm serve MODEL ...",
        )
    if not starts:
        raise NoEngine(
            "no vLLM server found: the run script starts no 'vllm serve'",
            source=doc.source,
            line=run_line,
            key=label,
            hint="kvconfig reads a run script that starts 'vllm serve' or "
            "'python -m vllm.entrypoints.openai.api_server'",
        )
    if len(starts) > 1:
        lines = ", ".join(str(c.line) for _, c, _ in starts)
        raise InputError(
            f"two candidate vLLM commands in the run script (lines {lines}); kvconfig cannot "
            "tell which one runs",
            source=doc.source,
            line=starts[1][1].line,
            key=label,
            hint="keep one vLLM server per task",
        )
    (entry, parser, argv), cmd, container = starts[0]
    check_words(argv, doc.source, cmd.line, label)
    notes: list[Note] = []
    skipped = len(cmd.words) - len(argv) if container else 0  # docker's own options
    for i, what in cmd.unknown:
        if i < skipped:
            continue
        notes.append(
            Note("unknown-value", f"{what} in argument {i + 1} is only known at run time", cmd.line)
        )
    image = (
        image_id.removeprefix("docker:") if image_id and image_id.startswith("docker:") else None
    )
    if container is not None:  # the run script's docker run: its image, its -e options
        image = container.image
        if not container.entrypoint:
            entry = "image entry point"
    version, vnotes = image_version(image, doc.line("resources"))
    notes += vnotes
    setup = data.get("setup")
    if (
        version is None
        and container is None
        and isinstance(setup, str)
        and (m := _PIN.search(setup))
    ):
        version = m.group(1)
        if version.split(".post")[0].split("rc")[0] not in known_versions():
            notes.append(
                Note(
                    "unknown-vllm-version",
                    f"setup installs vLLM {version}; kvconfig has data for vLLM "
                    f"{', '.join(known_versions())}",
                    doc.line("setup"),
                    "setup",
                )
            )
    gpu, platforms, gnotes = gpu_fields(gpus, doc.line("resources"))
    notes += gnotes
    parallelism: dict[str, int] = {}
    if env["SKYPILOT_NUM_GPUS_PER_NODE"]:
        parallelism["gpus"] = int(env["SKYPILOT_NUM_GPUS_PER_NODE"])
    nodes = data.get("num_nodes", 1)
    if isinstance(nodes, int) and nodes > 1:
        parallelism["nodes"] = nodes
    if data.get("service") is None or _serve_count(data["service"]) == 1:
        # only 'sky serve up' runs replicas, and it refuses a task without a service
        # section (skypilot sky/serve/server/impl.py: "Service section not found."):
        # 'sky launch' and 'sky jobs launch' run the task once; a service of one fixed
        # replica is one either way
        parallelism["replicas"] = 1
    env_of = container.env if container is not None else cmd.env
    run_env = {k: v for k, v in env_of.items() if v is not None and not k.startswith("SKYPILOT_")}
    unknown = sorted(k for k, v in env_of.items() if v is None and not k.startswith("SKYPILOT_"))
    return Engine(
        name=label,
        source=doc.source,
        line=cmd.line,
        argv=tuple(argv),
        entry=entry,
        parser=parser,
        env=run_env,
        env_unknown=tuple(unknown),
        gpu=gpu,
        platforms=platforms,
        vllm_version=version,
        image=image,
        parallelism=parallelism,
        base=str(base),
        notes=tuple(notes),
    )


def _serve_count(service: Any) -> int | None:
    """The replicas ``sky serve up`` keeps for a ``service`` section
    (``sky/serve/service_spec.py``, ``from_yaml_config``): ``replicas: N``, else
    ``replica_policy.min_replicas`` when ``max_replicas`` is absent or the same ("Fixed N
    replicas"), else ``DEFAULT_MIN_REPLICAS``, 1; None when it autoscales or a count is
    not a number."""
    if not isinstance(service, dict):
        return None
    policy = service.get("replica_policy")
    if service.get("replicas") is not None or policy is None:
        count = service.get("replicas", 1)
    elif isinstance(policy, dict) and policy.get("max_replicas") in (
        None,
        policy.get("min_replicas"),
    ):
        count = policy.get("min_replicas")
    else:
        return None
    return count if isinstance(count, int) and not isinstance(count, bool) else None
