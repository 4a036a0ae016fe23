"""``--format html``: the plan as a picture, one self-contained page (inline SVG and CSS, no
script, no network; docs/html.md). ``plans`` draws deployments, ``fleet`` a fleet,
``groups`` one KV-cache group, ``page`` the document around them."""

from __future__ import annotations

from collections.abc import Sequence

from kvconfig.report.html.fleet import render_fleet
from kvconfig.report.html.page import document, esc
from kvconfig.report.html.plans import render_outcomes
from kvconfig.report.outcome import Outcome


def render_lint(outcomes: Sequence[Outcome]) -> str:
    """``kvconfig lint --format html``: every deployment's pictures on one page."""
    return render_outcomes(outcomes, command="lint")


def render_words(title: str, text: str) -> str:
    """A page of plain text (``kvconfig explain KV101 --format html``)."""
    return document(title, f"<h1>{esc(title)}</h1><pre>{esc(text)}</pre>")


__all__ = ["render_fleet", "render_lint", "render_outcomes", "render_words"]
