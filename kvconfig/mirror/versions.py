"""The vLLM releases kvconfig mirrors, and where each one's data lives.

This is the one module that names a vLLM version. Everything else asks it: which
releases are known, which one a deployment plans for when it names none, and the
folder of each release's data (``data/vllm-<version>/``, beside this module):

* ``catalog.json``: every attention backend class and the kernel block sizes it
  declares (``kvconfig.mirror.catalog`` reads it);
* ``facts.json``: what kvconfig checks input against (the ``vllm serve`` options, the
  nested config keys, the KV-cache dtypes, the speculative methods, the KV-cache spec
  kinds, the KV-cache layouts and which are block-contiguous, the model architectures),
  read here.

Both files are generated from that release's installed vLLM (``python -m tools.catalog``)
and checked against it by the tests. The rules in the other ``kvconfig.mirror`` modules
(backend selection, priorities, validation, grouping, the votes) are those of the same
release: a release is only added here once they have been checked against it.

Nothing here imports pydantic, torch or vLLM.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kvconfig.errors import InputError

KNOWN: tuple[str, ...] = ("0.33.0",)
"""The vLLM releases kvconfig plans for, oldest first. The hooks are built for these too."""

DEFAULT: str = KNOWN[-1]
"""The release a deployment plans for when it names none."""

DATA = Path(__file__).parent / "data"
"""The per-release data folders."""


def folder(version: str) -> Path:
    """The data folder of a release (``data/vllm-<version>``); it may not exist."""
    return DATA / f"vllm-{version}"


def check(
    version: str, *, source: str = "", line: int | None = None, key: str = "--vllm-version"
) -> str:
    """``version`` if kvconfig knows it; an InputError naming the known ones otherwise."""
    if version in KNOWN:
        return version
    raise InputError(
        f"kvconfig does not plan for vLLM {version}",
        source=source,
        line=line,
        key=key,
        hint=f"known: {', '.join(KNOWN)}",
    )


class Facts(NamedTuple):
    """What one vLLM release accepts, as its ``facts.json`` records it."""

    version: str
    serve_options: Mapping[str, Mapping[str, Any]]
    """``vllm serve`` options: ``--name`` -> ``dest``, whether it takes a value, its choices."""
    attention_config_keys: tuple[str, ...]
    """The fields of ``AttentionConfig`` (``--attention-config``)."""
    speculative_config_keys: tuple[str, ...]
    """The fields of ``SpeculativeConfig`` (``--speculative-config``)."""
    kv_cache_dtypes: tuple[str, ...]
    """``CacheDType``: the values of ``--kv-cache-dtype``."""
    speculative_methods: tuple[str, ...]
    """``SpeculativeMethod``: the values of ``speculative-config.method``."""
    mtp_methods: tuple[str, ...]
    """``MTPModelTypes``: the ``*_mtp`` method names, aliases of ``mtp``."""
    spec_kinds: tuple[str, ...]
    """``KVCacheSpecKind`` values: the keys of ``attention-config.backend_per_kind``."""
    kv_cache_layouts: Mapping[str, Mapping[str, bool]]
    """``KVCacheLayout`` (``v1/kv_cache_layout.py``): each member's name -> its properties
    (``block_contiguous``: ``is_block_contiguous``, [H, N, C] contiguous within a block)."""
    architectures: frozenset[str]
    """The model architectures vLLM's registry serves."""


@functools.cache
def facts(version: str) -> Facts:
    """The facts of a known release (InputError for an unknown one)."""
    check(version)
    with (folder(version) / "facts.json").open(encoding="utf-8") as f:
        raw: dict[str, Any] = json.load(f)
    return Facts(
        version=version,
        serve_options=raw["serve_options"],
        attention_config_keys=tuple(raw["attention_config_keys"]),
        speculative_config_keys=tuple(raw["speculative_config_keys"]),
        kv_cache_dtypes=tuple(raw["kv_cache_dtypes"]),
        speculative_methods=tuple(raw["speculative_methods"]),
        mtp_methods=tuple(raw["mtp_methods"]),
        spec_kinds=tuple(raw["spec_kinds"]),
        kv_cache_layouts=raw.get("kv_cache_layouts", {}),
        architectures=frozenset(raw["architectures"]),
    )


def catalog_file(version: str) -> Path:
    """The backend catalog of a known release (InputError for an unknown one)."""
    return folder(check(version)) / "catalog.json"
