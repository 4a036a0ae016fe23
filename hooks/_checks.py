"""The start-up checks: every attention group must read the KV cache with the pages the
model runner allocated it with; what is found is raised or logged by mode."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kvconfig.errors import KernelBlockSizeMismatch
from kvconfig.hooks._log import logger
from kvconfig.hooks._session import Session
from kvconfig.hooks._state import STATE
from kvconfig.hooks._vllm import actual_k, describe, expected_k, flat
from kvconfig.plan.runtime import RuntimeGroup, RuntimeReport


def mismatches(
    kv_cache_config: Any,
    sizes: Sequence[int],
    groups: Iterable[Any],
    component: str,
    context: Sequence[Any] = (),
) -> list[KernelBlockSizeMismatch]:
    """Every attention group in ``groups`` whose kernel block size is not the plan's."""
    checked = flat(groups)
    everyone = [*flat(context), *checked]
    found = []
    for g in checked:
        want, have = expected_k(g, sizes), actual_k(g)
        if want == have:
            continue
        gid = g.kv_cache_group_id
        layers, backends = describe(kv_cache_config, gid, everyone)
        found.append(
            KernelBlockSizeMismatch(
                group=gid,
                layers=layers,
                backends=backends,
                block_size=int(g.kv_cache_spec.block_size),
                expected=want,
                found=have,
                component=component,
                component_layers=list(g.layer_names),
                mode=STATE.mode,
            )
        )
    return found


def settle(problems: Sequence[KernelBlockSizeMismatch], mode: str) -> None:
    """Raise the first problem in ``enforce`` and ``strict``; log them all in ``warn``."""
    if not problems:
        return
    if mode in ("enforce", "strict"):
        for p in problems[1:]:
            logger.error("%s", p)
        raise problems[0]
    for p in problems:
        logger.error("%s (KVCONFIG_MODE=%s: starting anyway)", p, mode)


def unverified(
    session: Session, sp: Any, groups: list[Any], sizes: Sequence[int], label: str
) -> KernelBlockSizeMismatch:
    config = session.runner.kv_cache_config
    gid = groups[0].kv_cache_group_id if groups else 0
    mine = [g for g in groups if g.kv_cache_group_id == gid]
    B = int(config.kv_cache_groups[gid].kv_cache_spec.block_size)
    layers, backends = describe(config, gid, [*flat(session.runner.attn_groups), *mine])
    return KernelBlockSizeMismatch(
        group=gid,
        layers=layers,
        backends=backends,
        block_size=B,
        expected=int(sizes[gid]) if gid < len(sizes) else B,
        found=actual_k(mine[0]) if mine else None,
        component=label,
        component_layers=[n for g in mine for n in g.layer_names],
        reason="unverified",
        mode=STATE.mode,
    )


def catalog_error(
    session: Session, g: RuntimeGroup, report: RuntimeReport
) -> KernelBlockSizeMismatch:
    layers, backends = describe(
        session.runner.kv_cache_config, g.id, flat(session.runner.attn_groups)
    )
    return KernelBlockSizeMismatch(
        group=g.id,
        layers=layers,
        backends=backends,
        block_size=g.block_size,
        expected=g.runner_k if g.runner_k is not None else g.block_size,
        found=report.own[g.id],
        component="kvconfig catalog",
        reason="catalog",
        mode=STATE.mode,
    )
