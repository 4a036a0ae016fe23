"""In CI a missing vLLM fails the test run; elsewhere the vLLM-backed tests skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: pytest in a process where ``import vllm`` fails, as it does where vLLM is not installed
RUN = (
    "import sys; sys.modules['vllm'] = None; import pytest; "
    "raise SystemExit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests/test_packaging.py']))"
)


def _pytest_without_vllm(ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-c", RUN], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )


def test_ci_fails_the_run_when_vllm_is_missing() -> None:
    run = _pytest_without_vllm("true")
    assert run.returncode != 0, run.stdout
    assert "vLLM is not importable" in run.stdout + run.stderr


def test_outside_ci_the_run_goes_on() -> None:
    run = _pytest_without_vllm(None)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_ci_entry_point_sets_ci() -> None:
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "export CI=true" in text
