"""The plan of a running vLLM engine, from facts the hooks read off its objects.

The hooks (``hooks/_observe.py``) turn vLLM's KV-cache config and attention groups
into the plain records below; this module never imports vLLM. From them it

* votes kvconfig's own kernel block size per group, with the backend catalog of the
  running vLLM and the one dispatch of ``prepare_kernel_block_sizes``
  (``kvconfig.mirror.dispatch``: encoder-only, no value; no layer views, Mamba, packed:
  B; otherwise the vote);
* compares that with the runner's value, which allocated the KV cache;
* builds the same ``PlanResult`` that ``kvconfig plan`` prints, so the exported file
  has the documented JSON shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvconfig.codes import FindingCode
from kvconfig.errors import NoCommonKernelBlockSize
from kvconfig.mirror.catalog import CatalogData, Entry, SizeContext
from kvconfig.mirror.dispatch import GroupInput, SpecClass, group_kernel_block_size
from kvconfig.mirror.platform import PlatformId
from kvconfig.plan.result import Found, GroupResult, PlanResult, Voter, sort
from kvconfig.schemas.sizes import KernelSize, format_sizes


@dataclass(frozen=True, slots=True)
class RuntimeVoter:
    """One attention group of the runner (vLLM's ``AttentionGroup``) as plain facts."""

    name: str
    """``backend.get_name()``."""
    class_path: str
    """``module.QualName`` of the backend class."""
    lookup: tuple[str, ...]
    """Class paths to look up in the catalog, most specific first: the class, then the
    bases it inherits ``get_supported_kernel_block_sizes`` from unchanged."""
    declared: tuple[KernelSize, ...]
    """What the backend declared for this group's layer spec at run time."""
    context: SizeContext
    """The facts the catalog's size rules read for this layer spec."""
    target_layers: tuple[str, ...]
    draft_layers: tuple[str, ...]
    runner_k: int
    """The kernel block size this attention group uses (``kernel_block_size`` or B)."""


@dataclass(frozen=True, slots=True)
class RuntimeGroup:
    """One KV-cache group of the running engine."""

    id: int
    kind: str
    """A ``schemas.deployment.LayerKind`` value."""
    block_size: int
    spec: SpecClass
    """The class of the group's spec (of its first layer spec for uniform-type groups)."""
    has_layer_views: bool
    """False for specs allocated without per-layer views (HiSparse)."""
    packed: bool
    voters: tuple[RuntimeVoter, ...]
    runner_k: int | None
    """The runner's value for this group (what the KV cache was allocated with)."""
    speculator_k: int | None = None
    """The speculator's kernel block size for its layers of this group (None: none)."""
    speculator_own: int | None = None
    """What the speculator would have voted on its own, when the hooks handed it the runner's."""


@dataclass(frozen=True, slots=True)
class RuntimeDeployment:
    """Everything the hooks read at KV-cache initialisation."""

    vllm_version: str
    platform: PlatformId
    runner: str
    """``v1`` or ``v2``."""
    mode: str
    """The hooks' mode: enforce, strict, warn."""
    speculative_method: str | None
    groups: tuple[RuntimeGroup, ...]
    source: str = "vllm runtime"


@dataclass(frozen=True, slots=True)
class CatalogSizes:
    """The sizes kvconfig's catalog gives a voter, and where they came from."""

    sizes: tuple[KernelSize, ...]
    entry: Entry | None
    note: str = ""


@dataclass(frozen=True, slots=True)
class RuntimeReport:
    """The runtime plan, kvconfig's own vote per group, and what disagrees."""

    plan: PlanResult
    own: dict[int, int | None]
    """kvconfig's kernel block size per group id (None: no value, or no common size)."""
    disagreements: tuple[str, ...] = ()
    """Groups where kvconfig's catalog and vLLM's runner chose different sizes."""
    notes: tuple[str, ...] = ()
    """Backends not in the catalog, or whose declared sizes differ from it."""


def catalog_sizes(catalog: CatalogData | None, voter: RuntimeVoter) -> CatalogSizes:
    """The catalog's sizes for a voter, or the class's own declaration if it is unknown.

    ``catalog`` is None for a vLLM kvconfig has no catalog for.
    """
    for path in voter.lookup if catalog is not None else ():
        entry = catalog.by_class.get(path) if catalog is not None else None
        if entry is not None:
            via = "" if path == voter.class_path else f" (via its base {path})"
            return CatalogSizes(entry.sizes(voter.context), entry, via)
    where = (
        "it has no catalog" if catalog is None else f"its catalog for vLLM {catalog.vllm_version}"
    )
    return CatalogSizes(
        voter.declared,
        None,
        f"{voter.class_path} is unknown to kvconfig ({where}): using the sizes the class "
        f"declares, {format_sizes(voter.declared)}",
    )


def own_vote(group: RuntimeGroup, sizes: Sequence[CatalogSizes]) -> int | None:
    """kvconfig's kernel block size for a group; None when encoder-only or no size fits."""
    voters = tuple((v.name, s.sizes) for v, s in zip(group.voters, sizes, strict=True))
    try:
        return group_kernel_block_size(
            GroupInput(
                spec=group.spec,
                block_size=group.block_size,
                has_layer_views=group.has_layer_views,
                packed=group.packed,
                voters=voters,
            )
        )
    except (NoCommonKernelBlockSize, NotImplementedError):
        return None  # no common size, or a spec vLLM itself would have refused


def _consults_catalog(group: RuntimeGroup) -> bool:
    """Whether the dispatch votes for this group (otherwise B is kept, whatever the
    backends declare)."""
    return group.spec == "attention" and group.has_layer_views and not group.packed


def _voter(v: RuntimeVoter) -> Voter:
    roles = frozenset(
        role for role, names in (("target", v.target_layers), ("draft", v.draft_layers)) if names
    )
    return Voter(
        name=v.name,
        class_path=v.class_path,
        sizes=v.declared,
        roles=roles or frozenset({"target"}),
        layers=(*v.target_layers, *v.draft_layers),
        kernel_block_size=v.runner_k,
    )


def _group(g: RuntimeGroup) -> GroupResult:
    return GroupResult(
        id=g.id,
        kind=g.kind,
        block_size=g.block_size,
        block_size_reason="the running engine's KV-cache config",
        kernel_block_size=g.runner_k,
        packed=g.packed,
        target_layers=tuple(n for v in g.voters for n in v.target_layers),
        draft_layers=tuple(n for v in g.voters for n in v.draft_layers),
        voters=tuple(_voter(v) for v in g.voters),
        runner_k=g.runner_k,
        speculator_k=g.speculator_k,
    )


def _findings(d: RuntimeDeployment) -> list[Found]:
    found = []
    for g in d.groups:
        if g.runner_k is None or g.speculator_k is None:
            continue
        if g.speculator_k != g.runner_k:
            code = (
                FindingCode.COMPONENT_MISMATCH
                if g.speculator_k == g.block_size
                else FindingCode.SPECULATOR_SPLIT_ERROR
            )
            found.append(
                Found(
                    code,
                    g.id,
                    f"KV-cache group {g.id}: the KV cache was allocated in {g.runner_k}-token "
                    f"kernel pages of {g.block_size}-token blocks, but the speculator's "
                    f"attention uses {g.speculator_k}-token pages (kvconfig hooks mode: {d.mode}).",
                    ("KVCONFIG_MODE=enforce", f"--block-size {g.runner_k}"),
                )
            )
        elif g.speculator_own is not None and g.speculator_own != g.runner_k:
            found.append(
                Found(
                    FindingCode.MISMATCH_FIXED_BY_HOOKS,
                    g.id,
                    f"KV-cache group {g.id}: the speculator alone would have voted "
                    f"{g.speculator_own}; the kvconfig hooks handed it the runner's {g.runner_k}.",
                )
            )
    return sort(found)


def runtime_report(d: RuntimeDeployment, catalog: CatalogData | None) -> RuntimeReport:
    """The plan of the running engine, checked against kvconfig's own vote."""
    own: dict[int, int | None] = {}
    disagreements: list[str] = []
    notes: list[str] = []
    for g in d.groups:
        sizes = [catalog_sizes(catalog, v) for v in g.voters]
        consulted = _consults_catalog(g)
        for v, s in zip(g.voters, sizes, strict=True):
            if not consulted:
                continue  # B is kept whatever the backends declare
            if s.entry is None:
                notes.append(f"group {g.id}: {s.note}")
            elif tuple(s.sizes) != tuple(v.declared):
                notes.append(
                    f"group {g.id}: {v.name} declares {format_sizes(v.declared)} at run time; "
                    f"kvconfig's catalog says {format_sizes(s.sizes)}{s.note}"
                )
        k = own_vote(g, sizes)
        own[g.id] = k
        if k != g.runner_k:
            disagreements.append(
                f"group {g.id} (B={g.block_size}): kvconfig's catalog votes "
                f"{'no kernel block size' if k is None else k}, vLLM's model runner "
                f"{'none' if g.runner_k is None else g.runner_k}"
            )
    plan = PlanResult(
        source=d.source,
        vllm_version=d.vllm_version,
        platform=d.platform,
        runner=d.runner,
        hooks=d.mode if d.mode in ("enforce", "strict", "warn") else "none",
        speculative_method=d.speculative_method,
        groups=tuple(_group(g) for g in d.groups),
        findings=tuple(_findings(d)),
    )
    return RuntimeReport(plan, own, tuple(disagreements), tuple(notes))
