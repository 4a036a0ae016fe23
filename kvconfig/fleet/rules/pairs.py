"""Every rule between a producer and a consumer, and hybrid alignment's B between them."""

from __future__ import annotations

from kvconfig.fleet.components import components
from kvconfig.fleet.rules.common import Issue, Pair, Replan, _common_block
from kvconfig.fleet.rules.mooncake import mooncake_issues
from kvconfig.fleet.rules.nixl import nixl_issues


def hybrid_issues(pair: Pair, replan: Replan) -> list[Issue]:
    """KV709: same --block-size, different B from hybrid alignment at their parallelism."""
    p, d = pair.prefill, pair.decode
    if not (components(p).nixl or components(p).mooncake):
        return []
    gp, gd = components(p).groups, components(d).groups
    if not any(g.state for g in gp) or len(gp) != len(gd):
        return []
    asked_p, asked_d = p.deployment.block_size, d.deployment.block_size
    if asked_p != asked_d:
        return []
    bp = max(g.block_size for g in gp)
    bd = max(g.block_size for g in gd)
    if bp == bd:
        return []

    def same(x: Pair) -> bool:
        return max(g.block_size for g in components(x.prefill).groups) == max(
            g.block_size for g in components(x.decode).groups
        )

    blocks = _common_block(pair, same, replan, limit=1)
    asked = f"--block-size {asked_p}" if asked_p else "vLLM's default block size"
    return [
        Issue(
            "KV709",
            [p.name, d.name],
            f"{p.name} (TP {p.tp}, DP {p.dp}) and {d.name} (TP {d.tp}, DP {d.dp}) both start "
            f"from {asked}, but vLLM's hybrid alignment (platforms/interface.py:"
            f"_align_hybrid_block_size) sizes B from the per-rank KV heads and Mamba state: "
            f"B={bp} on {p.name}, B={bd} on {d.name}.",
            "silent here; every connector and router downstream then sees two block sizes",
            (
                [f"--block-size {blocks[0]} on both engines (both keep it after alignment)"]
                if blocks
                else []
            )
            + ["equal tensor parallelism on both engines"],
            values={f"{p.name}.block_size": bp, f"{d.name}.block_size": bd},
        )
    ]


def pair_issues(pair: Pair, replan: Replan) -> list[Issue]:
    """Every rule between a producer and a consumer."""
    return [
        *hybrid_issues(pair, replan),
        *nixl_issues(pair, replan),
        *mooncake_issues(pair, replan),
    ]
