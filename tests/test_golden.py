"""The golden plans hold: every bundled example plans to the recorded bytes.

Re-record with ``python tests/golden/record.py`` when a change is meant to alter a
plan, and say which plans changed and why in the commit message.
"""

from __future__ import annotations

import json

import pytest

from tests.golden import record

PATHS = record.deployments()


@pytest.mark.parametrize("path", PATHS, ids=[str(p.relative_to(record.EXAMPLES)) for p in PATHS])
def test_golden_plans_hold(path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    assert isinstance(path, Path)
    monkeypatch.chdir(record.ROOT)
    want = json.loads(record.golden_path(path).read_text())
    got = json.loads(json.dumps(record.record_one(path), sort_keys=True))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key
