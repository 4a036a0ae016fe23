"""From a deployment to its plan: backends per layer, KV-cache groups, B, k, and findings.

The steps follow vLLM's start-up order (docs/how-the-plan-is-computed.md):

1. each layer picks its backend, 2. each backend declares its kernel-page sizes
   (``kvconfig.plan.backends``);
3. the manager block size B is the user's ``--block-size`` or vLLM's default for the
   backends (``kvconfig.mirror.block_size``);
4. layers form KV-cache groups (``kvconfig.plan.assemble``);
5. per group, the model runner votes over every layer, target and draft
   (``prepare_kernel_block_sizes``: ``kvconfig.mirror.dispatch``); the Model Runner V2
   speculator runs the same dispatch over the draft layers alone; a V1 drafter, or any
   speculator under the kvconfig hooks, narrows the runner's value per backend;
6. disagreements and failures become findings, with fixes (``kvconfig.plan.fixes``).
"""

from __future__ import annotations

from collections.abc import Sequence

from kvconfig.errors import (
    AlignedBlockSizeUnsupported,
    GroupingError,
    InputError,
    NoCommonBlockSize,
    NoCommonKernelBlockSize,
)
from kvconfig.load.platforms import parse_platform
from kvconfig.mirror import block_size as _block_size
from kvconfig.mirror import versions
from kvconfig.mirror.dispatch import GroupInput, SpecClass, group_kernel_block_size
from kvconfig.mirror.platform import PlatformId
from kvconfig.mirror.specs import BlockPlan
from kvconfig.mirror.vote import Declared, narrow
from kvconfig.plan import findings as F
from kvconfig.plan.assemble import (
    Group,
    attention_groups,
    declared,
    make_groups,
    voter,
    voters_of,
)
from kvconfig.plan.backends import choose_backends
from kvconfig.plan.context import PlanContext, new_context
from kvconfig.plan.fixes import DRAFTS, EVERYONE, agreeing_block_sizes, agreeing_drafter_backends
from kvconfig.plan.result import GroupResult, LayerInfo, PlanResult, sort
from kvconfig.schemas.deployment import Deployment
from kvconfig.schemas.sizes import KernelSize


def resolve(dep: Deployment, platform: PlatformId | None = None) -> PlanResult:
    """Plan a deployment: every group's B and k, each component's value, and findings.

    ``platform`` overrides the deployment's own; one of the two is needed.
    """
    if platform is None:
        if dep.platform is None:
            raise InputError(
                "no platform given",
                source=dep.source,
                key="--platform",
                hint="pass --platform (e.g. --platform h200) or set 'platform' in the file",
            )
        platform = parse_platform(dep.platform)
    ctx = new_context(dep, platform)
    layers = choose_backends(ctx)
    groups = _groups(ctx, layers)
    results = tuple(_vote_group(ctx, g) for g in groups)
    _startup_refusals(ctx, results, layers)
    return PlanResult(
        source=dep.source,
        vllm_version=dep.vllm_version,
        platform=platform,
        runner=dep.runner,
        hooks=dep.hooks,
        speculative_method=dep.speculative_method,
        groups=results,
        findings=tuple(sort(ctx.findings)),
        layers=tuple(layers),
    )


def _groups(ctx: PlanContext, layers: list[LayerInfo]) -> list[Group]:
    """The KV-cache groups, or none (with a finding) where vLLM fails before the vote."""
    if any(i.backend_name is None for i in layers):
        return []
    plan = _block_plan(ctx, layers)
    if plan is None:
        return []
    try:
        return make_groups(ctx.deployment, ctx.platform, layers, plan)
    except GroupingError as err:
        ctx.findings.append(F.grouping_fails(str(err), ctx.deployment))
        return []


def _block_plan(ctx: PlanContext, layers: Sequence[LayerInfo]) -> BlockPlan | None:
    """B and the Mamba block sizes, or None (with a finding) where vLLM fails."""
    names: dict[str, _block_size.Backend] = {}
    for info in layers:  # _find_non_ssm_backends: distinct attention backends, in layer order
        if info.backend_name is not None and info.layer.kind != "mamba":
            backend = _block_size.Backend(info.display_name(), info.class_path)
            names.setdefault(info.class_path, backend)
    backends = list(names.values())

    def sizes_of(b: _block_size.Backend) -> tuple[KernelSize, ...]:
        if b.class_path in ctx.custom:
            return ctx.custom[b.class_path]
        return ctx.declared_without_spec(b.class_path)

    try:
        plan, adjusted = _block_size.plan_block_size(
            ctx.deployment, ctx.platform, backends, ctx.machine, sizes_of
        )
    except NoCommonBlockSize as err:
        declared = [ctx.declared_without_spec(n) for n in err.names]
        ctx.findings.append(F.no_block_size(err.names, declared))
        return None
    except AlignedBlockSizeUnsupported as err:
        ctx.findings.append(F.aligned_rejected(err.block_size, err.names))
        return None
    if adjusted:
        ctx.findings.append(F.block_size_adjusted(plan.block_size, plan.reason))
    return plan


def _dispatch(g: Group, voters: list[Declared], release: str) -> int | NoCommonKernelBlockSize:
    """``prepare_kernel_block_sizes`` of ``release`` for one group and these attention
    groups."""
    spec: SpecClass = "mamba" if g.kind == "mamba" else "attention"
    # Every spec kvconfig derives has per-layer views; the specs without them (vLLM's
    # HiSparseHotSpec and HiSparseResidentSpec, vllm/v1/kv_cache_interface.py) serve no
    # layer kvconfig derives. The hooks read the flag off the running engine's specs.
    views = True
    try:
        packed = g.packed and versions.rules(release).packed_keeps_block
        k = group_kernel_block_size(GroupInput(spec, g.block_size, views, packed, tuple(voters)))
    except NoCommonKernelBlockSize as err:
        return err
    assert k is not None  # kvconfig forms no encoder-only groups
    return k


def _vote_group(ctx: PlanContext, g: Group) -> GroupResult:
    runs = attention_groups(g, EVERYONE)
    everyone = declared(runs)
    runner = _dispatch(g, everyone, ctx.deployment.vllm_version)
    runner_k: int | None = None
    if isinstance(runner, NoCommonKernelBlockSize):
        ctx.findings.append(F.no_common_size(g, runner, everyone))
    else:
        runner_k = runner
    speculating = ctx.drafting and any("draft" in roles for _, roles, _ in runs)
    speculator_k: int | None = None
    if speculating and runner_k is not None:
        speculator_k = _speculator_vote(ctx, g, runner_k)
    return GroupResult(
        g.id,
        g.kind,
        g.block_size,
        g.block_size_reason,
        runner_k,
        g.packed,
        _names_of(g, "target"),
        _names_of(g, "draft"),
        tuple(
            voter(run, narrow(runner_k, d) if runner_k is not None else None)
            for run, d in zip(runs, everyone, strict=True)
        ),
        runner_k,
        speculator_k if speculating else None,
    )


def _startup_refusals(
    ctx: PlanContext, results: Sequence[GroupResult], layers: Sequence[LayerInfo]
) -> None:
    """What vLLM refuses after the votes (``kvconfig.mirror.startup``): the KV-cache
    layout no backend pair shares, metadata builders refusing a kernel block size."""
    from kvconfig.mirror.startup import flex_refusal, layout_refusal

    refusal = layout_refusal((v.name for g in results for v in g.voters), ctx.platform.major)
    if refusal is not None:
        ctx.findings.append(F.no_kv_cache_layout(refusal))
    for g in results:
        for v in g.voters:
            if v.name != "FLEX_ATTENTION":
                continue
            builds = [("the model runner", g.runner_k)]
            if "draft" in v.roles and g.speculator_k not in (None, g.runner_k):
                builds.append(("the speculator", g.speculator_k))
            for who, k in builds:
                error = flex_refusal(k) if k is not None else None
                if error is not None:
                    ctx.findings.append(F.builder_refuses(g, v.name, k or 0, who, error))
                    break


def _speculator_vote(ctx: PlanContext, g: Group, runner_k: int) -> int | None:
    """The speculator's k for a group holding draft layers, and the findings it causes.

    A V1 drafter, and any speculator under the hooks, narrows the runner's value per
    backend; a Model Runner V2 speculator on its own runs the dispatch over its draft
    layers (``DraftModelSpeculator.set_attn`` -> ``init_attn_backend``).
    """
    s = ctx.deployment
    drafts = declared(attention_groups(g, DRAFTS))
    revotes = versions.rules(s.vllm_version).speculator_revotes
    if s.runner == "v1" or s.hooks == "enforce" or not revotes:
        values = {narrow(runner_k, d) for d in drafts}
        speculator_k = runner_k if values == {runner_k} else min(values)
    else:
        own = _dispatch(g, drafts, s.vllm_version)
        if isinstance(own, NoCommonKernelBlockSize):
            ctx.findings.append(F.speculator_no_common_size(g, own, runner_k))
            return None
        speculator_k = own
    if speculator_k != runner_k:
        hybrid = any(layer.kind == "mamba" for layer in s.layers)
        ctx.findings.append(
            F.component_mismatch(
                g,
                runner_k,
                speculator_k,
                voters_of(g, EVERYONE),
                s.speculative_method,
                block_fixes=[] if hybrid else agreeing_block_sizes(g, runner_k),
                backend_fixes=agreeing_drafter_backends(ctx, g),
            )
        )
    elif s.runner == "v2" and s.hooks == "enforce":
        own = _dispatch(g, drafts, s.vllm_version)
        if isinstance(own, int) and own != runner_k:
            ctx.findings.append(F.fixed_by_hooks(g, runner_k, own))
    return speculator_k


def _names_of(g: Group, role: str) -> tuple[str, ...]:
    """The names of a group's layers of one role, in order."""
    parts = [names for info, names in g.runs if info.layer.role == role]
    return parts[0] if len(parts) == 1 else tuple(n for names in parts for n in names)
