"""The interpreters of the vLLM releases installed for the tests.

The test environment's own vLLM is one (``sys.executable``). Others are virtualenvs in
the folder ``KVCONFIG_RELEASE_VENVS`` names, one per release: ``vllm-<version>/`` with
``bin/python``, vLLM installed with ``pip install --isolated vllm==<version>`` and
kvconfig with ``pip install --no-deps -e .`` (so that vLLM's plugin loader finds the
hooks). A release listed in ``KVCONFIG_REQUIRE_RELEASES`` (comma-separated) that has no
interpreter fails its tests instead of skipping them: CI lists the ones it installs
(docs/ci.md). CI runs every test of the releases ``KVCONFIG_RELEASES_FULL`` lists and, for
the others, their catalog, facts and rules drift and a small engine sweep; the slow mode
(``KVCONFIG_SLOW=1``) and an unset variable run everything for every release.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path

import pytest

from kvconfig.mirror import versions


def _own() -> str | None:
    try:
        return importlib.metadata.version("vllm").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return None


def pythons() -> dict[str, str]:
    """Known release -> the interpreter that has it installed."""
    found: dict[str, str] = {}
    own = _own()
    if own in versions.KNOWN:
        found[own] = sys.executable
    folder = os.environ.get("KVCONFIG_RELEASE_VENVS")
    if folder:
        for version in versions.RULES:
            python = Path(folder) / f"vllm-{version}" / "bin" / "python"
            if version not in found and python.is_file():
                found[version] = str(python)
    return found


def required() -> set[str]:
    """The releases whose tests must run here (``KVCONFIG_REQUIRE_RELEASES``)."""
    return {v.strip() for v in os.environ.get("KVCONFIG_REQUIRE_RELEASES", "").split(",") if v}


def python_for(version: str) -> str:
    """The interpreter of ``version``; skips (or fails, when required) without one."""
    python = pythons().get(version)
    if python is None:
        why = f"no interpreter with vLLM {version} (set KVCONFIG_RELEASE_VENVS)"
        if version in required():
            pytest.fail(why)
        pytest.skip(why)
    return python


def full(version: str) -> bool:
    """Whether every test of ``version`` runs here (``KVCONFIG_RELEASES_FULL``)."""
    listed = os.environ.get("KVCONFIG_RELEASES_FULL")
    if listed is None or os.environ.get("KVCONFIG_SLOW") == "1":
        return True
    return version in {v.strip() for v in listed.split(",")}


def python_for_full(version: str) -> str:
    """``python_for``, for a test CI runs only for the releases it checks fully."""
    if not full(version):
        pytest.skip(
            f"vLLM {version}: CI checks its drift and a small sweep; KVCONFIG_SLOW=1 runs it"
        )
    return python_for(version)
