"""``--format json``: the plan objects of docs/json.md."""

from __future__ import annotations

import json
from collections.abc import Sequence

from kvconfig.report.outcome import Outcome


def error_json(o: Outcome) -> dict[str, object]:
    """An unreadable deployment in ``lint --format json``: verdict ``error`` and the error line."""
    file, line, _ = o.where()
    return {"verdict": "error", "source": o.source, "error": o.error, "file": file, "line": line}


def render_json(outcomes: Sequence[Outcome]) -> str:
    """One plan object, or a list when several files or platforms were linted.

    A deployment kvconfig could not read is an ``error_json`` object in its place.
    """
    docs = [o.plan.to_json() if o.plan is not None else error_json(o) for o in outcomes]
    body: object = docs[0] if len(docs) == 1 else docs
    return json.dumps(body, indent=2) + "\n"
