"""What every ``config.json`` deriver shares: the model, the deployment facts it needs,
and checked reads of integer fields.

Derivers return layer sets in the document shape of ``schemas.deployment.LayerSet``
(without ``role``); names follow vLLM's module names.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from kvconfig.errors import InputError, describe

#: dtype name -> bytes per element, for the dtypes state and cache sizes use.
DTYPE_BYTES: dict[str, int] = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "uint8": 1,
}


_EMPTY: Mapping[str, int] = MappingProxyType({})


class Model(NamedTuple):
    """A model's config as kvconfig reads it."""

    path: str
    config: Mapping[str, Any]

    @property
    def architecture(self) -> str:
        """The first architecture listed (what vLLM instantiates)."""
        archs = self.config.get("architectures") or []
        if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
            raise InputError(
                "'architectures' must be a non-empty list of names",
                source=self.path,
                key="architectures",
                hint='a Hugging Face config.json lists the model class, e.g. ["LlamaForCausalLM"]',
            )
        return archs[0]

    @property
    def text(self) -> Mapping[str, Any]:
        """The text model's config (``text_config`` of multimodal models)."""
        inner = self.config.get("text_config")
        return inner if isinstance(inner, Mapping) else self.config


class Context(NamedTuple):
    """Deployment facts that change a model's layers or their sizes."""

    dtype: str = "bfloat16"
    """The activation dtype vLLM serves the model in."""
    first_index: int = 0
    """Index of the first layer (drafters continue the target's numbering)."""
    tensor_parallel_size: int = 1
    """Heads and recurrent states are split over this many ranks."""
    num_speculative_tokens: int = 0
    """Mamba conv states keep a slot per speculative token."""
    mamba_cache_dtype: str = "auto"
    """``--mamba-cache-dtype``."""
    mamba_ssm_cache_dtype: str = "auto"
    """``--mamba-ssm-cache-dtype``."""
    language_model_only: bool = False
    """``--language-model-only``: a multimodal model serves text only."""
    mm_limits: Mapping[str, int] = _EMPTY
    """``--limit-mm-per-prompt``: items per prompt, by modality (0: none)."""
    mm_embeds: bool = False
    """``--enable-mm-embeds``: precomputed multimodal embeddings are accepted."""
    mla_disabled: bool = False
    """``VLLM_MLA_DISABLE=1``: ``ModelConfig.use_mla`` is False, so MLA models build plain
    attention layers (``vllm/config/model.py``)."""


def pos_int(cfg: Mapping[str, Any], key: str, source: str, default: int | None = None) -> int:
    """``cfg[key]`` as a positive integer, or a one-line InputError."""
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        if value is None:
            raise InputError(
                f"missing {key!r}", source=source, key=key, hint="a positive integer is required"
            )
        raise InputError(
            f"expected a positive integer, got {value!r}",
            source=source,
            key=key,
            hint="fix the config.json value",
        )
    return value


def int_list(cfg: Mapping[str, Any], key: str, source: str, length: int) -> list[int]:
    """``cfg[key]`` as a list of ``length`` integers (booleans count as 0/1)."""
    value = cfg.get(key)
    if not isinstance(value, list) or not all(isinstance(v, (int, bool)) for v in value):
        raise InputError(
            f"expected a list of integers, got {value!r}",
            source=source,
            key=key,
            hint="one entry per hidden layer",
        )
    if len(value) < length:
        raise InputError(
            f"{key} has {len(value)} entries for {length} layers",
            source=source,
            key=key,
            hint="one entry per hidden layer",
        )
    return [int(v) for v in value[:length]]


def per_rank(total: int, tp: int) -> int:
    """Heads one rank holds: split over ranks, replicated when there are fewer than ranks."""
    return max(1, total // tp)


def divide(total: int, tp: int, source: str, key: str) -> int:
    """vLLM's ``divide``: an exact split over tensor-parallel ranks, or an InputError."""
    if total % tp:
        raise InputError(
            f"{key}={total} does not split over {tp} tensor-parallel ranks",
            source=source,
            key=key,
            hint="vLLM refuses this --tensor-parallel-size for the model",
        )
    return total // tp


def dtype_bytes(name: str, model_dtype: str, source: str, key: str) -> int:
    """Bytes of a cache dtype option (``auto`` is the model's dtype)."""
    resolved = model_dtype if name == "auto" else name
    size = DTYPE_BYTES.get(resolved)
    if size is None:
        raise InputError(
            f"unknown dtype {name!r}",
            source=source,
            key=key,
            hint="use auto, float32, float16 or bfloat16",
        )
    return size


def runs(name: str, per_layer: list[dict[str, Any] | None], first: int) -> list[dict[str, Any]]:
    """Layer sets from one description per layer index (None: no KV cache there).

    Consecutive layers with equal descriptions share one set; ``name`` holds ``{i}``.
    """
    return ordered([(name, first + k, item) for k, item in enumerate(per_layer) if item])


def ordered(entries: list[tuple[str, int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Layer sets from ``(name template, layer index, description)`` in vLLM's order.

    vLLM registers a model's cache layers as it builds them; that order decides the
    order of KV-cache groups, so derivers list layers exactly in it. An entry extends
    the previous set when it has the same template and description and the next index.
    """
    sets: list[dict[str, Any]] = []
    for name, index, item in entries:
        last = sets[-1] if sets else None
        if (
            last is not None
            and last["name"] == name
            and last["first_index"] + last["count"] == index
            and {k: v for k, v in last.items() if k not in ("name", "first_index", "count")} == item
        ):
            last["count"] += 1
            continue
        sets.append({**item, "name": name, "first_index": index, "count": 1})
    return sets


def attention_geometry(cfg: Mapping[str, Any], source: str) -> tuple[int, int, int]:
    """``(num_attention_heads, num_key_value_heads, head_dim)`` of a decoder config."""
    heads = pos_int(cfg, "num_attention_heads", source)
    kv = pos_int(cfg, "num_key_value_heads", source, heads)
    head = cfg.get("head_dim")
    if head is None:
        hidden = cfg.get("hidden_size")
        if hidden is None:
            raise InputError(
                "cannot tell the head size",
                source=source,
                key="head_dim",
                hint="set head_dim, or hidden_size divisible by num_attention_heads",
            )
        if not isinstance(hidden, int) or isinstance(hidden, bool) or hidden < heads:
            raise InputError(
                f"expected an integer of at least num_attention_heads ({heads}), "
                f"got {describe(hidden)}",
                source=source,
                key="hidden_size",
                hint="fix the config.json value, or set head_dim",
            )
        head = hidden // heads
    else:
        head = pos_int(cfg, "head_dim", source)
    if kv > heads or heads % kv:
        raise InputError(
            f"num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv})",
            source=source,
            key="num_key_value_heads",
            hint="fix the config.json value",
        )
    return heads, kv, head


def layer_types(cfg: Mapping[str, Any], source: str, count: int) -> list[str] | None:
    """``layer_types`` when the config lists one string per layer."""
    types = cfg.get("layer_types")
    if types is None:
        return None
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise InputError(
            "layer_types must be a list of strings",
            source=source,
            key="layer_types",
            hint="one entry per hidden layer",
        )
    if len(types) != count:
        raise InputError(
            f"layer_types has {len(types)} entries for {count} layers",
            source=source,
            key="layer_types",
            hint="one entry per hidden layer",
        )
    return list(types)
