"""Plan digests, and ``kvconfig diff A.json B.json``.

Every worker running the kvconfig hooks exports its effective plan (``KVCONFIG_PLAN_EXPORT``)
and logs its digest. Ranks, pipeline stages and data-parallel engines of one deployment
should have the same digest; P and D engines the same transfer-relevant part of it. The
digest covers what decides which KV pages a component reads: per group its kind, B, the
runner's and the speculator's k and each backend's narrowed k, and each connector's pages.
Layer names, messages and sources are left out, so ranks that hold different layers of
one plan (pipeline stages) compare by their numbers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError


def essentials(plan: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a plan (or an engine of a fleet plan) that the digest covers."""
    inner = plan.get("plan") if isinstance(plan.get("plan"), Mapping) else plan
    assert isinstance(inner, Mapping)
    groups = []
    for g in inner.get("groups") or ():
        comps = g.get("components") or {}
        groups.append(
            {
                "id": g.get("id"),
                "kind": g.get("kind"),
                "block_size": g.get("block_size"),
                "kernel_block_size": g.get("kernel_block_size"),
                "runner": comps.get("runner"),
                "speculator": comps.get("speculator"),
                "backends": sorted(
                    (
                        [str(b.get("name")), b.get("kernel_block_size")]
                        for b in g.get("backends") or ()
                    ),
                    key=lambda nk: (nk[0], str(nk[1])),
                ),
            }
        )
    out: dict[str, Any] = {"vllm_version": inner.get("vllm_version"), "groups": groups}
    connectors = plan.get("connectors") or inner.get("connectors")
    if connectors:
        out["connectors"] = [
            {
                "name": c.get("name"),
                "kernel_block_size": c.get("kernel_block_size"),
                "pages_per_block": c.get("pages_per_block"),
            }
            for c in connectors
        ]
    return out


def digest(plan: Mapping[str, Any]) -> str:
    """16 hex digits of SHA-256 over the plan's essentials."""
    text = json.dumps(essentials(plan), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Every difference between two plans' essentials, one sentence each."""
    ea, eb = essentials(a), essentials(b)
    out: list[str] = []
    if ea["vllm_version"] != eb["vllm_version"]:
        out.append(f"vLLM: {ea['vllm_version']} vs {eb['vllm_version']}")
    ga = {g["id"]: g for g in ea["groups"]}
    gb = {g["id"]: g for g in eb["groups"]}
    for gid in sorted(set(ga) | set(gb), key=_order):
        x, y = ga.get(gid), gb.get(gid)
        if x is None or y is None:
            out.append(f"group {gid}: only in {'B' if x is None else 'A'}")
            continue
        for name in ("kind", "block_size", "kernel_block_size", "runner", "speculator"):
            if x[name] != y[name]:
                out.append(f"group {gid} {name}: {x[name]} vs {y[name]}")
        if x["backends"] != y["backends"]:
            fa = ", ".join(f"{n} k={k}" for n, k in x["backends"])
            fb = ", ".join(f"{n} k={k}" for n, k in y["backends"])
            out.append(f"group {gid} backends: {fa} vs {fb}")
    ca = {c["name"]: c for c in ea.get("connectors", [])}
    cb = {c["name"]: c for c in eb.get("connectors", [])}
    for name in sorted(set(ca) | set(cb), key=_order):
        x, y = ca.get(name), cb.get(name)
        if x is None or y is None:
            out.append(f"connector {name}: only in {'B' if x is None else 'A'}")
            continue
        for key in ("kernel_block_size", "pages_per_block"):
            if x[key] != y[key]:
                out.append(f"connector {name} {key}: {x[key]} vs {y[key]}")
    return out


def _order(value: Any) -> tuple[bool, bool, float, str]:
    """Sort key for ids and names of any JSON scalar type (numbers first, in order)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return (value is None, not number, float(value) if number else 0.0, str(value))


_SCALAR = (str, int, float, bool, type(None))


def _shape(item: Mapping[str, Any], source: str) -> None:
    """Refuse (one line) a plan whose fields the diff reads have the wrong JSON types."""

    def bad(where: str) -> InputError:
        return InputError(
            f"not a kvconfig plan: {where} has an unexpected type",
            source=source,
            hint="pass files of 'kvconfig plan --format json'",
        )

    def scalars(node: Any, keys: Sequence[str], where: str) -> None:
        if not isinstance(node, Mapping):
            raise bad(where)
        for key in keys:
            if not isinstance(node.get(key), _SCALAR):
                raise bad(f"{where}.{key}")

    def rows(node: Any, where: str) -> list[Any]:
        if node is None:
            return []
        if not isinstance(node, list):
            raise bad(where)
        return node

    inner = item.get("plan", item)
    scalars(inner, ("vllm_version",), "plan")
    for i, g in enumerate(rows(inner.get("groups"), "groups")):
        scalars(g, ("id", "kind", "block_size", "kernel_block_size"), f"groups[{i}]")
        comps = g.get("components")
        if comps is not None:
            scalars(comps, ("runner", "speculator"), f"groups[{i}].components")
        for j, b in enumerate(rows(g.get("backends"), f"groups[{i}].backends")):
            scalars(b, ("name", "kernel_block_size"), f"groups[{i}].backends[{j}]")
    for holder in (item, inner):
        for i, c in enumerate(rows(holder.get("connectors"), "connectors")):
            scalars(c, ("name", "kernel_block_size", "pages_per_block"), f"connectors[{i}]")


MAX_PLAN_BYTES = 16 * 1024 * 1024
"""Largest plan file ``kvconfig diff`` reads (a fleet of hundreds of engines is far less)."""


def _read(path: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The plans in a file: one plan, a list of plans, a fleet plan's engines, or a
    worker's digest export (``plan-{rank}.digest.json``)."""
    from kvconfig.load import jsontext
    from kvconfig.load.yamlfile import decode, read_bytes

    # a regular file (never a FIFO, device or folder), at most MAX_PLAN_BYTES, UTF-8
    text = decode(read_bytes(Path(path), path, MAX_PLAN_BYTES, what="plan file"), path)
    try:
        data = jsontext.loads(text)
    except ValueError as err:
        raise InputError(f"not JSON: {err}", source=path, hint="pass plan JSON files") from None
    out: list[tuple[str, Mapping[str, Any]]] = []
    if isinstance(data, Mapping) and "engines" in data and "kvconfig_fleet" in data:
        engines = data["engines"] if isinstance(data["engines"], list) else []
        out = [(str(e.get("name")), e) for e in engines if isinstance(e, Mapping)]
    elif isinstance(data, Mapping) and "kvconfig_digest" in data:
        out = [(f"rank {data.get('rank')}", data)]
    else:
        for i, item in enumerate(data if isinstance(data, list) else [data]):
            if not isinstance(item, Mapping) or "groups" not in item:
                raise InputError(
                    "not a kvconfig plan",
                    source=path,
                    hint="pass files of 'kvconfig plan --format json'",
                )
            out.append((str(item.get("source") or i), item))
    for _, item in out:
        _shape(item, path)
    return out


def diff_files(a: str, b: str) -> tuple[str, int]:
    """``kvconfig diff A.json B.json``: the text and the exit code (0 same, 1 different).

    Both files hold plans (``kvconfig plan --format json``, a hooks export, or a fleet
    plan). Single plans are compared with each other; lists pairwise by position;
    fleet plans engine by engine, by name.
    """
    pa, pb = _read(a), _read(b)
    lines: list[str] = []
    pairs: Sequence[tuple[str, Mapping[str, Any] | None, Mapping[str, Any] | None]]
    if all("plan" in p for _, p in [*pa, *pb]) and (len(pa) > 1 or len(pb) > 1):
        names = list(dict.fromkeys([n for n, _ in pa] + [n for n, _ in pb]))
        da, db = dict(pa), dict(pb)
        pairs = [(n, da.get(n), db.get(n)) for n in names]
    else:
        count = max(len(pa), len(pb))
        pairs = [
            (
                pa[i][0] if i < len(pa) else pb[i][0],
                pa[i][1] if i < len(pa) else None,
                pb[i][1] if i < len(pb) else None,
            )
            for i in range(count)
        ]
    different = False
    for name, x, y in pairs:
        if x is None or y is None:
            different = True
            lines.append(f"{name}: only in {a if y is None else b}")
            continue
        found = differences(x, y)
        dx, dy = digest(x), digest(y)
        if found:
            different = True
            lines.append(f"{name}: digest {dx} vs {dy}")
            lines.extend(f"  {f}" for f in found)
        else:
            lines.append(f"{name}: same plan (digest {dx})")
    return "\n".join(lines) + "\n", 1 if different else 0


__all__ = ["diff_files", "differences", "digest", "essentials"]
