"""``kvconfig plan|explain|lint --format html``: each deployment's groups as pictures, its
findings, and (for ``explain``) the steps in words."""

from __future__ import annotations

from collections.abc import Sequence

from kvconfig.plan.result import GroupResult, PlanResult
from kvconfig.report.html.groups import GroupView, group_figure, readers_of
from kvconfig.report.html.page import document, esc, finding_block, legend, verdict_badge
from kvconfig.report.outcome import Outcome
from kvconfig.schemas.sizes import format_sizes


def view(g: GroupResult, key: str) -> GroupView:
    """A plan's group as the picture sees it."""
    readers = readers_of(g.runner_k, g.speculator_k, bool(g.draft_layers))
    return GroupView(key, g.id, g.kind, g.block_size, g.kernel_block_size, g.packed, tuple(readers))


def _backends(g: GroupResult) -> str:
    return "; ".join(
        f"{v.name} {format_sizes(v.sizes)} ({len(v.layers)} {v.role} layers)" for v in g.voters
    )


def _meta(plan: PlanResult) -> str:
    runner = "Model Runner V2" if plan.runner == "v2" else "Model Runner V1"
    spec = plan.speculative_method.upper() if plan.speculative_method else "no speculator"
    how = plan.engine.description if plan.engine is not None else "offline plan"
    return (
        f"{plan.platform.label()}, vLLM {plan.vllm_version}, {runner}, {spec}, "
        f"kvconfig hooks: {plan.hooks}; {how}"
    )


def plan_section(o: Outcome, n: int, steps: str | None = None) -> str:
    """One deployment on one platform."""
    head = f"<h2>{esc(o.label())} [{esc(o.platform)}] {verdict_badge(o.verdict)}</h2>"
    if o.plan is None:
        return (
            f'<section data-kv="deployment" data-verdict="error">{head}'
            f'<p class="meta">cannot plan: {esc(o.error or "")}</p></section>'
        )
    p = o.plan
    parts = [head, f'<p class="meta">{esc(_meta(p))}</p>']
    for g in p.groups:
        parts.append(f"<h3>Group {g.id}: {esc(g.kind)}, B = {g.block_size}</h3>")
        parts.append(group_figure(view(g, f"p{n}g{g.id}"), _backends(g)))
    if not p.groups:
        parts.append('<p class="meta">no KV-cache groups were planned</p>')
    if p.findings:
        parts.append("<h3>Findings</h3>")
    for f in p.findings:
        where = f" (group {f.group})" if f.group is not None else ""
        parts.append(
            finding_block(f.code, f.name, f.severity, f.message, where=where, fixes=f.fixes)
        )
    if steps is not None:
        parts.append(f"<h3>Step by step</h3><pre>{esc(steps)}</pre>")
    return (
        f'<section data-kv="deployment" data-verdict="{esc(o.verdict)}">{"".join(parts)}</section>'
    )


def render_outcomes(outcomes: Sequence[Outcome], *, command: str = "plan") -> str:
    """The page of ``kvconfig plan`` (or ``lint``, ``explain``): one section per outcome."""
    steps: list[str | None] = [None] * len(outcomes)
    if command == "explain":
        from kvconfig.report.explain import explain_plan

        steps = [explain_plan(o.plan) if o.plan is not None else None for o in outcomes]
    names = sorted({o.source for o in outcomes})
    title = f"kvconfig {command}: " + (
        ", ".join(names) if len(names) <= 3 else f"{len(names)} files"
    )
    ok = sum(o.verdict == "ok" for o in outcomes)
    body = [
        f"<header><h1>{esc(title)}</h1>",
        f'<p class="meta">{ok} of {len(outcomes)} safe</p></header>',
        legend(),
        "<main>",
        *(plan_section(o, n, s) for n, (o, s) in enumerate(zip(outcomes, steps, strict=True))),
        "</main>",
    ]
    return document(title, "\n".join(body))
