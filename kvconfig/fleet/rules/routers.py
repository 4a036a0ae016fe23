"""Findings between a KV-aware router and the engines behind it: block sizes, prompt hashes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvconfig.fleet.components import components
from kvconfig.fleet.model import Engine
from kvconfig.fleet.rules.common import BLOCK_CANDIDATES, Issue, Replan, _distinct


@dataclass(frozen=True)
class RouterSpec:
    """The router in front of the engines."""

    kind: str = "none"
    block_size: int | None = None
    hashes_prompts: bool = False
    hash_algo: str | None = None
    hash_seed: str | None = None
    engines: tuple[str, ...] = ()
    run_time: str | None = None
    """The word that sets the router's block size when it is only known at run time
    (``$BS``): ``block_size`` is then None and the block-size check cannot tell."""


ROUTER_SETTING = {
    "dynamo": "the Dynamo frontend's --kv-cache-block-size (DYN_KV_CACHE_BLOCK_SIZE)",
    "llm-d": "llm-d's tokenProcessorConfig.blockSize",
}


def router_issues(router: RouterSpec, engines: Sequence[Engine], replan: Replan) -> list[Issue]:
    """KV711, KV712: the router's block size and hashes against the engines'."""
    if router.kind in ("none", "production-stack"):
        return []  # production-stack's kvaware router asks LMCache, in LMCache's chunks
    behind = [e for e in engines if not router.engines or e.name in router.engines]
    if router.run_time is not None:
        hashes = _router_hash(router, behind) if router.hashes_prompts else []
        return [_run_time(router, behind), *hashes]
    out: list[Issue] = []
    registered = None
    if router.block_size is not None:
        size, origin = router.block_size, "set"
    elif router.kind == "llm-d":
        size, origin = 16, "llm-d's default"
    else:
        # Dynamo takes the block size the first worker registers (cache_config.block_size)
        first = behind[0] if behind else None
        registered = cache_block(first) if first is not None else None
        size, origin = registered or 16, f"registered by {first.name if first else '-'}"
    setting = ROUTER_SETTING.get(router.kind, "the router's block size")
    for e, count in _distinct(behind):
        r = components(e).routing
        events = sorted(set(r.group_sizes))
        if r.effective == size and size in events:
            continue
        reported = r.effective if r.effective is not None else "none (several)"
        fixes = []
        if r.effective is not None:
            fixes.append(f"set {setting} to {r.effective}")
        good = [
            b
            for b in BLOCK_CANDIDATES
            if (x := replan(e, {"block-size": b})) is not None
            and components(x).routing.effective == size
        ]
        if good:
            fixes.append(f"--block-size {good[0]} on {e.name} (it then reports {size})")
        out.append(
            Issue(
                "KV711",
                [e.name],
                f"The {router.kind} router hashes prompts in {size}-token blocks ({origin}); "
                f"{e.name} reports an effective attention block size of {reported} "
                f"(cache_config.effective_attention_block_size, B x DCP, v1/engine/core.py) and "
                f"publishes KV events in blocks of {', '.join(map(str, events))} tokens"
                + (f" (and {count - 1} more engines configured alike)." if count > 1 else "."),
                "silent: the router's block hashes never match the engine's events, so "
                "routing falls back to load only (Dynamo #1232, #9376; llm-d PR #2203)",
                fixes,
                values={"router.block_size": size, f"{e.name}.effective_block_size": r.effective},
            )
        )
    if router.hashes_prompts:
        out.extend(_router_hash(router, behind))
    return out


def _run_time(router: RouterSpec, behind: Sequence[Engine]) -> Issue:
    """KV403: the router's block size is only known at run time, so whether its hashes
    match the engines' KV events cannot be told (never assumed to be its default)."""
    sizes = sorted({s for e in behind if (s := components(e).routing.effective) is not None})
    fix = f"write the router's block size in place of {router.run_time}" + (
        f" ({' or '.join(map(str, sizes))}, what the engines report)" if sizes else ""
    )
    return Issue(
        "KV403",
        [e.name for e in behind],
        f"The {router.kind} router's block size is {router.run_time}, only known at run "
        "time: kvconfig cannot tell whether its prompt hashes match the engines' KV "
        "events (cannot tell, not a pass).",
        "unknown: with another block size than the engines report, routing falls back to load only",
        [fix, "or lint the file with the value given (--env NAME=VALUE, helm template)"],
        values={"router.block_size": router.run_time},
    )


def cache_block(e: Engine) -> int:
    """The block size a Dynamo worker registers: the engine's ``cache_config.block_size``."""
    from kvconfig.fleet.components.groups import cache_block_size

    return cache_block_size(e, components(e).groups)


def _router_hash(router: RouterSpec, engines: Sequence[Engine]) -> list[Issue]:
    out = []
    seeds = {e.name: components(e).routing.seed for e in engines}
    for e, _ in _distinct(engines):
        r = components(e).routing
        problems = []
        fixes = []
        if router.hash_algo is not None and r.algo != router.hash_algo:
            problems.append(f"it hashes with {r.algo}, the router with {router.hash_algo}")
            fixes.append(f"--prefix-caching-hash-algo {router.hash_algo} on {e.name}")
        if r.seed is None:
            problems.append(f"{r.algo} without PYTHONHASHSEED takes a random seed in every process")
            fixes.append(f"set PYTHONHASHSEED={router.hash_seed or '0'} on {e.name}")
        elif router.hash_seed is not None and r.seed != router.hash_seed:
            problems.append(f"its seed is {r.seed!r}, the router's {router.hash_seed!r}")
            fixes.append(f"set PYTHONHASHSEED={router.hash_seed} on {e.name}")
        elif router.hash_seed is None and len({s for s in seeds.values() if s}) > 1:
            problems.append("the engines hash from different seeds")
            fixes.append("set one PYTHONHASHSEED on every engine")
        if problems:
            out.append(
                Issue(
                    "KV712",
                    [e.name],
                    f"The {router.kind} router compares its own prompt hashes with {e.name}'s "
                    f"block hashes, but {'; '.join(problems)} "
                    "(v1/core/kv_cache_utils.py:resolve_none_hash_seed).",
                    "silent: no prompt hash matches, so no prefix hit is ever routed",
                    fixes,
                    values={
                        "router.hash_algo": router.hash_algo,
                        f"{e.name}.hash_algo": r.algo,
                        f"{e.name}.hash_seed": r.seed or "random",
                    },
                )
            )
    return out
