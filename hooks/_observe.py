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

from hooks._enforce import (
    Session,
    SpeculatorRecord,
    actual_k,
    declared,
    describe,
    flat,
    mismatches,
    real_prepare,
    settle,
)
from hooks._log import logger
from hooks._state import STATE
from kvconfig.errors import InputError, KernelBlockSizeMismatch
from kvconfig.load.platforms import PlatformId
from kvconfig.mirror.catalog import CatalogData, SizeContext, load_catalog
from kvconfig.plan.runtime import (
    KEEPS_B,
    SKIPPED,
    VOTES,
    RuntimeDeployment,
    RuntimeGroup,
    RuntimeReport,
    RuntimeVoter,
    runtime_report,
)
from schemas.sizes import KernelSize, MultipleOf, format_sizes

#: vLLM spec class -> kvconfig layer kind (the most specific class in the MRO wins).
KIND_BY_SPEC = {
    "EncoderOnlyAttentionSpec": "encoder_only_attention",
    "CrossAttentionSpec": "cross_attention",
    "SlidingWindowMLASpec": "sliding_window_mla",
    "MLAAttentionSpec": "mla_attention",
    "SlidingWindowSpec": "sliding_window",
    "ChunkedLocalAttentionSpec": "chunked_local",
    "MambaSpec": "mamba",
    "FullAttentionSpec": "full_attention",
}

EXPORT_ENV = "KVCONFIG_PLAN_EXPORT"


def spec_kind(spec: Any) -> str:
    """The ``schemas.deployment.LayerKind`` of a vLLM KV-cache spec."""
    for cls in type(spec).__mro__:
        if cls.__name__ in KIND_BY_SPEC:
            return KIND_BY_SPEC[cls.__name__]
    return "full_attention"


def class_path(cls: type) -> str:
    """``module.QualName`` (vLLM's ``full_cls_name`` joined)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def lookup_chain(cls: type) -> tuple[str, ...]:
    """The class, then its bases up to the one that defines its size method: they all
    declare the same sizes (dynamic subclasses such as FastPrefill inherit them)."""
    chain = []
    for base in cls.__mro__:
        chain.append(class_path(base))
        if "get_supported_kernel_block_sizes" in base.__dict__:
            break
    return tuple(chain)


def to_sizes(raw: Sequence[Any]) -> tuple[KernelSize, ...]:
    """vLLM's ``[16, MultipleOf(64)]`` as kvconfig sizes."""
    out: list[KernelSize] = []
    for s in raw:
        if isinstance(s, int) and not isinstance(s, bool):
            out.append(s)
        elif isinstance(getattr(s, "base", None), int):
            out.append(MultipleOf(int(s.base)))
    return tuple(out)


class Facts:
    """Platform and model facts the catalog's size rules read, asked of vLLM once."""

    def __init__(self, vllm_config: Any) -> None:
        from vllm.platforms import current_platform as p

        self._fa: dict[tuple[int, int], int | None] = {}
        self.vendor = next(
            (
                name
                for name, probe in (
                    ("cuda", p.is_cuda),
                    ("rocm", p.is_rocm),
                    ("xpu", p.is_xpu),
                    ("cpu", p.is_cpu),
                )
                if probe()
            ),
            "unknown",
        )
        cap = p.get_device_capability()
        self.capability = None if cap is None else (int(cap.major), int(cap.minor))
        self.gqa, self.heads = False, (0, 0)
        try:
            mc, pc = vllm_config.model_config, vllm_config.parallel_config
            q, kv = int(mc.get_num_attention_heads(pc)), int(mc.get_num_kv_heads(pc))
            self.gqa, self.heads = kv > 0 and q // kv > 1, (q, kv)
        except Exception:
            pass
        self.trtllm = False
        if self.capability is not None and self.capability[0] == 10:
            # The only rule reading it is FlashInfer's SM10x one; vLLM asks the same.
            try:
                from vllm.utils.flashinfer import can_use_trtllm_attention

                self.trtllm = bool(can_use_trtllm_attention(*self.heads))
            except Exception:
                self.trtllm = False

    @property
    def platform(self) -> PlatformId:
        """The platform as kvconfig names it."""
        if self.capability is None:
            return PlatformId(self.vendor, self.vendor, None)
        return PlatformId(
            f"sm{self.capability[0]}{self.capability[1]}", self.vendor, self.capability
        )

    def fa_version(self, head_size: int, head_size_v: int) -> int | None:
        """vLLM's ``get_flash_attn_version`` for this head geometry."""
        key = (head_size, head_size_v)
        if key not in self._fa:
            self._fa[key] = self._ask_fa_version(head_size, head_size_v)
        return self._fa[key]

    def _ask_fa_version(self, head_size: int, head_size_v: int) -> int | None:
        if self.vendor not in ("cuda", "xpu"):
            return None
        try:
            from vllm.v1.attention.backends.fa_utils import get_flash_attn_version

            v = get_flash_attn_version(
                head_size=head_size, head_size_v=head_size_v, supports_fa4_hd256=True
            )
        except Exception:
            return None
        return None if v is None else int(v)

    def context(self, spec: Any) -> SizeContext:
        """The size rules' facts for one layer spec."""
        head = int(getattr(spec, "head_size", 0) or 0)
        head_v = getattr(spec, "head_size_v", None)
        head_v = head if head_v is None else int(head_v)
        quant = getattr(spec, "kv_quant_mode", None)
        tps = getattr(spec, "tokens_per_state", 1)
        return SizeContext(
            vendor=self.vendor,
            capability_major=None if self.capability is None else self.capability[0],
            kv_quant="none" if quant is None else str(quant.name).lower(),
            head_size=head,
            head_size_v=head_v,
            gqa=self.gqa,
            trtllm=self.trtllm,
            fa_version=self.fa_version(head, head_v),
            tokens_per_state=int(tps) if isinstance(tps, int) and tps > 1 else 1,
        )


def _dispatch(group_spec: Any) -> tuple[Any, str]:
    """The spec ``prepare_kernel_block_sizes`` dispatches on, and what it does with it."""
    from vllm.v1.kv_cache_interface import (
        AttentionSpec,
        EncoderOnlyAttentionSpec,
        UniformTypeKVCacheSpecs,
    )

    spec = group_spec
    if isinstance(spec, UniformTypeKVCacheSpecs):
        spec = next(iter(spec.kv_cache_specs.values()))
    if isinstance(spec, EncoderOnlyAttentionSpec):
        return spec, SKIPPED
    if not spec.has_layer_views:
        return spec, KEEPS_B
    if isinstance(spec, AttentionSpec):
        return spec, VOTES
    return spec, KEEPS_B


def _packed(kv_cache_config: Any, layer_names: Sequence[str]) -> bool:
    names = set(layer_names)
    return any(
        t.block_stride > t.layer_stride
        for t in kv_cache_config.kv_cache_tensors
        if names.intersection(t.layers)
    )


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
        spec, dispatch = _dispatch(kv_group.kv_cache_spec)
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
                dispatch=dispatch,
                packed=_packed(config, kv_group.layer_names),
                voters=tuple(voters),
                runner=int(sizes[gid]) if gid < len(sizes) else None,
                speculator=min(spec_ks) if spec_ks else None,
                speculator_own=own,
            )
        )
    spec_cfg = getattr(vllm_config, "speculative_config", None)
    import vllm

    return RuntimeDeployment(
        vllm_version=str(getattr(vllm, "__version__", "unknown")),
        platform=facts.platform,
        runner=session.kind,
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


def _speculator(session: Session) -> tuple[Any, list[Any], set[str], str]:
    """(speculator or drafter, its attention groups, its layer names, how to name it)."""
    runner = session.runner
    if session.kind == "v2":
        from vllm.v1.worker.gpu.spec_decode.speculator import DraftModelSpeculator

        sp = getattr(runner, "speculator", None)
        if not isinstance(sp, DraftModelSpeculator):
            return None, [], set(), ""
        return (
            sp,
            flat(getattr(sp, "attn_groups", None) or []),
            set(getattr(sp, "draft_attn_layer_names", set())),
            f"speculator {type(sp).__name__}",
        )
    dr = getattr(runner, "drafter", None)
    groups = getattr(dr, "draft_attn_groups", None)
    if dr is None or groups is None:
        return None, [], set(), ""
    names = set(getattr(dr, "_draft_attn_layer_names", set()) or set())
    return dr, flat(groups), names, f"Model Runner V1 drafter {type(dr).__name__}"


def _held_sizes(session: Session) -> list[int]:
    runner = session.runner
    held = getattr(
        runner, "kernel_block_sizes" if session.kind == "v2" else "_kernel_block_sizes", None
    )
    if held is None:
        return real_prepare(runner.kv_cache_config, runner.attn_groups)
    return [int(k) for k in held]


def _unverified(
    session: Session, sp: Any, groups: list[Any], sizes: Sequence[int], label: str
) -> KernelBlockSizeMismatch:
    config = session.runner.kv_cache_config
    gid = groups[0].kv_cache_group_id if groups else 0
    mine = [g for g in groups if g.kv_cache_group_id == gid]
    B = int(config.kv_cache_groups[gid].kv_cache_spec.block_size)
    layers, backends = describe(config, gid, [*flat(session.runner.attn_groups), *mine])
    return KernelBlockSizeMismatch(
        group=gid,
        layers=layers,
        backends=backends,
        block_size=B,
        expected=int(sizes[gid]) if gid < len(sizes) else B,
        found=actual_k(mine[0]) if mine else None,
        component=label,
        component_layers=[n for g in mine for n in g.layer_names],
        reason="unverified",
        mode=STATE.mode,
    )


def log_plan(d: RuntimeDeployment, report: RuntimeReport, *, profiling: bool) -> None:
    """One line per KV-cache group."""
    level = logging.DEBUG if profiling else logging.INFO
    for g in d.groups:
        k = g.runner
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
        spec = "-" if g.speculator is None else str(g.speculator)
        if g.speculator_own is not None and g.speculator_own != g.speculator:
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
            g.runner,
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
    # ---- fleet: the plan digest beside the plan (hooks/_connectors.py)
    from hooks import _connectors

    _connectors.export_digest(path, report.plan.to_json())
    # ----
    return path


def finish(session: Session, *, profiling: bool = False) -> RuntimeReport:
    """Check, log and export the plan of a finished KV-cache initialisation."""
    mode = STATE.mode
    STATE.kv_cache_inits += 1
    runner = session.runner
    config = runner.kv_cache_config
    sizes = _held_sizes(session)
    sp, sp_groups, draft_names, label = _speculator(session)
    record = next((r for r in session.records if r.speculator is sp), None)
    problems: list[KernelBlockSizeMismatch] = []
    if session.kind == "v2" and sp is not None and record is None:
        problems.append(_unverified(session, sp, sp_groups, sizes, label))
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
            _catalog_error(session, g, report) for g in d.groups if report.own[g.id] != g.runner
        ]
    if not profiling:
        export(report)
    settle(problems, mode)
    return report


def _catalog_error(
    session: Session, g: RuntimeGroup, report: RuntimeReport
) -> KernelBlockSizeMismatch:
    layers, backends = describe(
        session.runner.kv_cache_config, g.id, flat(session.runner.attn_groups)
    )
    return KernelBlockSizeMismatch(
        group=g.id,
        layers=layers,
        backends=backends,
        block_size=g.block_size,
        expected=g.runner if g.runner is not None else g.block_size,
        found=report.own[g.id],
        component="kvconfig catalog",
        reason="catalog",
        mode=STATE.mode,
    )
