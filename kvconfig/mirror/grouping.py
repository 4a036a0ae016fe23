"""vLLM's KV-cache grouping, on kvconfig's ``Spec``s.

Mirrors ``get_kv_cache_groups`` in ``vllm/v1/core/kv_cache_planning.py``, in order:

1. ``--disable-hybrid-kv-cache-manager``: ``unify_hybrid_kv_cache_specs`` promotes
   sliding-window specs to full attention (``_promote_local_kv_cache_specs``);
2. one group when every spec merges (``is_kv_cache_spec_uniform``);
3. one group when every layer has the same block size and base type
   (``UniformTypeKVCacheSpecs``: full attention with MLA, one sliding window, or
   equal Mamba pages);
4. block-outermost layouts with mixed page sizes: ``_get_packed_kv_cache_groups``;
5. otherwise ``unify_kv_cache_spec_page_size`` (smaller pages scale their block size
   by the page ratio; Mamba and non-MLA attention pad), then
   ``_get_kv_cache_groups_uniform_page_size``: bucket equal specs, merge mergeable
   buckets, and split every bucket ``layers[i::num_groups]`` into groups of the
   smallest bucket's size (the largest when it is under 1.5x the smallest), the
   last ones padded.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import NamedTuple

from kvconfig.errors import GroupingError
from kvconfig.mirror.specs import Spec


class SpecGroup(NamedTuple):
    """One ``KVCacheGroupSpec``: its layers and their per-layer specs."""

    layers: tuple[str, ...]
    specs: dict[str, Spec]
    uniform_type: bool = False
    """``UniformTypeKVCacheSpecs`` (per-layer specs may differ) rather than one merged spec."""

    @property
    def block_size(self) -> int:
        """The group's manager block size B."""
        return self.specs[self.layers[0]].block_size

    @property
    def kind(self) -> str:
        """``get_kv_cache_spec_kind`` of the group spec."""
        kinds = {self.specs[n].kind for n in self.layers}
        if len(kinds) == 1:
            return kinds.pop()
        return "full_attention"


def _attention_fields(spec: Spec) -> tuple[object, ...]:
    """What ``FullAttentionSpec.merge`` requires equal (everything but the window)."""
    return (
        spec.cls,
        spec.block_size,
        spec.heads,
        spec.content,
        spec.tokens_per_state,
        spec.padded,
        spec.alignment,
        spec.fields,
    )


def merges(specs: list[Spec]) -> bool:
    """``type(specs[0]).merge(specs)`` succeeds."""
    try:
        return uniform(specs)
    except GroupingError:
        return False


def uniform(specs: list[Spec]) -> bool:
    """``is_kv_cache_spec_uniform``: whether the specs merge into one.

    ``FullAttentionSpec.merge`` picks the window before it compares the other fields, so
    full-attention specs with two different windows raise (GroupingError) rather than
    answer False.
    """
    first = specs[0]
    if first.cls == "full":
        if any(s.cls != "full" for s in specs):
            return False
        if len({s.window for s in specs if s.window is not None}) > 1:
            raise GroupingError(
                "All attention layers in the same KV cache group must have the same window size."
            )
        return len({_attention_fields(s) for s in specs}) == 1
    return all(s == first for s in specs)


def is_uniform_type(specs: list[Spec]) -> bool:
    """``UniformTypeKVCacheSpecs.is_uniform_type``."""
    if len({s.block_size for s in specs}) > 1:
        return False
    if len({s.cls == "mamba" for s in specs}) > 1:  # dcp_sharded differs
        return False
    first = specs[0]
    if first.family == "full":
        return all(s.family == "full" for s in specs)
    if first.cls == "sliding_window":
        return all(s.cls == "sliding_window" and s.window == first.window for s in specs)
    if first.cls == "chunked_local":
        return all(s.cls == "chunked_local" for s in specs)
    if first.cls == "mamba":
        return all(
            s.cls == "mamba" and s.page == first.page and s.fields == first.fields for s in specs
        )
    return False


def promote_local(specs: dict[str, Spec]) -> dict[str, Spec]:
    """``_promote_local_kv_cache_specs``: sliding windows and chunked-local attention
    become full attention."""
    values = list(specs.values())
    if uniform(values) or is_uniform_type(values):
        return specs
    has_full = any(s.cls in ("full", "mla") for s in values)
    has_window = any(s.cls in ("sliding_window", "chunked_local") for s in values)
    full_blocks = {s.block_size for s in values if s.cls in ("full", "mla")}
    full_block = next(iter(full_blocks)) if len(full_blocks) == 1 else None
    out = dict(specs)
    if has_full and has_window:
        for name, spec in specs.items():
            if spec.cls not in ("sliding_window", "chunked_local"):
                continue
            block = full_block or spec.block_size
            padded = None
            if spec.padded is not None:
                padded = max(spec.padded, spec.unpadded(block))
            out[name] = spec._replace(cls="full", block_size=block, padded=padded)
    promoted = list(out.values())
    if not (uniform(promoted) or is_uniform_type(promoted)):
        raise GroupingError("Failed to promote local KV cache specs to one unified type.")
    return out


def unify_page_size(specs: dict[str, Spec]) -> dict[str, Spec]:
    """``unify_kv_cache_spec_page_size``."""
    pages = {s.page for s in specs.values()}
    if len(pages) <= 1:
        return specs
    biggest = max(pages)
    out: dict[str, Spec] = {}
    for name, spec in specs.items():
        if spec.page == biggest:
            out[name] = spec
        elif spec.cls == "mamba":
            out[name] = spec._replace(padded=biggest)
        elif biggest % spec.page == 0:
            out[name] = spec._replace(block_size=spec.block_size * (biggest // spec.page))
        elif spec.cls != "mla":
            out[name] = spec._replace(padded=biggest)
        else:
            raise GroupingError(
                f"Layer {name}: page size is not divisible by the maximum page size and "
                "cannot be padded. Padding is only supported for non-MLA attention layers."
            )
    return out


def _uniform_page_size_groups(specs: dict[str, Spec]) -> list[SpecGroup]:
    """``_get_kv_cache_groups_uniform_page_size``."""
    by_spec: dict[Spec, list[str]] = {}
    for name, spec in specs.items():
        by_spec.setdefault(spec, []).append(name)
    layer_buckets: list[list[str]] = []
    spec_buckets: list[list[Spec]] = []
    for spec, names in by_spec.items():
        for bucket_names, bucket_specs in zip(layer_buckets, spec_buckets, strict=True):
            if merges([*bucket_specs, spec]):
                bucket_names.extend(names)
                bucket_specs.append(spec)
                break
        else:
            layer_buckets.append(list(names))
            spec_buckets.append([spec])
    smallest = min(len(b) for b in layer_buckets)
    largest = max(len(b) for b in layer_buckets)
    size = largest if largest < smallest * 1.5 else smallest
    groups = []
    for names in layer_buckets:
        count = -(-len(names) // size)
        for i in range(count):
            part = tuple(names[i::count])
            groups.append(SpecGroup(part, {n: specs[n] for n in part}))
    return groups


def _packed_groups(specs: dict[str, Spec]) -> list[SpecGroup] | None:
    """``_get_packed_kv_cache_groups`` for block-outermost layouts with mixed pages."""
    if len({s.page for s in specs.values()}) <= 1:
        return None
    buckets: list[dict[str, Spec]] = []
    for name, spec in specs.items():
        for bucket in buckets:
            if is_uniform_type([*bucket.values(), spec]):
                bucket[name] = spec
                break
        else:
            buckets.append({name: spec})

    def most_per_page(bucket: dict[str, Spec]) -> int:
        return Counter(s.page for s in bucket.values()).most_common(1)[0][1]

    info = []
    for bucket in buckets:
        by_page: dict[int, list[str]] = {}
        for name, spec in bucket.items():
            by_page.setdefault(spec.page, []).append(name)
        balanced = len({len(v) for v in by_page.values()}) == 1
        info.append((bucket, by_page, balanced))
    floor = max(
        (most_per_page(b) for b, by_page, bal in info if bal and len(by_page) > 1), default=0
    )
    repeats = (
        _approximate_gcd([most_per_page(b) for b, _, bal in info if bal], floor) if floor else None
    )

    def groups_for(bucket: dict[str, Spec], balanced: bool) -> int:
        if balanced and repeats is not None:
            return -(-most_per_page(bucket) // repeats)
        return 1

    def widest(by_page: dict[int, list[str]], n: int) -> int:
        return sum(-(-len(names) // n) * page for page, names in by_page.items())

    def is_state(bucket: dict[str, Spec]) -> bool:
        first = next(iter(bucket.values()))
        return first.cls == "mamba" or (repeats is None and first.cls == "sliding_window")

    anchor = max(
        (
            widest(by_page, len(b) if is_state(b) else groups_for(b, bal))
            for b, by_page, bal in info
        ),
        default=0,
    )
    groups: list[SpecGroup] = []
    for bucket, by_page, balanced in info:
        n = groups_for(bucket, balanced)
        if anchor and is_state(bucket):
            per_block = max(anchor // next(iter(bucket.values())).page, 1)
            n = max(n, -(-len(bucket) // per_block))
        if n == 1:
            groups.append(SpecGroup(tuple(bucket), dict(bucket), uniform_type=True))
            continue
        pattern = list(zip(*by_page.values(), strict=True))
        for i in range(n):
            names = tuple(name for repeat in pattern[i::n] for name in repeat)
            groups.append(SpecGroup(names, {k: bucket[k] for k in names}, uniform_type=True))
    return groups


def _approximate_gcd(values: list[int], lower_bound: int) -> int:
    """``_approximate_gcd``: the chunk size with the least upward padding, ties larger."""
    low = max(1, lower_bound)
    high = max(values)
    if low > high:
        return low
    best, best_pad = low, -1
    for d in range(low, high + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad < 0 or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


def _fallback(specs: dict[str, Spec]) -> list[SpecGroup] | None:
    """``_try_get_full_allocation_fallback_groups``: MLA next to regular sliding windows."""
    values = list(specs.values())
    if not (any(s.cls == "mla" for s in values) and any(s.cls == "sliding_window" for s in values)):
        return None
    try:
        promoted = promote_local(specs)
    except GroupingError:
        return None
    if not is_uniform_type(list(promoted.values())):
        return None
    return [SpecGroup(tuple(promoted), promoted, uniform_type=True)]


def group_specs(
    specs: dict[str, Spec], *, disable_hybrid: bool = False, block_outermost: bool = False
) -> list[SpecGroup]:
    """The KV-cache groups vLLM forms for these per-layer specs (layer order kept)."""
    if not specs:
        return []
    if disable_hybrid:
        specs = promote_local(specs)
    values = list(specs.values())
    if uniform(values):
        return [SpecGroup(tuple(specs), dict(specs))]
    if is_uniform_type(values):
        return [SpecGroup(tuple(specs), dict(specs), uniform_type=True)]
    if block_outermost and (packed := _packed_groups(specs)) is not None:
        return packed
    try:
        unified = unify_page_size(specs)
    except GroupingError:
        fallback = _fallback(specs)
        if fallback is None:
            raise
        return fallback
    return _uniform_page_size_groups(unified)


def bytes_per_block(groups: list[SpecGroup]) -> int:
    """Block-outermost ``bytes_per_block``: the widest group, rounded to every alignment."""
    widest = max(sum(g.specs[n].page for n in g.layers) for g in groups)
    alignment = math.lcm(*(g.specs[n].stride_alignment() for g in groups for n in g.layers))
    return -(-widest // alignment) * alignment
