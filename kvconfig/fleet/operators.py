"""Operator files (Kubernetes manifests, chart values, compose files, ...) as fleet engines.

kvconfig's operator-file readers (``kvconfig.load.engines.engines_in``) return one engine
per vLLM server a file starts: its name, the ``vllm serve`` words, its environment, the
GPU it asks for, its role and its size. Each becomes one fleet engine; options the
launcher sets when the words leave them unset (``defaults``, e.g. ``dynamo.vllm``'s block
size) are given as defaults. Registered in ``kvconfig.fleet.read.READERS``; without the
readers installed, or for a file that is not an operator file, it answers None.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError
from kvconfig.fleet.model import EngineSpec

#: Operator-file parallelism keys -> the ``vllm serve`` option each sets.
PARALLELISM = {
    "tensor": "tensor-parallel-size",
    "pipeline": "pipeline-parallel-size",
    "data": "data-parallel-size",
}


def _readers() -> Any:
    import importlib

    try:
        return importlib.import_module("kvconfig.load.engines")
    except ImportError:
        return None


def read_operator_file(path: Path, env: Mapping[str, str] | None = None) -> list[EngineSpec] | None:
    """The engines of an operator file (a launch script too), or None when it is not one;
    ``env`` is the environment the user passes (``--env``)."""
    readers = _readers()
    if readers is None or not path.is_file():
        return None
    if path.suffix not in (".yaml", ".yml", ".json") and not _is_script(path):
        return None
    try:
        found = readers.engines_in(path, str(path), env=env)
    except InputError as err:
        if "not an operator file" in err.message or "expected a Kubernetes" in err.message:
            return None
        raise
    out = []
    for e in found:
        given = {
            option: int(e.parallelism[key])
            for key, option in PARALLELISM.items()
            if key in getattr(e, "parallelism", {})
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
