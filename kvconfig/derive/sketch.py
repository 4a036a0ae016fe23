"""A native-file sketch of a model kvconfig cannot derive, filled from its ``config.json``.

The sketch is a starting point, not a derivation: it lists what the config says about
attention (heads, head size, sliding windows, MLA, recurrent layers) in the native
format, with comments where the reader must check vLLM's model code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvconfig.derive.inputs import Model


def _int(cfg: Mapping[str, Any], key: str) -> int | None:
    value = cfg.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _layer(
    lines: list[str], name: str, count: int, kind: str, first: int = 0, **fields: object
) -> None:
    lines.append(f"  - name: {name}")
    lines.append(f"    count: {count}")
    if first:
        lines.append(f"    first_index: {first}   # one set per run of layers of one kind")
    lines.append(f"    kind: {kind}")
    for key, value in fields.items():
        if value is not None:
            lines.append(f"    {key}: {value}")


def _types(cfg: Mapping[str, Any], n: int) -> dict[str, int]:
    types = cfg.get("layer_types")
    counts: dict[str, int] = {}
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        for t in types:
            counts[t] = counts.get(t, 0) + 1
        return counts
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        for letter, label in (("M", "mamba"), ("*", "full_attention")):
            if pattern.count(letter):
                counts[label] = pattern.count(letter)
        return counts
    return {"full_attention": n}


def native_snippet(model: Model, *, draft: bool = False) -> str:
    """YAML lines of a native kvconfig file describing ``model``'s cache layers."""
    cfg = model.text
    n = _int(cfg, "num_hidden_layers") or 1
    heads = _int(cfg, "num_attention_heads")
    kv = _int(cfg, "num_key_value_heads") or heads
    head = _int(cfg, "head_dim")
    hidden = _int(cfg, "hidden_size")
    if head is None and hidden and heads:
        head = hidden // heads
    role = "draft" if draft else "target"
    lines = ["kvconfig: 1", "platform: h200            # your GPU", "layers:"]
    latent, rope = _int(cfg, "kv_lora_rank"), _int(cfg, "qk_rope_head_dim")
    if latent and rope:
        _layer(
            lines,
            "model.layers.{i}.self_attn.attn",
            n,
            "sparse_mla" if "index_topk" in cfg else "mla_attention",
            role=role if draft else None,
            num_heads=heads,
            num_kv_heads=1,
            head_size=latent + rope,
        )
        return "\n".join(lines)
    window = _int(cfg, "sliding_window")
    first = 0
    for label, count in _types(cfg, n).items():
        if label in ("sliding_attention", "local_attention") and window:
            _layer(
                lines,
                "model.layers.{i}.self_attn.attn   # check vLLM's module names",
                count,
                "sliding_window",
                first,
                role=role if draft else None,
                num_heads=heads,
                num_kv_heads=kv,
                head_size=head,
                sliding_window=window,
            )
        elif label in ("full_attention", "attention", "global_attention"):
            _layer(
                lines,
                "model.layers.{i}.self_attn.attn   # check vLLM's module names",
                count,
                "full_attention",
                first,
                role=role if draft else None,
                num_heads=heads,
                num_kv_heads=kv,
                head_size=head,
            )
        else:
            _layer(
                lines,
                f"model.layers.{{i}}.{label}   # check vLLM's module names",
                count,
                "mamba",
                first,
                role=role if draft else None,
                mamba_type="mamba2   # or mamba1, gdn_attention, linear_attention",
                state_bytes="0   # bytes of one request's state on one rank",
            )
        first += count
    return "\n".join(lines)
