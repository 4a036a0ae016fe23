"""``--format json``: the plan objects of docs/json.md."""

from __future__ import annotations

import json
from collections.abc import Sequence

from kvconfig.report.outcome import Outcome


def error_json(o: Outcome) -> dict[str, object]:
    """An unreadable deployment in ``lint --format json``: verdict ``error`` and the error line."""
    file, line, _ = o.where()
    out: dict[str, object] = {
        "verdict": "error",
        "source": o.source,
        "error": o.error,
        "file": file,
        "line": line,
    }
    return _with_engine(out, o)


def plan_json(o: Outcome) -> dict[str, object]:
    """A plan object, with the operator file's engine it plans (``operator_engine``)."""
    assert o.plan is not None
    return _with_engine(o.plan.to_json(), o)


def _with_engine(doc: dict[str, object], o: Outcome) -> dict[str, object]:
    engine = o.engine_json()
    if engine is not None:
        doc["operator_engine"] = engine
    return doc


def render_json(outcomes: Sequence[Outcome]) -> str:
    """One plan object, or a list when several files or platforms were linted.

    A deployment kvconfig could not read is an ``error_json`` object in its place.
    """
    docs = [plan_json(o) if o.plan is not None else error_json(o) for o in outcomes]
    body: object = docs[0] if len(docs) == 1 else docs
    return json.dumps(body, indent=2) + "\n"
