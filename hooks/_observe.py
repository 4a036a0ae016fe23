"""At the end of a KV-cache initialisation: read the plan off vLLM's objects, check it,
log it (one line per group), compare it with kvconfig's own vote, and export it.

The plan is read from what vLLM built, never re-derived: the KV-cache config's groups
(``kv_cache_config.kv_cache_groups``), the runner's kernel block sizes
(``GPUModelRunner.kernel_block_sizes`` in Model Runner V2, ``_kernel_block_sizes`` in
V1), the runner's attention groups and the speculator's (V2 ``speculator.attn_groups``)
or the V1 drafter's (``drafter.draft_attn_groups``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError, KernelBlockSizeMismatch
from kvconfig.hooks._checks import catalog_error, mismatches, settle, unverified
from kvconfig.hooks._log import logger
from kvconfig.hooks._session import Session, SpeculatorRecord
from kvconfig.hooks._state import STATE
from kvconfig.hooks._vllm import (
    Facts,
    actual_k,
    class_path,
    declared,
    held_sizes,
    lookup_chain,
    packed,
    spec_class,
    spec_kind,
    speculator_of,
    to_sizes,
)
from kvconfig.mirror.catalog import CatalogData, load_catalog
from kvconfig.plan.runtime import (
    RuntimeDeployment,
    RuntimeGroup,
    RuntimeReport,
    RuntimeVoter,
    runtime_report,
)
from kvconfig.schemas.sizes import format_sizes

EXPORT_ENV = "KVCONFIG_PLAN_EXPORT"
"""The environment variable naming where each worker writes its plan."""


def deployment(
    session: Session,
    sizes: Sequence[int],
    speculator_groups: Sequence[Any],
    draft_names: set[str],
    record: SpeculatorRecord | None,
) -> RuntimeDeployment:
    """The running engine as ``kvconfig.plan.runtime`` records."""
    runner = session.runner
    config = runner.kv_cache_config
    vllm_config = runner.vllm_config
    facts = Facts(vllm_config)
    runner_groups = list(runner.attn_groups)
    groups = []
    for gid, kv_group in enumerate(config.kv_cache_groups):
        spec, cls, views = spec_class(kv_group.kv_cache_spec)
        voters = []
        for g in runner_groups[gid] if gid < len(runner_groups) else []:
            voters.append(
                RuntimeVoter(
                    name=str(g.backend.get_name()),
                    class_path=class_path(g.backend),
                    lookup=lookup_chain(g.backend),
                    declared=to_sizes(declared(g)),
                    context=facts.context(g.kv_cache_spec),
                    target_layers=tuple(n for n in g.layer_names if n not in draft_names),
                    draft_layers=tuple(n for n in g.layer_names if n in draft_names),
                    runner_k=actual_k(g),
                )
            )
        spec_ks = {actual_k(g) for g in speculator_groups if g.kv_cache_group_id == gid}
        own = None
        if (
            record is not None
            and record.handed
            and record.own is not None
            and gid < len(record.own)
        ):
            own = record.own[gid] if spec_ks else None
        groups.append(
            RuntimeGroup(
                id=gid,
                kind=spec_kind(spec),
                block_size=int(kv_group.kv_cache_spec.block_size),
                spec=cls,
                has_layer_views=views,
                packed=packed(config, kv_group.layer_names),
                voters=tuple(voters),
                runner_k=int(sizes[gid]) if gid < len(sizes) else None,
                speculator_k=min(spec_ks) if spec_ks else None,
                speculator_own=own,
            )
        )
    spec_cfg = getattr(vllm_config, "speculative_config", None)
    import vllm

    return RuntimeDeployment(
        vllm_version=str(getattr(vllm, "__version__", "unknown")),
        platform=facts.platform,
        runner=session.version,
        mode=STATE.mode,
        speculative_method=getattr(spec_cfg, "method", None) if spec_cfg else None,
        groups=tuple(groups),
        source=f"vllm runtime (pid {os.getpid()})",
    )


def _catalog(version: str) -> CatalogData | None:
    try:
        return load_catalog(version)
    except InputError:
        return None


def log_plan(d: RuntimeDeployment, report: RuntimeReport, *, profiling: bool) -> None:
    """One line per KV-cache group."""
    level = logging.DEBUG if profiling else logging.INFO
    for g in d.groups:
        k = g.runner_k
        split = None if k is None else g.block_size // k
        backends = ", ".join(
            f"{v.name} {format_sizes(v.declared)} "
            + " ".join(
                f"{role} x{len(names)}"
                for role, names in (("target", v.target_layers), ("draft", v.draft_layers))
                if names
            )
            + f" k={v.runner_k}"
            for v in g.voters
        )
        spec = "-" if g.speculator_k is None else str(g.speculator_k)
        if g.speculator_own is not None and g.speculator_own != g.speculator_k:
            spec += f" (alone it would use {g.speculator_own})"
        logger.log(
            level,
            "kvconfig %s: group %d %s B=%d k=%s split=%s | %s | runner=%s speculator=%s "
            "kvconfig=%s",
            d.mode,
            g.id,
            g.kind,
            g.block_size,
            k,
            split,
            backends,
            g.runner_k,
            spec,
            report.own.get(g.id),
        )
    for note in report.notes:
        logger.warning("kvconfig: %s", note)


def rank() -> int:
    """This worker's global rank (0 outside a distributed run)."""
    try:
        from vllm.distributed.parallel_state import get_world_group

        return int(get_world_group().rank)
    except Exception:
        pass
    for var in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 0


def export(report: RuntimeReport) -> str | None:
    """Write the plan to ``KVCONFIG_PLAN_EXPORT`` (``{rank}`` expanded), atomically."""
    template = os.environ.get(EXPORT_ENV, "").strip()
    if not template:
        return None
    from kvconfig.report.export import atomic_write

    path = template.replace("{rank}", str(rank()))
    try:
        atomic_write(Path(path), json.dumps(report.plan.to_json(), indent=2) + "\n")
    except OSError as err:
        logger.error(
            "kvconfig: cannot write the plan to %s (%s=%s): %s", path, EXPORT_ENV, template, err
        )
        return None
    STATE.last_export = path
    logger.info("kvconfig: plan written to %s", path)
    # ---- fleet: the plan digest beside the plan (hooks/_connectors/digest.py)
    from kvconfig.hooks._connectors.digest import export_digest

    export_digest(path, report.plan.to_json())
    # ----
    return path


def finish(session: Session, *, profiling: bool = False) -> RuntimeReport:
    """Check, log and export the plan of a finished KV-cache initialisation."""
    mode = STATE.mode
    STATE.kv_cache_inits += 1
    runner = session.runner
    config = runner.kv_cache_config
    sizes = held_sizes(session)
    sp, sp_groups, draft_names, label = speculator_of(session)
    record = next((r for r in session.records if r.speculator is sp), None)
    problems: list[KernelBlockSizeMismatch] = []
    bypassed = record is None and not session.speculator_failed
    if session.version == "v2" and sp is not None and bypassed:
        problems.append(unverified(session, sp, sp_groups, sizes, label))
    if record is None:  # the set_attn hook has checked both already
        problems += mismatches(config, sizes, runner.attn_groups, "model runner")
        if sp is not None:
            problems += mismatches(config, sizes, sp_groups, label, context=runner.attn_groups)
    d = deployment(session, sizes, sp_groups, draft_names, record)
    report = runtime_report(d, _catalog(d.vllm_version))
    log_plan(d, report, profiling=profiling)
    for text in report.disagreements:
        logger.error(
            "kvconfig: %s. vLLM decides differently from kvconfig's catalog for vLLM %s: "
            "kvconfig's plan cannot be trusted for this engine%s",
            text,
            d.vllm_version,
            " (KVCONFIG_MODE=strict refuses to start)" if mode == "strict" else "",
        )
    if mode == "strict":
        problems += [
            catalog_error(session, g, report) for g in d.groups if report.own[g.id] != g.runner_k
        ]
    if not profiling:
        export(report)
    settle(problems, mode)
    return report
