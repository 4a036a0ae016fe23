"""Deployments: read (``load_engines``), planned (``plan_deployments``, ``lint``) and
reported (``render``, ``exit_code``) as the command line does; one deployment and its
typed plan (``load_deployment``, ``resolve``, ``typed``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kvconfig.api._options import FORMATS, Paths, kvconfig_errors, namespace, outcomes

if TYPE_CHECKING:
    from kvconfig.errors import CannotTell
    from kvconfig.load.operator_engine import Engine
    from kvconfig.load.serve import Notice
    from kvconfig.report.outcome import Outcome
    from kvconfig.schemas.deployment import Deployment
    from kvconfig.schemas.plan import Plan


class Input(NamedTuple):
    """One deployment a file or command holds, as read: ``load``'s answer."""

    source: str
    """The file as named, ``<command>`` or ``<stdin>``."""
    deployment: Deployment | None
    """The deployment (None when kvconfig cannot tell its plan: see ``unsupported``)."""
    notices: tuple[Notice, ...]
    """What vLLM does with the text that the text does not show (findings KV8xx)."""
    engine: Engine | None = None
    """For an operator file: what was read of the engine (its name and line, the
    ``vllm serve`` words, environment, image, GPU labels, role, notes)."""
    unsupported: CannotTell | None = None
    """Why kvconfig cannot tell the plan: the model cannot be derived offline
    (``UnsupportedArchitecture``: ``engine="vllm"`` still plans it), its config.json cannot
    be read offline (``ModelUnavailable``: give it with ``model_path`` or ``download``), or
    an option that changes the plan is only known at run time (``RunTimeValue``: no engine
    can plan it without the value)."""


@kvconfig_errors
def load_engines(
    paths: Paths | None = None,
    *,
    command: Sequence[str] | None = None,
    platform: str | None = None,
    env: Mapping[str, str] | Sequence[str] | None = None,
    hooks: str | None = None,
    vllm_version: str | None = None,
    trtllm_cubins: bool | None = None,
    model_path: Sequence[str] = (),
    download: bool | None = None,
    allow_path: Sequence[str] = (),
) -> list[Input]:
    """Every deployment the files (folders: their YAML files and launch scripts, those
    that hold no vLLM engine passed over) and the ``vllm serve``
    ``command`` hold, in order: a serve config, native file or command is one, an operator
    file (Kubernetes, Helm values, KServe, Dynamo, compose, SkyPilot, Ray Serve; several
    documents included) one per vLLM engine. Raises ``InputError`` for bad input.
    """
    from kvconfig.cli import outcomes as O
    from kvconfig.load.roots import of_command, reading_within

    args = namespace(
        "load",
        paths,
        platform=platform,
        env=env,
        hooks=hooks,
        vllm_version=vllm_version,
        trtllm_cubins=trtllm_cubins,
        model_path=model_path,
        download=download,
        allow_path=allow_path,
    )
    s = O.settings(args)
    common: dict[str, Any] = {
        "platform": platform,
        "env": s.env,
        "vllm_version": vllm_version,
        "hooks": hooks,
        "trtllm_cubins": trtllm_cubins,
        "model_paths": s.model_paths,
        "download": download or None,
    }
    found: list[Input] = []
    with reading_within(of_command(args)):
        _read_engines(args, command, common, found)
    return found


def _read_engines(
    args: Any, command: Sequence[str] | None, common: dict[str, Any], found: list[Input]
) -> None:
    """Append each engine ``load_engines`` reads to ``found``."""
    from kvconfig.cli import targets as T
    from kvconfig.errors import (
        ModelUnavailable,
        NoEngine,
        RunTimeValue,
        UnsupportedArchitecture,
    )
    from kvconfig.load.deployment import load_engine, load_noted

    for target in T.named(args, list(command) if command else None, many=True):
        try:
            items = T.read(target)
        except NoEngine:
            if isinstance(target, T.Walked):
                continue  # a folder's file without a vLLM engine is passed over
            raise
        for item in items:
            try:
                if item.engine is not None:
                    loaded = load_engine(item.engine, **common)
                else:
                    where = item.target if item.target != T.STDIN else item.source
                    loaded = load_noted(where, doc=item.doc, **common)
            except (UnsupportedArchitecture, ModelUnavailable, RunTimeValue) as err:
                found.append(Input(item.source, None, (), item.engine, err))
                continue
            found.append(Input(item.source, loaded.deployment, loaded.notices, item.engine))


@kvconfig_errors
def plan_deployments(
    paths: Paths | None = None,
    *,
    command: Sequence[str] | None = None,
    platform: str | Sequence[str] | None = None,
    env: Mapping[str, str] | Sequence[str] | None = None,
    hooks: str | None = None,
    vllm_version: str | None = None,
    trtllm_cubins: bool | None = None,
    model_path: Sequence[str] = (),
    download: bool | None = None,
    allow_path: Sequence[str] = (),
    trust_remote_code: bool = False,
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
    vllm_python: str | None = None,
) -> list[Outcome]:
    """``kvconfig plan``: one ``Outcome`` per deployment and platform (several platforms:
    a list or a comma string). ``engine``: ``offline`` (kvconfig's resolver), ``vllm``
    (the installed vLLM's own start-up under an emulated GPU, in at most ``jobs`` child
    processes of at most ``engine_timeout`` seconds each, run by ``vllm_python``, the
    serving image's interpreter, or kvconfig's own) or ``both`` (each; every difference a
    finding KV602). Raises ``InputError`` for anything that cannot be read.
    """
    args = namespace(
        "plan",
        paths,
        platform=platform,
        env=env,
        hooks=hooks,
        vllm_version=vllm_version,
        trtllm_cubins=trtllm_cubins,
        model_path=model_path,
        download=download,
        allow_path=allow_path,
        trust_remote_code=trust_remote_code,
        engine=engine,
        jobs=jobs,
        engine_timeout=engine_timeout,
        vllm_python=vllm_python,
    )
    runs = outcomes(args, command, many=True)
    for run in runs:
        if run.problem is not None:
            raise run.problem
    return runs


@kvconfig_errors
def lint(
    paths: Paths | None = None,
    *,
    command: Sequence[str] | None = None,
    platform: str | Sequence[str] | None = None,
    env: Mapping[str, str] | Sequence[str] | None = None,
    hooks: str | None = None,
    vllm_version: str | None = None,
    trtllm_cubins: bool | None = None,
    model_path: Sequence[str] = (),
    download: bool | None = None,
    allow_path: Sequence[str] = (),
    trust_remote_code: bool = False,
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
    vllm_python: str | None = None,
) -> list[Outcome]:
    """``kvconfig lint``: as ``plan``, but a deployment that cannot be read or planned is
    an outcome too (``verdict == "error"``, its ``problem`` the ``InputError``), as the
    CLI reports every file. ``report`` and ``exit_code`` give the CLI's output and code.
    """
    args = namespace(
        "lint",
        paths,
        platform=platform,
        env=env,
        hooks=hooks,
        vllm_version=vllm_version,
        trtllm_cubins=trtllm_cubins,
        model_path=model_path,
        download=download,
        allow_path=allow_path,
        trust_remote_code=trust_remote_code,
        engine=engine,
        jobs=jobs,
        engine_timeout=engine_timeout,
        vllm_python=vllm_python,
    )
    return outcomes(args, command, many=True)


@kvconfig_errors
def render(outcomes: Sequence[Outcome], format: str = "text") -> str:
    """The outcomes as ``kvconfig lint --format FORMAT`` prints them (``text``, ``json``,
    ``github`` workflow commands, ``sarif``)."""
    from kvconfig.errors import InputError
    from kvconfig.report import LINT_REPORTERS, render_lint

    if format not in LINT_REPORTERS:
        raise InputError(
            f"invalid choice: {format!r}", key="--format", hint=f"choose from {', '.join(FORMATS)}"
        )
    return render_lint(format, outcomes)


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """The CLI's exit code for the outcomes: 2 when any is an input error, else 1 when
    any is rejected, else 0."""
    from kvconfig.report import exit_code as lint_exit_code

    return lint_exit_code(outcomes)


@kvconfig_errors
def load_deployment(
    target: str | Path | Sequence[str],
    *,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    vllm_version: str | None = None,
    hooks: str | None = None,
    trtllm_cubins: bool | None = None,
    model_path: Sequence[str] = (),
    download: bool | None = None,
    allow_path: Sequence[str] = (),
) -> Deployment:
    """One deployment from a vLLM serve YAML, a native kvconfig file, or a ``vllm serve``
    argv (a list of words). For operator files and notices use ``load``.

    Raises ``InputError`` for bad input, and ``UnsupportedArchitecture`` for a model
    kvconfig cannot derive (plan it with ``plan(..., engine="vllm")``, or describe it in a
    native file).
    """
    from kvconfig.load.deployment import load as load_one
    from kvconfig.load.hub import ModelPaths
    from kvconfig.load.roots import allowed_roots, reading_within

    arg: str | Sequence[str] = str(target) if isinstance(target, Path) else target
    given = [arg] if isinstance(arg, str) else []
    folders = [*allow_path, *(str(rule).rpartition("=")[2] for rule in model_path)]
    with reading_within(allowed_roots(given, folders)):
        return load_one(
            arg,
            platform=platform,
            env=env,
            vllm_version=vllm_version,
            hooks=hooks,
            trtllm_cubins=trtllm_cubins,
            model_paths=ModelPaths.parse(model_path) if model_path else None,
            download=download,
        )


@kvconfig_errors
def resolve(deployment: Deployment, *, platform: str | None = None) -> Plan:
    """The offline plan of a deployment (``platform`` overrides the deployment's)."""
    from kvconfig.load.platforms import parse_platform
    from kvconfig.plan.resolve import resolve as resolve_plan
    from kvconfig.schemas.plan import Plan

    plat = parse_platform(platform) if platform is not None else None
    return Plan.model_validate(resolve_plan(deployment, plat).to_json())


def typed(outcome: Outcome) -> Plan | None:
    """An outcome's plan as the typed ``schemas.plan.Plan`` (its JSON shape, docs/json.md)."""
    from kvconfig.schemas.plan import Plan

    return None if outcome.plan is None else Plan.model_validate(outcome.plan.to_json())
