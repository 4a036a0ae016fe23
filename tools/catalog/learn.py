"""A small, deterministic decision-list learner: grid answers -> ordered size rules.

Input: for one backend class, samples ``(SizeContext, sizes)`` from the grid.
Output: rules in catalog form (first match wins, the last one unconditional) that
give exactly the sampled sizes at every sample.

Method (sequential covering over "boxes"): a rule's condition is, per fact, a set
of allowed values. The most common answer becomes the final, unconditional rule.
While some remaining sample has another answer, the learner takes, for each other
answer, the tightest box around its samples, shrinks it until it holds no sample
of another answer, and keeps the fewest conditions that keep it so; the answer
whose rule covers most samples is emitted first and its samples are removed.
Every step is ordered, so the output is byte-stable.

Compressed caches: when an answer at ``tokens_per_state = t`` is the answer at 1
with every exact size times ``t``, the rule stores the unscaled sizes with
``"scale": "tokens_per_state"`` (``Glm5NextIndexerBackend``). Any other effect of a
fact the schema cannot express is an error, not a silent approximation. The cache
dtype's name is a fact only for a class whose answers the other facts cannot tell apart
(:data:`NAMED`), so the other classes' rules do not grow with it.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from kvconfig.mirror.catalog import SizeContext
from kvconfig.schemas.sizes import KernelSize, size_to_json
from tools.catalog.grid import Sample

FACTS = (
    "vendor",
    "capability_major",
    "kv_quant",
    "head_size",
    "head_size_v",
    "gqa",
    "trtllm",
    "fa_version",
)
"""The facts a rule may test, in the order the learner prefers them."""

NAMED = (*FACTS, "cache_dtype")
"""The facts with the cache dtype's name, tried only for a backend whose answers the
quantization mode cannot tell apart (vLLM 0.31.0's FlashAttention reads the name)."""

_NEGATABLE = {"kv_quant": "kv_quant_not", "head_size": "head_size_not"}
_OPEN_ENDED = {"head_size": 80}
"""Facts the grid cannot enumerate, and the value that stands for "any other"."""

Sizes = tuple[KernelSize, ...]
Row = tuple[tuple[Any, ...], Sizes]


def _key(value: Any) -> tuple[int, str]:
    return (0, "") if value is None else (1, f"{value!r:>12}")


def _scaled(sizes: Sizes, factor: int) -> Sizes:
    return tuple(s * factor if isinstance(s, int) else s for s in sizes)


def _unscale(
    samples: Sequence[tuple[SizeContext, Sizes]], facts: Sequence[str]
) -> tuple[list[Row], bool]:
    """Rows over ``facts``; divides sizes by tokens_per_state when the class scales by it."""
    base: dict[tuple[Any, ...], Sizes] = {}
    rows: list[tuple[tuple[Any, ...], Sizes, int]] = []
    for ctx, sizes in samples:
        key = tuple(getattr(ctx, f) for f in facts)
        rows.append((key, sizes, ctx.tokens_per_state))
        if ctx.tokens_per_state == 1:
            base[key] = sizes
    varies = any(tps != 1 and base.get(k) not in (None, sizes) for k, sizes, tps in rows)
    scales = varies and all(
        tps == 1 or k not in base or _scaled(base[k], tps) == sizes for k, sizes, tps in rows
    )
    out: list[Row] = []
    for key, answer, tps in rows:
        if not (scales and tps != 1):
            out.append((key, answer))
        elif key in base:
            out.append((key, base[key]))
    return out, scales


def _dedupe(rows: list[Row], where: str, facts: Sequence[str]) -> list[Row]:
    seen: dict[tuple[Any, ...], Sizes] = {}
    for key, sizes in rows:
        if seen.setdefault(key, sizes) != sizes:
            at = dict(zip(facts, key, strict=True))
            raise ValueError(
                f"{where}: the catalog's facts cannot tell {seen[key]} from {sizes} at {at}; "
                "the backend reads something schemas.catalog.Conditions does not have"
            )
    return sorted(seen.items(), key=lambda r: tuple(_key(v) for v in r[0]))


def _tells_apart(samples: Sequence[tuple[SizeContext, Sizes]], facts: Sequence[str]) -> bool:
    """Whether samples with equal ``facts`` (and tokens per state) have equal answers."""
    seen: dict[tuple[Any, ...], Sizes] = {}
    for ctx, sizes in samples:
        key = (*(getattr(ctx, f) for f in facts), ctx.tokens_per_state)
        if seen.setdefault(key, sizes) != sizes:
            return False
    return True


def _tight(keys: list[tuple[Any, ...]], width: int) -> list[set[Any]]:
    return [{k[i] for k in keys} for i in range(width)]


def _in_box(key: tuple[Any, ...], box: Sequence[set[Any] | None]) -> bool:
    return all(b is None or key[i] in b for i, b in enumerate(box))


def _pure(rows: list[Row], want: Sizes, box: Sequence[set[Any] | None]) -> bool:
    return all(s == want for k, s in rows if _in_box(k, box))


def _candidate(rows: list[Row], want: Sizes) -> tuple[int, list[set[Any] | None]] | None:
    """A pure rule for ``want`` over ``rows``, with as few conditions as possible.

    Start from the tightest box around the rows answering ``want``; while it also
    holds other answers, drop the fact value that removes the most of them per row
    of ``want`` it loses. Then keep the smallest set of conditions (earlier FACTS
    preferred) under which the box is still pure.
    """
    width = len(rows[0][0])
    mine = [k for k, s in rows if s == want]
    box = _tight(mine, width)
    while not _pure(rows, want, box):
        best: tuple[Any, ...] | None = None
        inside = [(k, s) for k, s in rows if _in_box(k, box)]
        for i in range(width):
            for value in sorted(box[i], key=_key):
                lost = sum(1 for k, s in inside if k[i] == value and s == want)
                gained = sum(1 for k, s in inside if k[i] == value and s != want)
                if gained == 0 or lost == len(mine):
                    continue
                score = (gained / (lost + 1), -lost, -i)
                if best is None or score > best[0]:
                    best = (score, i, value)
        if best is None:
            return None
        _, i, value = best
        mine = [k for k in mine if k[i] != value]
        box = _tight(mine, width)
    present = _tight([k for k, _ in rows], width)
    needed = [i for i in range(width) if not box[i] >= present[i]]
    for size in range(len(needed) + 1):
        for keep in itertools.combinations(needed, size):
            trial: list[set[Any] | None] = [box[i] if i in keep else None for i in range(width)]
            if _pure(rows, want, trial):
                covered = sum(1 for k, s in rows if s == want and _in_box(k, trial))
                return covered, trial
    return None  # not reached: the full box is pure


def _conditions(
    box: list[set[Any] | None], domain: list[list[Any]], facts: Sequence[str]
) -> dict[str, Any]:
    when: dict[str, Any] = {}
    for i, fact in enumerate(facts):
        allowed = box[i]
        if allowed is None or allowed >= set(domain[i]):
            continue
        values = sorted(allowed, key=_key)
        if isinstance(domain[i][0], bool) and len(values) == 1:
            when[fact] = values[0]
            continue
        if fact in _NEGATABLE:
            rest = sorted(set(domain[i]) - allowed, key=_key)
            other = _OPEN_ENDED.get(fact)
            if (other is not None and other in allowed) or (
                other is None and len(rest) < len(values)
            ):
                when[_NEGATABLE[fact]] = rest
                continue
        when[fact] = values
    return when


def learn_rules(samples: Sequence[Sample], where: str = "") -> list[dict[str, Any]]:
    """Ordered catalog rules reproducing ``samples`` (rejected layers are skipped): over
    :data:`FACTS`, or over :data:`NAMED` where those cannot tell the answers apart."""
    kept = [(ctx, sizes) for ctx, sizes in samples if sizes is not None]
    if not kept:
        raise ValueError(f"{where}: the backend rejected every layer of the grid")
    facts = FACTS if _tells_apart(kept, FACTS) else NAMED
    scaled_rows, scales = _unscale(kept, facts)
    rows = _dedupe(scaled_rows, where, facts)
    domain = [sorted({k[i] for k, _ in rows}, key=_key) for i in range(len(facts))]
    counts = Counter(s for _, s in rows)
    default = max(counts, key=lambda s: (counts[s], [str(x) for x in s]))
    rules: list[dict[str, Any]] = []
    remaining = list(rows)
    while any(s != default for _, s in remaining):
        answers = sorted({s for _, s in remaining}, key=lambda s: [str(x) for x in s])
        best: tuple[int, Sizes, list[set[Any] | None]] | None = None
        for pass_default in (False, True):
            for want in answers:
                if (want == default) != pass_default:
                    continue
                found = _candidate(remaining, want)
                if found and found[0] and (best is None or found[0] > best[0]):
                    best = (found[0], want, found[1])
            if best is not None:
                break
        if best is None:
            raise ValueError(f"{where}: no pure rule found")
        _, want, box = best
        rules.append(_rule(_conditions(box, domain, facts), want, scales))
        remaining = [(k, s) for k, s in remaining if not _in_box(k, box)]
    rules.append(_rule({}, default, scales))
    return rules


def _rule(when: dict[str, Any], sizes: Sizes, scales: bool) -> dict[str, Any]:
    rule: dict[str, Any] = {}
    if when:
        rule["when"] = when
    rule["sizes"] = [size_to_json(s) for s in sizes]
    if scales:
        rule["scale"] = "tokens_per_state"
    return rule
