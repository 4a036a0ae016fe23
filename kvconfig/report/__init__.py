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


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """``kvconfig lint``'s exit code for the outcomes: 2 when any is an input error, else 1
    when any is rejected, else 0 (docs/errors.md)."""
    verdicts = {o.verdict for o in outcomes}
    return 2 if "error" in verdicts else 1 if "reject" in verdicts else 0


ANNOTATIONS = ("github", "sarif")
"""The formats that are one annotation per problem, input errors included."""


def render_lint(fmt: str, outcomes: Sequence[Outcome]) -> str:
    """``lint --format FMT`` of the outcomes (``fmt`` one of ``LINT_REPORTERS``).

    A deployment that cannot be read is an error in its place, so one bad file hides
    none of the others. When none could be read, the report formats print nothing:
    the error lines on stderr are the whole report. The annotation formats always
    carry every problem."""
    if fmt not in ANNOTATIONS and outcomes and all(o.verdict == "error" for o in outcomes):
        return ""
    module, name = LINT_REPORTERS[fmt]
    render: Callable[[Sequence[Outcome]], str] = getattr(importlib.import_module(module), name)
    return render(outcomes)
