"""The deployment as the resolver sees it: plain frozen dataclasses, no pydantic.

``Setup.from_dict`` takes the document shape of ``schemas.deployment.Deployment``
(fully defaulted); both loaders (vLLM serve configs and native files) produce it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvconfig.load.platforms import PlatformId, parse_platform
from kvconfig.mirror import versions
from schemas.sizes import KernelSize, MultipleOf, size_from_json


@dataclass(frozen=True, slots=True)
class LayerSet:
    """``count`` layers sharing geometry, role and backend request."""

    name: str = "layers.{i}"
    count: int = 1
    first_index: int = 0
    role: str = "target"
    kind: str = "full_attention"
    backend: str | None = None
    num_heads: int = 32
    num_kv_heads: int = 8
    head_size: int = 128
    head_size_v: int | None = None
    dtype: str = "bfloat16"
    kv_cache_dtype: str | None = None
    sliding_window: int | None = None
    has_sink: bool = False
    non_causal: bool = False
    tokens_per_state: int = 1
    group: int | None = None
    state_bytes: int | None = None
    mamba_type: str | None = None

    def names(self) -> list[str]:
        """The expanded layer names."""
        return list(expand_names(self.name, self.count, self.first_index))


@functools.lru_cache(maxsize=4096)
def expand_names(pattern: str, count: int, first_index: int) -> tuple[str, ...]:
    """``pattern`` with ``{i}`` replaced by first_index .. first_index+count-1."""
    if "{i}" not in pattern:
        if count == 1:
            return (pattern,)
        return tuple(f"{pattern}.{i}" for i in range(first_index, first_index + count))
    head, _, tail = pattern.partition("{i}")
    if "{i}" in tail:
        return tuple(pattern.replace("{i}", str(first_index + i)) for i in range(count))
    return tuple(f"{head}{i}{tail}" for i in range(first_index, first_index + count))


@dataclass(frozen=True, slots=True)
class Attention:
    """``--attention-backend`` / ``--attention-config`` fields that matter."""

    backend: str | None = None
    backend_per_kind: Mapping[str, str] = field(default_factory=dict)
    use_trtllm_attention: bool | None = None
    flash_attn_version: int | None = None


@dataclass(frozen=True, slots=True)
class GroupSetting:
    """Settings of an explicitly numbered group."""

    id: int
    block_size: int | None = None
    packed: bool = False


@dataclass(frozen=True, slots=True)
class Setup:
    """A deployment to plan (see ``schemas.deployment.Deployment`` for every field)."""

    source: str
    platform: PlatformId | None
    layers: tuple[LayerSet, ...]
    vllm_version: str = versions.DEFAULT
    runner: str = "v2"
    hooks: str = "none"
    block_size: int | None = None
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    attention: Attention = field(default_factory=Attention)
    speculative_method: str | None = None
    draft_attention_backend: str | None = None
    num_speculative_tokens: int = 0
    prefix_caching: bool = True
    disable_hybrid_kv_cache_manager: bool = False
    max_model_len: int | None = None
    model_facts: Mapping[str, int] = field(default_factory=dict)
    kv_cache_layout: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    trtllm_cubins: bool = True
    backends: Mapping[str, tuple[str, tuple[KernelSize, ...]]] = field(default_factory=dict)
    groups: tuple[GroupSetting, ...] = ()

    @staticmethod
    def from_dict(doc: Mapping[str, Any], platform: PlatformId | None = None) -> Setup:
        """A Setup from the ``Deployment`` document shape; ``platform`` overrides the file's."""
        plat = platform
        if plat is None and doc.get("platform") is not None:
            plat = parse_platform(str(doc["platform"]))
        att = doc.get("attention") or {}
        return Setup(
            source=str(doc.get("source", "")),
            platform=plat,
            layers=tuple(LayerSet(**dict(s)) for s in doc["layers"]),
            vllm_version=str(doc.get("vllm_version", versions.DEFAULT)),
            runner=str(doc.get("runner", "v2")),
            hooks=str(doc.get("hooks", "none")),
            block_size=doc.get("block_size"),
            kv_cache_dtype=str(doc.get("kv_cache_dtype", "auto")),
            tensor_parallel_size=int(doc.get("tensor_parallel_size", 1)),
            attention=Attention(
                backend=att.get("backend"),
                backend_per_kind=dict(att.get("backend_per_kind") or {}),
                use_trtllm_attention=att.get("use_trtllm_attention"),
                flash_attn_version=att.get("flash_attn_version"),
            ),
            speculative_method=doc.get("speculative_method"),
            draft_attention_backend=doc.get("draft_attention_backend"),
            num_speculative_tokens=int(doc.get("num_speculative_tokens") or 0),
            prefix_caching=bool(doc.get("prefix_caching", True)),
            disable_hybrid_kv_cache_manager=bool(doc.get("disable_hybrid_kv_cache_manager", False)),
            max_model_len=doc.get("max_model_len"),
            model_facts=dict(doc.get("model_facts") or {}),
            kv_cache_layout=doc.get("kv_cache_layout"),
            env=dict(doc.get("env") or {}),
            trtllm_cubins=bool(doc.get("trtllm_cubins", True)),
            backends={
                name: (
                    str(b.get("kind", "attention")),
                    tuple(
                        s if isinstance(s, MultipleOf) else size_from_json(s) for s in b["sizes"]
                    ),
                )
                for name, b in (doc.get("backends") or {}).items()
            },
            groups=tuple(GroupSetting(**dict(g)) for g in doc.get("groups") or ()),
        )
