"""Hybrid models whose recurrent layers are Mamba2 mixers (``MambaMixer2``): Nemotron-H,
Falcon-H1, Granite-4.0 (``GraniteMoeHybrid``) and Zamba2.

One Mamba2 layer's state per rank is ``MambaStateShapeCalculator.mamba2_state_shape``
(``model_executor/layers/mamba/mamba_utils.py``): a conv state of
``(inner + 2*groups*state)/tp x (kernel-1+spec)`` and an SSM state of
``heads/tp x head_dim x state``, the groups padded to the ranks when they do not split
(``extra_groups_for_head_shards``). Each family's ``get_mamba_state_shape_from_config``
says where ``inner``, ``groups``, ``heads``, ``head_dim``, ``state`` and ``kernel`` come
from; the dtypes follow ``derive.mamba.state_dtypes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvconfig.derive.inputs import (
    Context,
    Model,
    attention_geometry,
    divide,
    layer_types,
    ordered,
    pos_int,
)
from kvconfig.derive.mamba import state_dtypes
from kvconfig.errors import InputError


def mamba2_layer(
    model: Model,
    ctx: Context,
    *,
    inner: int,
    keys: Mapping[str, str],
    ssm_default: str | None = None,
) -> dict[str, Any]:
    """A Mamba2 mixer's layer spec. ``keys`` names the config keys of ``groups``,
    ``heads``, ``head_dim``, ``state`` and ``kernel``; ``inner`` is the mixer's width.
    Without a ``head_dim`` key, or where the config says ``auto`` (the configuration
    classes' default), the head size is ``inner // heads``."""
    cfg, src, tp = model.text, model.path, ctx.tensor_parallel_size
    groups = pos_int(cfg, keys["groups"], src)
    heads = pos_int(cfg, keys["heads"], src)
    head_key = keys.get("head_dim")
    if head_key is None or cfg.get(head_key, "auto") == "auto":
        head_dim = inner // heads
    else:
        head_dim = pos_int(cfg, head_key, src)
    state = pos_int(cfg, keys["state"], src)
    kernel = pos_int(cfg, keys["kernel"], src)
    if groups % tp:
        groups = tp  # extra_groups_for_head_shards: tp - groups more
    conv_dim = divide(inner + 2 * groups * state, tp, src, keys["groups"])
    conv_b, ssm_b = state_dtypes(model, ctx, ssm_default)
    state_bytes = (
        conv_dim * (kernel - 1 + ctx.num_speculative_tokens) * conv_b
        + divide(heads, tp, src, keys["heads"]) * head_dim * state * ssm_b
    )
    return {
        "kind": "mamba",
        "mamba_type": "mamba2",
        "num_heads": heads,
        "num_kv_heads": 1,
        "head_size": head_dim,
        "dtype": ctx.dtype,
        "state_bytes": state_bytes,
    }


def _attention(heads: int, kv: int, head: int, ctx: Context) -> dict[str, Any]:
    return {
        "kind": "full_attention",
        "num_heads": heads,
        "num_kv_heads": kv,
        "head_size": head,
        "dtype": ctx.dtype,
    }


def _own_head(cfg: Mapping[str, Any], src: str, heads: int) -> int:
    """``hidden_size // num_attention_heads``: modules that ignore ``head_dim``."""
    return pos_int(cfg, "hidden_size", src) // heads


#: transformers' ``NemotronHConfig._list_to_pattern`` (with the legacy names it remaps).
_NEMOTRON_LETTERS = {
    "linear_attention": "M",
    "mamba": "M",
    "moe": "E",
    "full_attention": "*",
    "attention": "*",
    "mlp": "-",
}


def _nemotron_pattern(cfg: Mapping[str, Any], src: str) -> str:
    """``hybrid_override_pattern`` as vLLM reads it: transformers' ``NemotronHConfig``
    builds it from ``layers_block_type`` (alias ``layer_types``) when the config lists
    one, else from the pattern string itself."""
    types = cfg.get("layers_block_type", cfg.get("layer_types"))
    if isinstance(types, list) and types:
        unknown = [t for t in types if t not in _NEMOTRON_LETTERS]
        if unknown:
            raise InputError(
                f"unknown layer type {unknown[0]!r}",
                source=src,
                key="layers_block_type",
                hint="expected linear_attention, full_attention, moe or mlp",
            )
        return "".join(_NEMOTRON_LETTERS[t] for t in types)
    pattern = cfg.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or not pattern:
        raise InputError(
            "missing hybrid_override_pattern",
            source=src,
            key="hybrid_override_pattern",
            hint="a string with one letter per layer (M, *, -, E), or layers_block_type",
        )
    return pattern


def nemotron_h(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Nemotron-H (and its Puzzle variants, the same module): one letter per layer
    (M: Mamba2, *: attention, -/E: MLP); the SSM state in float32 unless the config's
    ``mamba_ssm_cache_dtype`` says otherwise (``NemotronHForCausalLMConfig``)."""
    cfg, src = model.text, model.path
    pattern = _nemotron_pattern(cfg, src)
    heads, kv, head = attention_geometry(cfg, src)
    default_ssm = cfg.get("mamba_ssm_cache_dtype", "float32")
    mamba = mamba2_layer(
        model,
        ctx,
        inner=pos_int(cfg, "mamba_num_heads", src) * pos_int(cfg, "mamba_head_dim", src),
        keys={
            "groups": "n_groups",
            "heads": "mamba_num_heads",
            "head_dim": "mamba_head_dim",
            "state": "ssm_state_size",
            "kernel": "conv_kernel",
        },
        ssm_default=default_ssm if isinstance(default_ssm, str) else None,
    )
    attention = _attention(heads, kv, head, ctx)
    window = cfg.get("sliding_window")
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        attention = {**attention, "kind": "sliding_window", "sliding_window": window}
    entries: list[tuple[str, int, dict[str, Any]]] = []
    for i, letter in enumerate(pattern):
        if letter == "M":
            entries.append(("model.layers.{i}.mixer", i, mamba))
        elif letter == "*":
            entries.append(("model.layers.{i}.mixer.attn", i, attention))
        elif letter not in "-E":
            raise InputError(
                f"layer {i} has type {letter!r}",
                source=src,
                key="hybrid_override_pattern",
                hint="expected M, *, - or E",
            )
    return ordered(entries)


def _mamba_width(cfg: Mapping[str, Any], src: str) -> int:
    """``mamba_expand * hidden_size`` (Granite-4.0, Zamba2)."""
    return pos_int(cfg, "mamba_expand", src, 2) * pos_int(cfg, "hidden_size", src)


_FALCON_KEYS = {
    "groups": "mamba_n_groups",
    "heads": "mamba_n_heads",
    "head_dim": "mamba_d_head",
    "state": "mamba_d_state",
    "kernel": "mamba_d_conv",
}


def falcon_h1(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Falcon-H1: every layer runs attention (``model.layers.{i}.attn``) and a Mamba2 mixer
    side by side; the mixer's prefix is numbered after the layers
    (``model.{num_hidden_layers + i}.mixer``, ``falcon_h1.py``), its width ``mamba_d_ssm``
    or ``mamba_expand * hidden_size``."""
    cfg, src = model.text, model.path
    n = pos_int(cfg, "num_hidden_layers", src)
    heads, kv, head = attention_geometry(cfg, src)
    d_ssm = cfg.get("mamba_d_ssm")
    inner = _mamba_width(cfg, src) if d_ssm is None else pos_int(cfg, "mamba_d_ssm", src)
    mamba = mamba2_layer(model, ctx, inner=inner, keys=_FALCON_KEYS)
    attention = _attention(heads, kv, head, ctx)
    entries: list[tuple[str, int, dict[str, Any]]] = []
    for i in range(n):
        entries.append(("model.layers.{i}.attn", i, attention))
        entries.append(("model.{i}.mixer", n + i, mamba))
    return ordered(entries)


def granite_hybrid(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Granite-4.0 (``GraniteMoeHybrid``): ``layer_types`` of Mamba2 (``linear_attention``,
    legacy ``mamba``) and attention (``full_attention``, legacy ``attention``) layers; all
    Mamba2 when the config lists none; attention head size ``hidden_size //
    num_attention_heads`` (``granitemoehybrid.py``)."""
    cfg, src = model.text, model.path
    n = pos_int(cfg, "num_hidden_layers", src)
    types = layer_types(cfg, src, n) or ["linear_attention"] * n
    heads, kv, _ = attention_geometry(cfg, src)
    mamba = mamba2_layer(model, ctx, inner=_mamba_width(cfg, src), keys=_FALCON_KEYS)
    attention = _attention(heads, kv, _own_head(cfg, src, heads), ctx)
    entries: list[tuple[str, int, dict[str, Any]]] = []
    for i, kind in enumerate(types):
        if kind in ("linear_attention", "mamba"):
            entries.append(("model.layers.{i}.mixer", i, mamba))
        elif kind in ("full_attention", "attention"):
            entries.append(("model.layers.{i}.self_attn.attn", i, attention))
        else:
            raise InputError(
                f"layer {i} has type {kind!r}",
                source=src,
                key="layer_types",
                hint="expected mamba or attention",
            )
    return ordered(entries)


def zamba2(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Zamba2: ``num_mem_blocks`` shared attention blocks serve the ``hybrid`` layers in
    turn, each use with its own cache (``model.attn.{j}``, numbered block by block and
    registered first); every layer has a Mamba2 mixer (``{H + i}.mixer``, H the number
    of hybrid layers). Attention has ``num_attention_heads`` KV heads of
    ``2 * hidden_size // num_attention_heads``; the mixer's head size is
    ``mamba_expand * hidden_size // n_mamba_heads`` (``Zamba2Config``, ``zamba2.py``)."""
    cfg, src = model.text, model.path
    types = cfg.get("layers_block_type", cfg.get("layer_types"))
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types) or not types:
        raise InputError(
            "missing layers_block_type",
            source=src,
            key="layers_block_type",
            hint="one of mamba or hybrid per layer",
        )
    heads = pos_int(cfg, "num_attention_heads", src)
    blocks = pos_int(cfg, "num_mem_blocks", src, 1)
    hidden = pos_int(cfg, "hidden_size", src)
    inner = _mamba_width(cfg, src)
    mamba = mamba2_layer(
        model,
        ctx,
        inner=inner,
        keys={
            "groups": "mamba_ngroups",
            "heads": "n_mamba_heads",
            "state": "mamba_d_state",
            "kernel": "mamba_d_conv",
        },
    )
    attention = _attention(heads, heads, 2 * hidden // heads, ctx)
    hybrid = [i for i, t in enumerate(types) if t == "hybrid"]
    h = len(hybrid)
    entries: list[tuple[str, int, dict[str, Any]]] = []
    for b in range(blocks):
        first = b * (h + blocks - 1) // blocks
        uses = sum(1 for k in range(h) if k % blocks == b)
        entries.extend(("model.attn.{i}", first + j, attention) for j in range(uses))
    for i, kind in enumerate(types):
        if kind not in ("mamba", "linear_attention", "hybrid"):
            raise InputError(
                f"layer {i} has type {kind!r}",
                source=src,
                key="layers_block_type",
                hint="expected mamba or hybrid",
            )
        entries.append(("{i}.mixer", h + i, mamba))
    return ordered(entries)
