"""What the reporters report: one outcome per deployment and platform, a plan or the
input error that stopped it, and where in the file each finding points."""

from __future__ import annotations

from typing import Any, NamedTuple

from kvconfig.codes import FindingCode
from kvconfig.errors import InputError
from kvconfig.plan.result import Found, PlanResult


class Outcome(NamedTuple):
    """One (deployment, platform) lint result, or an input error for that deployment."""

    source: str
    platform: str
    plan: PlanResult | None = None
    error: str | None = None
    line_of: dict[str, int] | None = None
    problem: InputError | None = None
    """The input error behind ``error``, for its file, line and key."""
    engine: str | None = None
    """An operator file's engine (``Deployment/qwen3-decode/vllm``); None otherwise."""
    engine_line: int | None = None
    """The line of that engine's container, service or entry in ``source``."""
    reading: Any = None
    """What was read of that engine (``kvconfig.load.reading.Reading``); None otherwise."""

    def label(self) -> str:
        """The deployment as reports name it: the file, or ``FILE:LINE ENGINE``."""
        if self.engine is None:
            return self.source
        at = f"{self.source}:{self.engine_line}" if self.engine_line else self.source
        return f"{at} {self.engine}"

    def engine_json(self) -> dict[str, object] | None:
        """The ``operator_engine`` record of the JSON reports (None: not an engine)."""
        if self.engine is None:
            return None
        out: dict[str, object] = {"name": self.engine, "line": self.engine_line}
        if self.reading is not None:
            out["reading"] = self.reading.to_json()
        return out

    @property
    def verdict(self) -> str:
        """ok, reject or error."""
        if self.plan is None:
            return "error"
        return self.plan.verdict

    def where(self) -> tuple[str, int | None, str]:
        """An error's file, line, and its text without them (for annotations)."""
        p = self.problem
        if p is None:
            return self.source, None, self.error or ""
        own = not p.source or p.source == self.source
        if own:
            return self.source, p.line, InputError(p.message, key=p.key, hint=p.hint).render()
        if p.source.startswith("<") or not p.source:
            return self.source, None, p.render()
        return p.source, p.line, InputError(p.message, key=p.key, hint=p.hint).render()

    def line_of_finding(self, f: Found) -> int:
        """The line of the serve-config key a finding points at (1 when it has none)."""
        return (self.line_of or {}).get(FINDING_KEY.get(f.code, ""), self.engine_line or 1)


#: Which key a finding points at in a serve config, for editor and CI annotations.
FINDING_KEY = {
    FindingCode.COMPONENT_MISMATCH: "block-size",
    FindingCode.SPECULATOR_SPLIT_ERROR: "block-size",
    FindingCode.MISMATCH_FIXED_BY_HOOKS: "block-size",
    FindingCode.NO_COMMON_KERNEL_SIZE: "block-size",
    FindingCode.SPECULATOR_NO_COMMON_KERNEL_SIZE: "speculative-config",
    FindingCode.BACKEND_UNSUPPORTED: "attention-backend",
    FindingCode.BACKEND_UNKNOWN: "attention-backend",
}
