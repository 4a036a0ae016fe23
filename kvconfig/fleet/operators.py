"""Operator files (Kubernetes manifests, chart values, compose files, ...) as fleet engines.

kvconfig's operator-file readers (``kvconfig.load.engines.engines_in``) return one engine
per vLLM server a file starts: its name, the ``vllm serve`` words, its environment, the
GPU it asks for, its role and its size. Each becomes one fleet engine; options the
launcher sets when the words leave them unset (``defaults``, e.g. ``dynamo.vllm``'s block
size) are given as defaults. Registered in ``kvconfig.fleet.read.READERS``; without the
readers installed, or for a file that is not an operator file, it answers None.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError
from kvconfig.fleet.model import EngineSpec
from kvconfig.fleet.rules.routers import RouterSpec

#: Operator-file parallelism keys -> the ``vllm serve`` option each sets.
PARALLELISM = {
    "tensor": "tensor-parallel-size",
    "pipeline": "pipeline-parallel-size",
    "data": "data-parallel-size",
}


def _sets(argv: Sequence[str], option: str) -> bool:
    """Whether the engine's own words set ``option`` by any of its names in vLLM's option
    table (``-tp``; ``--x_y`` read as ``--x-y``, as vLLM's parser reads it): an operator's
    size (a chart's ``parallelism.tensor``, rendered before the container's arguments)
    then gives way to them, as vLLM's parser keeps an option's last value."""
    from kvconfig.load.argv_table import options
    from kvconfig.mirror import versions

    table = options(versions.DEFAULT)
    dest = option.replace("-", "_")
    for word in argv:
        name = word.split("=", 1)[0]
        if name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        if name in table and table[name][0] == dest:
            return True
    return False


def _readers() -> Any:
    import importlib

    try:
        return importlib.import_module("kvconfig.load.engines")
    except ImportError:
        return None


def read_operator_file(
    path: Path, env: Mapping[str, str] | None = None
) -> tuple[list[EngineSpec], list[RouterSpec]] | None:
    """The engines of an operator file (a launch script too) and the KV-aware routers it
    deploys beside them, from one read of the file; None when it is not one. ``env`` is
    the environment the user passes (``--env``)."""
    readers = _readers()
    if readers is None or not path.is_file():
        return None
    if path.suffix not in (".yaml", ".yml", ".json") and not _is_script(path):
        # another name (production-stack's Terraform values are VALUES.tpl): what it holds
        # decides, as for lint
        from kvconfig.load import sources

        try:
            read = sources.read_file(path, str(path), env=env)
        except InputError:
            return None
        if not isinstance(read, list):
            return None
        found, text = read, readers.read_file(path, str(path))  # the routers read it too
    else:
        text = readers.read_file(path, str(path))
        try:
            found = readers.engines_in(
                text, str(path), env=env, base=path.resolve().parent, path=path
            )
        except InputError as err:
            if "not an operator file" in err.message or "expected a Kubernetes" in err.message:
                return None
            raise
    refused = [readers.refusal(e) or "" for e in found]
    if all(refused):  # no server starts: the first refusal is the file's error, as lint's
        refused = [""] * len(found)
    out = []
    for e, why in zip(found, refused, strict=True):
        given = {
            option: int(e.parallelism[key])
            for key, option in PARALLELISM.items()
            if key in getattr(e, "parallelism", {}) and not _sets(e.argv, option)
        }
        platforms = tuple(getattr(e, "platforms", ()) or ())
        out.append(
            EngineSpec(
                name=str(e.name),
                role=str(e.role) if getattr(e, "role", None) else "auto",
                target=("vllm", "serve", *e.argv),
                cwd=Path(getattr(e, "base", ".") or ".").resolve()
                if Path(getattr(e, "base", ".") or ".").is_absolute()
                else path.resolve().parent,
                source=f"{e.source}:{e.line}" if getattr(e, "line", None) else str(e.source),
                platform=platforms[0] if len(platforms) == 1 else None,
                replicas=int(getattr(e, "parallelism", {}).get("replicas", 1) or 1),
                given=given,
                defaults=dict(getattr(e, "defaults", {}) or {}),
                where=f"{e.source}:{e.line}" if getattr(e, "line", None) else str(e.source),
                engine=e,
                refused=why,
            )
        )
    return out, _routers(text, path, [spec.name for spec in out], env)


def _routers(
    text: str, path: Path, names: Sequence[str], env: Mapping[str, str] | None
) -> list[RouterSpec]:
    """The KV-aware routers of the file's text (``kvconfig.load.routers``), each in front
    of the engines it routes to: a Dynamo router (frontend or ``dynamo.router``) the
    workers of its own graph (a ``DynamoGraphDeployment`` discovers its workers in its
    own namespace), the others every engine of the file."""
    from kvconfig.load.routers import routers_in_file

    out = []
    for r in routers_in_file(text, str(path), env, os.path.abspath(path)):
        behind: tuple[str, ...] = ()
        if r.name.startswith("DynamoGraphDeployment/"):
            graph = "/".join(r.name.split("/")[:2]) + "/"
            behind = tuple(n for n in names if n.startswith(graph))
        out.append(
            RouterSpec(
                kind=r.kind,
                block_size=r.block_size,
                hashes_prompts=r.kind == "llm-d" and r.hash_seed is not None,
                hash_seed=r.hash_seed,
                engines=behind,
                run_time=r.run_time,
            )
        )
    return out


def _is_script(path: Path) -> bool:
    """Whether the file is a shell script (``script_dialect``: its ``#!`` line, or its
    name)."""
    from kvconfig.load.script_file import script_dialect

    try:
        with path.open("rb") as f:
            head = f.read(128).decode("utf-8", "replace")
    except OSError:
        return False
    return script_dialect(head, path.name) is not None
