"""Shared test set-up.

When vLLM is installed, kvconfig's emulated GPU platform is installed before anything
resolves ``vllm.platforms.current_platform`` (it can only be installed first).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

HAVE_VLLM = importlib.util.find_spec("vllm") is not None

if HAVE_VLLM:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    from kvconfig.introspect import emulate

    emulate.install()


@pytest.fixture
def examples() -> Path:
    """The bundled examples folder."""
    return EXAMPLES
