"""KV-cache layers of a model, derived offline from its Hugging Face ``config.json``.

Each architecture maps to a *deriver* that returns layer sets in the shape of
``schemas.deployment.LayerSet`` (without ``role``). Layer names follow vLLM's
module names (``model.layers.{i}.self_attn.attn``); draft layers continue the
target's numbering, as vLLM's EAGLE drafters do.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvconfig._suggest import did_you_mean
from kvconfig.errors import InputError

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""``config.json`` files larger than this are refused (real ones are a few KiB)."""


class UnsupportedArchitecture(Exception):
    """vLLM knows the architecture but kvconfig cannot derive its layers."""

    def __init__(self, architecture: str, source: str) -> None:
        super().__init__(architecture)
        self.architecture = architecture
        self.source = source


@dataclass(frozen=True, slots=True)
class Model:
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
                hint="a Hugging Face config.json lists the model class, e.g. [\"LlamaForCausalLM\"]",
            )
        return archs[0]

    @property
    def text(self) -> Mapping[str, Any]:
        """The text model's config (``text_config`` of multimodal models)."""
        inner = self.config.get("text_config")
        return inner if isinstance(inner, Mapping) else self.config


def _int(cfg: Mapping[str, Any], key: str, source: str, default: int | None = None) -> int:
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


def model_dtype(cfg: Mapping[str, Any], override: str | None) -> str:
    """vLLM's ``--dtype auto`` choice: the checkpoint's dtype, float32 served as bfloat16."""
    if override and override != "auto":
        return {"half": "float16", "float": "float32"}.get(override, override)
    raw = cfg.get("dtype") or cfg.get("torch_dtype") or "bfloat16"
    raw = str(raw).removeprefix("torch.")
    if raw in ("float32", "float"):
        return "bfloat16"
    return raw if raw in ("float16", "bfloat16") else "bfloat16"


def _sliding(cfg: Mapping[str, Any]) -> tuple[list[str] | None, int | None]:
    """``layer_types`` and the sliding window, as transformers normalises them."""
    window = cfg.get("sliding_window")
    if cfg.get("use_sliding_window") is False:
        window = None
    if window == 0:
        window = None
    types = cfg.get("layer_types")
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        return list(types), window
    return None, window


def dense(model: Model, dtype: str, first: int = 0) -> list[dict[str, Any]]:
    """Decoder-only dense attention (Llama, Mistral, Qwen2/3 and their MoE variants)."""
    cfg, src = model.text, model.path
    n = _int(cfg, "num_hidden_layers", src)
    heads = _int(cfg, "num_attention_heads", src)
    kv = _int(cfg, "num_key_value_heads", src, heads)
    hidden = cfg.get("hidden_size")
    head = cfg.get("head_dim")
    if head is None:
        if not isinstance(hidden, int) or isinstance(hidden, bool) or hidden < heads:
            raise InputError(
                "cannot tell the head size",
                source=src,
                key="head_dim",
                hint="set head_dim, or hidden_size divisible by num_attention_heads",
            )
        head = hidden // heads
    else:
        head = _int(cfg, "head_dim", src)
    if kv > heads or heads % kv:
        raise InputError(
            f"num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv})",
            source=src,
            key="num_key_value_heads",
            hint="fix the config.json value",
        )
    types, window = _sliding(cfg)
    if types is not None and len(types) != n:
        raise InputError(
            f"layer_types has {len(types)} entries for {n} layers",
            source=src,
            key="layer_types",
            hint="one entry per hidden layer",
        )
    base = {
        "num_heads": heads,
        "num_kv_heads": kv,
        "head_size": head,
        "dtype": dtype,
    }
    if types is None:
        kind = "sliding_window" if window else "full_attention"
        extra = {"sliding_window": window} if window else {}
        return [
            {
                **base,
                **extra,
                "name": "model.layers.{i}.self_attn.attn",
                "first_index": first,
                "count": n,
                "kind": kind,
            }
        ]
    sets: list[dict[str, Any]] = []
    for i, t in enumerate(types):
        sw = t == "sliding_attention" and window
        kind = "sliding_window" if sw else "full_attention"
        extra = {"sliding_window": window} if sw else {}
        item = {**base, **extra, "kind": kind}
        if sets and sets[-1]["_key"] == (kind, window if sw else None):
            sets[-1]["count"] += 1
            continue
        sets.append(
            {
                **item,
                "_key": (kind, window if sw else None),
                "name": "model.layers.{i}.self_attn.attn",
                "first_index": first + i,
                "count": 1,
            }
        )
    for s in sets:
        del s["_key"]
    return sets


Deriver = Callable[[Model, str, int], list[dict[str, Any]]]

#: Architectures kvconfig derives, and how.
DERIVERS: dict[str, Deriver] = {
    name: dense
    for name in (
        "LlamaForCausalLM",
        "MistralForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen3ForCausalLM",
        "Qwen2MoeForCausalLM",
        "Qwen3MoeForCausalLM",
        "MixtralForCausalLM",
    )
}

#: Drafter architectures whose attention layers are dense (EAGLE and EAGLE3 heads).
DRAFT_DERIVERS: dict[str, Deriver] = {
    name: dense
    for name in (
        "EagleLlamaForCausalLM",
        "LlamaForCausalLMEagle",
        "EagleMistralForCausalLM",
        "Eagle3LlamaForCausalLM",
        "LlamaForCausalLMEagle3",
        "Eagle3Qwen3ForCausalLM",
        "Eagle3Qwen2_5vlForCausalLM",
        "Eagle3Qwen3vlForCausalLM",
        "Eagle3MiniMaxM2ForCausalLM",
        "PeagleLlamaForCausalLM",
        "PeagleQwen3ForCausalLM",
        "PEagleDraftModel",
        "LlamaForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen3ForCausalLM",
        "MistralForCausalLM",
    )
}


def read_model(path: Path, source: str, key: str) -> Model:
    """The ``config.json`` of a local model folder (or the file itself)."""
    cfg_path = path / "config.json" if path.is_dir() else path
    if not cfg_path.exists():
        raise InputError(
            f"no config.json in {path}",
            source=source,
            key=key,
            hint="point it at a folder holding the model's Hugging Face config.json",
        )
    from kvconfig._yaml import decode, read_bytes

    raw = read_bytes(cfg_path, str(cfg_path), MAX_CONFIG_BYTES, what="config.json")
    text = decode(raw, str(cfg_path), what="config.json")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"invalid JSON: {err.msg} at column {err.colno}",
            source=str(cfg_path),
            line=err.lineno,
            hint="fix the JSON syntax",
        ) from None
    except (RecursionError, ValueError) as err:
        why = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise InputError(
            f"invalid JSON: {why}", source=str(cfg_path), hint="fix config.json"
        ) from None
    if not isinstance(data, dict):
        raise InputError(
            "expected a JSON object at the top level",
            source=str(cfg_path),
            hint="a Hugging Face config.json is one JSON object",
        )
    return Model(str(cfg_path), data)


def hub_cache_folder(repo_id: str) -> Path | None:
    """The newest snapshot of ``repo_id`` in the local Hugging Face cache, if any (no network)."""
    if repo_id.count("/") != 1 or repo_id.startswith(("/", ".")):
        return None
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")), "hub"
    )
    snapshots = Path(hub) / f"models--{repo_id.replace('/', '--')}" / "snapshots"
    if not snapshots.is_dir():
        return None
    found = sorted(
        (p for p in snapshots.iterdir() if (p / "config.json").is_file()),
        key=lambda p: p.stat().st_mtime,
    )
    return found[-1] if found else None


def derive(
    model: Model,
    dtype: str,
    *,
    first_index: int = 0,
    draft: bool = False,
    known: frozenset[str] = frozenset(),
) -> list[dict[str, Any]]:
    """Layer sets of ``model``; raises UnsupportedArchitecture or InputError."""
    arch = model.architecture
    table = DRAFT_DERIVERS if draft else DERIVERS
    deriver = table.get(arch)
    if deriver is None:
        if known and arch not in known:
            raise InputError(
                f"unknown architecture {arch!r}: vLLM does not serve it",
                source=model.path,
                key="architectures",
                hint=did_you_mean(arch, known, key=str) or "check the model's config.json",
            )
        raise UnsupportedArchitecture(arch, model.path)
    return deriver(model, dtype, first_index)
