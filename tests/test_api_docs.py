"""docs/api.md's examples run: every ``python`` block, in order, in one namespace, from
the repository's root (so the page cannot drift from the API)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "api.md"


def blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), re.M | re.S)


def test_the_page_has_examples() -> None:
    assert len(blocks()) >= 8


def test_the_examples_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    for i, code in enumerate(blocks()):
        exec(compile(code, f"{PAGE}:block {i + 1}", "exec"), namespace)
    out, err = capsys.readouterr()
    assert out == "" and err == ""  # the API prints nothing
