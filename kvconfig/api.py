"""kvconfig's Python API: everything the command line does, as objects.

The API and the command line run one pipeline (``kvconfig.cli.outcomes``): the same
reader of every input, the same loader, the same offline resolver and the same pool of
vLLM start-ups. Each keyword is a command-line option (``engine_timeout`` is
``--engine-timeout``, ``model_path`` the list of ``--model-path`` values, and so on).

* ``load``: the deployments a file or command holds (one per engine of an operator file),
  with the loader's notices and what was read.
* ``plan`` and ``lint``: one ``Outcome`` per deployment and platform, planned offline, by
  vLLM's own start-up (``engine="vllm"``) or both; ``report`` renders them as the CLI
  does, ``exit_code`` gives the CLI's code.
* ``plan_fleet``: a fleet's ``schemas.fleet.FleetPlan``.
* ``explain``, ``export``, ``schemas``, ``catalog``, ``diff``: the other commands.
* ``load_deployment`` and ``resolve``: one deployment and its typed ``schemas.plan.Plan``.

Only ``kvconfig.errors.KVConfigError`` (and its subclasses) leaves these functions: bad
input is an ``InputError``, a model kvconfig cannot derive (``load_deployment``) an
``UnsupportedArchitecture``; anything else is wrapped as a ``KVConfigError`` naming it.

>>> dep = load_deployment("examples/qwen3-8b-eagle3-gh200-triton-128.yaml", platform="gh200")
>>> plan = resolve(dep)
>>> plan.verdict
'reject'
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, ParamSpec, TypeVar

from kvconfig.errors import KVConfigError

if TYPE_CHECKING:
    from kvconfig.errors import UnsupportedArchitecture
    from kvconfig.load.operator_engine import Engine
    from kvconfig.load.serve import Notice
    from kvconfig.report.outcome import Outcome
    from schemas.deployment import Deployment
    from schemas.fleet import FleetPlan
    from schemas.plan import Plan

P = ParamSpec("P")
R = TypeVar("R")

#: A file (``-``: standard input), or several.
Paths = str | Path | Sequence[str | Path]

#: ``lint`` and ``report`` formats (``plan``'s are ``text`` and ``json``).
FORMATS = ("text", "json", "github", "sarif")


def _kvconfig_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Let only kvconfig's errors out: anything else becomes a ``KVConfigError`` that
    names it (chained, so its traceback is kept)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except KVConfigError:
            raise
        except Exception as err:
            raise KVConfigError(
                f"internal error: {type(err).__name__}: {err} (a kvconfig bug; please "
                "report it with the input)"
            ) from err

    return wrapper


class Input(NamedTuple):
    """One deployment a file or command holds, as read: ``load``'s answer."""

    source: str
    """The file as named, ``<command>`` or ``<stdin>``."""
    deployment: Deployment | None
    """The deployment (None when kvconfig cannot derive its model: see ``unsupported``)."""
    notices: tuple[Notice, ...]
    """What vLLM does with the text that the text does not show (findings KV8xx)."""
    engine: Engine | None = None
    """For an operator file: what was read of the engine (its name and line, the
    ``vllm serve`` words, environment, image, GPU labels, role, notes)."""
    unsupported: UnsupportedArchitecture | None = None
    """Why the model cannot be derived offline (``engine="vllm"`` still plans it)."""


def _args(
    command_name: str,
    paths: Paths | None,
    *,
    platform: str | Sequence[str] | None,
    env: Mapping[str, str] | Sequence[str] | None,
    hooks: str | None,
    vllm_version: str | None,
    trtllm_cubins: bool | None,
    model_path: Sequence[str],
    download: bool | None,
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
    fmt: str = "text",
    **more: Any,
) -> argparse.Namespace:
    """The command line's namespace for the API's keywords (each checked as the CLI
    checks its option)."""
    from kvconfig.errors import InputError

    if paths is None:
        files: list[str] = []
    elif isinstance(paths, (str, Path)):
        files = [str(paths)]
    else:
        files = [str(p) for p in paths]
    if isinstance(env, Mapping):
        env_items = [f"{k}={v}" for k, v in env.items()]
    else:
        env_items = list(env or [])
    if not isinstance(platform, str) and platform is not None:
        platform = ",".join(platform)
    for name, value, choices in (
        ("--engine", engine, ("offline", "vllm", "both")),
        ("--hooks", hooks, (None, "none", "enforce")),
        ("--format", fmt, FORMATS),
    ):
        if value not in choices:
            shown = ", ".join(repr(c) for c in choices if c is not None)
            raise InputError(f"invalid choice: {value!r}", key=name, hint=f"choose from {shown}")
    return argparse.Namespace(
        command=command_name,
        deployments=files,
        deployment=None,
        platform=platform,
        env=env_items,
        hooks=hooks,
        vllm_version=vllm_version,
        trtllm_cubins=trtllm_cubins,
        model_path=list(model_path),
        download=download or None,
        engine=engine,
        jobs=jobs,
        engine_timeout=engine_timeout,
        format=fmt,
        **more,
    )


def _outcomes(args: argparse.Namespace, command: Sequence[str] | None, many: bool) -> list[Outcome]:
    """The CLI's outcomes, without its lines on stderr (each error is in its outcome)."""
    from kvconfig.cli.outcomes import read_all

    s, slots = read_all(args, list(command) if command else None, many)
    if s.engine != "offline":
        from kvconfig.cli.engine_runs import run

        slots = run(args, s, slots, many)
    out = []
    for slot in slots:
        assert slot.outcome is not None
        out.append(slot.outcome)
    return out


@_kvconfig_errors
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
) -> list[Input]:
    """Every deployment the files (folders: their YAML files) and the ``vllm serve``
    ``command`` hold, in order: a serve config, native file or command is one, an operator
    file (Kubernetes, Helm values, KServe, Dynamo, compose, SkyPilot, Ray Serve; several
    documents included) one per vLLM engine. Raises ``InputError`` for bad input.
    """
    from kvconfig.cli import outcomes as O
    from kvconfig.cli import targets as T
    from kvconfig.errors import UnsupportedArchitecture
    from kvconfig.load.deployment import load_engine, load_noted

    args = _args(
        "load",
        paths,
        platform=platform,
        env=env,
        hooks=hooks,
        vllm_version=vllm_version,
        trtllm_cubins=trtllm_cubins,
        model_path=model_path,
        download=download,
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
    for target in T.named(args, list(command) if command else None, many=True):
        for item in T.read(target):
            try:
                if item.engine is not None:
                    loaded = load_engine(item.engine, **common)
                else:
                    where = item.target if item.target != T.STDIN else item.source
                    loaded = load_noted(where, doc=item.doc, **common)
            except UnsupportedArchitecture as err:
                found.append(Input(item.source, None, (), item.engine, err))
                continue
            found.append(Input(item.source, loaded.deployment, loaded.notices, item.engine))
    return found


@_kvconfig_errors
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
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
) -> list[Outcome]:
    """``kvconfig plan``: one ``Outcome`` per deployment and platform (several platforms:
    a list or a comma string). ``engine``: ``offline`` (kvconfig's resolver), ``vllm``
    (the installed vLLM's own start-up under an emulated GPU, in at most ``jobs`` child
    processes of at most ``engine_timeout`` seconds each) or ``both`` (each; every
    difference a finding KV602). Raises ``InputError`` for anything that cannot be read.
    """
    args = _args(
        "plan",
        paths,
        platform=platform,
        env=env,
        hooks=hooks,
        vllm_version=vllm_version,
        trtllm_cubins=trtllm_cubins,
        model_path=model_path,
        download=download,
        engine=engine,
        jobs=jobs,
        engine_timeout=engine_timeout,
    )
    runs = _outcomes(args, command, many=True)
    for run in runs:
        if run.problem is not None:
            raise run.problem
    return runs


@_kvconfig_errors
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
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
) -> list[Outcome]:
    """``kvconfig lint``: as ``plan``, but a deployment that cannot be read or planned is
    an outcome too (``verdict == "error"``, its ``problem`` the ``InputError``), as the
    CLI reports every file. ``report`` and ``exit_code`` give the CLI's output and code.
    """
    args = _args(
        "lint",
        paths,
        platform=platform,
        env=env,
        hooks=hooks,
        vllm_version=vllm_version,
        trtllm_cubins=trtllm_cubins,
        model_path=model_path,
        download=download,
        engine=engine,
        jobs=jobs,
        engine_timeout=engine_timeout,
    )
    return _outcomes(args, command, many=True)


@_kvconfig_errors
def render(outcomes: Sequence[Outcome], format: str = "text") -> str:
    """The outcomes as ``kvconfig lint --format FORMAT`` prints them (``text``, ``json``,
    ``github`` workflow commands, ``sarif``)."""
    import importlib

    from kvconfig.cli.commands import _LINT_REPORTERS
    from kvconfig.errors import InputError

    if format not in _LINT_REPORTERS:
        raise InputError(
            f"invalid choice: {format!r}", key="--format", hint=f"choose from {', '.join(FORMATS)}"
        )
    module, name = _LINT_REPORTERS[format]
    render: Callable[[Sequence[Outcome]], str] = getattr(importlib.import_module(module), name)
    return render(outcomes)


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """The CLI's exit code for the outcomes: 2 when any is an input error, else 1 when
    any is rejected, else 0."""
    verdicts = {o.verdict for o in outcomes}
    return 2 if "error" in verdicts else 1 if "reject" in verdicts else 0


@_kvconfig_errors
def plan_fleet(
    paths: Paths | None = None,
    *,
    command: Sequence[str] | None = None,
    platform: str | Sequence[str] | None = None,
    env: Mapping[str, str] | Sequence[str] | None = None,
    hooks: str | None = None,
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
) -> FleetPlan:
    """``kvconfig lint --fleet``: the fleet's plan (every engine's plan, what each
    connector, router and offload tier computes, the findings where two disagree).
    ``paths``: one native fleet file, or the engines' files (``role:`` prefixes allowed).
    ``engine="vllm"`` or ``"both"`` plans every engine with vLLM's own start-up.
    ``plan.verdict`` is ``reject`` when the CLI exits 1."""
    from kvconfig.cli.outcomes import env_pairs
    from kvconfig.errors import InputError
    from kvconfig.fleet import plan_fleet as fleet_plan

    args = _args(
        "lint",
        paths,
        platform=platform,
        env=env,
        hooks=hooks,
        vllm_version=None,
        trtllm_cubins=None,
        model_path=(),
        download=None,
        engine=engine,
        jobs=jobs,
        engine_timeout=engine_timeout,
    )
    if not args.deployments and not command:
        raise InputError("no fleet given", key="--fleet", hint="plan_fleet('fleet.yaml')")
    return fleet_plan(
        args.deployments,
        command=list(command) if command else None,
        platform=args.platform,
        env=env_pairs(args.env),
        hooks=hooks,
        engine="vllm" if engine != "offline" else "offline",
        jobs=jobs,
        timeout=engine_timeout,
    )


@_kvconfig_errors
def explain(
    path_or_code: str | Path | None = None,
    *,
    command: Sequence[str] | None = None,
    platform: str | Sequence[str] | None = None,
    env: Mapping[str, str] | Sequence[str] | None = None,
    hooks: str | None = None,
    vllm_version: str | None = None,
    trtllm_cubins: bool | None = None,
    model_path: Sequence[str] = (),
    download: bool | None = None,
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
) -> str:
    """``kvconfig explain``: a plan step by step, or what a finding code (``KV101``) means."""
    from kvconfig.report.explain import explain_code, explain_plan

    text = str(path_or_code) if path_or_code is not None else None
    if text is not None and text.upper().startswith("KV") and not Path(text).exists():
        return explain_code(text.upper())
    args = _args(
        "explain",
        None,
        platform=platform,
        env=env,
        hooks=hooks,
        vllm_version=vllm_version,
        trtllm_cubins=trtllm_cubins,
        model_path=model_path,
        download=download,
        engine=engine,
        jobs=jobs,
        engine_timeout=engine_timeout,
    )
    args.deployment = text
    runs = _outcomes(args, command, many=False)
    return "\n".join(explain_plan(o.plan) for o in runs if o.plan is not None)


@_kvconfig_errors
def export(
    paths: Paths | None = None,
    *,
    output: str | Path | None = None,
    command: Sequence[str] | None = None,
    platform: str | Sequence[str] | None = None,
    env: Mapping[str, str] | Sequence[str] | None = None,
    hooks: str | None = None,
    vllm_version: str | None = None,
    trtllm_cubins: bool | None = None,
    model_path: Sequence[str] = (),
    download: bool | None = None,
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
) -> str:
    """``kvconfig export``: the plan JSON of one deployment; with ``output`` it is written
    there (atomically) and the answer is ``wrote PATH``."""
    from kvconfig.report.export import export_plan

    args = _args(
        "export",
        paths,
        platform=platform,
        env=env,
        hooks=hooks,
        vllm_version=vllm_version,
        trtllm_cubins=trtllm_cubins,
        model_path=model_path,
        download=download,
        engine=engine,
        jobs=jobs,
        engine_timeout=engine_timeout,
    )
    runs = _outcomes(args, command, many=False)
    return export_plan(runs, str(output) if output is not None else None)[0]


@_kvconfig_errors
def json_schemas(output: str | Path | None = None) -> dict[str, str]:
    """``kvconfig export --schema``: file name -> JSON Schema text of the native
    deployment file, the plan, the fleet file and the fleet plan; written into the
    folder ``output`` when given."""
    from kvconfig.report.export import export_schemas
    from kvconfig.report.export import schemas as texts

    if output is not None:
        export_schemas(str(output))
    return texts()


@_kvconfig_errors
def catalog(
    *,
    backend: str | None = None,
    platform: str | None = None,
    vllm_version: str | None = None,
    format: str = "text",
) -> str:
    """``kvconfig catalog``: what each attention backend accepts, and why."""
    from kvconfig.errors import InputError
    from kvconfig.report.catalog import catalog_report

    if format not in ("text", "json"):
        raise InputError(f"invalid choice: {format!r}", key="--format", hint="text or json")
    return catalog_report(backend, platform, vllm_version, format)


@_kvconfig_errors
def diff(a: str | Path, b: str | Path) -> tuple[str, bool]:
    """``kvconfig diff``: the differences of two plan JSON files (a plan, a list of
    plans or a fleet plan), and whether they differ."""
    from kvconfig.fleet.diff import diff_files

    text, code = diff_files(str(a), str(b))
    return text, code == 1


@_kvconfig_errors
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
) -> Deployment:
    """One deployment from a vLLM serve YAML, a native kvconfig file, or a ``vllm serve``
    argv (a list of words). For operator files and notices use ``load``.

    Raises ``InputError`` for bad input, and ``UnsupportedArchitecture`` for a model
    kvconfig cannot derive (plan it with ``plan(..., engine="vllm")``, or describe it in a
    native file).
    """
    from kvconfig.load.deployment import load as load_one
    from kvconfig.load.hub import ModelPaths

    arg: str | Sequence[str] = str(target) if isinstance(target, Path) else target
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


@_kvconfig_errors
def resolve(deployment: Deployment, *, platform: str | None = None) -> Plan:
    """The offline plan of a deployment (``platform`` overrides the deployment's)."""
    from kvconfig.load.platforms import parse_platform
    from kvconfig.plan.resolve import resolve as resolve_plan
    from schemas.plan import Plan

    plat = parse_platform(platform) if platform is not None else None
    return Plan.model_validate(resolve_plan(deployment, plat).to_json())


def typed(outcome: Outcome) -> Plan | None:
    """An outcome's plan as the typed ``schemas.plan.Plan`` (its JSON shape, docs/json.md)."""
    from schemas.plan import Plan

    return None if outcome.plan is None else Plan.model_validate(outcome.plan.to_json())


__all__ = [
    "FORMATS",
    "Input",
    "catalog",
    "diff",
    "exit_code",
    "explain",
    "export",
    "json_schemas",
    "lint",
    "load_deployment",
    "load_engines",
    "plan_deployments",
    "plan_fleet",
    "render",
    "resolve",
    "typed",
]
