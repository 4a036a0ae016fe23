"""Models that run their layers more than once per token, each run with its own KV cache:
Dory (recurrent loops over a block of layers) and HRM-Text (two stacks cycled in turn).

vLLM gives each run of a layer an attention layer of its own, named by a "virtual" layer
index, so the cache layers are the runs, not the modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvconfig.derive.inputs import Context, Model, attention_geometry, ordered, pos_int
from kvconfig.errors import InputError


def _count(cfg: Mapping[str, Any], key: str, src: str, default: int) -> int:
    """``cfg[key]`` as a count (``default`` when absent or null)."""
    value = cfg.get(key)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(
            f"expected a non-negative integer, got {value!r}",
            source=src,
            key=key,
            hint="fix the config.json value",
        )
    return value


def dory(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Dory (``models/dory.py``): ``layer_types`` marks each layer ``sliding_attention``,
    ``full_attention`` or ``mlp`` (no cache). The ``n_recurrent_layers`` after the
    ``n_input_layers`` run ``n_recurrent_loops`` times; with ``recurrent_kv_cache_mode``
    ``per_loop`` (the default) loop ``k`` of layer ``i`` caches at
    ``backbone.layers.{k * num_hidden_layers + i}.mixer.attn``, with ``last_loop`` one cache
    serves every loop."""
    cfg, src = model.text, model.path
    n = pos_int(cfg, "num_hidden_layers", src)
    types = cfg.get("layer_types")
    if not isinstance(types, list) or len(types) != n:
        raise InputError(
            "expected layer_types with one entry per layer",
            source=src,
            key="layer_types",
            hint="sliding_attention, full_attention or mlp for each hidden layer",
        )
    heads, kv, head = attention_geometry(cfg, src)
    window = pos_int(cfg, "sliding_window", src) if "sliding_attention" in types else None
    first = _count(cfg, "n_input_layers", src, 0)
    rest = n - first - _count(cfg, "n_output_layers", src, 0)
    recurrent = _count(cfg, "n_recurrent_layers", src, rest)
    loops = pos_int(cfg, "n_recurrent_loops", src, 1)
    per_loop = cfg.get("recurrent_kv_cache_mode", "per_loop") == "per_loop"
    base = {"num_heads": heads, "num_kv_heads": kv, "head_size": head, "dtype": ctx.dtype}
    entries: list[tuple[str, int, dict[str, Any]]] = []
    for i, kind in enumerate(types):
        if kind == "mlp":
            continue
        if kind == "sliding_attention":
            item = {**base, "kind": "sliding_window", "sliding_window": window}
        elif kind == "full_attention":
            item = {**base, "kind": "full_attention"}
        else:
            raise InputError(
                f"layer {i} has type {kind!r}",
                source=src,
                key="layer_types",
                hint="expected sliding_attention, full_attention or mlp",
            )
        runs = loops if per_loop and first <= i < first + recurrent else 1
        entries.extend(("backbone.layers.{i}.mixer.attn", k * n + i, item) for k in range(runs))
    return ordered(entries)


def hrm_text(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """HRM-Text (``models/hrm_text.py``): a low-level stack (``L_module``) and a high-level
    one (``H_module``) of ``num_layers_per_stack`` layers each. Over ``H_cycles`` outer
    steps the L stack runs ``L_cycles`` times, then the H stack once; the run at step
    ``s`` of layer ``j`` caches at ``layers.{s * num_layers_per_stack + j}``. Full
    attention with as many KV heads as query heads, head size ``head_dim``."""
    cfg, src = model.text, model.path
    per_stack = pos_int(cfg, "num_layers_per_stack", src)
    high = pos_int(cfg, "H_cycles", src)
    low = pos_int(cfg, "L_cycles", src)
    heads = pos_int(cfg, "num_attention_heads", src)
    head = (
        pos_int(cfg, "head_dim", src)
        if "head_dim" in cfg
        else pos_int(cfg, "hidden_size", src) // heads
    )
    item = {
        "kind": "full_attention",
        "num_heads": heads,
        "num_kv_heads": heads,
        "head_size": head,
        "dtype": ctx.dtype,
    }
    stacks = (
        ("model.L_module", [h * (low + 1) + k for h in range(high) for k in range(low)]),
        ("model.H_module", [h * (low + 1) + low for h in range(high)]),
    )
    entries: list[tuple[str, int, dict[str, Any]]] = []
    for module, steps in stacks:
        for j in range(per_stack):
            entries.extend(
                (f"{module}.layers.{{i}}.self_attn.attn", s * per_stack + j, item) for s in steps
            )
    return ordered(entries)
