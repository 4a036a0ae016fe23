"""The hooks' process-wide state: the mode, what is patched, what the hooks have seen.

Plain Python, no vLLM: ``hooks.status()`` reads it without importing vLLM.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from kvconfig.hooks._log import logger
from kvconfig.mirror import versions

MODES = ("enforce", "strict", "warn", "off")
"""The values of ``KVCONFIG_MODE``."""

DEFAULT_MODE = "enforce"

SUPPORTED_VLLM_VERSIONS: tuple[str, ...] = versions.KNOWN
"""vLLM releases the hooks are built and tested for (kvconfig's version registry); on
others every patched signature is checked first."""


@dataclass
class _State:
    mode: str = "off"
    requested: str = "off"
    vllm_version: str | None = None
    reason: str = ""
    patches: list[tuple[Any, str, Any, str]] = field(default_factory=list)
    """(owner, attribute, original, target name) of every patch in place."""
    speculator_hooks: int = 0
    kv_cache_inits: int = 0
    last_export: str | None = None
    unchecked: list[str] = field(default_factory=list)
    """What kvconfig's own machinery failed to check in this process (``HooksFailed``)."""


STATE = _State()


@dataclass(frozen=True, slots=True)
class HookStatus:
    """What ``hooks.status()`` reports."""

    mode: str
    """The mode in force: enforce, strict, warn or off."""
    requested: str
    """The mode asked for (``KVCONFIG_MODE`` or ``install(mode=...)``)."""
    active: bool
    """Whether vLLM is patched."""
    vllm_version: str | None
    """The vLLM found, if any."""
    supported: bool
    """Whether that vLLM is one the hooks are built for (``SUPPORTED_VLLM_VERSIONS``)."""
    patched: tuple[str, ...]
    """The patched vLLM functions, ``module.Class.attr``."""
    reason: str
    """Why the mode differs from the one requested (empty when it does not)."""
    speculator_hooks: int
    """How often the speculator hook ran in this process."""
    kv_cache_inits: int
    """How many KV-cache initialisations the hooks checked in this process."""
    last_export: str | None
    """The last plan file written (``KVCONFIG_PLAN_EXPORT``)."""
    unchecked: tuple[str, ...] = ()
    """What is NOT checked in this process because kvconfig's own machinery failed
    (installing the patches, reading vLLM's objects, a check that raised), one entry per
    failure: what is unchecked, what failed and the error. Empty when every check ran."""


def current_status() -> HookStatus:
    """A snapshot of the state."""
    s = STATE
    return HookStatus(
        mode=s.mode,
        requested=s.requested,
        active=bool(s.patches),
        vllm_version=s.vllm_version,
        supported=s.vllm_version in SUPPORTED_VLLM_VERSIONS,
        patched=tuple(p[3] for p in s.patches),
        reason=s.reason,
        speculator_hooks=s.speculator_hooks,
        kv_cache_inits=s.kv_cache_inits,
        last_export=s.last_export,
        unchecked=tuple(s.unchecked),
    )


def machinery_failed(what: str, unchecked: str, err: BaseException, mode: str = "") -> None:
    """kvconfig's own machinery failed (not vLLM refusing): in ``strict`` raise
    ``HooksFailed`` (vLLM does not start); in ``enforce`` and ``warn`` log one ERROR naming
    what is unchecked and record it in ``hooks.status().unchecked``."""
    from kvconfig.errors import HooksFailed

    mode = mode or STATE.mode
    failure = HooksFailed(
        what=what, unchecked=unchecked, error=f"{type(err).__name__}: {err}", mode=mode
    )
    STATE.unchecked.append(f"{unchecked} ({what}: {failure.error})")
    if mode == "strict":
        raise failure from err
    logger.error("%s", failure)


def parse_mode(value: str | None) -> str:
    """The mode named by ``value`` (``KVCONFIG_MODE`` when None); unknown names log and
    give the default, so a typo never switches the checks off."""
    raw = os.environ.get("KVCONFIG_MODE") if value is None else value
    if raw is None or not raw.strip():
        return DEFAULT_MODE
    mode = raw.strip().lower()
    if mode in MODES:
        return mode
    logger.error(
        "kvconfig: KVCONFIG_MODE=%r is not one of %s; using %s",
        raw,
        ", ".join(MODES),
        DEFAULT_MODE,
    )
    return DEFAULT_MODE
