"""The rule each KV-aware router's own source applies to its mode and block size: NVIDIA
Dynamo's frontend, its endpoint picker and its standalone routers (the sources are named
in ``kvconfig.load.routers``, which finds them in operator files, and
``kvconfig.load.router_scripts``, in scripts)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Router:
    """A KV-aware router found in an operator file."""

    kind: str
    """``dynamo`` (the frontend or the standalone router), ``llm-d`` or
    ``production-stack``."""
    name: str
    """Where it is: ``DynamoGraphDeployment/NAME/Frontend``, ``EndpointPickerConfig/PLUGIN``."""
    block_size: int | None
    """The block size it hashes with; None: taken from the engines (Dynamo) or the
    router's default (llm-d, 16)."""
    hash_seed: str | None = None
    """llm-d's ``hashSeed`` (must equal the engines' ``PYTHONHASHSEED``)."""
    run_time: str | None = None
    """The word that sets the block size when it is only known at run time (``$BS``,
    ``$(BLOCK)`` from a Secret): ``block_size`` is then None and nothing is assumed."""

    def to_json(self) -> dict[str, Any]:
        """The router as JSON."""
        keys = ("kind", "name", "block_size", "hash_seed", "run_time")
        return {k: getattr(self, k) for k in keys}


def as_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def option(words: list[str], name: str) -> str | None:
    for i, w in enumerate(words):
        if w == name and i + 1 < len(words):
            return words[i + 1]
        if w.startswith(name + "="):
            return w.split("=", 1)[1]
    return None


def sized(kind: str, name: str, value: str | None, default: int | None) -> Router:
    """A router whose block size is ``value`` as written: a number; unset, ``default``; a
    word only known at run time (``$BS``, ``$(BLOCK)``, ``$(cat f)``: anything else, which
    the router's integer option would refuse as written) leaves it unknown, never the
    default."""
    if value is None:
        return Router(kind, name, default)
    size = as_int(value)
    return Router(kind, name, size, run_time=None if size is not None else value)


def frontend(name: str, words: list[str], env: Mapping[str, str]) -> Router | None:
    mode = option(words, "--router-mode") or env.get("DYN_ROUTER_MODE")
    if mode != "kv":
        return None
    size = option(words, "--kv-cache-block-size") or env.get("DYN_KV_CACHE_BLOCK_SIZE")
    return sized("dynamo", name, size, None)


def epp(name: str, env: Mapping[str, str]) -> Router:
    """Dynamo's endpoint picker: Dynamo's KV router in blocks of DYN_KV_CACHE_BLOCK_SIZE."""
    return sized("dynamo", f"{name}/epp", env.get("DYN_KV_CACHE_BLOCK_SIZE"), None)


STANDALONE_BLOCK_SIZE = 128
"""``dynamo.router``'s ``--router-block-size`` default (``DynamoRouterArgGroup``)."""


def standalone(name: str, words: list[str], env: Mapping[str, str]) -> Router | None:
    """``python -m dynamo.router``: its own block size, 128 unless set; the older
    ``python -m dynamo.prefill_router`` likewise (``_prefill_router``)."""
    if "dynamo.prefill_router" in words:
        return prefill_router(name, words)
    if "dynamo.router" not in words:
        return None
    size = (
        option(words, "--router-block-size")
        or option(words, "--block-size")
        or env.get("DYN_ROUTER_BLOCK_SIZE")
    )
    return sized("dynamo", f"{name}/dynamo.router", size, STANDALONE_BLOCK_SIZE)


def prefill_router(name: str, words: list[str]) -> Router:
    """Dynamo's centralized prefill router (``python -m dynamo.prefill_router``, before
    ``dynamo.router``): a ``KvRouter`` over the prefill workers in blocks of its argparse
    ``--block-size`` (an int, default 128; no environment variable), which must equal the
    workers' (``components/prefill_router/src/dynamo/prefill_router/__main__.py`` and
    ``README.md``, ai-dynamo/dynamo 0c13c49)."""
    size = option(words, "--block-size")
    return sized("dynamo", f"{name}/dynamo.prefill_router", size, STANDALONE_BLOCK_SIZE)
