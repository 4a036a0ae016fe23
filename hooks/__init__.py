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

from kvconfig.hooks._state import MODES, SUPPORTED_VLLM_VERSIONS, HookStatus, current_status

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
    mode. ``off`` removes the patches. For a vLLM it cannot patch, ``strict`` raises
    ``kvconfig.errors.HooksFailed`` with nothing patched; ``enforce`` and ``warn`` log an
    ERROR naming what is unchecked (also in ``status().unchecked``) and fall back to
    ``warn`` with nothing patched.
    """
    from kvconfig.hooks._install import install_locked

    with _LOCK:
        install_locked(mode)
    return current_status()


def uninstall() -> HookStatus:
    """Remove every patch and restore vLLM's own functions."""
    from kvconfig.hooks._install import uninstall_locked

    with _LOCK:
        uninstall_locked()
    return current_status()


def register() -> None:
    """The ``vllm.general_plugins`` entry point: install the hooks.

    vLLM calls plugin functions without catching their errors. In ``strict`` any failure
    to install raises ``kvconfig.errors.HooksFailed``, so vLLM does not start without
    its checks; in ``enforce`` and ``warn`` it is logged as an ERROR naming what is
    unchecked (also in ``status().unchecked``) and vLLM starts.
    """
    from kvconfig.errors import HooksFailed

    try:
        install()
    except HooksFailed:
        raise
    except Exception as err:
        from kvconfig.hooks._install import UNCHECKED_ALL
        from kvconfig.hooks._state import machinery_failed, parse_mode

        machinery_failed("installing the vLLM hooks", UNCHECKED_ALL, err, mode=parse_mode(None))


def status() -> HookStatus:
    """What is installed, in which mode, and what the hooks have seen in this process."""
    return current_status()
