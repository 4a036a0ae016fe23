"""``kvconfig explain``: how each value of a plan came about, or what a finding code means."""

from __future__ import annotations

from kvconfig.codes import FindingCode
from kvconfig.errors import InputError
from kvconfig.mirror.vote import all_accept
from kvconfig.plan.result import PlanResult
from kvconfig.schemas.sizes import format_sizes


def explain_code(text: str) -> str:
    """The documented meaning of a finding code."""
    known = {c.value: c for c in FindingCode}
    code = known.get(text)
    if code is None:
        from kvconfig._suggest import did_you_mean

        raise InputError(
            f"unknown finding code {text!r}",
            hint=did_you_mean(text, known) or "see docs/findings.md",
        )
    return (
        f"{code} {code.slug} ({code.severity}): {code.summary}.\n"
        f"See docs/findings.md#{code.value.lower()}.\n"
    )


def explain_plan(plan: PlanResult) -> str:
    """Every step of a plan: backends, sizes, B, the votes."""
    out = [
        f"{plan.source} on {plan.platform.label()} (vLLM {plan.vllm_version}, "
        f"runner {plan.runner})",
        "",
    ]
    out.append("1. Backends, per layer set")
    for info in plan.layers:
        l = info.layer
        names = l.names()
        label = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
        sel = info.selection
        out.append(f"   {l.role} {label}: {info.backend_name or 'none'} ({sel.reason})")
        for name, why in sel.rejected:
            out.append(f"      skipped {name}: {', '.join(why)}")
        if info.entry is not None:
            out.append(f"      declares {format_sizes(info.sizes)} [{info.entry.class_path}]")
        elif info.backend_name is not None:
            out.append(f"      declares {format_sizes(info.sizes)} (from the deployment file)")
    for g in plan.groups:
        out.append("")
        out.append(f"2. Group {g.id} ({g.kind}): B = {g.block_size} ({g.block_size_reason})")
        voters = [v.declared for v in g.voters]
        if g.packed:
            out.append("   packed tensors: vLLM never splits these blocks; k = B")
        elif all_accept(voters, g.block_size):
            out.append(f"   every backend accepts {g.block_size}-token pages: k = B")
        else:
            cands = sorted(
                {
                    x
                    for _, sizes in voters
                    for x in sizes
                    if isinstance(x, int) and g.block_size % x == 0
                },
                reverse=True,
            )
            shown = cands or "none"
            out.append(
                f"   not every backend accepts {g.block_size}; exact sizes dividing B: {shown}"
            )
            for c in cands:
                ok = all_accept(voters, c)
                out.append(f"      {c}: {'accepted by all -> k' if ok else 'rejected by some'}")
                if ok:
                    break
        spec = "-" if g.speculator_k is None else g.speculator_k
        out.append(f"   runner votes {g.runner_k}; speculator {spec}")
    if plan.findings:
        out.append("")
        out.append("3. Findings")
        out += [f"   {f.code} {f.name}: {f.message}" for f in plan.findings]
    return "\n".join(out) + "\n"
