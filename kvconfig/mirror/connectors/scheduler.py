"""The block sizes the engine core reports to routers, and the prefix-cache hash seed.

Mirrors ``vllm/v1/core/kv_cache_utils.py`` (``resolve_dcp_kv_block_size``,
``resolve_kv_cache_block_sizes``, ``resolve_none_hash_seed``) and
``vllm/v1/engine/core.py`` (the effective attention block size).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kvconfig.errors import ConnectorRefusal

DEFAULT_NONE_HASH_SEED = "vllm-none-hash"
"""``DEFAULT_NONE_HASH_SEED`` (``v1/core/kv_cache_utils.py``)."""

HASH_ALGOS = ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor")
"""``PrefixCachingHashAlgo`` (``config/cache.py``); the default is ``sha256``."""

NON_CRYPTO_HASH_ALGOS = frozenset({"xxhash", "xxhash_cbor"})
"""``_NON_CRYPTO_HASH_FUNCTIONS`` (``v1/core/kv_cache_utils.py``)."""


@dataclass(frozen=True, slots=True)
class CacheGroup:
    """One KV-cache group as the scheduler's block-size rules see it."""

    block_size: int
    dcp_sharded: bool = True
    """Attention specs are DCP-sharded; Mamba specs are not."""
    prefix_cacheable: bool = True
    full_attention: bool = True
    """``is_full_attention_spec`` (full attention and MLA; not sliding window or Mamba)."""
    mamba_align: bool | None = None
    """Mamba groups: whether ``mamba_cache_mode`` is ``align``; None for attention."""


def manager_block_size(group: CacheGroup, dcp: int) -> int:
    """``resolve_dcp_kv_block_size`` (``v1/core/kv_cache_utils.py``), also the block size of
    the group's single-type manager (``SingleTypeKVCacheManager.__init__``)."""
    return group.block_size * (dcp if group.dcp_sharded else 1)


def effective_attention_block_size(groups: Sequence[CacheGroup], dcp: int) -> int | None:
    """``EngineCore._initialize_effective_attention_block_size`` (``v1/engine/core.py``):
    the one full-attention manager block size, else None."""
    sizes = {manager_block_size(g, dcp) for g in groups if g.full_attention}
    return sizes.pop() if len(sizes) == 1 else None


def kv_cache_block_sizes(
    groups: Sequence[CacheGroup],
    *,
    cache_block_size: int,
    dcp: int,
    prefix_match_unit: int | None,
    prefix_caching: bool,
    connector: bool,
) -> tuple[int, int]:
    """(scheduler block size, hash block size), or the ConnectorRefusal vLLM raises.

    Mirrors ``resolve_kv_cache_block_sizes`` (``v1/core/kv_cache_utils.py``) without the
    compressed-state alignment check.
    """
    if len(groups) <= 1:
        d = dcp if (groups and groups[0].dcp_sharded) else 1
        bs = cache_block_size * d
        if (
            prefix_match_unit not in (None, bs)
            and len(groups) == 1
            and (prefix_caching or connector)
        ):
            raise ConnectorRefusal(
                "ValueError",
                f"Invalid prefix_match_unit={prefix_match_unit}; with a single KV cache "
                f"group, prefix-cache hits land on the block size ({bs}). Unset it or set "
                f"it to {bs}.",
            )
        return bs, bs
    sizes = [manager_block_size(g, dcp) for g in groups]
    scheduler = math.lcm(*sizes)
    if not (prefix_caching or connector):
        return scheduler, scheduler
    if any(g.mamba_align is False for g in groups):
        return scheduler, scheduler
    hashing = [s for g, s in zip(groups, sizes, strict=True) if g.prefix_cacheable] or sizes
    unit = prefix_match_unit if prefix_match_unit is not None else math.gcd(*hashing)
    if any(s % unit for s in hashing):
        raise ConnectorRefusal(
            "ValueError",
            f"Invalid prefix_match_unit={unit}; prefix-cacheable KV cache group block sizes "
            f"must be divisible by prefix_match_unit. Got group block sizes={sizes}, "
            f"prefix-cacheable={hashing}.",
        )
    return scheduler, unit


def none_hash_seed(algo: str, pythonhashseed: str | None) -> str | None:
    """The seed prefix-cache block hashes chain from; None when it is random per process.

    Mirrors ``resolve_none_hash_seed`` (``v1/core/kv_cache_utils.py``).
    """
    if pythonhashseed is not None:
        return pythonhashseed
    if algo in NON_CRYPTO_HASH_ALGOS:
        return None
    return DEFAULT_NONE_HASH_SEED
