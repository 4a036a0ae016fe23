"""The fixes kvconfig suggests when a vote fails or the model runner and the speculator
disagree.

kvconfig policy, not vLLM's: the block sizes (multiples of 16 up to 1024) at which the
vote succeeds, or both votes agree, and the drafter backends, valid on the platform, with
which they agree. Each candidate is planned with the same mirror of vLLM's votes as the
plan itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvconfig.errors import NoCommonKernelBlockSize
from kvconfig.mirror.vote import Declared, select_common
from kvconfig.plan.assemble import Group, voters_of
from kvconfig.plan.context import PlanContext

EVERYONE = frozenset({"target", "draft"})
DRAFTS = frozenset({"draft"})

#: Drafter backends tried as fixes, after the target's own.
CANDIDATE_BACKENDS = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION")


def agreeing_block_sizes(g: Group, runner_k: int) -> list[int]:
    """Block sizes (multiples of 16 up to 1024) at which runner and speculator agree."""
    everyone = [v.declared for v in voters_of(g, EVERYONE)]
    drafts = [v.declared for v in voters_of(g, DRAFTS)]
    good = []
    for b in sorted({runner_k, *range(16, 1025, 16)}):
        try:
            if select_common(b, everyone) == select_common(b, drafts):
                good.append(b)
        except NoCommonKernelBlockSize:
            continue
    good.sort(key=lambda b: (b != runner_k, b))
    return good


def agreeing_drafter_backends(ctx: PlanContext, g: Group) -> list[str]:
    """Drafter backends, valid on the platform, with which runner and speculator agree."""
    drafts = [i for i, _ in g.runs if i.layer.role == "draft"]
    targets = [i.backend_name for i, _ in g.runs if i.layer.role == "target"]
    found = []
    for name in dict.fromkeys([*targets, *CANDIDATE_BACKENDS]):
        if name is None or name in ctx.custom or name in (d.backend_name for d in drafts):
            continue
        swapped = []
        for info in drafts:
            kv_dtype = info.layer.kv_cache_dtype or ctx.deployment.kv_cache_dtype
            request = ctx.request(info.layer, kv_dtype, info.heads_per_rank)
            sel = ctx.select(name, request, "alternative")
            entry = ctx.catalog.by_class.get(ctx.catalog.registry.get(name, ""))
            if sel.backend is None or entry is None:
                break
            sizes = ctx.sizes(entry, info.layer, kv_dtype)
            swapped.append(
                info._replace(
                    backend_name=name, entry=entry, class_path=entry.class_path, sizes=sizes
                )
            )
        else:
            alt = g._replace(
                runs=tuple((swapped[drafts.index(i)] if i in drafts else i, n) for i, n in g.runs),
            )
            everyone = [v.declared for v in voters_of(alt, EVERYONE)]
            own = [v.declared for v in voters_of(alt, DRAFTS)]
            try:
                if select_common(g.block_size, everyone) == select_common(g.block_size, own):
                    found.append(name)
            except NoCommonKernelBlockSize:
                continue
    return found


def working_block_sizes(voters: Sequence[Declared], limit: int = 1024) -> list[int]:
    """Block sizes up to ``limit`` (multiples of 16) for which the vote succeeds."""
    good = []
    for b in range(16, limit + 1, 16):
        try:
            select_common(b, voters)
        except NoCommonKernelBlockSize:
            continue
        good.append(b)
    return good
