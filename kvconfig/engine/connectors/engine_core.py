"""The engine core's block-size reports (routing, hash seed) and hybrid alignment by TP."""

from __future__ import annotations

import copy
import os
from typing import Any

from kvconfig.engine.connectors.common import _error


def _routing(vllm_config: Any, kv_cache_config: Any) -> dict[str, Any]:
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import (
        resolve_dcp_kv_block_size,
        resolve_kv_cache_block_sizes,
        resolve_none_hash_seed,
    )

    cache = vllm_config.cache_config
    dcp = vllm_config.parallel_config.decode_context_parallel_size
    out: dict[str, Any] = {
        # None where the release's CacheConfig has no such report (the older releases)
        "effective_block_size": getattr(cache, "effective_attention_block_size", None),
        "group_block_sizes": [
            int(resolve_dcp_kv_block_size(g.kv_cache_spec, dcp))
            for g in kv_cache_config.kv_cache_groups
        ],
        "hash_algo": cache.prefix_caching_hash_algo,
        "cache_block_size": int(cache.block_size),
    }
    try:
        scheduler, hashing = resolve_kv_cache_block_sizes(kv_cache_config, vllm_config)
        out["scheduler_block_size"], out["hash_block_size"] = int(scheduler), int(hashing)
    except Exception as err:
        out["refusal"] = _error(err)
    from vllm.v1.core import kv_cache_utils

    fn = get_hash_fn_by_name(cache.prefix_caching_hash_algo)
    random_seed = (
        fn in getattr(kv_cache_utils, "_NON_CRYPTO_HASH_FUNCTIONS", ())
        and os.getenv("PYTHONHASHSEED") is None
    )
    out["hash_seed"] = None if random_seed else resolve_none_hash_seed(fn)
    return out


def _aligned(vllm_config: Any, requested: int | None) -> dict[str, int]:
    """``_align_hybrid_block_size`` at TP 1, 2, 4, 8, from the block size asked for (vLLM's
    default 16 when none was): hybrid models only."""
    from vllm.platforms import current_platform

    from kvconfig.engine.emulate import ALIGNED

    model = vllm_config.model_config
    if not getattr(model, "is_hybrid", False):
        return {}
    heads = int(getattr(model.hf_text_config, "num_attention_heads", 1) or 1)
    many = getattr(current_platform, "_find_non_ssm_backends", None)
    if callable(many):
        backends = list(many(vllm_config) or ())
    else:  # the older releases find the first backend only (``_find_non_ssm_backend``)
        one = current_platform._find_non_ssm_backend(vllm_config)
        backends = [one] if one is not None else []
    if not backends:
        return {}
    saved = list(ALIGNED)
    out: dict[str, int] = {}
    try:
        for tp in (1, 2, 4, 8):
            if heads % tp:
                continue
            cfg = copy.copy(vllm_config)
            cfg.cache_config = copy.copy(vllm_config.cache_config)
            cfg.cache_config.block_size = requested or 16
            cfg.cache_config.mamba_page_size_padded = None
            cfg.parallel_config = copy.copy(vllm_config.parallel_config)
            cfg.parallel_config.tensor_parallel_size = tp
            try:
                current_platform._align_hybrid_block_size(cfg, backends[0])
            except Exception:
                continue
            out[str(tp)] = int(cfg.cache_config.block_size)
    finally:
        ALIGNED[:] = saved
    return out
