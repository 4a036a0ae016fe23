"""The plan's records: what each KV-cache group's attention groups declare and vote.

Plain frozen records in the documented JSON shape (docs/json.md): ``Voter`` is one of
vLLM's ``AttentionGroup``s, ``GroupResult`` one KV-cache group, ``PlanResult`` the
plan of a deployment on one platform. The resolver builds them, and so do the hooks
from a running engine (``kvconfig.plan.runtime``); the reporters print them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kvconfig.codes import FindingCode, Severity
from kvconfig.mirror.catalog import Entry
from kvconfig.mirror.platform import PlatformId
from kvconfig.mirror.selection import Selection
from kvconfig.mirror.vote import Declared
from kvconfig.schemas.deployment import LayerSet
from kvconfig.schemas.sizes import KernelSize, size_to_json

_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}

#: The findings that make a verdict ``unknown``: kvconfig cannot tell the plan (the model's
#: layers cannot be derived offline, KV401; its config.json cannot be read offline, KV402;
#: an option that changes the plan is only known at run time, KV403).
CANNOT_TELL = (
    FindingCode.ARCHITECTURE_NOT_DERIVABLE,
    FindingCode.MODEL_UNAVAILABLE,
    FindingCode.RUNTIME_VALUE,
)


class Found(NamedTuple):
    """One finding."""

    code: FindingCode
    group: int | None
    message: str
    fixes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The code's stable slug."""
        return self.code.slug

    @property
    def severity(self) -> Severity:
        """error, warning or info."""
        return self.code.severity

    def to_json(self) -> dict[str, object]:
        """The documented JSON shape of a finding."""
        return {
            "code": self.code.value,
            "name": self.name,
            "severity": self.severity.value,
            "group": self.group,
            "message": self.message,
            "fixes": list(self.fixes),
        }


def sort(findings: Sequence[Found]) -> list[Found]:
    """Errors first, then by group."""
    return sorted(findings, key=lambda f: (_ORDER[f.severity], -1 if f.group is None else f.group))


class LayerInfo(NamedTuple):
    """A layer set with its backend and declared sizes."""

    layer: LayerSet
    selection: Selection
    entry: Entry | None
    backend_name: str | None
    class_path: str
    sizes: tuple[KernelSize, ...]
    heads_per_rank: int
    cache_dtype: str = "auto"
    """The cache dtype the layer uses (sparse MLA may canonicalise ``fp8`` to ``fp8_ds_mla``)."""
    attention_key: tuple[object, ...] = ()
    """vLLM's attention-group key: backend class, layer spec, heads per rank."""
    spec_sizes: tuple[KernelSize, ...] = ()
    """What the backend declares when the layer reports its spec: no vLLM config is
    current then (``get_kv_cache_spec`` in either runner), so backends that read it
    (FlashInfer's large pages, FlashAttention's model-level fallbacks) answer without it.
    ``customize_attention_spec`` and sliding-window layers use these."""

    def display_name(self) -> str:
        """The backend's vLLM name (``get_name()``)."""
        if self.entry is not None:
            return self.entry.name
        return self.backend_name or "?"


class Voter(NamedTuple):
    """One attention group of a KV-cache group (vLLM's ``AttentionGroup``)."""

    name: str
    class_path: str
    sizes: tuple[KernelSize, ...]
    roles: frozenset[str]
    layers: tuple[str, ...]
    kernel_block_size: int | None = None
    """The group's k narrowed for this backend (``create_metadata_builders``)."""

    @property
    def declared(self) -> Declared:
        """The voter as the vote sees it."""
        return (self.name, self.sizes)

    @property
    def role(self) -> str:
        """target, draft or mixed."""
        return next(iter(self.roles)) if len(self.roles) == 1 else "mixed"


class GroupResult(NamedTuple):
    """The plan of one KV-cache group."""

    id: int
    kind: str
    block_size: int
    block_size_reason: str
    kernel_block_size: int | None
    packed: bool
    target_layers: tuple[str, ...]
    draft_layers: tuple[str, ...]
    voters: tuple[Voter, ...]
    runner_k: int | None
    """The model runner's vote over all the group's layers: it allocates the KV cache."""
    speculator_k: int | None
    """The speculator's value on its own (None without draft layers in the group)."""

    @property
    def split(self) -> int | None:
        """B/k, or None without k."""
        k = self.kernel_block_size
        return None if k is None else self.block_size // k

    def to_json(self) -> dict[str, object]:
        """The group in the documented JSON shape."""
        return {
            "id": self.id,
            "kind": self.kind,
            "block_size": self.block_size,
            "block_size_reason": self.block_size_reason,
            "kernel_block_size": self.kernel_block_size,
            "split": self.split,
            "packed": self.packed,
            "layers": {"target": list(self.target_layers), "draft": list(self.draft_layers)},
            "backends": [
                {
                    "name": v.name,
                    "class": v.class_path,
                    "sizes": [size_to_json(s) for s in v.sizes],
                    "role": v.role,
                    "layers": list(v.layers),
                    "kernel_block_size": v.kernel_block_size,
                }
                for v in self.voters
            ],
            "components": {"runner": self.runner_k, "speculator": self.speculator_k},
        }


class EngineRun(NamedTuple):
    """How vLLM's own start-up made a plan (``--engine vllm``; absent for offline plans)."""

    description: str
    """``vllm VERSION start-up, emulated H100``."""
    refused: bool
    """vLLM raised part-way: the groups are what it had built by then."""
    stood_in: tuple[str, ...]
    """What the emulation stands in for (docs/engine.md)."""

    def to_json(self) -> dict[str, object]:
        """The documented JSON shape of ``engine``."""
        return {
            "kind": "vllm",
            "description": self.description,
            "refused": self.refused,
            "stood_in": list(self.stood_in),
        }


class PlanResult(NamedTuple):
    """The plan of one deployment on one platform (or of a running engine)."""

    source: str
    """The deployment's file, ``<command>``, or the running engine."""
    vllm_version: str
    platform: PlatformId
    runner: str
    """The model runner: ``v1`` or ``v2``."""
    hooks: str
    """``none``, ``enforce``, or the mode of a running engine's hooks."""
    speculative_method: str | None
    groups: tuple[GroupResult, ...]
    findings: tuple[Found, ...]
    layers: tuple[LayerInfo, ...] = ()
    """Every layer set with its backend and sizes (what ``kvconfig explain`` shows)."""
    engine: EngineRun | None = None
    """Set when vLLM's own start-up made the plan (``--engine vllm``)."""

    @property
    def verdict(self) -> str:
        """``reject`` when any finding is an error; ``unknown`` when kvconfig cannot tell
        (``CANNOT_TELL``: cannot tell is no rejection); else ``ok``."""
        if any(f.severity is Severity.ERROR for f in self.findings):
            return "reject"
        if any(f.code in CANNOT_TELL for f in self.findings):
            return "unknown"
        return "ok"

    def to_json(self) -> dict[str, object]:
        """The plan in the documented, stable JSON shape (docs/json.md)."""
        p = self.platform
        return {
            "verdict": self.verdict,
            "vllm_version": self.vllm_version,
            "platform": {"name": p.name, "vendor": p.vendor, "capability": p.capability_text()},
            "source": self.source,
            "runner": self.runner,
            "hooks": self.hooks,
            "speculative_method": self.speculative_method,
            "groups": [g.to_json() for g in self.groups],
            "findings": [f.to_json() for f in self.findings],
            **({"engine": self.engine.to_json()} if self.engine is not None else {}),
        }
