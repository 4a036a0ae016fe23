"""Reporters: the plan as a readable table, lint summaries, GitHub annotations, SARIF."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from kvconfig.codes import FindingCode, Severity
from kvconfig.errors import InputError
from kvconfig.plan.result import Found, GroupResult, PlanResult
from schemas.sizes import format_sizes


@dataclass(frozen=True, slots=True)
class Outcome:
    """One (deployment, platform) lint result, or an input error for that deployment."""

    source: str
    platform: str
    plan: PlanResult | None = None
    error: str | None = None
    line_of: dict[str, int] | None = None
    problem: InputError | None = None
    """The input error behind ``error``, for its file, line and key."""

    @property
    def verdict(self) -> str:
        """ok, reject or error."""
        if self.plan is None:
            return "error"
        return self.plan.verdict

    def where(self) -> tuple[str, int | None, str]:
        """An error's file, line, and its text without them (for annotations)."""
        p = self.problem
        if p is None:
            return self.source, None, self.error or ""
        own = not p.source or p.source == self.source
        if own:
            return self.source, p.line, InputError(p.message, key=p.key, hint=p.hint).render()
        if p.source.startswith("<") or not p.source:
            return self.source, None, p.render()
        return p.source, p.line, InputError(p.message, key=p.key, hint=p.hint).render()


def _layers(names: Sequence[str]) -> str:
    if not names:
        return "-"
    if len(names) <= 2:
        return ", ".join(names)
    return f"{names[0]} .. {names[-1]} ({len(names)})"


def _header(plan: PlanResult) -> str:
    spec = plan.speculative_method.upper() if plan.speculative_method else "no speculator"
    runner = "Model Runner V2" if plan.runner == "v2" else "Model Runner V1"
    hooks = ", kvconfig hooks: enforce" if plan.hooks == "enforce" else ""
    return (
        f"{plan.source} on {plan.platform.label()}: vLLM {plan.vllm_version}, {runner}, "
        f"{spec}{hooks}"
    )


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _value(k: int | None) -> str:
    return "-" if k is None else str(k)


def group_rows(groups: Sequence[GroupResult]) -> list[str]:
    """The groups as an aligned table."""
    rows = [["group", "kind", "B", "k", "B/k", "runner", "speculator", "backends (layers)"]]
    for g in groups:
        backends = "; ".join(
            f"{v.name} {format_sizes(v.sizes)} ({len(v.layers)} {v.role})" for v in g.voters
        )
        rows.append(
            [
                str(g.id),
                g.kind,
                str(g.block_size),
                _value(g.kernel_block_size),
                _value(g.split),
                _value(g.runner_k),
                _value(g.speculator_k),
                backends,
            ]
        )
    return _table(rows)


def finding_lines(findings: Sequence[Found], indent: str = "") -> list[str]:
    """Each finding: a headline, then its fixes."""
    out = []
    for f in findings:
        where = f" group {f.group}" if f.group is not None else ""
        out.append(f"{indent}{f.severity} {f.code} {f.name}{where}: {f.message}")
        out.extend(f"{indent}  fix: {fix}" for fix in f.fixes)
    return out


def render_plan(plan: PlanResult) -> str:
    """``kvconfig plan`` text output."""
    lines = [_header(plan), ""]
    if plan.groups:
        lines += group_rows(plan.groups)
        lines.append("")
    lines += finding_lines(plan.findings)
    if plan.findings:
        lines.append("")
    lines.append(f"verdict: {plan.verdict}")
    return "\n".join(lines) + "\n"


def render_lint(outcomes: Sequence[Outcome]) -> str:
    """``kvconfig lint`` text output: one line per deployment and platform, then findings."""
    lines = []
    for o in outcomes:
        if o.plan is None:
            file, line, text = o.where()
            at = f"{file}:{line}" if line is not None else file
            if file != o.source:
                text = f"{at}: {text}"
                at = o.source
            lines.append(f"error   {at} [{o.platform}]: {text}")
            continue
        p = o.plan
        errors = [f for f in p.findings if f.severity is Severity.ERROR]
        summary = ", ".join(dict.fromkeys(f"{f.code} {f.name}" for f in errors)) or "safe"
        lines.append(f"{p.verdict:<7} {o.source} [{o.platform}]: {summary}")
        lines += finding_lines(p.findings, indent="  ")
    ok = sum(o.verdict == "ok" for o in outcomes)
    lines.append(f"{ok} of {len(outcomes)} safe")
    return "\n".join(lines) + "\n"


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


_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


#: Which key a finding points at in a serve config, for editor and CI annotations.
FINDING_KEY = {
    FindingCode.COMPONENT_MISMATCH: "block-size",
    FindingCode.SPECULATOR_SPLIT_ERROR: "block-size",
    FindingCode.MISMATCH_FIXED_BY_HOOKS: "block-size",
    FindingCode.NO_COMMON_KERNEL_SIZE: "block-size",
    FindingCode.SPECULATOR_NO_COMMON_KERNEL_SIZE: "speculative-config",
    FindingCode.BACKEND_UNSUPPORTED: "attention-backend",
    FindingCode.BACKEND_UNKNOWN: "attention-backend",
}


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
            line = (o.line_of or {}).get(FINDING_KEY.get(f.code, ""), 1)
            title = f"{f.code} {f.name} [{o.platform}]"
            text = f.message + "".join(f" Fix: {x}" for x in f.fixes[:1])
            props = f"file={_prop(o.source)},line={line},title={_prop(title)}"
            lines.append(f"::{_LEVEL[f.severity]} {props}::{_escape(text)}")
    return "\n".join(lines) + ("\n" if lines else "")


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
            line = (o.line_of or {}).get(FINDING_KEY.get(f.code, ""), 1)
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
