"""Decoder-only dense attention: Llama, Mistral, Qwen2/3 and their MoE variants, Mixtral;
a ``sliding_window`` (with transformers' ``layer_types``) makes some layers windowed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvconfig.derive.inputs import Context, Model, attention_geometry, pos_int, runs
from kvconfig.errors import InputError, describe


def _sliding(cfg: Mapping[str, Any], source: str) -> tuple[list[str] | None, int | None]:
    """``layer_types`` and the sliding window, as transformers normalises them."""
    window = cfg.get("sliding_window")
    if cfg.get("use_sliding_window") is False:
        window = None
    if window == 0:
        window = None
    if window is not None and (
        isinstance(window, bool) or not isinstance(window, int) or window < 1
    ):
        raise InputError(
            f"expected a positive integer, got {describe(window)}",
            source=source,
            key="sliding_window",
            hint="fix the config.json value",
        )
    types = cfg.get("layer_types")
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        return list(types), window
    return None, window


def dense(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Decoder-only dense attention (Llama, Mistral, Qwen2/3 and their MoE variants)."""
    cfg, src = model.text, model.path
    n = pos_int(cfg, "num_hidden_layers", src)
    heads, kv, head = attention_geometry(cfg, src)
    types, window = _sliding(cfg, src)
    if types is not None and len(types) != n:
        raise InputError(
            f"layer_types has {len(types)} entries for {n} layers",
            source=src,
            key="layer_types",
            hint="one entry per hidden layer",
        )
    base = {"num_heads": heads, "num_kv_heads": kv, "head_size": head, "dtype": ctx.dtype}
    per_layer: list[dict[str, Any] | None] = []
    for i in range(n):
        sw = window is not None and (types is None or types[i] == "sliding_attention")
        per_layer.append(
            {**base, "kind": "sliding_window", "sliding_window": window}
            if sw
            else {**base, "kind": "full_attention"}
        )
    return runs("model.layers.{i}.self_attn.attn", per_layer, ctx.first_index)
