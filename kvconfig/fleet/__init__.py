"""Fleets: the engines of one serving system linted together (``kvconfig lint --fleet``).

Prefill and decode engines, their KV connectors (NIXL, Mooncake, the offloading
connector), a KV-aware router (NVIDIA Dynamo, llm-d) and shared offload tiers each have
their own idea of the KV cache's block sizes. A fleet plan holds every engine's plan with
what each of its components computes on its own, and the findings where two of them
disagree (docs/fleets.md).

    from kvconfig.fleet import plan_fleet
    doc = plan_fleet(["examples/fleets/correct-pd.yaml"])     # a schemas.fleet_plan.FleetPlan
    text, code = lint_fleet(["examples/fleets/correct-pd.yaml"])

Modules: ``read`` (fleet files, deployment lists), ``planner`` (engines once per
configuration, the rules), ``components`` (what each component computes), ``rules``
(the KV7xx findings), ``report`` (text, JSON), ``diff`` (plan digests, ``kvconfig
diff``), ``engine_mode`` (the same with vLLM's own start-up). Nothing here imports vLLM or
torch unless ``engine="vllm"`` is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvconfig.schemas.fleet_plan import FleetPlan


def fleet_document(
    paths: Sequence[str],
    *,
    command: Sequence[str] | None = None,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    hooks: str | None = None,
    engine: str = "offline",
    jobs: int = 1,
    timeout: float = 300.0,
    model_paths: Any = None,
    download: bool | None = None,
    python: str | None = None,
    trust_remote_code: bool = False,
    vllm_version: str | None = None,
    trtllm_cubins: bool | None = None,
) -> dict[str, Any]:
    """The fleet plan as its JSON document (what ``--format json`` prints).

        ``paths``: one native fleet file, or deployment files (``role:`` prefixes allowed);
        ``command``: a pasted ``vllm serve`` command, as one more engine. ``engine="vllm"``
        plans every engine with vLLM's own start-up (``kvconfig.engine``) and adds what vLLM's
        connector code computes on the engine's objects. ``model_paths`` (``--model-path``) and
    ``download`` (``--download``) say where models are read from, as for ``kvconfig lint``;
    ``trust_remote_code`` (``--trust-remote-code``) lets vLLM run code from the engines'
    model folders in engine mode (docs/security.md). ``vllm_version`` (``--vllm-version``,
    or the repository configuration's) is the release every engine plans for, above its
    image tag; ``trtllm_cubins=False`` is ``--no-trtllm-cubins``. Raises
    ``kvconfig.InputError``.
    """
    from kvconfig.fleet import planner as P
    from kvconfig.fleet import read

    fleet = read.read(paths, command=command, platform=platform, hooks=hooks, env=env)
    if vllm_version:
        from dataclasses import replace

        from kvconfig.mirror import versions

        versions.release(vllm_version)  # not a release at all: bad input, before planning
        fleet = replace(fleet, vllm_version=vllm_version)
    plans = P.Planner(
        fleet.vllm_version,
        model_paths=model_paths,
        download=download,
        asked=vllm_version,
        trtllm_cubins=trtllm_cubins,
    )
    refused = [spec for spec in fleet.engines if spec.refused]
    if refused:
        from dataclasses import replace as _replace

        fleet = _replace(fleet, engines=tuple(s for s in fleet.engines if not s.refused))
    engines, unplanned = P.plan_engines(fleet, plans)
    if engine == "vllm":
        from kvconfig.fleet import engine_mode

        engines = engine_mode.with_vllm(
            engines,
            jobs=jobs,
            timeout=timeout,
            python=python,
            trust_remote_code=trust_remote_code,
        )
    from kvconfig.fleet.rules.common import sort
    from kvconfig.fleet.unplanned import modelless_issues, refused_issues, unplanned_issues

    found = sort(
        [
            *P.issues(engines, fleet.routers, plans),
            *unplanned_issues(unplanned),
            *modelless_issues(unplanned, fleet.routers, engines),
            *refused_issues(refused),
        ]
    )
    return P.fleet_json(fleet, engines, found, engine, unplanned)


def plan_fleet(paths: Sequence[str], **kwargs: Any) -> FleetPlan:
    """The fleet plan as a typed ``schemas.fleet_plan.FleetPlan`` (see ``fleet_document``)."""
    from kvconfig.schemas.fleet_plan import FleetPlan

    return FleetPlan.model_validate(fleet_document(paths, **kwargs))


def lint_fleet(paths: Sequence[str], *, format: str = "text", **kwargs: Any) -> tuple[str, int]:
    """``kvconfig lint --fleet``: the report and the exit code (0 ok or unknown, 1 rejected).

    ``format`` is ``text``, ``json`` or ``html`` (docs/html.md); the other arguments are
    ``fleet_document``'s. Bad input raises ``kvconfig.InputError`` (the CLI prints it and
    exits 2).
    """
    from kvconfig.fleet import report

    doc = fleet_document(paths, **kwargs)
    if format == "html":
        from kvconfig.report.html import render_fleet

        text = render_fleet(doc)
    else:
        text = report.render_json(doc) if format == "json" else report.render_text(doc)
    return text, 1 if doc["verdict"] == "reject" else 0


def diff(a: str, b: str) -> tuple[str, int]:
    """``kvconfig diff A.json B.json``: text, and 0 when the plans agree, 1 when not."""
    from kvconfig.fleet.diff import diff_files

    return diff_files(a, b)


__all__ = ["diff", "fleet_document", "lint_fleet", "plan_fleet"]
