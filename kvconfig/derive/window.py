"""Sliding-window + full-attention models: Gemma 2, Gemma 3, GPT-OSS and Beam.

Which layers slide follows vLLM's model code, not only ``config.json``:

* Gemma 2 (``model_executor/models/gemma2.py``) and Gemma 3 (``gemma3.py``) read
  ``config.layer_types``; transformers fills it when the file has none, every second
  layer sliding for Gemma 2, five of six (``sliding_window_pattern``) for Gemma 3.
* GPT-OSS (``gpt_oss.py``, ``OAIAttention``) slides on even layer indices whatever
  ``layer_types`` says, and every layer has attention sinks.
"""

from __future__ import annotations

from typing import Any

from kvconfig.derive.inputs import Context, Model, attention_geometry, layer_types, pos_int, runs
from kvconfig.errors import InputError


def _window(cfg: dict[str, Any] | Any, source: str) -> int:
    return pos_int(cfg, "sliding_window", source)


def _derive(
    model: Model,
    ctx: Context,
    sliding: list[bool],
    name: str,
    *,
    sinks: bool = False,
) -> list[dict[str, Any]]:
    cfg, src = model.text, model.path
    heads, kv, head = attention_geometry(cfg, src)
    window = _window(cfg, src) if any(sliding) else None
    base: dict[str, Any] = {
        "num_heads": heads,
        "num_kv_heads": kv,
        "head_size": head,
        "dtype": ctx.dtype,
    }
    if sinks:
        base["has_sink"] = True
    per_layer: list[dict[str, Any] | None] = [
        {**base, "kind": "sliding_window", "sliding_window": window}
        if s
        else {**base, "kind": "full_attention"}
        for s in sliding
    ]
    return runs(name, per_layer, ctx.first_index)


def _pattern(model: Model, every: int) -> list[bool]:
    """transformers' default: layer i slides unless (i + 1) is a multiple of ``every``."""
    cfg, src = model.text, model.path
    n = pos_int(cfg, "num_hidden_layers", src)
    types = layer_types(cfg, src, n)
    if types is not None:
        return [t == "sliding_attention" for t in types]
    return [bool((i + 1) % every) for i in range(n)]


def gemma2(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Gemma 2: alternating sliding-window (4096) and full layers."""
    return _derive(model, ctx, _pattern(model, 2), "model.layers.{i}.self_attn.attn")


def gemma3(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Gemma 3 text models: five sliding-window layers per full one."""
    every = model.text.get("sliding_window_pattern", 6)
    if not isinstance(every, int) or isinstance(every, bool) or every < 1:
        every = 6
    return _derive(model, ctx, _pattern(model, every), "model.layers.{i}.self_attn.attn")


def gemma3_mm(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Gemma 3 multimodal: the text model lives under ``language_model``."""
    every = model.text.get("sliding_window_pattern", 6)
    if not isinstance(every, int) or isinstance(every, bool) or every < 1:
        every = 6
    return _derive(
        model, ctx, _pattern(model, every), "language_model.model.layers.{i}.self_attn.attn"
    )


def gpt_oss(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """GPT-OSS: even layers slide (128 tokens), odd ones are full; all have sinks."""
    n = pos_int(model.text, "num_hidden_layers", model.path)
    sliding = [i % 2 == 0 for i in range(n)]
    return _derive(model, ctx, sliding, "model.layers.{i}.attn.attn", sinks=True)


def beam(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Beam (``vllm/models/beam/nvidia/attention.py``): ``layer_types`` says which layers
    slide (``per_layer_sliding_window``); ``model.layers.{i}.self_attn.attn``."""
    cfg, src = model.text, model.path
    n = pos_int(cfg, "num_hidden_layers", src)
    types = layer_types(cfg, src, n)
    if types is None:
        raise InputError(
            "missing layer_types",
            source=src,
            key="layer_types",
            hint="sliding_attention or full_attention for each hidden layer",
        )
    sliding = [t == "sliding_attention" for t in types]
    return _derive(model, ctx, sliding, "model.layers.{i}.self_attn.attn")
