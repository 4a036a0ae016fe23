"""Shared test set-up.

vLLM's platform can only be emulated if the emulator is installed before anything
resolves ``vllm.platforms.current_platform``, so it is installed here, once, when vLLM
is importable. Without vLLM the vLLM-backed test files skip, except in CI
(``CI=true``, as ``.ci/run`` sets it): there a missing vLLM fails the run, because a
run in which the fidelity tests skipped proves nothing about vLLM. Long runs (marker
``slow``) are collected only when ``-m`` names them (or ``KVCONFIG_SLOW=1``).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _vllm_installed() -> bool:
    try:
        return importlib.util.find_spec("vllm") is not None
    except ValueError:  # sys.modules["vllm"] is None: vLLM is blocked
        return False


HAS_VLLM = _vllm_installed()
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def pytest_sessionstart(session: pytest.Session) -> None:
    """In CI, a missing vLLM fails the run instead of skipping the vLLM-backed tests."""
    if IN_CI and not HAS_VLLM:
        pytest.exit(
            "CI is set but vLLM is not importable: the vLLM-backed tests would be skipped "
            "(install the test environment: bash dev/run tests)",
            returncode=1,
        )


if HAS_VLLM:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    from tools.catalog import emulate

    emulate.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long runs (``slow``) only when ``-m`` names them or ``KVCONFIG_SLOW=1``."""
    if "slow" in (config.getoption("-m") or "") or os.environ.get("KVCONFIG_SLOW") == "1":
        return
    slow = [item for item in items if "slow" in item.keywords]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if "slow" not in item.keywords]


@pytest.fixture
def examples() -> Path:
    """The bundled examples folder."""
    return EXAMPLES


@pytest.fixture
def emulated_sm90() -> Iterator[Any]:
    """vLLM sees an SM90 (Hopper) CUDA GPU and a Qwen3-8B-shaped target (32 q, 8 kv heads)."""
    if not HAS_VLLM:
        pytest.skip("needs vllm")
    from tools.catalog.emulate import Emulation, emulated

    with emulated(Emulation(capability=(9, 0), num_heads=32, num_kv_heads=8)) as config:
        yield config
