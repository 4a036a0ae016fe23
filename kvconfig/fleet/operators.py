"""Operator files (Kubernetes manifests, chart values, compose files, ...) as fleet engines.

kvconfig's operator-file readers (``kvconfig.load.engines.engines_in``) return one engine
per vLLM server a file starts: its name, the ``vllm serve`` words, its environment, the
GPU it asks for, its role and its size. Each becomes one fleet engine; options the
launcher sets when the words leave them unset (``defaults``, e.g. ``dynamo.vllm``'s block
size) are given as defaults. Registered in ``kvconfig.fleet.read.READERS``; without the
readers installed, or for a file that is not an operator file, it answers None.
"""

from __future__ import annotations

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


def read_operator_file(path: Path) -> list[EngineSpec] | None:
    """The engines of an operator file, or None when it is not one."""
    readers = _readers()
    if readers is None or path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
        return None
    try:
        found = readers.engines_in(path, str(path))
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
