"""Shared test set-up: vLLM's platform is emulated before anything resolves it."""

from __future__ import annotations

import importlib.util

import pytest

if importlib.util.find_spec("vllm") is not None:
    from kvconfig.introspect import emulate

    emulate.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long runs (``slow``) only when ``-m`` names them."""
    if "slow" in (config.getoption("-m") or ""):
        return
    slow = [item for item in items if "slow" in item.keywords]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if "slow" not in item.keywords]
