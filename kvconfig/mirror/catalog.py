"""The backend catalog at run time: one JSON file per vLLM version, read without pydantic.

Mirrors what each backend class's ``get_supported_kernel_block_sizes`` returns
(``vllm/v1/attention/backends/*``), as ordered size rules over the facts the methods
read. The files (``kvconfig.mirror.versions`` says where) are validated against
``schemas.catalog.Catalog`` by the tests and when they are regenerated; reading them
here is a plain ``json.load`` so that ``kvconfig lint`` starts fast.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from kvconfig._suggest import did_you_mean
from kvconfig.errors import InputError
from kvconfig.mirror import platform as _facts
from kvconfig.mirror import versions
from kvconfig.schemas.sizes import KernelSize, MultipleOf, size_from_json


class SizeContext(NamedTuple):
    """The facts a backend's size rules read."""

    vendor: str
    capability_major: int | None
    kv_quant: str
    head_size: int
    head_size_v: int
    gqa: bool
    trtllm: bool
    fa_version: int | None
    tokens_per_state: int = 1
    cache_dtype: str = "auto"
    """The cache dtype's name the backend reads (the layer's; the model's
    ``--kv-cache-dtype`` where the release's vote asks without a spec)."""


@functools.lru_cache(maxsize=1024)
def size_context(
    *,
    vendor: str,
    capability: tuple[int, int] | None,
    layer_cache_dtype: str,
    model_cache_dtype: str,
    head_size: int,
    head_size_v: int | None,
    target_heads: tuple[int, int],
    use_trtllm_attention: bool | None = None,
    cubins: bool = True,
    batch_invariant: bool = False,
    flash_attn_version: int | None = None,
    tokens_per_state: int = 1,
    softcap: bool = False,
    release: str | None = None,
) -> SizeContext:
    """The facts a layer's backend reads, derived the way vLLM derives them.

    ``target_heads`` are the target model's per-rank (query, KV) heads: FlashInfer reads
    them from the current config even for draft layers. ``model_cache_dtype`` is
    ``--kv-cache-dtype`` (FlashAttention's head-size-256 fallback reads the model's), and
    ``layer_cache_dtype`` the layer's own.
    """
    q, kv = target_heads
    return SizeContext(
        vendor=vendor,
        capability_major=None if capability is None else capability[0],
        kv_quant=_facts.kv_quant(layer_cache_dtype),
        head_size=head_size,
        head_size_v=head_size_v or head_size,
        gqa=kv > 0 and q // kv > 1,
        trtllm=_facts.trtllm_usable(
            capability=capability,
            num_heads=q,
            num_kv_heads=kv,
            use_trtllm_attention=use_trtllm_attention,
            cubins=cubins,
            batch_invariant=batch_invariant,
        ),
        fa_version=_facts.fa_version(
            vendor=vendor,
            capability=capability,
            head_size=head_size,
            head_size_v=head_size_v or None,
            supports_fa4_hd256=True,
            forced=flash_attn_version,
            batch_invariant=batch_invariant,
            quantized_kv=_facts.is_quantized(model_cache_dtype, release),
            softcap_model=softcap,
        ),
        tokens_per_state=tokens_per_state,
        cache_dtype=layer_cache_dtype,
    )


class Rule(NamedTuple):
    """One size rule: conditions, the sizes, and why."""

    when: tuple[tuple[str, Any], ...]
    sizes: tuple[KernelSize, ...]
    scale: str | None
    because: str

    def matches(self, ctx: SizeContext) -> bool:
        """Whether every condition holds in ``ctx``."""
        for key, want in self.when:
            if key.endswith("_not"):
                if getattr(ctx, key[:-4]) in want:
                    return False
            elif isinstance(want, bool):
                if getattr(ctx, key) is not want:
                    return False
            elif getattr(ctx, key) not in want:
                return False
        return True

    def describe(self) -> str:
        """``capability_major in [10], gqa`` style text of the conditions."""
        if not self.when:
            return "otherwise"
        parts = []
        for key, want in self.when:
            if isinstance(want, bool):
                parts.append(key if want else f"not {key}")
            elif key.endswith("_not"):
                parts.append(f"{key[:-4]} not in {list(want)}")
            else:
                parts.append(f"{key} in {list(want)}")
        return ", ".join(parts)


class Entry(NamedTuple):
    """One backend class of the catalog."""

    name: str
    class_path: str
    serves: str
    rules: tuple[Rule, ...]
    source: str
    introspected: bool
    note: str

    def rule_for(self, ctx: SizeContext) -> Rule:
        """The first rule whose conditions hold (a catalog's last rule has none)."""
        for rule in self.rules:
            if rule.matches(ctx):
                return rule
        raise ValueError(f"{self.class_path}: no size rule holds for {ctx}")

    def sizes(self, ctx: SizeContext) -> tuple[KernelSize, ...]:
        """The sizes the backend declares for a layer in ``ctx``."""
        rule = self.rule_for(ctx)
        if rule.scale == "tokens_per_state":
            k = ctx.tokens_per_state
            return tuple(s * k if isinstance(s, int) else s for s in rule.sizes)
        return rule.sizes


class CatalogData(NamedTuple):
    """A loaded catalog: entries by class, by vLLM name, and the ``--attention-backend`` names."""

    vllm_version: str
    entries: tuple[Entry, ...]
    registry: Mapping[str, str]
    by_class: Mapping[str, Entry]
    mamba_registry: Mapping[str, str]
    """vLLM's ``MambaAttentionBackendEnum``: state backend name -> class path."""
    declared: dict[tuple[str, SizeContext], tuple[KernelSize, ...]]
    """The sizes ``declared_by_name`` gave, per backend name and size context (filled as
    it answers: give each catalog its own dict)."""

    def declared_by_name(self, name: str, ctx: SizeContext) -> tuple[KernelSize, ...]:
        """The sizes backend ``name`` (a vLLM name or a class path) declares in ``ctx``;
        ``[MultipleOf(1)]``, vLLM's default, for a class the catalog does not know."""
        key = (name, ctx)
        hit = self.declared.get(key)
        if hit is None:
            entry = self.by_class.get(self.registry.get(name, name))
            hit = entry.sizes(ctx) if entry is not None else (MultipleOf(1),)
            self.declared[key] = hit
        return hit

    def lookup(self, backend: str, *, source: str = "", key: str = "") -> Entry:
        """The entry for a backend given as an ``--attention-backend`` name or a class path."""
        name = backend.strip()
        path = self.registry.get(name.upper(), name)
        entry = self.by_class.get(path)
        if entry is not None:
            return entry
        choices = [n for n in self.registry if self.registry[n] in self.by_class]
        raise InputError(
            f"unknown attention backend {backend!r} for vLLM {self.vllm_version}",
            source=source,
            key=key,
            hint=did_you_mean(name, choices) or "run 'kvconfig catalog' for the list",
        )


def _rule(raw: Mapping[str, Any]) -> Rule:
    when = tuple(
        (k, v if isinstance(v, bool) else tuple(v))
        for k, v in sorted(dict(raw.get("when", {})).items())
        if v is not None
    )
    return Rule(
        when=when,
        sizes=tuple(size_from_json(s) for s in raw["sizes"]),
        scale=raw.get("scale"),
        because=str(raw.get("because", "")),
    )


def parse_catalog(raw: Mapping[str, Any]) -> CatalogData:
    """A catalog from its JSON document (already validated by the schema)."""
    entries = tuple(
        Entry(
            name=e["name"],
            class_path=e["class"],
            serves=e.get("serves", "attention"),
            rules=tuple(_rule(r) for r in e["rules"]),
            source=e.get("source", ""),
            introspected=bool(e.get("introspected", True)),
            note=e.get("note", ""),
        )
        for e in raw["backends"]
    )
    return CatalogData(
        vllm_version=raw["vllm_version"],
        entries=entries,
        registry=dict(raw.get("registry", {})),
        by_class={e.class_path: e for e in entries},
        mamba_registry=dict(raw.get("mamba_registry", {})),
        declared={},
    )


@functools.cache
def load_catalog(version: str) -> CatalogData:
    """The catalog of a vLLM version; InputError for a version kvconfig does not know."""
    with versions.catalog_file(version).open(encoding="utf-8") as f:
        return parse_catalog(json.load(f))
