"""The fleet's working objects: an engine as read, and as planned."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvconfig.plan.result import PlanResult
    from kvconfig.schemas.deployment import Deployment


MAX_PARALLEL = 1024
"""Largest parallel size (tensor, pipeline, data, context) a fleet engine may have."""


@dataclass(frozen=True)
class EngineSpec:
    """One engine as the fleet file (or a deployment argument) describes it."""

    name: str
    role: str
    """prefill, decode or both."""
    target: str | tuple[str, ...]
    """A deployment file (relative to ``cwd``) or a ``vllm serve`` argv."""
    cwd: Path
    """The folder relative paths resolve from."""
    source: str
    """What the user named (a file, or ``<command>``)."""
    platform: str | None = None
    replicas: int = 1
    given: Mapping[str, Any] = field(default_factory=dict)
    """``vllm serve`` options the fleet sets (parallelism, ``kv-transfer-config``)."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Options a launcher sets when the deployment leaves them unset."""
    env: Mapping[str, str] = field(default_factory=dict)
    hooks: str | None = None
    offload: tuple[Mapping[str, Any], ...] = ()
    """``OffloadingConnector`` entries the fleet's offload tiers add to the engine's
    ``--kv-transfer-config`` (whichever sets it: the deployment or the fleet)."""
    where: str = ""
    """Where the engine is declared (``fleet.yaml:12``), for input errors."""
    engine: Any = field(default=None, compare=False)
    """The operator file's engine (``kvconfig.load.engines.Engine``) this spec stands for:
    read with the same loader as ``kvconfig lint`` (its mounts, notes, model URI and
    environment kept), not rebuilt from ``target``."""
    vllm_version: str | None = None
    """The engine's own vLLM release (default: the fleet's)."""
    refused: str = ""
    """Why vLLM's parser refuses the server's command (an operator file's server that
    never starts, KV812); empty when it starts."""

    def key(self, extra: Mapping[str, Any] | None = None) -> str:
        """Engines with the same key have the same plan."""
        import json

        return json.dumps(
            [
                self.target,
                str(self.cwd),
                self.platform,
                dict(self.given),
                dict(self.defaults),
                dict(self.env),
                self.hooks,
                self.vllm_version,
                [dict(o) for o in self.offload],
                dict(extra or {}),
                _engine_key(self.engine),
            ],
            sort_keys=True,
            default=str,
        )


@dataclass
class Engine:
    """One engine, planned."""

    spec: EngineSpec
    loaded: Loaded
    result: PlanResult
    plan: dict[str, Any]
    """The plan JSON (``kvconfig plan --format json``), or vLLM's own (engine mode)."""
    vllm: Mapping[str, Any] | None = None
    """Engine mode: what vLLM's connector code computed on the engine's objects."""
    cache: dict[str, Any] = field(default_factory=dict, repr=False)
    """Values computed once per engine (its components)."""
    release: str | None = None
    """The vLLM release the engine names when kvconfig plans it with another release's
    rules (KV502): what vLLM's own version string would say, for the cross-engine
    rules that compare releases (the NIXL compatibility hash)."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def deployment(self) -> Deployment:
        """The deployment the engine's plan was made from (its settings and layers)."""
        return self.loaded.deployment

    @property
    def options(self) -> Mapping[str, Any]:
        return self.loaded.options

    def option_int(self, name: str, default: int = 1) -> int:
        """An integer ``vllm serve`` option (parallel sizes, ``--prefix-match-unit``)."""
        value = self.options.get(name)
        if value is None or isinstance(value, bool):
            return default
        try:
            number = int(value)
        except (TypeError, ValueError, OverflowError):
            return default
        if name.endswith("-parallel-size") and not 1 <= number <= MAX_PARALLEL:
            from kvconfig.errors import InputError

            raise InputError(
                f"expected an integer from 1 to {MAX_PARALLEL}, got {number}",
                source=self.spec.source,
                key=name,
                hint="e.g. 1, 2, 4 or 8",
            )
        return number

    @property
    def tp(self) -> int:
        return int(self.deployment.tensor_parallel_size)

    @property
    def pp(self) -> int:
        return self.option_int("pipeline-parallel-size")

    @property
    def dp(self) -> int:
        return self.option_int("data-parallel-size")

    @property
    def dcp(self) -> int:
        return self.option_int("decode-context-parallel-size")

    @property
    def pcp(self) -> int:
        return self.option_int("prefill-context-parallel-size")

    @property
    def platform(self) -> str:
        return self.result.platform.name

    @property
    def env(self) -> Mapping[str, str]:
        return self.loaded.env


@dataclass(frozen=True)
class Loaded:
    """An engine's deployment and the serve options the fleet rules read."""

    deployment: Deployment
    """The deployment the resolver plans."""
    options: Mapping[str, Any]
    """``vllm serve`` options by vLLM's names (dashes), as given."""
    env: Mapping[str, str]
    """The engine's environment (the command's, the file's and the fleet's)."""
    base: Path
    """The folder relative paths in the options resolve from."""
    native: bool = False
    """A native kvconfig file (no ``vllm serve`` options beyond the deployment's)."""
    model_config: Mapping[str, Any] = field(default_factory=dict)
    """The target model's ``config.json`` (its text config for multimodal models)."""


def _engine_key(engine: Any) -> Any:
    """What of an operator engine changes its plan (not its name, line or role)."""
    if engine is None:
        return None
    data = engine.to_json()
    return {k: v for k, v in data.items() if k not in ("name", "line", "source", "notes", "role")}
