"""What the fleet rules share: the finding (``Issue``), engine pairs, and the search for a
fix that the replanned engines pass (``Replan``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from kvconfig.codes import FindingCode
from kvconfig.errors import ConnectorRefusal
from kvconfig.fleet.components import components
from kvconfig.fleet.components.groups import Group
from kvconfig.fleet.model import Engine, EngineSpec

Replan = Callable[[Engine, Mapping[str, Any]], Engine | None]
"""The engine planned again with these ``vllm serve`` options set (None: it cannot be)."""

BLOCK_CANDIDATES = (16, 32, 64, 128, 256, 512, 1024)
"""Block sizes a fix may propose (vLLM's usual ones)."""

BACKEND_CANDIDATES = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION")
"""Attention backends a fix may propose for a pair on different GPUs."""

_ORDER = {"error": 0, "warning": 1, "info": 2}

_CODES = {c.value: c for c in FindingCode}


@dataclass
class Issue:
    """One fleet finding."""

    code: str
    engines: list[str]
    message: str
    vllm: str
    fixes: list[str] = field(default_factory=list)
    group: int | None = None
    values: dict[str, int | str | None] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return _CODES[self.code].slug

    @property
    def severity(self) -> str:
        return _CODES[self.code].severity.value

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape (``schemas.fleet_plan.FleetFinding``)."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "engines": list(self.engines),
            "group": self.group,
            "values": dict(self.values),
            "message": self.message,
            "vllm": self.vllm,
            "fixes": list(self.fixes),
        }


def sort(issues: Iterable[Issue]) -> list[Issue]:
    """Errors first, then by code."""
    return sorted(issues, key=lambda i: (_ORDER[i.severity], i.code))


def _refused(refusal: ConnectorRefusal, at: str = "") -> str:
    where = f" ({at})" if at else ""
    return f"raises {refusal}{where}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass(frozen=True)
class Pair:
    """A producer and a consumer that transfer KV."""

    prefill: Engine
    decode: Engine


class Member(Protocol):
    """A fleet engine, planned or not: what pairing needs."""

    @property
    def spec(self) -> EngineSpec: ...


M = TypeVar("M", bound=Member)


def role_pairs(members: Sequence[M]) -> list[tuple[M, M]]:
    """Every producer-consumer pair by role: prefill (or both) engines with decode (or
    both), two ``both`` engines excepted."""
    out = []
    for p in members:
        if p.spec.role not in ("prefill", "both"):
            continue
        for d in members:
            if d is p or d.spec.role not in ("decode", "both"):
                continue
            if p.spec.role == "both" and d.spec.role == "both":
                continue
            out.append((p, d))
    return out


def pairs(engines: Sequence[Engine]) -> list[Pair]:
    """Every producer-consumer pair of planned engines."""
    return [Pair(p, d) for p, d in role_pairs(engines)]


def _candidates(pair: Pair) -> list[int]:
    """Block sizes to try, nearest the engines' own first (the largest at or below it,
    then larger ones)."""
    groups = [g for e in (pair.prefill, pair.decode) for g in components(e).groups]
    current = max((g.block_size for g in groups), default=16)
    sizes: list[int] = list(BLOCK_CANDIDATES)
    if any(g.state for g in groups) and current <= 4096:
        sizes = list(range(64, 4097, 64))
    below = sorted((b for b in sizes if b <= current), reverse=True)
    above = sorted(b for b in sizes if b > current)
    return below + above


def _common_block(
    pair: Pair, ok: Callable[[Pair], bool], replan: Replan, limit: int = 3
) -> list[int]:
    """Block sizes that, set on both engines, make ``ok`` hold."""
    found: list[int] = []
    for b in _candidates(pair):
        p = replan(pair.prefill, {"block-size": b})
        d = replan(pair.decode, {"block-size": b})
        if p is None or d is None or p.plan.get("verdict") != "ok" or d.plan.get("verdict") != "ok":
            continue
        if ok(Pair(p, d)):
            found.append(b)
            if len(found) >= limit:
                break
    return found


def _distinct(engines: Sequence[Engine]) -> list[tuple[Engine, int]]:
    """One engine per distinct configuration, with how many engines it stands for."""
    seen: dict[str, list[Any]] = {}
    for e in engines:
        key = e.spec.key()
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [e, 1]
    return [(e, n) for e, n in seen.values()]


def group_of(g: Group) -> str:
    return f"group {g.id} ({g.kind})"
