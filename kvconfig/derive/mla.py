"""Multi-head latent attention: DeepSeek V2/V3 (and Kimi K2, which is a DeepSeek V3),
DeepSeek V3.2 with its sparse attention indexer, and their MTP layers.

Sources:

* ``model_executor/models/deepseek_v2.py`` and ``models/deepseek_v32/``: every decoder
  layer has one MLA layer ``model.layers.{i}.self_attn.attn`` caching one latent vector
  of ``kv_lora_rank + qk_rope_head_dim`` values per token (``MLAAttention``,
  ``num_kv_heads=1``).
* V3.2 (``index_topk`` in the config) makes the MLA layers sparse and gives a layer an
  indexer whose key cache ``model.layers.{i}.self_attn.indexer.k_cache`` holds
  ``index_head_dim`` fp8 values plus a 4-byte scale per 128 of them, as uint8
  (``DeepseekV32IndexerCache``), unless ``index_topk_freq``/``index_topk_pattern`` skip
  the layer; MTP layers always have one.
* ``deepseek_mtp.py``: ``num_nextn_predict_layers`` MTP layers continue the numbering
  at ``num_hidden_layers``; each holds one decoder layer with the same attention.
* ``VLLM_MLA_DISABLE=1`` (``ModelConfig.use_mla`` False): V2/V3 layers are plain
  attention (``DeepseekV2Attention``): every head cached, ``qk_nope_head_dim +
  qk_rope_head_dim`` values per head. V3.2's sparse layers are left as they are.
"""

from __future__ import annotations

from typing import Any

from kvconfig.derive.inputs import Context, Model, ordered, pos_int
from kvconfig.errors import InputError

V32_INDEXER = "vllm.v1.attention.backends.mla.indexer.DeepseekV32IndexerBackend"
"""The backend ``DeepseekV32IndexerCache.get_attn_backend`` hard-wires."""


def _mla(model: Model, ctx: Context) -> dict[str, Any]:
    cfg, src = model.text, model.path
    heads = pos_int(cfg, "num_attention_heads", src)
    rope = pos_int(cfg, "qk_rope_head_dim", src)
    kind = "sparse_mla" if "index_topk" in cfg else "mla_attention"
    if ctx.mla_disabled and kind == "mla_attention":
        # VLLM_MLA_DISABLE=1: ModelConfig.use_mla is False and DeepseekV2Attention builds
        # Attention(num_heads, qk_nope_head_dim + qk_rope_head_dim, num_kv_heads=num_heads)
        return {
            "kind": "full_attention",
            "num_heads": heads,
            "num_kv_heads": heads,
            "head_size": pos_int(cfg, "qk_nope_head_dim", src) + rope,
            "dtype": ctx.dtype,
        }
    latent = pos_int(cfg, "kv_lora_rank", src)
    return {
        "kind": kind,
        "num_heads": heads,
        "num_kv_heads": 1,
        "head_size": latent + rope,
        "dtype": ctx.dtype,
    }


def _indexer(model: Model, ctx: Context) -> dict[str, Any]:
    cfg, src = model.text, model.path
    dim = pos_int(cfg, "index_head_dim", src)
    return {
        "kind": "indexer",
        "backend": V32_INDEXER,
        "num_heads": 1,
        "num_kv_heads": 1,
        "head_size": dim + dim // 128 * 4,
        "dtype": ctx.dtype,
        "kv_cache_dtype": "uint8",
    }


def _has_indexer(cfg: Any, layer: int, source: str) -> bool:
    """``DeepseekV32Attention``: whether backbone layer ``layer`` builds an indexer."""
    pattern = cfg.get("index_topk_pattern")
    if pattern is not None:
        if not isinstance(pattern, (str, list)):
            raise InputError(
                "index_topk_pattern must be a string or list",
                source=source,
                key="index_topk_pattern",
                hint="one 'S' (skip) or other letter per layer",
            )
        return not (0 <= layer < len(pattern) and pattern[layer] == "S")
    freq = cfg.get("index_topk_freq", 1)
    offset = cfg.get("index_skip_topk_offset", 2)
    if not isinstance(freq, int) or not isinstance(offset, int) or freq < 1:
        raise InputError(
            "index_topk_freq and index_skip_topk_offset must be integers",
            source=source,
            key="index_topk_freq",
            hint="fix the config.json value",
        )
    return max(layer - offset + 1, 0) % freq == 0


def _layers(model: Model, ctx: Context, indices: range, *, mtp: bool) -> list[dict[str, Any]]:
    """Each decoder layer registers its indexer's cache (V3.2) before its MLA layer."""
    cfg, src = model.text, model.path
    mla = _mla(model, ctx)
    sparse = mla["kind"] == "sparse_mla"
    indexer = _indexer(model, ctx) if sparse else None
    entries: list[tuple[str, int, dict[str, Any]]] = []
    for i in indices:
        if indexer is not None and (mtp or _has_indexer(cfg, i, src)):
            entries.append(("model.layers.{i}.self_attn.indexer.k_cache", i, indexer))
        entries.append(("model.layers.{i}.self_attn.attn", i, mla))
    return ordered(entries)


def deepseek(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """DeepSeek V2/V3/V3.2 and Kimi K2: one MLA layer per decoder layer (+ V3.2 indexers)."""
    n = pos_int(model.text, "num_hidden_layers", model.path)
    return _layers(model, ctx, range(ctx.first_index, ctx.first_index + n), mtp=False)


def deepseek_mtp(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """The target's own MTP layers (``speculative-config: {method: mtp}`` without a model)."""
    cfg, src = model.text, model.path
    n = pos_int(cfg, "num_hidden_layers", src)
    k = cfg.get("num_nextn_predict_layers")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InputError(
            f"method 'mtp' needs MTP layers, but num_nextn_predict_layers is {k!r}",
            source=src,
            key="num_nextn_predict_layers",
            hint="this checkpoint ships no MTP layers; use an EAGLE drafter instead",
        )
    return _layers(model, ctx, range(n, n + k), mtp=True)
