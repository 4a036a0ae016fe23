"""Drift: regenerating the catalog from the installed vLLM gives the shipped files, byte for byte.

Runs ``python -m tools.catalog -o TMP`` in a fresh interpreter (the generator
must resolve vLLM's platform itself) and compares ``catalog.json`` and
``facts.json`` with ``kvconfig/data/vllm-<installed version>/``. A difference fails
with a unified diff; regenerate with ``python -m tools.catalog``.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvconfig.mirror import versions

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

ROOT = Path(__file__).resolve().parent.parent


def _diff(name: str, shipped: str, fresh: str, limit: int = 80) -> str:
    lines = list(
        difflib.unified_diff(
            shipped.splitlines(),
            fresh.splitlines(),
            f"shipped/{name}",
            f"regenerated/{name}",
            lineterm="",
            n=2,
        )
    )
    more = f"\n... {len(lines) - limit} more lines" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("catalog")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run(
        [sys.executable, "-m", "tools.catalog", "-o", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "backend classes" in run.stdout
    return out


@pytest.mark.parametrize("name", ["catalog.json", "facts.json"])
def test_regenerated_equals_shipped(regenerated: Path, name: str) -> None:
    version = importlib.metadata.version("vllm").split("+")[0]
    shipped_path = versions.folder(version) / name
    assert shipped_path.is_file(), f"kvconfig ships no {name} for the installed vLLM {version}"
    shipped = shipped_path.read_text(encoding="utf-8")
    fresh = (regenerated / name).read_text(encoding="utf-8")
    assert fresh == shipped, (
        f"{name} drifted from vLLM {version}; run 'python -m tools.catalog' and review:\n"
        + _diff(name, shipped, fresh)
    )
