"""``kvconfig catalog``: list the backends, their sizes and why."""

from __future__ import annotations

import argparse
import json

from kvconfig._catalog import Entry, SizeContext, load_catalog
from kvconfig._platforms import parse_platform
from schemas.sizes import format_sizes, size_to_json


def _context(platform: str | None) -> SizeContext | None:
    if platform is None:
        return None
    p = parse_platform(platform)
    return SizeContext(
        vendor=p.vendor,
        capability_major=p.major,
        kv_quant="none",
        head_size=128,
        head_size_v=128,
        gqa=True,
        trtllm=p.major == 10,
        fa_version=None,
    )


def _entry_json(e: Entry) -> dict[str, object]:
    return {
        "name": e.name,
        "class": e.class_path,
        "kind": e.kind,
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


def run_catalog(args: argparse.Namespace) -> tuple[str, int]:
    """List the catalog (optionally one backend, evaluated on one platform)."""
    if args.from_vllm:
        from kvconfig.introspect.generate import regenerate

        return regenerate(args.output), 0
    if args.diff:
        from kvconfig._catalog_diff import diff

        return diff(args.diff[0], args.diff[1]), 0
    cat = load_catalog(args.vllm_version or "0.33.0")
    entries = list(cat.entries)
    if args.backend:
        entries = [cat.lookup(args.backend, key="--backend")]
        if args.backend.upper() not in cat.registry:
            entries = [e for e in cat.entries if e.name == args.backend.upper()] or entries
    ctx = _context(args.platform)
    if args.format == "json":
        return json.dumps([_entry_json(e) for e in entries], indent=2) + "\n", 0
    lines = []
    for e in entries:
        if ctx is not None:
            rule = e.rule_for(ctx)
            lines.append(f"{e.name:<28} {format_sizes(e.sizes(ctx)):<36} {rule.because or rule.describe()}")
            continue
        first = True
        for r in e.rules:
            label = e.name if first else ""
            lines.append(f"{label:<28} {format_sizes(r.sizes):<36} {r.describe()}")
            first = False
        if args.backend:
            lines.append(f"{'':<28} class {e.class_path}")
            lines.append(f"{'':<28} source {e.source}")
    return "\n".join(lines) + "\n", 0
