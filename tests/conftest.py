"""Shared test set-up: vLLM's platform emulation, and the ``slow`` marker's opt-in."""

from __future__ import annotations

import importlib.util
import os

import pytest

if importlib.util.find_spec("vllm") is not None:
    # vLLM resolves its platform once; the emulation must be in place first.
    from kvconfig.introspect import emulate

    emulate.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``slow`` tests unless asked for (``-m slow`` or ``KVCONFIG_SLOW=1``)."""
    if "slow" in (config.getoption("-m") or "") or os.environ.get("KVCONFIG_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow or KVCONFIG_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
