"""MiniMax-M3: dense attention layers, then block-sparse attention layers each with a
lightning-indexer key cache.

Sources (``vllm/models/minimax_m3/nvidia/model.py``):

* ``sparse_attention_config.sparse_attention_freq[i] != 0`` makes layer ``i`` sparse
  (``_sparse_attention_layer_ids``); the others use the generic ``Attention`` with
  vLLM's automatic backend choice.
* A sparse layer (``MiniMaxM3SparseAttention``) hard-wires its backend
  (``select_main_backend_and_impl_cls``) and caches K/V like full attention
  (``FullAttentionSpec``) under ``...self_attn.attn``; its indexer registers first, a
  key-only cache of ``sparse_index_dim`` values per token (``MiniMaxM3IndexerCache``:
  ``MLAAttentionSpec`` with the indexer role) under ``...self_attn.attn.index_cache``,
  bf16 unless ``attention-config.indexer_kv_dtype`` says fp8.
* ``MiniMaxM3SparseForConditionalGeneration`` nests the text model under
  ``language_model``.
"""

from __future__ import annotations

from typing import Any

from kvconfig.derive.inputs import Context, Model, attention_geometry, int_list, ordered, pos_int
from kvconfig.errors import InputError

SPARSE = "MINIMAX_M3_SPARSE"
"""Model-owned backend request, resolved per platform by ``kvconfig.mirror.selection``."""
INDEXER = "MINIMAX_M3_SPARSE_INDEXER"
"""Model-owned backend request of the indexer caches."""


def _derive(model: Model, ctx: Context, prefix: str) -> list[dict[str, Any]]:
    cfg, src = model.text, model.path
    n = pos_int(cfg, "num_hidden_layers", src)
    heads, kv, head = attention_geometry(cfg, src)
    sparse_cfg = cfg.get("sparse_attention_config") or {}
    if not isinstance(sparse_cfg, dict):
        raise InputError(
            "sparse_attention_config must be a mapping",
            source=src,
            key="sparse_attention_config",
            hint="see the model's config.json",
        )
    freq = (
        int_list(sparse_cfg, "sparse_attention_freq", src, n)
        if "sparse_attention_freq" in sparse_cfg
        else [0] * n
    )
    base = {"num_heads": heads, "num_kv_heads": kv, "head_size": head, "dtype": ctx.dtype}
    dense = {**base, "kind": "full_attention"}
    sparse = {**base, "kind": "full_attention", "backend": SPARSE}
    entries: list[tuple[str, int, dict[str, Any]]] = []
    for i, f in enumerate(freq):
        if f:
            index_dim = pos_int(sparse_cfg, "sparse_index_dim", src)
            indexer = {
                "kind": "indexer",
                "backend": INDEXER,
                "num_heads": 1,
                "num_kv_heads": 1,
                "head_size": index_dim,
                "dtype": ctx.dtype,
            }
            entries.append((f"{prefix}.layers.{{i}}.self_attn.attn.index_cache", i, indexer))
            entries.append((f"{prefix}.layers.{{i}}.self_attn.attn", i, sparse))
        else:
            entries.append((f"{prefix}.layers.{{i}}.self_attn.attn", i, dense))
    return ordered(entries)


def minimax_m3(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """``MiniMaxM3SparseForCausalLM``."""
    return _derive(model, ctx, "model")


def minimax_m3_mm(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """``MiniMaxM3SparseForConditionalGeneration`` (text model under ``language_model``)."""
    return _derive(model, ctx, "language_model.model")
