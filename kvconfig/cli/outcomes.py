"""From the command line's arguments to outcomes: each file read once
(``kvconfig.cli.targets``), each deployment loaded through the loader the API uses, then
planned on every platform asked for offline (``kvconfig.cli.engine_runs`` adds vLLM's own
start-up)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from kvconfig.cli import targets as T
from kvconfig.errors import InputError, NoEngine
from kvconfig.report.outcome import Outcome

if TYPE_CHECKING:
    from kvconfig.errors import CannotTell
    from kvconfig.load.deployment import Loaded
    from kvconfig.load.hub import ModelPaths
    from kvconfig.mirror.platform import PlatformId
    from kvconfig.plan.result import PlanResult


def env_pairs(items: Sequence[str]) -> dict[str, str]:
    """``--env KEY=VALUE`` options as the vLLM environment they describe."""
    from kvconfig.load.checks import check_env

    env = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise InputError(
                f"expected KEY=VALUE, got {item!r}",
                key="--env",
                hint="e.g. --env VLLM_USE_V2_MODEL_RUNNER=0",
            )
        env[name.strip()] = value
    check_env(env, "")
    return env


def fleet_options(args: argparse.Namespace, command: Sequence[str] | None) -> dict[str, Any]:
    """``kvconfig.fleet.fleet_document``'s arguments from ``lint --fleet``'s command line
    (every option ``lint`` takes; the CLI and ``kvconfig.plan_fleet`` both use this)."""
    model_paths = None
    if args.model_path:
        from kvconfig.load.hub import ModelPaths

        model_paths = ModelPaths.parse(args.model_path)
    if not args.deployments and not command:
        raise InputError("no fleet given", key="--fleet", hint="kvconfig lint --fleet FLEET.yaml")
    return {
        "command": list(command) if command else None,
        "platform": args.platform,
        "env": env_pairs(args.env),
        "hooks": args.hooks,
        # auto: offline; an engine kvconfig cannot derive is unknown (KV401)
        "engine": "vllm" if args.engine in ("vllm", "both") else "offline",
        "jobs": args.jobs,
        "timeout": args.engine_timeout,
        "model_paths": model_paths,
        "download": args.download or None,
        "python": args.vllm_python,
        "trust_remote_code": bool(getattr(args, "trust_remote_code", False)),
        "vllm_version": args.vllm_version or getattr(args, "configured_version", None),
        "trtllm_cubins": args.trtllm_cubins,
    }


class Settings(NamedTuple):
    """The command line's settings that every deployment is read and planned with."""

    env: dict[str, str]
    platforms: list[PlatformId] | None
    """``--platform`` (None: each deployment's own)."""
    model_paths: ModelPaths | None
    engine: str
    """``offline``, ``vllm``, ``both`` or ``auto``."""
    configured_version: str | None = None
    """The repository configuration's ``vllm_version`` (``[tool.kvconfig]`` or
    ``.kvconfig.toml``): below ``--vllm-version``, above an image tag or a pinned install
    (docs/inputs.md), as ``kvconfig.load.repo_config.effective`` sets it."""


def settings(args: argparse.Namespace) -> Settings:
    """The settings of ``args``, each checked once."""
    from kvconfig.load.platforms import parse_platforms

    paths = None
    if getattr(args, "model_path", None):
        from kvconfig.load.hub import ModelPaths

        paths = ModelPaths.parse(args.model_path)
    engine = getattr(args, "engine", "offline")
    if engine != "offline":
        jobs, timeout = args.jobs, args.engine_timeout
        if jobs < 1 or timeout <= 0:
            raise InputError(
                f"expected a positive number, got {jobs if jobs < 1 else timeout}",
                key="--jobs" if jobs < 1 else "--engine-timeout",
                hint="e.g. --jobs 2 --engine-timeout 300",
            )
    return Settings(
        env_pairs(args.env),
        list(parse_platforms(args.platform)) if args.platform else None,
        paths,
        engine,
        getattr(args, "configured_version", None),
    )


class Slot(NamedTuple):
    """One deployment on one platform, planned offline (``offline``), waiting for vLLM's
    start-up (``engine_runs.pending``), or an input error (``outcome``)."""

    item: T.Item
    loaded: Loaded | CannotTell | None
    platform: PlatformId | None
    outcome: Outcome | None = None
    offline: PlanResult | None = None


def read_all(
    args: argparse.Namespace, command: list[str] | None, many: bool
) -> tuple[Settings, list[Slot]]:
    """One slot per (deployment, platform): each deployment is read once, then planned
    offline on every platform (unless only vLLM's start-up is asked for). With ``many``
    (``lint``) a deployment that cannot be read or planned becomes an error slot;
    otherwise the InputError propagates."""
    from kvconfig.cli import prefetch

    s = settings(args)
    targets = T.named(args, command, many)
    done: dict[int, list[Slot] | T.Walked] = {}  # a target passed over: its Walked

    def take(index: int, found: prefetch.Result | None) -> None:
        target = targets[index]
        try:
            items, error = found or (T.read(target, s.env), None)
            if items is None:
                raise error or AssertionError(target)
        except InputError as err:
            if isinstance(err, NoEngine) and isinstance(target, T.Walked):
                done[index] = target
            elif not many:
                raise
            else:
                done[index] = _failed(T.Item(T.source_of(target), target), s.platforms, err)
            return
        done[index] = [slot for item in items for slot in _slots(args, s, item, many)]

    with prefetch.reading(targets, s.env) as read:  # on every core, for many files
        for index, found in read.arrived() if many else ():
            take(index, found)  # planned as the workers send them back, kept in order
        for index in range(len(targets)):
            if index not in done:
                take(index, read.get(index))
    ordered = [done[index] for index in range(len(targets))]
    passed = [got for got in ordered if isinstance(got, T.Walked)]
    slots = [slot for got in ordered if not isinstance(got, T.Walked) for slot in got]
    if passed:
        say(T.passed_over(passed))
        for empty in [] if slots else T.empty_folders(passed):
            slots += _failed(T.Item(empty.source, empty.source), s.platforms, empty)
    return s, slots


def finish(slots: Sequence[Slot]) -> list[Outcome]:
    """The slots' outcomes; each input error's line goes to stderr, and so does a warning
    line for each deployment whose verdict is unknown (KV401, KV402, KV403)."""
    out = []
    for slot in slots:
        assert slot.outcome is not None
        o = slot.outcome
        if o.problem is not None:
            say(str(o.problem))
        elif o.verdict == "unknown":
            say(f"warning: {o.label()} [{o.platform}]: verdict unknown, {_why(slot.loaded)}")
        out.append(o)
    return out


def _slots(args: argparse.Namespace, s: Settings, item: T.Item, many: bool) -> list[Slot]:
    """The slots of one deployment: read once, then one per platform."""
    try:
        loaded = _load(args, s, item)
    except InputError as err:
        if not many:
            raise
        return _failed(item, s.platforms, err)
    platforms: Sequence[PlatformId | None] = s.platforms or _own_platforms(item, loaded)
    slots: list[Slot] = []
    failed: list[tuple[PlatformId | None, InputError]] = []
    for platform in platforms:
        try:
            slots.append(_offline(item, loaded, platform, s.engine))
        except InputError as err:
            if not many:
                raise
            failed.append((platform, err))
    if len(failed) == len(platforms) > 1 and len({str(f) for _, f in failed}) == 1:
        return [error_slot(item, "all platforms", failed[0][1])]
    return slots + [error_slot(item, label(p), err) for p, err in failed]


def _failed(item: T.Item, platforms: list[PlatformId] | None, err: InputError) -> list[Slot]:
    labels = [p.label() for p in platforms] if platforms else ["-"]
    if len(labels) > 1:
        labels = ["all platforms"]
    return [error_slot(item, name, err) for name in labels]


def error_slot(item: T.Item, where: str, err: InputError) -> Slot:
    """The slot of a deployment that cannot be read or planned (``where``: the platform)."""
    e = item.engine
    failed = Outcome(
        item.source,
        where,
        error=str(err),
        problem=err,
        engine=e.name if e is not None else None,
        engine_line=e.line if e is not None else None,
        reading=_reading(e),
    )
    return Slot(item, None, None, failed)


def label(platform: PlatformId | None) -> str:
    """How an outcome names a platform (``-``: none)."""
    return platform.label() if platform is not None else "-"


def _why(loaded: Any) -> str:
    """Why a deployment's verdict is unknown, for its warning line."""
    from kvconfig.errors import ModelUnavailable, RunTimeValue, UnsupportedArchitecture

    if isinstance(loaded, RunTimeValue):
        return f"{loaded.reason} (KV403); write the value, or lint the rendered manifest"
    if isinstance(loaded, ModelUnavailable):
        return f"{loaded.message} (KV402); {loaded.hint}"
    arch = loaded.architecture if isinstance(loaded, UnsupportedArchitecture) else "?"
    return (
        f"kvconfig cannot derive the KV-cache layers of {arch!r} offline (KV401); plan it "
        "with --engine auto or --engine vllm"
    )


def _load(args: argparse.Namespace, s: Settings, item: T.Item) -> Loaded | CannotTell:
    """The deployment of an item, through the loader the API uses too; a model kvconfig
    cannot derive is returned as its error (it becomes finding KV401, or goes to vLLM's
    start-up with ``--engine vllm``), and so are a model whose config.json cannot be read
    offline (KV402) and an option only known at run time (KV403), whatever the engine:
    vLLM cannot start without them either."""
    from kvconfig.errors import ModelUnavailable, RunTimeValue, UnsupportedArchitecture
    from kvconfig.load.deployment import load_engine, load_noted

    common = {
        "env": s.env,
        "vllm_version": args.vllm_version,
        "hooks": args.hooks,
        "trtllm_cubins": args.trtllm_cubins,
        "model_paths": s.model_paths,
        "download": getattr(args, "download", None),
    }
    try:
        if item.engine is not None:
            return load_engine(item.engine, **common, configured_version=s.configured_version)
        target = item.target if item.target != T.STDIN else item.source
        common["vllm_version"] = args.vllm_version or s.configured_version
        return load_noted(target, doc=item.doc, **common)
    except (UnsupportedArchitecture, ModelUnavailable, RunTimeValue) as err:
        return err


def _own_platforms(item: T.Item, loaded: Loaded | CannotTell) -> list[PlatformId | None]:
    """Without ``--platform``: the deployment's own, else the GPUs its operator file
    names (each one, when a resource accepts several), else none (an error later)."""
    from kvconfig.load.platforms import parse_platform

    if not isinstance(loaded, Exception) and loaded.deployment.platform:
        return [parse_platform(loaded.deployment.platform)]
    if item.engine is not None and item.engine.platforms:
        return [parse_platform(p) for p in item.engine.platforms]
    return [None]


def _offline(
    item: T.Item,
    loaded: Loaded | CannotTell | None,
    platform: PlatformId | None,
    engine: str,
) -> Slot:
    """Resolve one deployment on one platform offline (unless only vLLM's start-up runs)."""
    from kvconfig.errors import ModelUnavailable, RunTimeValue, UnsupportedArchitecture

    if platform is None:
        raise T.no_platform(item)
    if isinstance(loaded, (RunTimeValue, ModelUnavailable)):
        plan = unsupported_plan(loaded, item.source, platform)
        return Slot(item, loaded, platform, outcome(item, platform, plan))
    if engine == "vllm" or loaded is None:
        return Slot(item, loaded, platform)
    if isinstance(loaded, UnsupportedArchitecture):
        if engine == "auto" and _engine_can_plan(platform):
            return Slot(item, loaded, platform)
        plan = unsupported_plan(loaded, item.source, platform)
    else:
        from kvconfig.plan.resolve import resolve

        plan = with_notices(resolve(loaded.deployment, platform), loaded)
    return Slot(item, loaded, platform, outcome(item, platform, plan), plan)


def _engine_can_plan(platform: PlatformId) -> bool:
    """``--engine auto``: whether vLLM's start-up can plan on ``platform`` here (vLLM is
    importable and the platform is an NVIDIA GPU the engine mode emulates)."""
    from kvconfig.engine import available

    return platform.vendor == "cuda" and platform.capability is not None and available() is None


def unsupported_plan(err: CannotTell, source: str, platform: PlatformId) -> PlanResult:
    """The plan of a deployment kvconfig cannot tell: finding KV401 (a model it cannot
    derive), KV402 (a model whose config.json cannot be read offline) or KV403 (an option
    only known at run time) only."""
    from kvconfig.errors import ModelUnavailable, RunTimeValue
    from kvconfig.mirror import versions
    from kvconfig.plan import findings as F
    from kvconfig.plan.result import PlanResult

    return PlanResult(
        source=source,
        vllm_version=versions.DEFAULT,
        platform=platform,
        runner="v2",
        hooks="none",
        speculative_method=None,
        groups=(),
        findings=(
            F.runtime_value(err)
            if isinstance(err, RunTimeValue)
            else F.model_unavailable(err)
            if isinstance(err, ModelUnavailable)
            else F.architecture(err.architecture, err.source, err.snippet),
        ),
    )


def with_notices(plan: PlanResult, loaded: Loaded) -> PlanResult:
    """The plan with the loader's notices (what vLLM does that the text hides) as findings."""
    if not loaded.notices:
        return plan
    from kvconfig.plan.result import Found
    from kvconfig.plan.result import sort as sort_findings

    found = [Found(n.code, None, n.message) for n in loaded.notices]
    return plan._replace(findings=tuple(sort_findings([*plan.findings, *found])))


def outcome(item: T.Item, platform: PlatformId, plan: PlanResult) -> Outcome:
    """The outcome of a planned deployment, with its keys' lines for annotations."""
    e = item.engine
    return Outcome(
        item.source,
        platform.label(),
        plan,
        line_of=_key_lines(item),
        engine=e.name if e is not None else None,
        engine_line=e.line if e is not None else None,
        reading=_reading(e),
    )


def _reading(engine: Any) -> Any:
    """What was read of an operator file's engine (None for other deployments)."""
    if engine is None:
        return None
    from kvconfig.load.reading import reading_of

    return reading_of(engine)


def _key_lines(item: T.Item) -> dict[str, int]:
    doc = item.doc
    if doc is None or not isinstance(doc.data, dict):
        return {}
    return {str(k).replace("_", "-"): doc.line(k) or 1 for k in doc.data}


def say(text: str) -> None:
    """One line on stderr, ``kvconfig: ...`` (secrets masked: ``kvconfig.secrets``)."""
    from kvconfig.secrets import redact

    line = " ".join(redact(text).split("\n"))
    # one line whatever the input held: control characters (a form feed, a NUL, U+2028)
    # are written as escapes
    if not line.isprintable():
        line = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in line)
    print(f"kvconfig: {line}", file=sys.stderr)
