"""What the pool hands an engine child and gets back: the GPU it emulates, one
deployment's start-up request and the child's answer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Gpu:
    """The GPU a child emulates (as ``torch.cuda`` names it)."""

    name: str
    capability: tuple[int, int]
    memory_bytes: int
    count: int = 8
    """Devices the host reports (tensor parallelism needs that many)."""


@dataclass(frozen=True, slots=True)
class Request:
    """One deployment for vLLM's start-up."""

    argv: tuple[str, ...]
    """What follows ``vllm serve`` on the command line."""
    cwd: str
    """The working folder vLLM starts in (relative paths resolve from it)."""
    gpu: Gpu
    env: Mapping[str, str] = field(default_factory=dict)
    """The deployment's own environment variables (only ``plan_variable`` ones reach
    vLLM)."""
    settings: Mapping[str, str] = field(default_factory=dict)
    """kvconfig's own ``KVCONFIG_*`` settings for the hooks in the child, from kvconfig's
    caller (never from a linted file), e.g. ``KVCONFIG_PLAN_EXPORT``."""
    cubins: bool = True
    """FlashInfer's TRTLLM cubins are reachable (``has_nvidia_artifactory``)."""
    hooks: str = "none"
    """``none``: the kvconfig hooks are off; ``enforce``, ``strict`` or ``warn``: vLLM's
    plugin loader loads them in that mode (``KVCONFIG_MODE``)."""
    download: bool = False
    """Allow the Hugging Face Hub (otherwise local folders and the cache only)."""

    def key(self) -> tuple[object, ...]:
        """Requests with the same key can share one child."""
        return (
            self.gpu,
            self.cubins,
            self.hooks,
            self.download,
            tuple(sorted(self.env.items())),
            tuple(sorted(self.settings.items())),
        )


@dataclass(frozen=True, slots=True)
class Answer:
    """A child's answer to one request (see ``kvconfig.engine.child``)."""

    status: str
    """``ok``, ``refused`` (vLLM raised), ``arguments`` (vLLM's parser rejected the
    command), ``timeout`` or ``crashed`` (the child died)."""
    data: Mapping[str, Any]
    vllm_version: str | None = None
    seconds: float = 0.0
