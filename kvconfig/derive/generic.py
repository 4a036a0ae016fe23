"""The generic decoder rule: one attention layer per hidden layer, named by a template,
full, sliding-window or chunked-local, its geometry read as vLLM reads it.

Which architectures use it, their layer-name template, their configuration class's key
aliases (``attribute_map``) and defaults, and whether their module reads
``layer_types`` or builds chunked-local attention are data of the release
(``kvconfig.mirror.architectures``), generated from vLLM's registry and checked against
vLLM's own start-up (``tools/registry``, docs/layouts.md). The geometry follows vLLM's
``ModelArchConfigConvertorBase``: KV heads from the first of ``n_head_kv``,
``num_kv_heads``, ``num_key_value_heads``, ``multi_query_group_num``,
``num_attention_groups`` (Falcon's ``multi_query`` without the new decoder architecture:
one), else the query heads; the head size from ``head_dim``, ``hidden_size_per_head``,
else ``hidden_size // num_attention_heads``. Sliding windows follow vLLM: a module that
reads ``layer_types`` slides the ``sliding_attention`` layers; otherwise the cache-wide
window (``config.sliding_window`` when ``layer_types`` is absent or all sliding) applies
to every layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvconfig.derive.inputs import Context, Model, runs
from kvconfig.errors import InputError, describe

#: vLLM's ``CONFIG_FIELD_ALIASES["total_num_kv_heads"]``, in its order.
KV_HEAD_KEYS = (
    "n_head_kv",
    "num_kv_heads",
    "num_key_value_heads",
    "multi_query_group_num",
    "num_attention_groups",
)


class _Config:
    """A ``config.json`` read through its configuration class's aliases and defaults."""

    def __init__(self, model: Model, rule: Mapping[str, Any]) -> None:
        self.raw = model.text
        self.source = model.path
        self.aliases: Mapping[str, str] = rule.get("attribute_map", {})
        self.defaults: Mapping[str, Any] = rule.get("defaults", {})

    def get(self, key: str) -> Any:
        alias = self.aliases.get(key)
        if alias is not None and alias in self.raw:
            return self.raw[alias]
        if key in self.raw:
            return self.raw[key]
        return self.defaults.get(key)

    def positive(self, key: str) -> int:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(
                f"expected a positive integer, got {describe(value)}"
                if value is not None
                else f"missing {key!r}",
                source=self.source,
                key=self.aliases.get(key, key),
                hint="fix the config.json value",
            )
        return value


def _kv_heads(cfg: _Config, heads: int) -> int:
    if not cfg.get("new_decoder_architecture") and cfg.get("multi_query") is True:
        return 1
    for key in KV_HEAD_KEYS:
        value = cfg.get(key)
        if value is not None:
            return cfg.positive(key)
    return heads


def _head_size(cfg: _Config, heads: int) -> int:
    head = cfg.get("head_dim")
    if isinstance(head, int) and not isinstance(head, bool) and head > 0:
        return head
    if cfg.get("hidden_size_per_head") is not None:
        return cfg.positive("hidden_size_per_head")
    hidden = cfg.positive("hidden_size")
    if hidden < heads:
        raise InputError(
            f"expected at least num_attention_heads ({heads}), got {hidden}",
            source=cfg.source,
            key="hidden_size",
            hint="fix the config.json value, or set head_dim",
        )
    return hidden // heads


def _window(cfg: _Config) -> int | None:
    window = cfg.get("sliding_window")
    if window in (None, 0) or cfg.get("use_sliding_window") is False:
        return None
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise InputError(
            f"expected a positive integer, got {describe(window)}",
            source=cfg.source,
            key="sliding_window",
            hint="fix the config.json value",
        )
    return window


def _types(cfg: _Config, n: int) -> list[str] | None:
    types = cfg.raw.get("layer_types")
    if types is None:
        return None
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise InputError(
            "layer_types must be a list of strings",
            source=cfg.source,
            key="layer_types",
            hint="one entry per hidden layer",
        )
    if len(types) < n:
        raise InputError(
            f"layer_types has {len(types)} entries for {n} layers",
            source=cfg.source,
            key="layer_types",
            hint="one entry per hidden layer",
        )
    return list(types[:n])


def _chunked(cfg: _Config, n: int) -> list[bool]:
    """Llama 4: layers with rope (``no_rope_layers[i] != 0``) are chunked-local when
    ``attention_chunk_size`` is set."""
    chunk = cfg.get("attention_chunk_size")
    flags = cfg.get("no_rope_layers")
    if not chunk:
        return [False] * n
    if not isinstance(flags, list) or len(flags) < n:
        raise InputError(
            f"expected one no_rope_layers entry per layer, got {describe(flags)}",
            source=cfg.source,
            key="no_rope_layers",
            hint="one 0 (global, no rope) or 1 (chunked local) per hidden layer",
        )
    return [bool(f) for f in flags[:n]]


def decoder(model: Model, ctx: Context, rule: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The layer sets of an architecture on the generic decoder rule."""
    cfg = _Config(model, rule)
    n = cfg.positive("num_hidden_layers")
    heads = cfg.positive("num_attention_heads")
    kv = _kv_heads(cfg, heads)
    head = _head_size(cfg, heads)
    window = _window(cfg)
    types = _types(cfg, n)
    chunked = _chunked(cfg, n) if rule.get("chunked") else [False] * n
    per_layer_windows = bool(rule.get("layer_types")) and types is not None
    cache_window = window if types is None or all(t == "sliding_attention" for t in types) else None
    base = {"num_heads": heads, "num_kv_heads": kv, "head_size": head, "dtype": ctx.dtype}
    per_layer: list[dict[str, Any] | None] = []
    for i in range(n):
        if chunked[i]:
            per_layer.append({**base, "kind": "chunked_local"})
            continue
        slides = (
            window is not None and types is not None and types[i] == "sliding_attention"
            if per_layer_windows
            else cache_window is not None
        )
        per_layer.append(
            {**base, "kind": "sliding_window", "sliding_window": window}
            if slides
            else {**base, "kind": "full_attention"}
        )
    return runs(str(rule["layers"]), per_layer, ctx.first_index)
