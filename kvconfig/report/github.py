"""``--format github``: GitHub Actions workflow commands, one annotation per finding."""

from __future__ import annotations

from collections.abc import Sequence

from kvconfig.report.outcome import Outcome

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render_github(outcomes: Sequence[Outcome]) -> str:
    """GitHub Actions workflow commands, one annotation per finding."""
    lines = []
    for o in outcomes:
        if o.plan is None:
            file, line, text = o.where()
            at = f",line={line}" if line is not None else ""
            lines.append(
                f"::error file={_prop(file)}{at},title=kvconfig input error::{_escape(text)}"
            )
            continue
        for f in o.plan.findings:
            line = o.line_of_finding(f)
            title = f"{f.code} {f.name} [{o.platform}]"
            text = f.message + "".join(f" Fix: {x}" for x in f.fixes[:1])
            props = f"file={_prop(o.source)},line={line},title={_prop(title)}"
            lines.append(f"::{_LEVEL[f.severity]} {props}::{_escape(text)}")
    return "\n".join(lines) + ("\n" if lines else "")
