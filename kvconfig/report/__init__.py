"""Plans and findings as text, JSON, GitHub annotations and SARIF; explain, export, catalog."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvconfig.report.outcome import Outcome

#: ``lint --format``: the reporter of each format, imported when it is asked for.
LINT_REPORTERS = {
    "text": ("kvconfig.report.text", "render_lint"),
    "json": ("kvconfig.report.json", "render_json"),
    "github": ("kvconfig.report.github", "render_github"),
    "sarif": ("kvconfig.report.sarif", "render_sarif"),
    "html": ("kvconfig.report.html", "render_lint"),
}


def lint_reporter(fmt: str) -> Callable[[Sequence[Outcome]], str]:
    """The reporter of a ``lint --format`` (one of ``LINT_REPORTERS``)."""
    module, name = LINT_REPORTERS[fmt]
    render: Callable[[Sequence[Outcome]], str] = getattr(importlib.import_module(module), name)
    return render
