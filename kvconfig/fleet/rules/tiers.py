"""Findings between engines sharing an offload tier: the namespace each one writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kvconfig.fleet.components import components
from kvconfig.fleet.model import Engine
from kvconfig.fleet.rules.common import Issue, _distinct


def tier_issues(engines: Sequence[Engine]) -> list[Issue]:
    """KV714, KV721: engines that share a file tier."""
    by_root: dict[str, list[tuple[Engine, Any]]] = {}
    for e, _ in _distinct(engines):
        for off in components(e).offload:
            for t in off.tiers:
                if t.kind == "fs" and t.root_dir and t.namespace:
                    by_root.setdefault(t.root_dir, []).append((e, t))
    out = []
    for root, users in by_root.items():
        first_e, first_t = users[0]
        for e, t in users[1:]:
            if t.namespace == first_t.namespace:
                continue
            diff = [k for k in first_t.fields if first_t.fields.get(k) != t.fields.get(k)]
            shown = "; ".join(
                f"{k}: {_short(first_t.fields.get(k))} vs {_short(t.fields.get(k))}" for k in diff
            )
            fixes = []
            if "kv_cache_groups" in diff:
                fixes.append("the same --block-size (and so tokens per block) on both engines")
            if any(k in diff for k in ("tp_size", "pp_size", "dcp_size", "pcp_size")):
                fixes.append("the same parallel layout on both engines")
            if "model_name" in diff:
                fixes.append("the same model string on both engines")
            out.append(
                Issue(
                    "KV714",
                    [first_e.name, e.name],
                    f"{first_e.name} and {e.name} share the file tier {root}, but each writes "
                    f"under a folder named by a hash of its layout (v1/kv_offload/file_mapper.py:"
                    f"FileMapper): {first_t.namespace} vs {t.namespace} ({shown}).",
                    "silent: neither engine ever finds the other's blocks (0% hit rate across "
                    "engines); each fills the tier on its own",
                    fixes or ["the same KV-cache layout on both engines"],
                    values={
                        f"{first_e.name}.namespace": first_t.namespace,
                        f"{e.name}.namespace": t.namespace,
                    },
                )
            )
        for e, _ in users:
            seed = components(e).routing.seed
            if seed is None and len(users) > 1:
                out.append(
                    Issue(
                        "KV721",
                        [e.name],
                        f"{e.name} shares the file tier {root} with other engines, but hashes "
                        f"its blocks with {components(e).routing.algo} without PYTHONHASHSEED: "
                        "a random seed in every process (resolve_none_hash_seed).",
                        "silent: no other process ever computes the same block hashes",
                        [f"set PYTHONHASHSEED on every engine sharing {root}", "use sha256"],
                        values={f"{e.name}.hash_seed": "random"},
                    )
                )
    return out


def _short(value: Any) -> str:
    if isinstance(value, list):
        return (
            "["
            + ", ".join(
                str(v.get("tokens_per_block", v)) if isinstance(v, dict) else str(v) for v in value
            )
            + "]"
        )
    return str(value)
