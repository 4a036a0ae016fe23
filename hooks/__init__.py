"""kvconfig's vLLM plugin: one kernel block-size plan for every component of the engine.

vLLM finds it through the ``vllm.general_plugins`` entry point ``kvconfig`` and calls
:func:`register` in each of its processes. Importing this package is free: vLLM and
torch are imported only when :func:`install` (or :func:`register`) runs.

Modes (``KVCONFIG_MODE``, or ``install(mode=...)``):

``enforce`` (default)
    hand the model runner's kernel block sizes to every Model Runner V2 speculator,
    then check every attention group against them; refuse to start on a mismatch.
``strict``
    change nothing; refuse to start on a mismatch, or when kvconfig's own vote
    disagrees with vLLM's.
``warn``
    change nothing; log what ``strict`` would refuse.
``off``
    install nothing (and remove the hooks if installed).

See docs/hooks.md.
"""

from __future__ import annotations

import threading

from hooks._state import MODES, SUPPORTED_VLLM_VERSIONS, HookStatus, current_status

__all__ = [
    "MODES",
    "SUPPORTED_VLLM_VERSIONS",
    "HookStatus",
    "install",
    "register",
    "status",
    "uninstall",
]

_LOCK = threading.Lock()


def install(mode: str | None = None) -> HookStatus:
    """Install the hooks in ``mode`` (default: ``KVCONFIG_MODE``, else ``enforce``).

    Patches vLLM all-or-nothing, once per process; calling it again only changes the
    mode. ``off`` removes the patches. Never raises for a vLLM it cannot patch: it
    logs why and falls back to ``warn`` with nothing patched.
    """
    from hooks._install import install_locked

    with _LOCK:
        install_locked(mode)
    return current_status()


def uninstall() -> HookStatus:
    """Remove every patch and restore vLLM's own functions."""
    from hooks._install import uninstall_locked

    with _LOCK:
        uninstall_locked()
    return current_status()


def register() -> None:
    """The ``vllm.general_plugins`` entry point: install the hooks; never raise.

    vLLM calls plugin functions without catching their errors, so any failure here is
    logged (the hooks are then inactive) instead of stopping vLLM.
    """
    try:
        install()
    except Exception:
        from hooks._log import logger

        logger.exception("kvconfig: installing the vLLM hooks failed; they are NOT active")


def status() -> HookStatus:
    """What is installed, in which mode, and what the hooks have seen in this process."""
    return current_status()
