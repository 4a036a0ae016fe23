"""``--format sarif``: SARIF 2.1.0 for code-scanning tools."""

from __future__ import annotations

import json
from collections.abc import Sequence

from kvconfig.codes import FindingCode
from kvconfig.report.outcome import Outcome


def render_sarif(outcomes: Sequence[Outcome]) -> str:
    """SARIF 2.1.0 for code-scanning tools."""
    results = []
    for o in outcomes:
        if o.plan is None:
            file, line, text = o.where()
            location: dict[str, object] = {"artifactLocation": {"uri": file}}
            if line is not None:
                location["region"] = {"startLine": line}
            results.append(
                {
                    "ruleId": "input-error",
                    "level": "error",
                    "message": {"text": text},
                    "locations": [{"physicalLocation": location}],
                }
            )
            continue
        for f in o.plan.findings:
            line = o.line_of_finding(f)
            results.append(
                {
                    "ruleId": f.code,
                    "level": {"error": "error", "warning": "warning", "info": "note"}[f.severity],
                    "message": {"text": f"[{o.platform}] {f.message}"},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": o.source},
                                "region": {"startLine": line},
                            }
                        }
                    ],
                }
            )
    rules = [
        {"id": code.value, "name": code.slug, "shortDescription": {"text": code.summary}}
        for code in FindingCode
    ]
    rules.append(
        {
            "id": "input-error",
            "name": "input-error",
            "shortDescription": {"text": "kvconfig cannot read this deployment (docs/errors.md)"},
        }
    )
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "kvconfig", "rules": rules}}, "results": results}],
    }
    return json.dumps(doc, indent=2) + "\n"
