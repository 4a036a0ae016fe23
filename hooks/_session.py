"""One KV-cache initialisation as the hooks see it: the runner, and each pass through the
speculator's ``set_attn`` hook. Plain Python, no vLLM."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SpeculatorRecord:
    """One pass through the ``set_attn`` hook."""

    speculator: Any
    runner_sizes: list[int]
    own: list[int] | None
    """The speculator's own vote over its draft layers (None: it has no common size)."""
    handed: bool
    """Whether the runner's list was handed to it (``enforce``)."""


@dataclass
class Session:
    """One KV-cache initialisation of a model runner."""

    runner: Any
    """The model runner object (``GPUModelRunner`` of V1 or V2)."""
    version: str
    """Which model runner: ``v1`` or ``v2``."""
    records: list[SpeculatorRecord] = field(default_factory=list)
    speculator_failed: bool = False
    """The ``set_attn`` hook ran but kvconfig's own part of it failed (logged, or raised in
    ``strict``): the end-of-initialisation check still checks the speculator's groups."""


SESSION: ContextVar[Session | None] = ContextVar("kvconfig_kv_cache_session", default=None)
"""The initialisation in progress in this context, if any."""
