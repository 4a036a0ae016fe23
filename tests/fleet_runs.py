"""One engine-mode run of every example fleet, shared by the tests that read it."""

from __future__ import annotations

import functools
from pathlib import Path

from kvconfig.fleet import engine_mode, read
from kvconfig.fleet import planner as P
from kvconfig.fleet.model import Engine

FLEETS = Path(__file__).resolve().parent.parent / "examples" / "fleets"
NAMES = sorted(p.stem for p in FLEETS.glob("*.yaml"))


@functools.cache
def run() -> tuple[dict[str, list[Engine]], dict[str, list[Engine]], P.Planner]:
    """(offline engines, vLLM engines) per example fleet: one engine-mode run for all."""
    planner = P.Planner()
    offline: dict[str, list[Engine]] = {}
    flat: list[Engine] = []
    parts: list[list[int]] = []
    for name in NAMES:
        fleet = read.read([str(FLEETS / f"{name}.yaml")])
        engines, _ = P.plan_engines(fleet, planner)
        offline[name] = engines
        parts.append(list(range(len(flat), len(flat) + len(engines))))
        flat += engines
    planned = engine_mode.with_vllm(flat, fleets=parts)
    engine = {name: [planned[i] for i in part] for name, part in zip(NAMES, parts, strict=True)}
    return offline, engine, planner
