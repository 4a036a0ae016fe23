"""``kvconfig catalog``: list the backends, their sizes and why."""

from __future__ import annotations

import json

from kvconfig.load.platforms import parse_platform
from kvconfig.mirror import platform as _facts
from kvconfig.mirror import versions
from kvconfig.mirror.catalog import Entry, SizeContext, load_catalog
from kvconfig.mirror.platform import PlatformId
from kvconfig.schemas.sizes import format_sizes, size_to_json

ASSUMED = (
    "head_size 128, 32 query / 8 KV heads per rank (GQA), --kv-cache-dtype auto, "
    "TRTLLM cubins installed, no --attention-config overrides"
)
"""The layer and deployment ``--platform`` evaluates the rules for."""


def context_for(p: PlatformId) -> SizeContext:
    """The facts of the assumed layer (:data:`ASSUMED`) on platform ``p``."""
    return SizeContext(
        vendor=p.vendor,
        capability_major=p.major,
        kv_quant="none",
        head_size=128,
        head_size_v=128,
        gqa=True,
        trtllm=_facts.trtllm_usable(
            capability=p.capability,
            num_heads=32,
            num_kv_heads=8,
            use_trtllm_attention=None,
            cubins=True,
            batch_invariant=False,
        ),
        fa_version=_facts.fa_version(
            vendor=p.vendor,
            capability=p.capability,
            head_size=128,
            head_size_v=128,
            supports_fa4_hd256=True,
        ),
    )


def _entry_json(e: Entry) -> dict[str, object]:
    return {
        "name": e.name,
        "class": e.class_path,
        "serves": e.serves,
        "source": e.source,
        "introspected": e.introspected,
        "note": e.note,
        "rules": [
            {
                "when": {k: list(v) if isinstance(v, tuple) else v for k, v in r.when},
                "sizes": [size_to_json(s) for s in r.sizes],
                "scale": r.scale,
                "because": r.because,
            }
            for r in e.rules
        ],
    }


def _label(e: Entry) -> str:
    return e.name or "(abstract)"


def _sizes_text(e: Entry, ctx: SizeContext | None, index: int) -> str:
    rule = e.rules[index]
    text = format_sizes(rule.sizes)
    if rule.scale == "tokens_per_state":
        text += " x tokens_per_state"
    if ctx is not None:
        text = format_sizes(e.sizes(ctx))
    return text


def _explain(e: Entry, ctx: SizeContext, platform: PlatformId) -> list[str]:
    """One backend on one platform: the sizes, the rule that gave them, and the others."""
    chosen = e.rules.index(e.rule_for(ctx))
    facts = (
        f"vendor={ctx.vendor}, capability_major={ctx.capability_major}, "
        f"kv_quant={ctx.kv_quant}, head_size={ctx.head_size}, "
        f"head_size_v={ctx.head_size_v}, gqa={ctx.gqa}, trtllm={ctx.trtllm}, "
        f"fa_version={ctx.fa_version}"
    )
    lines = [
        f"{_label(e)}  ({e.class_path})",
        f"  on {platform.label()}: {format_sizes(e.sizes(ctx))}",
        f"  because rule {chosen + 1} matches: {e.rules[chosen].describe()}",
    ]
    if e.rules[chosen].because:
        lines.append(f"    ({e.rules[chosen].because})")
    lines.append(f"  facts: {facts}")
    lines.append(f"  assuming: {ASSUMED}")
    lines.append("  rules (first match wins):")
    for i, rule in enumerate(e.rules):
        mark = "->" if i == chosen else "  "
        lines.append(f"   {mark} {i + 1}. {_sizes_text(e, None, i):<40} {rule.describe()}")
    lines.append(f"  source: {e.source}" + ("" if e.introspected else " (hand-written entry)"))
    if e.note:
        lines.append(f"  note: {e.note}")
    return lines


def catalog_report(
    backend: str | None, platform_name: str | None, vllm_version: str | None, fmt: str
) -> str:
    """``kvconfig catalog``: the catalog, or one backend, evaluated on one platform when
    one is given; ``fmt`` is ``text`` or ``json``."""
    cat = load_catalog(vllm_version or versions.DEFAULT)
    entries = list(cat.entries)
    if backend:
        entries = [cat.lookup(backend, key="--backend")]
        if backend.upper() not in cat.registry:
            entries = [e for e in cat.entries if e.name == backend.upper()] or entries
    platform = parse_platform(platform_name) if platform_name else None
    ctx = context_for(platform) if platform is not None else None
    if fmt == "json":
        return json.dumps([_entry_json(e) for e in entries], indent=2) + "\n"
    lines: list[str] = []
    if backend and ctx is not None and platform is not None:
        for e in entries:
            lines.extend(_explain(e, ctx, platform))
        return "\n".join(lines) + "\n"
    if ctx is not None and platform is not None:
        lines.append(f"# on {platform.label()}, assuming {ASSUMED}")
    for e in entries:
        if ctx is not None:
            rule = e.rule_for(ctx)
            lines.append(f"{_label(e):<32} {format_sizes(e.sizes(ctx)):<36} {rule.describe()}")
            continue
        for i, r in enumerate(e.rules):
            label = _label(e) if i == 0 else ""
            lines.append(f"{label:<32} {_sizes_text(e, None, i):<44} {r.describe()}")
        if backend:
            lines.append(f"{'':<32} class {e.class_path}")
            lines.append(f"{'':<32} source {e.source}")
            if e.note:
                lines.append(f"{'':<32} note {e.note}")
    return "\n".join(lines) + "\n"
