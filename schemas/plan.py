"""The authoritative kernel block-size plan of one deployment on one platform."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from kvconfig.schemas._base import KernelSizeField as KernelSize
from kvconfig.schemas._base import Strict
from kvconfig.schemas.deployment import LayerKind, Runner

Severity = Literal["error", "warning", "info"]
"""``error`` rejects the deployment; ``warning`` and ``info`` do not."""

PlanHooks = Literal["none", "enforce", "strict", "warn"]
"""The kvconfig hooks' mode: ``none`` (not installed), or the mode of a running engine's hooks."""


class PlatformInfo(Strict):
    """The platform the plan was computed for."""

    name: str
    """The platform's name."""
    vendor: str
    """cuda, rocm, xpu, cpu."""
    capability: str | None
    """``"9.0"``-style compute capability, or null."""


class BackendVote(Strict):
    """One attention group of a KV-cache group: a backend and the layers it serves."""

    name: str
    """The backend's vLLM name."""
    class_path: str = Field(alias="class")
    """The backend class (``module.QualName``)."""
    sizes: list[KernelSize]
    """The kernel block sizes it declares for these layers."""
    role: Literal["target", "draft", "mixed"]
    """Whose layers these are."""
    layers: list[str]
    """The layers of this attention group."""
    kernel_block_size: int | None = None
    """The size this attention group narrows the group's k to (``create_metadata_builders``)."""


class Components(Strict):
    """The kernel block size each vLLM component computes on its own for a group."""

    runner: int | None
    """The model runner's vote over all layers (target and draft); it allocates the KV cache."""
    speculator: int | None
    """The speculator's value (null without one, or when it never sees the group)."""


class LayersByRole(Strict):
    """A group's layer names, by role."""

    target: list[str] = Field(default_factory=list)
    """Target-model layers."""
    draft: list[str] = Field(default_factory=list)
    """Drafter layers."""


class GroupPlan(Strict):
    """One KV-cache group: its block size B, its kernel block size k, and who votes what."""

    id: int
    """KV-cache group id, as vLLM numbers it."""
    kind: LayerKind
    """The group's spec kind."""
    block_size: int
    """Manager block size B (tokens per KV-cache block)."""
    block_size_reason: str = ""
    """Why B is what it is (user's --block-size, vLLM's default, hybrid alignment, ...)."""
    kernel_block_size: int | None
    """The authoritative kernel block size k; null when no common size exists."""
    split: int | None
    """Kernel pages per block, B/k; null when k is null."""
    packed: bool = False
    """Block-outermost packed tensors: never split group-wide."""
    layers: LayersByRole
    """The group's layers."""
    backends: list[BackendVote]
    """The attention groups that vote, in vLLM's order."""
    components: Components
    """What the runner and the speculator compute on their own."""


class Finding(Strict):
    """One problem or note, with a stable code (see docs/findings.md)."""

    code: str
    """Stable code, e.g. ``KV101``."""
    name: str
    """Stable slug of the code, e.g. ``component-mismatch``."""
    severity: Severity
    """error, warning or info."""
    group: int | None
    """The KV-cache group concerned, if any."""
    message: str
    """One paragraph: what happens, and the consequence."""
    fixes: list[str] = Field(default_factory=list)
    """Ways to fix it, most direct first."""


class EngineRun(Strict):
    """How vLLM's own start-up made the plan (``--engine vllm``)."""

    kind: Literal["vllm"]
    """Always ``vllm``: the installed vLLM's start-up under an emulated GPU."""
    description: str
    """``vllm VERSION start-up, emulated H100``."""
    refused: bool
    """vLLM raised part-way; the groups are what it had built by then."""
    stood_in: list[str]
    """What the emulation stands in for (docs/engine.md)."""


class Reading(Strict):
    """What was read of an operator file's engine (``kvconfig.load.reading``)."""

    name: str
    """The engine's name in the file."""
    role: str | None
    """``prefill``, ``decode``, or None (aggregated, or the file does not say)."""
    replicas: int | None
    """How many copies the resource runs, when it says."""
    model: str | None
    """The model as vLLM's parser stores it (an id or a path)."""
    model_uri: str | None
    """Where the platform fetches the model from, when the argument is a local mount."""
    tensor: int
    """Tensor-parallel size."""
    pipeline: int
    """Pipeline-parallel size."""
    data: int
    """Data-parallel size."""
    expert: bool
    """Expert parallelism on."""
    block_size: int | None
    """``--block-size`` or the launcher's default; None: vLLM picks it."""
    speculative: str | None
    """The speculative method, ``draft`` for a draft model without one."""
    connector: str | None
    """The KV connector (``MultiConnector(A,B)`` lists the chained ones)."""
    kv_role: str | None
    """The connector's ``kv_role``."""
    vllm_version: str | None
    """The vLLM release the image or a pinned install names."""
    unreadable: str | None
    """Why the arguments could not be read, or None."""
    run_time: dict[str, str]
    """Options whose value is only known at run time, with the word holding it
    (``{"tensor-parallel-size": "$(TP)"}``: finding KV403); their fields keep the default.
    ``spec.baseRefs``: KServe base configs only the cluster holds (the whole command)."""


class OperatorEngine(Strict):
    """The engine of an operator file a plan is for (``kvconfig lint MANIFEST``)."""

    name: str
    """The resource and container, e.g. ``Deployment/qwen3-decode/vllm``."""
    line: int | None
    """The line of its container, service or entry in the file."""
    reading: Reading | None = None
    """What was read of the engine (docs/inputs.md, "What was read")."""


class Plan(Strict):
    """The result of planning one deployment on one platform."""

    verdict: Literal["ok", "reject", "unknown"]
    """``reject`` when any finding is an error; ``unknown`` when kvconfig cannot derive the
    model's layers offline (KV401), which is no rejection; else ``ok``."""
    vllm_version: str
    """The vLLM release planned for."""
    platform: PlatformInfo
    """The platform planned for."""
    source: str
    """The deployment's file (or ``<command>``)."""
    runner: Runner
    """Model runner V1 or V2."""
    hooks: PlanHooks
    """The kvconfig hooks: ``enforce`` when assumed installed (lint) or active (engine)."""
    speculative_method: str | None
    """The speculator, if any."""
    groups: list[GroupPlan]
    """KV-cache groups in vLLM's order."""
    findings: list[Finding]
    """Everything worth saying, errors first."""
    engine: EngineRun | None = None
    """Present when vLLM's own start-up made the plan (``--engine vllm``); absent offline."""
    operator_engine: OperatorEngine | None = None
    """Present when the deployment is an engine of an operator file (docs/inputs.md)."""

    @model_serializer(mode="wrap")
    def _leave_out_absent_records(self, handler: SerializerFunctionWrapHandler) -> Any:
        """``engine`` and ``operator_engine`` are absent, not null, when they do not apply,
        as in the CLI's JSON (docs/json.md)."""
        data = handler(self)
        if isinstance(data, dict):
            for key in ("engine", "operator_engine"):
                if data.get(key, 0) is None:
                    del data[key]
        return data
