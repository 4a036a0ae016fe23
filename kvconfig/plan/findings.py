"""Findings: stable codes, severities and the sentences users read (docs/findings.md)."""

from __future__ import annotations

from collections.abc import Sequence

from kvconfig.codes import FindingCode
from kvconfig.errors import ModelUnavailable, NoCommonKernelBlockSize, RunTimeValue
from kvconfig.mirror.platform import PlatformId
from kvconfig.mirror.selection import Selection
from kvconfig.mirror.vote import Declared
from kvconfig.plan.assemble import Group
from kvconfig.plan.result import Found, GroupResult, Voter
from kvconfig.schemas.deployment import Deployment, LayerSet
from kvconfig.schemas.sizes import KernelSize, format_sizes


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _who(voters: Sequence[Voter]) -> str:
    parts = []
    for v in voters:
        parts.append(
            f"{_plural(len(v.layers), v.role + ' layer')} on {v.name} {format_sizes(v.sizes)}"
        )
    return "; ".join(parts)


def _speculator(method: str | None) -> str:
    name = (method or "").upper().replace("DRAFT_MODEL", "draft-model")
    return f"The {name} speculator (Model Runner V2)"


def component_mismatch(
    g: Group,
    runner_k: int,
    speculator_k: int,
    voters: Sequence[Voter],
    method: str | None,
    *,
    block_fixes: Sequence[int] = (),
    backend_fixes: Sequence[str] = (),
) -> Found:
    """KV101 or KV102: runner and speculator disagree on a group's k."""
    B = g.block_size
    f = B // runner_k
    head = (
        f"KV-cache group {g.id} ({_who(voters)}) has {B}-token blocks. The model runner "
        f"votes over all layers and splits each block into {_plural(f, 'kernel page')} of "
        f"{runner_k} tokens; that is how the KV cache is allocated. {_speculator(method)} "
        f"votes again over its draft layers alone and gets {speculator_k}."
    )
    if speculator_k == B:
        code = FindingCode.COMPONENT_MISMATCH
        body = (
            " It reads the cache with an unsplit block table, so draft steps 2 and later read "
            "the wrong KV pages: draft acceptance collapses after the first position while the "
            "output stays lossless. Nothing fails."
        )
    else:
        code = FindingCode.SPECULATOR_SPLIT_ERROR
        body = (
            f" vLLM then fails at start-up: the draft backend asks for {speculator_k}-token "
            f"kernel blocks the {runner_k}-token cache view cannot provide (its error blames "
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
            f"speculative-config attention_backend: {name} (the drafter then votes {runner_k} too)"
        )
    fixes.append(
        "install the kvconfig vLLM hooks (pip install 'kvconfig[vllm]'; KVCONFIG_MODE=enforce, "
        f"the default, hands the runner's {runner_k} to the speculator)"
    )
    return Found(code, g.id, head + body, tuple(fixes))


def fixed_by_hooks(g: Group, runner_k: int, own: int) -> Found:
    """KV103: the hooks make the speculator use the runner's k."""
    return Found(
        FindingCode.MISMATCH_FIXED_BY_HOOKS,
        g.id,
        f"KV-cache group {g.id}: on its own the speculator would vote {own}, not the runner's "
        f"{runner_k}; the kvconfig hooks hand it {runner_k} at start-up, so it reads the pages the "
        "KV cache was allocated with.",
    )


def no_common_size(g: Group, err: NoCommonKernelBlockSize, voters: Sequence[Declared]) -> Found:
    """KV201: the runner's vote raises."""
    from kvconfig.plan.fixes import working_block_sizes

    good = working_block_sizes(voters)
    fixes = (f"--block-size {good[0]} (works: {', '.join(map(str, good[:8]))})",) if good else ()
    return Found(
        FindingCode.NO_COMMON_KERNEL_SIZE,
        g.id,
        f"KV-cache group {g.id}: vLLM fails at start-up, before serving: {err}",
        (*fixes, "give the layers backends that share a kernel block size"),
    )


def builder_refuses(g: GroupResult, backend: str, k: int, who: str, error: str) -> Found:
    """KV305: a metadata builder's constructor refuses the group's kernel block size."""
    # the next power of two: at least the block vLLM settled (hybrid alignment included)
    power = 1 << max(4, (g.block_size - 1).bit_length())
    fixes = [f"--block-size {power} (a power of two)"]
    return Found(
        FindingCode.BUILDER_REFUSES,
        g.id,
        f"KV-cache group {g.id}: vLLM fails at start-up when {who} builds {backend}'s "
        f"metadata for {k}-token kernel pages: {error}.",
        (*fixes, f"give the group's layers another backend than {backend}"),
    )


def no_kv_cache_layout(error: str) -> Found:
    """KV306: the worker's backends share no KV-cache layout."""
    return Found(
        FindingCode.NO_KV_CACHE_LAYOUT,
        None,
        f"vLLM fails at start-up: {error}.",
        ("give every layer backends that share a KV-cache layout (e.g. --attention-backend)",),
    )


def speculator_no_common_size(g: Group, err: NoCommonKernelBlockSize, runner_k: int) -> Found:
    """KV202: the speculator's own vote raises."""
    return Found(
        FindingCode.SPECULATOR_NO_COMMON_KERNEL_SIZE,
        g.id,
        f"KV-cache group {g.id}: the speculator's vote over its draft layers fails at "
        f"start-up: {err}",
        (
            f"--block-size {runner_k}",
            "install the kvconfig vLLM hooks (KVCONFIG_MODE=enforce)",
        ),
    )


def no_block_size(names: Sequence[str], declared: Sequence[Sequence[KernelSize]]) -> Found:
    """KV203: no default B suits every backend (``declared``: each one's sizes)."""
    sizes = "; ".join(f"{n}: {format_sizes(d)}" for n, d in zip(names, declared, strict=True))
    return Found(
        FindingCode.NO_COMMON_BLOCK_SIZE,
        None,
        f"vLLM fails at start-up: the attention backends share no supported KV cache block "
        f"size ({sizes}).",
        ("give every layer backends that accept a common block size",),
    )


def backend_refused(layers: Sequence[LayerSet], sel: Selection, p: PlatformId) -> Found:
    """KV301/KV302/KV303/KV304: no usable backend for some layers (one finding for all)."""
    names = [n for layer in layers for n in layer.names()]
    where = (
        f"{layers[0].role} layer {names[0]}"
        if len(names) == 1
        else (f"{len(names)} {layers[0].role} layers ({names[0]} .. {names[-1]})")
    )
    plat = p.label()
    if sel.unknown and sel.rejected:
        name, why = sel.rejected[0]
        return Found(
            FindingCode.BACKEND_UNKNOWN,
            None,
            f"{name}, requested by {sel.reason} for {where} on {plat}: {', '.join(why)}, so "
            "kvconfig cannot tell whether vLLM accepts it (or refuses to start with "
            f"'Selected backend {name} is not valid for this configuration') nor what it "
            "declares for these layers.",
            (
                "request a backend kvconfig models (see 'kvconfig catalog --platform ...')",
                "or describe the layers in a native file, with the backend's sizes under "
                "'backends' (docs/native-format.md)",
            ),
        )
    if (
        sel.rejected
        and len(sel.rejected) == 1
        and sel.backend is None
        and sel.reason != "automatic"
    ):
        name, why = sel.rejected[0]
        return Found(
            FindingCode.BACKEND_UNSUPPORTED,
            None,
            f"{name}, requested by {sel.reason} for {where}, cannot run on {plat}: "
            f"{', '.join(why)}. vLLM refuses to start.",
            (
                "choose another backend (see 'kvconfig catalog --platform ...') "
                "or remove the request",
            ),
        )
    if not sel.rejected:
        return Found(
            FindingCode.BACKEND_CHOICE_UNKNOWN,
            None,
            f"{where}: {sel.error}.",
            ("set --attention-backend",),
        )
    return Found(
        FindingCode.NO_VALID_BACKEND,
        None,
        f"{where} on {plat}: {sel.error}. vLLM refuses to start.",
        ("change the layer's dtype, KV-cache dtype or block size, or the platform",),
    )


def architecture(arch: str, source: str, snippet: str = "") -> Found:
    """KV401: a model kvconfig cannot derive offline; the verdict is ``unknown``."""
    fixes = [
        "plan it with vLLM's own start-up, exact for every model the installed vLLM builds: "
        "--engine auto (offline where kvconfig derives the model) or --engine vllm "
        "(pip install 'kvconfig[vllm]')",
        "or describe the layers in a native kvconfig file (docs/native-format.md), then lint that",
    ]
    if snippet:
        fixes.append("start from this native file:\n" + snippet)
    return Found(
        FindingCode.ARCHITECTURE_NOT_DERIVABLE,
        None,
        f"{source}: kvconfig cannot derive the KV-cache layers of architecture {arch!r} "
        "offline: the verdict is unknown (no rejection; exit 0).",
        tuple(fixes),
    )


def model_unavailable(err: ModelUnavailable) -> Found:
    """KV402: the model's ``config.json`` cannot be read offline; the verdict is
    ``unknown``."""
    return Found(
        FindingCode.MODEL_UNAVAILABLE,
        None,
        f"{err.render().removesuffix(f' ({err.hint})')}: kvconfig cannot tell the plan, so the "
        "verdict is unknown (no rejection; exit 0).",
        (err.hint,) if err.hint else (),
    )


def runtime_value(err: RunTimeValue) -> Found:
    """KV403: an option that changes the plan is only known at run time; the verdict is
    ``unknown``."""
    return Found(
        FindingCode.RUNTIME_VALUE,
        None,
        f"{err}: kvconfig cannot tell the plan, so the verdict is unknown (no rejection; exit 0).",
        tuple(err.fixes),
    )


def block_size_adjusted(block_size: int, reason: str) -> Found:
    """KV501: vLLM changes B itself (hybrid alignment)."""
    return Found(
        FindingCode.BLOCK_SIZE_ADJUSTED,
        None,
        f"vLLM uses {block_size}-token KV-cache blocks: {reason}.",
    )


def aligned_rejected(block_size: int, names: Sequence[str]) -> Found:
    """KV204: the aligned B is rejected by a backend (``_check_aligned_block_size``)."""
    return Found(
        FindingCode.ALIGNED_BLOCK_SIZE_UNSUPPORTED,
        None,
        f"vLLM fails at start-up: Aligned KV cache block size {block_size} is not supported "
        f"by attention backend(s): {', '.join(names)}.",
        ("choose attention backends that accept the aligned block size",),
    )


def grouping_fails(reason: str, dep: Deployment) -> Found:
    """KV205: ``get_kv_cache_groups`` raises for these specs."""
    fixes = []
    if dep.disable_hybrid_kv_cache_manager:
        fixes.append("drop --disable-hybrid-kv-cache-manager (Mamba hybrids need it)")
    fixes.append("check the layers' kinds and sizes")
    return Found(
        FindingCode.GROUPING_FAILS,
        None,
        f"vLLM fails at start-up while grouping the KV cache: {reason}",
        tuple(fixes),
    )
