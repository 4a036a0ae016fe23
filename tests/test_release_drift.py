"""Drift per release: each release's shipped data is what that release's installed vLLM
generates (``python -m tools.catalog``, ``tools/argv.py``), byte for byte.

Runs under each release's interpreter (``tests/releases.py``). The test environment's
own release is also checked by ``tests/test_catalog_drift.py``; this file covers the
others (about 3 minutes each on two cores), and every release's row of ``versions.RULES``
against its own code (``tests/release_rules.py``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kvconfig.mirror import versions
from tests.releases import python_for, python_for_full

pytestmark = pytest.mark.vllm

ROOT = Path(__file__).resolve().parent.parent
OLDER = versions.KNOWN[:-1]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), VLLM_TARGET_DEVICE="cpu")


@pytest.mark.parametrize("version", OLDER)
def test_catalog_and_facts_are_the_releases_own(version: str, tmp_path: Path) -> None:
    python = python_for(version)
    run = subprocess.run(
        [python, "-m", "tools.catalog", "-o", str(tmp_path)],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    for name in ("catalog.json", "facts.json"):
        shipped = (versions.folder(version) / name).read_text(encoding="utf-8")
        fresh = (tmp_path / name).read_text(encoding="utf-8")
        assert fresh == shipped, f"{name} of vLLM {version} drifted: python -m tools.catalog"


@pytest.mark.parametrize("version", OLDER)
def test_the_argument_table_is_the_releases_own(version: str) -> None:
    python = python_for_full(version)
    code = (
        "import json, tools.argv as a; d = a.describe(); "
        "print(json.dumps({'vllm_version': d['vllm_version'], 'options': d['options']}))"
    )
    run = subprocess.run(
        [python, "-c", code],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    import json

    fresh = json.loads(run.stdout.strip().splitlines()[-1])
    shipped = json.loads((versions.folder(version) / "argv.json").read_text(encoding="utf-8"))
    assert fresh == shipped


@pytest.mark.parametrize("version", tuple(versions.RULES))
def test_the_rules_row_is_the_releases_own(version: str) -> None:
    """Every flag of ``versions.RULES[version]`` is what that release's code does."""
    python = python_for(version)
    run = subprocess.run(
        [python, str(ROOT / "tests" / "release_rules.py")],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    import json

    observed = json.loads(run.stdout.strip().splitlines()[-1])
    row = versions.RULES[version]._asdict()
    row["sparse_mla_nope"] = list(row["sparse_mla_nope"])
    assert observed == row
