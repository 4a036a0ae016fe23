"""The plan as a readable table, and ``kvconfig lint``'s one line per deployment."""

from __future__ import annotations

from collections.abc import Sequence

from kvconfig.codes import Severity
from kvconfig.plan.result import CANNOT_TELL, Found, GroupResult, PlanResult
from kvconfig.report.outcome import Outcome
from kvconfig.schemas.sizes import format_sizes


def _layers(names: Sequence[str]) -> str:
    if not names:
        return "-"
    if len(names) <= 2:
        return ", ".join(names)
    return f"{names[0]} .. {names[-1]} ({len(names)})"


def _header(plan: PlanResult, title: str | None = None) -> str:
    spec = plan.speculative_method.upper() if plan.speculative_method else "no speculator"
    runner = "Model Runner V2" if plan.runner == "v2" else "Model Runner V1"
    hooks = f", kvconfig hooks: {plan.hooks}" if plan.hooks != "none" else ""
    how = f" ({plan.engine.description})" if plan.engine is not None else ""
    return (
        f"{title or plan.source} on {plan.platform.label()}{how}: vLLM {plan.vllm_version}, "
        f"{runner}, {spec}{hooks}"
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


def render_plan(plan: PlanResult, title: str | None = None) -> str:
    """``kvconfig plan`` text output; ``title`` names the deployment (default: its source)."""
    lines = [_header(plan, title), ""]
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
                at = o.label()
            elif o.engine is not None:
                at = o.label()
            lines.append(f"error   {at} [{o.platform}]: {text}")
            if o.reading is not None:
                lines.append(f"  read: {o.reading.summary()}")
            continue
        p = o.plan
        errors = [f for f in p.findings if f.severity is Severity.ERROR]
        if p.verdict == "unknown":
            errors = [f for f in p.findings if f.code in CANNOT_TELL]
        summary = ", ".join(dict.fromkeys(f"{f.code} {f.name}" for f in errors)) or "safe"
        lines.append(f"{p.verdict:<7} {o.label()} [{o.platform}]: {summary}")
        if o.reading is not None:
            lines.append(f"  read: {o.reading.summary()}; planned for vLLM {p.vllm_version}")
        lines += finding_lines(p.findings, indent="  ")
    ok = sum(o.verdict == "ok" for o in outcomes)
    unknown = sum(o.verdict == "unknown" for o in outcomes)
    bad = sum(o.verdict == "error" for o in outcomes)
    lines.append(
        f"{ok} of {len(outcomes)} safe"
        + (f", {unknown} unknown" if unknown else "")
        + (f", {bad} not readable" if bad else "")
    )
    return "\n".join(lines) + "\n"
