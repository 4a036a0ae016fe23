"""``kvconfig catalog --diff OLD NEW``: what changed between two vLLM versions' catalogs.

Classes are matched by class path (``get_name()`` is not unique). The report lists
added and removed classes, classes whose vLLM name, kind or size rules changed,
and ``--attention-backend`` names that appeared, vanished or now select another
class.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvconfig.mirror.catalog import Entry, Rule, load_catalog
from schemas.sizes import format_sizes


def _rule_text(rule: Rule) -> str:
    scale = " x tokens_per_state" if rule.scale == "tokens_per_state" else ""
    return f"{format_sizes(rule.sizes)}{scale} when {rule.describe()}"


def _rules(entry: Entry) -> list[str]:
    if len(entry.rules) == 1:
        only = entry.rules[0]
        scale = " x tokens_per_state" if only.scale == "tokens_per_state" else ""
        return [f"{format_sizes(only.sizes)}{scale} always"]
    return [_rule_text(r) for r in entry.rules]


def _registry_lines(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    lines = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if before is None:
            lines.append(f"  + {name} -> {after}")
        elif after is None:
            lines.append(f"  - {name} (was {before})")
        else:
            lines.append(f"  ~ {name}: {before} -> {after}")
    return lines


def diff(old: str, new: str) -> str:
    """The differences from vLLM ``old``'s catalog to vLLM ``new``'s, as text."""
    a, b = load_catalog(old), load_catalog(new)
    added = sorted(set(b.by_class) - set(a.by_class))
    removed = sorted(set(a.by_class) - set(b.by_class))
    out = [f"backend catalog: vLLM {old} -> {new}"]
    out.append(
        f"{len(a.entries)} -> {len(b.entries)} classes: {len(added)} added, {len(removed)} removed"
    )
    if added:
        out.append("added:")
        for path in added:
            e = b.by_class[path]
            out.append(f"  + {path} ({e.name or 'abstract'}, {e.kind}): " + "; ".join(_rules(e)))
    if removed:
        out.append("removed:")
        for path in removed:
            e = a.by_class[path]
            out.append(f"  - {path} ({e.name or 'abstract'}, {e.kind})")
    changed: list[str] = []
    for path in sorted(set(a.by_class) & set(b.by_class)):
        ea, eb = a.by_class[path], b.by_class[path]
        notes = []
        if ea.name != eb.name:
            notes.append(f"    name: {ea.name} -> {eb.name}")
        if ea.kind != eb.kind:
            notes.append(f"    kind: {ea.kind} -> {eb.kind}")
        if _rules(ea) != _rules(eb):
            notes.extend(f"    - {r}" for r in _rules(ea))
            notes.extend(f"    + {r}" for r in _rules(eb))
        if notes:
            changed.append(f"  ~ {path} ({eb.name or 'abstract'})")
            changed.extend(notes)
    if changed:
        out.append("changed:")
        out.extend(changed)
    reg = _registry_lines(a.registry, b.registry)
    reg += _registry_lines(a.mamba_registry, b.mamba_registry)
    if reg:
        out.append("--attention-backend names:")
        out.extend(reg)
    if not (added or removed or changed or reg):
        out.append("no differences")
    return "\n".join(out) + "\n"
