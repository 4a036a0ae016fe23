"""The other commands: fleets (``plan_fleet``), ``explain``, ``export``,
``json_schemas``, ``catalog`` and ``diff``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvconfig.api._options import Paths, kvconfig_errors, namespace, outcomes

if TYPE_CHECKING:
    from kvconfig.schemas.fleet_plan import FleetPlan


@kvconfig_errors
def plan_fleet(
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
) -> FleetPlan:
    """``kvconfig lint --fleet``: the fleet's plan (every engine's plan, what each
    connector, router and offload tier computes, the findings where two disagree).
    ``paths``: one native fleet file, or the engines' files (``role:`` prefixes allowed).
    ``engine="vllm"`` or ``"both"`` plans every engine with vLLM's own start-up.
    ``plan.verdict`` is ``reject`` when the CLI exits 1. ``trust_remote_code`` is taken
    as the CLI takes it: with ``engine="vllm"`` vLLM may run the engines' model folders'
    code (docs/security.md). ``vllm_version`` is the release every engine plans for,
    above its image tag (``--vllm-version``)."""
    from kvconfig.cli.outcomes import fleet_options
    from kvconfig.fleet import plan_fleet as fleet_plan
    from kvconfig.load.roots import of_command, reading_within

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
    if not args.deployments and not command:
        from kvconfig.errors import InputError

        raise InputError("no fleet given", key="--fleet", hint="plan_fleet('fleet.yaml')")
    with reading_within(of_command(args)):
        return fleet_plan(args.deployments, **fleet_options(args, command))


@kvconfig_errors
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
    allow_path: Sequence[str] = (),
    trust_remote_code: bool = False,
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
    vllm_python: str | None = None,
) -> str:
    """``kvconfig explain``: a plan step by step, or what a finding code (``KV101``) means."""
    from kvconfig.report.explain import explain_code, explain_plan

    text = str(path_or_code) if path_or_code is not None else None
    if text is not None and text.upper().startswith("KV") and not Path(text).exists():
        return explain_code(text.upper())
    args = namespace(
        "explain",
        None,
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
    args.deployment = text
    runs = outcomes(args, command, many=False)
    return "\n".join(explain_plan(o.plan) for o in runs if o.plan is not None)


@kvconfig_errors
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
    allow_path: Sequence[str] = (),
    trust_remote_code: bool = False,
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
    vllm_python: str | None = None,
) -> str:
    """``kvconfig export``: the plan JSON of one deployment; with ``output`` it is written
    there (atomically) and the answer is ``wrote PATH``."""
    from kvconfig.report.export import export_plan

    args = namespace(
        "export",
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
    runs = outcomes(args, command, many=False)
    return export_plan(runs, str(output) if output is not None else None)[0]


@kvconfig_errors
def json_schemas(output: str | Path | None = None) -> dict[str, str]:
    """``kvconfig export --schema``: file name -> JSON Schema text of the native
    deployment file, the plan, the fleet file and the fleet plan; written into the
    folder ``output`` when given."""
    from kvconfig.report.export import export_schemas
    from kvconfig.report.export import schemas as texts

    if output is not None:
        export_schemas(str(output))
    return texts()


@kvconfig_errors
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


@kvconfig_errors
def diff(a: str | Path, b: str | Path) -> tuple[str, bool]:
    """``kvconfig diff``: the differences of two plan JSON files (a plan, a list of
    plans or a fleet plan), and whether they differ."""
    from kvconfig.fleet.diff import diff_files

    text, code = diff_files(str(a), str(b))
    return text, code == 1
