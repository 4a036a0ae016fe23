"""Findings: stable codes, severities and the sentences users read (docs/findings.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvconfig.errors import NoCommonKernelBlockSize
from kvconfig.mirror.vote import Declared
from schemas.sizes import format_sizes

if TYPE_CHECKING:
    from kvconfig.mirror.selection import Selection
    from kvconfig.plan.groups import Group
    from kvconfig.plan.resolve import Voter, _Ctx
    from kvconfig.plan.setup import LayerSet, Setup

#: code -> (name, severity, one-line summary); the documented, stable list.
CODES: dict[str, tuple[str, str, str]] = {
    "KV101": (
        "component-mismatch",
        "error",
        "the speculator reads the KV cache with its own, larger kernel block size (silent)",
    ),
    "KV102": (
        "speculator-split-error",
        "error",
        "the speculator's kernel block size sits between the runner's and B: vLLM fails at start",
    ),
    "KV103": (
        "mismatch-fixed-by-hooks",
        "info",
        "the kvconfig hooks hand the runner's kernel block size to the speculator",
    ),
    "KV201": (
        "no-common-kernel-size",
        "error",
        "no kernel block size divides B and suits every backend of a group: vLLM fails at start",
    ),
    "KV202": (
        "speculator-no-common-kernel-size",
        "error",
        "the draft layers' backends share no kernel block size: the speculator fails at start",
    ),
    "KV203": (
        "no-common-block-size",
        "error",
        "the backends share no KV-cache block size vLLM could default to: vLLM fails at start",
    ),
    "KV204": (
        "aligned-block-size-unsupported",
        "error",
        "hybrid alignment moved B to a size an attention backend rejects: vLLM fails at start",
    ),
    "KV205": (
        "grouping-fails",
        "error",
        "vLLM cannot group these layers' KV-cache specs: it fails at start",
    ),
    "KV301": (
        "backend-unsupported",
        "error",
        "a requested attention backend cannot run on this platform or layer: vLLM refuses it",
    ),
    "KV302": (
        "no-valid-backend",
        "error",
        "no attention backend in vLLM's priority list can run this layer",
    ),
    "KV303": (
        "backend-choice-unknown",
        "error",
        "kvconfig cannot derive vLLM's automatic backend choice on this platform",
    ),
    "KV401": (
        "architecture-not-derivable",
        "error",
        "kvconfig cannot derive this architecture's layers; describe them in a native file",
    ),
    "KV501": (
        "block-size-adjusted",
        "info",
        "vLLM changes the block size itself (hybrid alignment)",
    ),
    "KV601": (
        "vllm-refuses",
        "error",
        "vLLM's own start-up (--engine vllm) raised: the deployment does not start",
    ),
    "KV602": (
        "engine-differs",
        "warning",
        "the offline plan differs from vLLM's own start-up (--engine both): an offline bug",
    ),
    # ---- fleet findings: connectors, routers and offload tiers across engines
    # (kvconfig.fleet, docs/fleets.md) -------------------------------------------------
    "KV701": (
        "connector-kernel-size-differs",
        "warning",
        "a KV connector votes another kernel block size for a transfer group than the runner",
    ),
    "KV702": (
        "connector-refuses",
        "error",
        "vLLM refuses to build a KV connector at start-up (its own vote, layout or parallel rules)",
    ),
    "KV703": (
        "nixl-block-size-indivisible",
        "error",
        "NIXL handshake: the local block size is no multiple of the remote one; vLLM asserts",
    ),
    "KV704": (
        "nixl-hetero-block-tp",
        "error",
        "NIXL: different block sizes while prefill TP > decode TP; vLLM asserts at the handshake",
    ),
    "KV705": (
        "nixl-hetero-block-host-buffer",
        "error",
        "NIXL: different block sizes with a host buffer; vLLM asserts at the handshake",
    ),
    "KV706": (
        "nixl-hetero-block-region-mapped",
        "error",
        "NIXL: different block sizes with region-mapped (HMA) transfers; the first transfer raises",
    ),
    "KV707": (
        "nixl-mamba-pages-per-block",
        "error",
        "NIXL: a Mamba hybrid with prefix caching needs equal pages per block on both sides",
    ),
    "KV708": (
        "nixl-compat-hash",
        "error",
        "the engines' NIXL compatibility hashes differ: the handshake fails after loading",
    ),
    "KV709": (
        "hybrid-block-size-by-parallelism",
        "warning",
        "hybrid alignment gives engines with the same --block-size another B at their parallelism",
    ),
    "KV710": (
        "mooncake-block-size",
        "error",
        "Mooncake P and D use different blocks; P maps D's block ids with its own ratio",
    ),
    "KV711": (
        "router-block-size",
        "error",
        "a KV-aware router hashes other block sizes than the engines report: no prefix hits",
    ),
    "KV712": (
        "router-hash",
        "error",
        "the router's prompt hashes cannot match the engines' (algorithm or seed): silent",
    ),
    "KV713": (
        "offload-chunk-size",
        "error",
        "the offload chunk is no multiple of the GPU block size: vLLM refuses to start",
    ),
    "KV714": (
        "offload-namespace",
        "error",
        "engines sharing a file tier write to different namespaces: a silent 0% hit rate",
    ),
    "KV715": (
        "prefix-match-unit",
        "error",
        "--prefix-match-unit does not divide every prefix-cacheable block size: vLLM refuses",
    ),
    "KV716": (
        "connector-layout-mismatch",
        "error",
        "a MultiConnector's children require different KV-cache layouts: vLLM refuses",
    ),
    "KV717": (
        "pipeline-stages-differ",
        "warning",
        "pipeline stages vote different kernel block sizes for one group",
    ),
    "KV718": (
        "nixl-handshake-refused",
        "error",
        "another NIXL handshake check refuses the pair (TP, DCP, layout, KV replication)",
    ),
    "KV719": (
        "connector-fixed-by-hooks",
        "info",
        "the kvconfig hooks hand the runner's kernel block size to the KV connector",
    ),
    "KV720": (
        "connector-pages-transfer",
        "error",
        "a connector's pages differ from a group's and the pair transfers across ratios (silent)",
    ),
    "KV721": (
        "prefix-hash-seed",
        "error",
        "engines that share prefix-cache hashes derive them from random per-process seeds",
    ),
    # ---- end of fleet findings -------------------------------------------------------
}

_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True, slots=True)
class Found:
    """One finding."""

    code: str
    group: int | None
    message: str
    fixes: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        """The code's stable slug."""
        return CODES[self.code][0]

    @property
    def severity(self) -> str:
        """error, warning or info."""
        return CODES[self.code][1]

    def to_json(self) -> dict[str, object]:
        """The documented JSON shape of a finding."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "group": self.group,
            "message": self.message,
            "fixes": list(self.fixes),
        }


def sort(findings: Sequence[Found]) -> list[Found]:
    """Errors first, then by group."""
    return sorted(findings, key=lambda f: (_ORDER[f.severity], -1 if f.group is None else f.group))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _who(voters: Sequence[Voter]) -> str:
    parts = []
    for v in voters:
        parts.append(
            f"{_plural(len(v.layers), v.role + ' layer')} on {v.name} {format_sizes(v.sizes)}"
        )
    return "; ".join(parts)


def _speculator(setup: Setup) -> str:
    method = (setup.speculative_method or "").upper().replace("DRAFT_MODEL", "draft-model")
    return f"The {method} speculator (Model Runner V2)"


def component_mismatch(
    g: Group,
    runner: int,
    speculator: int,
    voters: Sequence[Voter],
    ctx: _Ctx,
    *,
    block_fixes: Sequence[int] = (),
    backend_fixes: Sequence[str] = (),
) -> Found:
    """KV101 or KV102: runner and speculator disagree on a group's k."""
    B = g.block_size
    f = B // runner
    head = (
        f"KV-cache group {g.id} ({_who(voters)}) has {B}-token blocks. The model runner "
        f"votes over all layers and splits each block into {_plural(f, 'kernel page')} of "
        f"{runner} tokens; that is how the KV cache is allocated. {_speculator(ctx.setup)} "
        f"votes again over its draft layers alone and gets {speculator}."
    )
    if speculator == B:
        code = "KV101"
        body = (
            " It reads the cache with an unsplit block table, so draft steps 2 and later read "
            "the wrong KV pages: draft acceptance collapses after the first position while the "
            "output stays lossless. Nothing fails."
        )
    else:
        code = "KV102"
        body = (
            f" vLLM then fails at start-up: the draft backend asks for {speculator}-token "
            f"kernel blocks the {runner}-token cache view cannot provide (its error blames "
            "'packed' blocks, which is misleading)."
        )
    fixes = []
    if block_fixes:
        shown = ", ".join(str(b) for b in block_fixes[:6])
        fixes.append(
            f"--block-size {block_fixes[0]}: runner and speculator agree "
            f"(they also agree at {shown})"
            if len(block_fixes) > 1
            else f"--block-size {block_fixes[0]}: runner and speculator agree"
        )
    for name in backend_fixes[:3]:
        fixes.append(
            f"speculative-config attention_backend: {name} (the drafter then votes {runner} too)"
        )
    fixes.append(
        "install the kvconfig vLLM hooks (pip install 'kvconfig[vllm]'; KVCONFIG_MODE=enforce, "
        f"the default, hands the runner's {runner} to the speculator)"
    )
    return Found(code, g.id, head + body, tuple(fixes))


def fixed_by_hooks(g: Group, runner: int, own: int, voters: Sequence[Voter]) -> Found:
    """KV103: the hooks make the speculator use the runner's k."""
    return Found(
        "KV103",
        g.id,
        f"KV-cache group {g.id}: on its own the speculator would vote {own}, not the runner's "
        f"{runner}; the kvconfig hooks hand it {runner} at start-up, so it reads the pages the "
        "KV cache was allocated with.",
    )


def no_common_size(g: Group, err: NoCommonKernelBlockSize, voters: Sequence[Declared]) -> Found:
    """KV201: the runner's vote raises."""
    from kvconfig.mirror.vote import working_block_sizes

    good = working_block_sizes(voters)
    fixes = (f"--block-size {good[0]} (works: {', '.join(map(str, good[:8]))})",) if good else ()
    return Found(
        "KV201",
        g.id,
        f"KV-cache group {g.id}: vLLM fails at start-up, before serving: {err}",
        (*fixes, "give the layers backends that share a kernel block size"),
    )


def speculator_no_common_size(g: Group, err: NoCommonKernelBlockSize, runner: int) -> Found:
    """KV202: the speculator's own vote raises."""
    return Found(
        "KV202",
        g.id,
        f"KV-cache group {g.id}: the speculator's vote over its draft layers fails at "
        f"start-up: {err}",
        (
            f"--block-size {runner}",
            "install the kvconfig vLLM hooks (KVCONFIG_MODE=enforce)",
        ),
    )


def no_block_size(names: Sequence[str], ctx: _Ctx) -> Found:
    """KV203: no default B suits every backend."""
    sizes = "; ".join(f"{n}: {format_sizes(ctx.machine.block_sizes_nospec(n))}" for n in names)
    return Found(
        "KV203",
        None,
        f"vLLM fails at start-up: the attention backends share no supported KV cache block "
        f"size ({sizes}).",
        ("give every layer backends that accept a common block size",),
    )


def backend_refused(layers: Sequence[LayerSet], sel: Selection, setup: Setup) -> Found:
    """KV301/KV302/KV303: no usable backend for some layers (one finding for all of them)."""
    names = [n for layer in layers for n in layer.names()]
    where = (
        f"{layers[0].role} layer {names[0]}"
        if len(names) == 1
        else (f"{len(names)} {layers[0].role} layers ({names[0]} .. {names[-1]})")
    )
    p = setup.platform
    plat = p.label() if p is not None else "this platform"
    if (
        sel.rejected
        and len(sel.rejected) == 1
        and sel.backend is None
        and sel.reason != "automatic"
    ):
        name, why = sel.rejected[0]
        return Found(
            "KV301",
            None,
            f"{name}, requested by {sel.reason} for {where}, cannot run on {plat}: "
            f"{', '.join(why)}. vLLM refuses to start.",
            (
                "choose another backend (see 'kvconfig catalog --platform ...') "
                "or remove the request",
            ),
        )
    if not sel.rejected:
        return Found("KV303", None, f"{where}: {sel.error}.", ("set --attention-backend",))
    return Found(
        "KV302",
        None,
        f"{where} on {plat}: {sel.error}. vLLM refuses to start.",
        ("change the layer's dtype, KV-cache dtype or block size, or the platform",),
    )


def architecture(arch: str, source: str, snippet: str = "") -> Found:
    """KV401: a model kvconfig cannot derive, with a native-file sketch from its config."""
    fixes = [
        "describe the layers in a native kvconfig file (docs/native-format.md), then lint that"
    ]
    if snippet:
        fixes.append(
            "start from this sketch of what its config.json says (check names and kinds "
            "against vLLM's model code; add the drafter's layers with role: draft):\n" + snippet
        )
    return Found(
        "KV401",
        None,
        f"{source}: kvconfig cannot derive the KV-cache layers of architecture {arch!r}.",
        tuple(fixes),
    )


def block_size_adjusted(block_size: int, reason: str) -> Found:
    """KV501: vLLM changes B itself (hybrid alignment)."""
    return Found(
        "KV501",
        None,
        f"vLLM uses {block_size}-token KV-cache blocks: {reason}.",
    )


def aligned_rejected(block_size: int, names: Sequence[str]) -> Found:
    """KV204: the aligned B is rejected by a backend (``_check_aligned_block_size``)."""
    return Found(
        "KV204",
        None,
        f"vLLM fails at start-up: Aligned KV cache block size {block_size} is not supported "
        f"by attention backend(s): {', '.join(names)}.",
        ("choose attention backends that accept the aligned block size",),
    )


def grouping_fails(reason: str, setup: Setup) -> Found:
    """KV205: ``get_kv_cache_groups`` raises for these specs."""
    fixes = []
    if setup.disable_hybrid_kv_cache_manager:
        fixes.append("drop --disable-hybrid-kv-cache-manager (Mamba hybrids need it)")
    fixes.append("check the layers' kinds and sizes")
    return Found(
        "KV205",
        None,
        f"vLLM fails at start-up while grouping the KV cache: {reason}",
        tuple(fixes),
    )
