"""Hybrid models whose recurrent layers keep a fixed-size state (vLLM's ``MambaSpec``):
Qwen3-Next, Qwen3.5 and OLMo-Hybrid (gated delta net), Jamba and Mamba (Mamba1); the
Mamba2 families are in ``derive.mamba2``.

A recurrent layer's state size per rank follows ``MambaStateShapeCalculator`` and
``MambaStateDtypeCalculator`` (``model_executor/layers/mamba/mamba_utils.py``) with the
model's ``get_mamba_state_shape_from_config`` / ``get_mamba_state_dtype_from_config``:

* gated delta net: conv ``(2*k_heads*k_dim + v_heads*v_dim)/tp x (kernel-1+spec)`` plus
  recurrent ``v_heads/tp x v_dim x k_dim``;
* Mamba2: conv ``(inner + 2*groups*state)/tp x (kernel-1+spec)`` plus
  ``heads/tp x head_dim x state`` (groups padded to the ranks when they do not split);
* Mamba1: conv ``inner/tp x (kernel-1)`` plus ``inner/tp x state``.

The conv state uses ``--mamba-cache-dtype`` (``auto``: the model dtype), the recurrent
state ``--mamba-ssm-cache-dtype`` (``auto``: the conv dtype; Nemotron-H defaults to
float32 and Qwen3.5 to its config's ``mamba_ssm_dtype``, ``models/config.py``).
"""

from __future__ import annotations

from typing import Any

from kvconfig.derive.inputs import (
    Context,
    Model,
    attention_geometry,
    divide,
    dtype_bytes,
    layer_types,
    ordered,
    pos_int,
    runs,
)
from kvconfig.errors import InputError


def state_dtypes(model: Model, ctx: Context, ssm_default: str | None) -> tuple[int, int]:
    """Bytes per element of the conv state and of the recurrent (SSM) state."""
    src = model.path
    conv = dtype_bytes(ctx.mamba_cache_dtype, ctx.dtype, src, "--mamba-cache-dtype")
    ssm_name = ctx.mamba_ssm_cache_dtype
    if ssm_name == "auto" and ssm_default is not None:
        ssm_name = ssm_default
    ssm = conv if ssm_name == "auto" else dtype_bytes(ssm_name, ctx.dtype, src, "mamba_ssm")
    return conv, ssm


def gdn_state_bytes(model: Model, ctx: Context, ssm_default: str | None = None) -> int:
    """Bytes of one gated-delta-net layer's state on one rank."""
    cfg, src, tp = model.text, model.path, ctx.tensor_parallel_size
    k_heads = pos_int(cfg, "linear_num_key_heads", src)
    v_heads = pos_int(cfg, "linear_num_value_heads", src)
    k_dim = pos_int(cfg, "linear_key_head_dim", src)
    v_dim = pos_int(cfg, "linear_value_head_dim", src)
    kernel = pos_int(cfg, "linear_conv_kernel_dim", src)
    conv_dim = divide(k_dim * k_heads * 2 + v_dim * v_heads, tp, src, "linear_num_key_heads")
    recurrent = divide(v_heads, tp, src, "linear_num_value_heads") * v_dim * k_dim
    conv_b, ssm_b = state_dtypes(model, ctx, ssm_default)
    return conv_dim * (kernel - 1 + ctx.num_speculative_tokens) * conv_b + recurrent * ssm_b


def _qwen_next(
    model: Model, ctx: Context, prefix: str, ssm_default: str | None, own_head: bool = False
) -> list[dict[str, Any]]:
    cfg, src = model.text, model.path
    n = pos_int(cfg, "num_hidden_layers", src)
    types = layer_types(cfg, src, n)
    if types is None:
        interval = cfg.get("full_attention_interval", 4)
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
            raise InputError(
                "full_attention_interval must be a positive integer",
                source=src,
                key="full_attention_interval",
                hint="fix the config.json value",
            )
        types = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n)]
    heads, kv, head = attention_geometry(cfg, src)
    if own_head:  # the module's own head size: hidden_size // num_attention_heads
        head = pos_int(cfg, "hidden_size", src) // heads
    attention = {
        "kind": "full_attention",
        "num_heads": heads,
        "num_kv_heads": kv,
        "head_size": head,
        "dtype": ctx.dtype,
    }
    recurrent = {
        "kind": "mamba",
        "mamba_type": "gdn_attention",
        "num_heads": pos_int(cfg, "linear_num_value_heads", src),
        "num_kv_heads": pos_int(cfg, "linear_num_key_heads", src),
        "head_size": pos_int(cfg, "linear_key_head_dim", src),
        "dtype": ctx.dtype,
        "state_bytes": gdn_state_bytes(model, ctx, ssm_default),
    }

    entries: list[tuple[str, int, dict[str, Any]]] = []
    for i, t in enumerate(types):
        if t == "linear_attention":
            entries.append((f"{prefix}.layers.{{i}}.linear_attn", i, recurrent))
        elif t == "full_attention":
            entries.append((f"{prefix}.layers.{{i}}.self_attn.attn", i, attention))
        else:
            raise InputError(
                f"layer {i} has type {t!r}",
                source=src,
                key="layer_types",
                hint="expected linear_attention or full_attention",
            )
    return ordered(entries)


def qwen3_next(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Qwen3-Next: three gated-delta-net layers per full-attention layer."""
    return _qwen_next(model, ctx, "model", None)


def _qwen35_ssm(model: Model) -> str | None:
    value = model.text.get("mamba_ssm_dtype")
    return value if isinstance(value, str) else None


def qwen3_5(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Qwen3.5 text models."""
    return _qwen_next(model, ctx, "model", _qwen35_ssm(model))


def qwen3_5_mm(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Qwen3.5 multimodal models (text model under ``language_model``)."""
    return _qwen_next(model, ctx, "language_model.model", _qwen35_ssm(model))


def olmo_hybrid(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """OLMo-Hybrid: ``layer_types`` of gated-delta-net and full-attention layers, the
    attention head size ``hidden_size // num_attention_heads`` (``olmo_hybrid.py``); its
    mixer (``OlmoHybridGatedDeltaNetAttention``) exports no prefill checkpoints."""
    sets = _qwen_next(model, ctx, "model", None, own_head=True)
    for s in sets:
        if s["kind"] == "mamba":
            s["prefill_checkpoints"] = False
    return sets


def _mtp(model: Model, ctx: Context, key: str) -> list[dict[str, Any]]:
    cfg, src = model.text, model.path
    k = cfg.get(key, 1)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InputError(
            f"expected a positive integer, got {k!r}", source=src, key=key, hint="fix config.json"
        )
    heads, kv, head = attention_geometry(cfg, src)
    item = {
        "kind": "full_attention",
        "num_heads": heads,
        "num_kv_heads": kv,
        "head_size": head,
        "dtype": ctx.dtype,
    }
    return ordered([("mtp.layers.{i}.self_attn.attn", i, item) for i in range(k)])


def qwen3_next_mtp(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Qwen3-Next MTP: ``num_nextn_predict_layers`` (default 1) full-attention layers."""
    return _mtp(model, ctx, "num_nextn_predict_layers")


def qwen3_5_mtp(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Qwen3.5 MTP: ``mtp_num_hidden_layers`` (default 1) full-attention layers."""
    return _mtp(model, ctx, "mtp_num_hidden_layers")


def jamba(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Jamba: one attention layer per ``attn_layer_period``, Mamba1 elsewhere."""
    cfg, src, tp = model.text, model.path, ctx.tensor_parallel_size
    n = pos_int(cfg, "num_hidden_layers", src)
    period = pos_int(cfg, "attn_layer_period", src, 8)
    offset = cfg.get("attn_layer_offset", 4)
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset < period:
        raise InputError(
            "attn_layer_offset must be an integer below attn_layer_period",
            source=src,
            key="attn_layer_offset",
            hint="fix the config.json value",
        )
    heads, kv, head = attention_geometry(cfg, src)
    hidden = pos_int(cfg, "hidden_size", src)
    inner = divide(pos_int(cfg, "mamba_expand", src, 2) * hidden, tp, src, "mamba_expand")
    mamba = _mamba1_layer(
        model,
        ctx,
        inner,
        pos_int(cfg, "mamba_d_conv", src, 4),
        pos_int(cfg, "mamba_d_state", src, 16),
    )
    attention = {
        "kind": "full_attention",
        "num_heads": heads,
        "num_kv_heads": kv,
        "head_size": head,
        "dtype": ctx.dtype,
    }
    entries = [
        ("model.layers.{i}.attn", i, attention)
        if i % period == offset
        else ("model.layers.{i}.mixer", i, mamba)
        for i in range(n)
    ]
    return ordered(entries)


def mamba1(model: Model, ctx: Context) -> list[dict[str, Any]]:
    """Mamba and Falcon-Mamba: every layer a Mamba1 mixer (``backbone.layers.{i}.mixer``),
    its state ``mamba1_state_shape`` of ``intermediate_size``, ``state_size`` and
    ``conv_kernel`` (``model_executor/models/mamba.py``)."""
    cfg, src, tp = model.text, model.path, ctx.tensor_parallel_size
    n = pos_int(cfg, "num_hidden_layers", src)
    if cfg.get("intermediate_size") is None:
        total = pos_int(cfg, "expand", src, 2) * pos_int(cfg, "hidden_size", src)
    else:
        total = pos_int(cfg, "intermediate_size", src)
    inner = divide(total, tp, src, "intermediate_size")
    mamba = _mamba1_layer(
        model,
        ctx,
        inner,
        pos_int(cfg, "conv_kernel", src, 4),
        pos_int(cfg, "state_size", src, 16),
    )
    return runs("backbone.layers.{i}.mixer", [mamba] * n, ctx.first_index)


def _mamba1_layer(
    model: Model, ctx: Context, inner: int, conv_kernel: int, state_size: int
) -> dict[str, Any]:
    """A Mamba1 mixer's layer spec: its state is the conv window (``conv_kernel - 1``
    columns) and the SSM state (``state_size`` columns) of ``inner`` channels per rank
    (``mamba1_state_shape``, ``model_executor/layers/mamba/mamba_utils.py``)."""
    conv_b, ssm_b = state_dtypes(model, ctx, None)
    return {
        "kind": "mamba",
        "mamba_type": "mamba1",
        "num_heads": 1,
        "num_kv_heads": 1,
        "head_size": 1,
        "dtype": ctx.dtype,
        "state_bytes": inner * (conv_kernel - 1) * conv_b + inner * state_size * ssm_b,
    }
