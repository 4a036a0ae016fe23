"""A plan from vLLM's own start-up: the engine child's facts as a ``PlanResult``.

The groups, their block sizes, backends and kernel block sizes are what vLLM built
(``kvconfig.engine.readout``); the findings are kvconfig's reading of them, with the
codes the offline resolver uses, so every reporter (text, JSON, GitHub, SARIF, explain)
shows an engine plan as it shows an offline one:

* KV101: the Model Runner V2 speculator's attention reads a group with other pages than
  the runner split it into (vLLM starts; draft acceptance collapses);
* KV103: the kvconfig hooks, loaded by vLLM, handed the speculator the runner's value
  where its own vote differs;
* KV501: vLLM's hybrid alignment moved the block size;
* a start-up vLLM refused: the code of the refusal's kind (KV301 an invalid backend,
  KV302 none valid, KV201/KV202 no common kernel block size for the runner or the
  speculator, KV102 the speculator's split error, KV203/KV204 no or no aligned block
  size, KV305 a metadata builder refusing the kernel block size, KV306 no common KV-cache
  layout, KV101 the kvconfig hooks refusing a mismatch), or KV601 for any other refusal,
  always with vLLM's own text and the vLLM line that raised. A refused start-up is its
  refusal: what vLLM had built by then is shown, not judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvconfig.codes import FindingCode
from kvconfig.engine.pool import Answer
from kvconfig.mirror.platform import PlatformId
from kvconfig.plan.result import EngineRun, Found, GroupResult, PlanResult, Voter
from kvconfig.plan.result import sort as sort_findings
from kvconfig.schemas.sizes import format_sizes, size_from_json

#: Texts vLLM raises, and the finding code each refusal is.
REFUSALS: tuple[tuple[tuple[str, ...], FindingCode], ...] = (
    (("Selected backend", "is not valid for this configuration"), FindingCode.BACKEND_UNSUPPORTED),
    (("FP8 KV cache is not supported by the",), FindingCode.BACKEND_UNSUPPORTED),
    (("does not support logits soft cap",), FindingCode.BACKEND_UNSUPPORTED),
    (("No valid attention backend",), FindingCode.NO_VALID_BACKEND),
    (("-token kernel blocks, which packed",), FindingCode.SPECULATOR_SPLIT_ERROR),
    (("No common block size for",), FindingCode.NO_COMMON_KERNEL_SIZE),
    (
        ("The attention backends share no supported KV cache block size",),
        FindingCode.NO_COMMON_BLOCK_SIZE,
    ),
    (("Aligned KV cache block size",), FindingCode.ALIGNED_BLOCK_SIZE_UNSUPPORTED),
    (
        ("KV cache is needed, which is larger than the available KV cache memory",),
        FindingCode.KV_CACHE_MEMORY,
    ),
    (("No available memory for the cache blocks",), FindingCode.KV_CACHE_MEMORY),
    (("flex_attn_kv_block_size must be a power of 2",), FindingCode.BUILDER_REFUSES),
    (("No KV cache layout satisfies every supported set",), FindingCode.NO_KV_CACHE_LAYOUT),
)

#: vLLM's spec kinds (``KVCacheSpecKind``) that kvconfig names differently.
KINDS = {"chunked_local_attention": "chunked_local"}

STEPS = {"parse": "argument parsing", "config": "create_engine_config", "engine": "start-up"}


def refusal_code(message: str, facts: Mapping[str, Any] | None, error: str = "") -> FindingCode:
    """The finding code of a start-up vLLM refused with ``error: message``."""
    if error == "KernelBlockSizeMismatch":
        # the kvconfig hooks (strict) refused the mismatch at start-up
        return FindingCode.COMPONENT_MISMATCH
    for parts, code in REFUSALS:
        if all(p in message for p in parts):
            voted = facts is not None and facts.get("kernel_block_sizes") is not None
            if code is FindingCode.NO_COMMON_KERNEL_SIZE and voted:
                # the runner had voted: the speculator's vote raised
                return FindingCode.SPECULATOR_NO_COMMON_KERNEL_SIZE
            return code
    return FindingCode.VLLM_REFUSES


def _speculator_k(group: Mapping[str, Any]) -> int | None:
    values: Sequence[int] | None = group.get("speculator")
    if not values:
        return None
    differing = [v for v in values if v != group.get("runner")]
    return differing[0] if differing else values[0]


def _group(g: Mapping[str, Any]) -> GroupResult:
    block = int(g["block_size"])
    runner = g.get("runner")
    voters = tuple(
        Voter(
            name=b["name"],
            class_path=b["class"],
            sizes=tuple(size_from_json(s) for s in b["sizes"] or ()),
            roles=frozenset({"target", "draft"} if b["role"] == "mixed" else {b["role"]}),
            layers=tuple(b["layers"]),
            kernel_block_size=b.get("kernel_block_size") or (block if runner is not None else None),
        )
        for b in g["backends"]
    )
    return GroupResult(
        id=int(g["id"]),
        kind=KINDS.get(g["kind"], g["kind"]),
        block_size=block,
        block_size_reason="vLLM's start-up",
        kernel_block_size=runner,
        packed=bool(g["packed"]),
        target_layers=tuple(g["layers"]["target"]),
        draft_layers=tuple(g["layers"]["draft"]),
        voters=voters,
        runner_k=runner,
        speculator_k=_speculator_k(g),
    )


def _who(group: GroupResult) -> str:
    return "; ".join(
        f"{len(v.layers)} {v.role} layer{'s' if len(v.layers) != 1 else ''} on {v.name} "
        f"{format_sizes(v.sizes)}"
        for v in group.voters
    )


def _findings(facts: Mapping[str, Any], groups: Sequence[GroupResult]) -> list[Found]:
    found: list[Found] = []
    method = (facts.get("speculative_method") or "").upper()
    for g, raw in zip(groups, facts["groups"], strict=True):
        runner, spec = g.runner_k, g.speculator_k
        if runner is None or spec is None:
            continue
        if spec != runner:
            found.append(
                Found(
                    FindingCode.COMPONENT_MISMATCH,
                    g.id,
                    f"KV-cache group {g.id} ({_who(g)}) has {g.block_size}-token blocks that "
                    f"vLLM's model runner split into {g.block_size // runner} kernel pages of "
                    f"{runner} tokens when it allocated the KV cache. The {method} speculator's "
                    f"attention groups read the group with {spec}-token pages (vLLM's "
                    "start-up, Model Runner V2): draft steps 2 and later read the wrong KV "
                    "pages; acceptance collapses while the output stays lossless. Nothing fails.",
                    (
                        f"--block-size {runner}",
                        "give the drafter the target's attention backend "
                        "(speculative-config attention_backend)",
                        "install the kvconfig vLLM hooks (KVCONFIG_MODE=enforce hands the "
                        f"runner's {runner} to the speculator)",
                    ),
                )
            )
        elif raw.get("speculator_own") not in (None, runner) and facts.get("hooks") == "enforce":
            found.append(
                Found(
                    FindingCode.MISMATCH_FIXED_BY_HOOKS,
                    g.id,
                    f"KV-cache group {g.id}: on its own the speculator would vote "
                    f"{raw['speculator_own']}, not the runner's {runner}; the kvconfig hooks, "
                    f"loaded by vLLM's plugin loader, handed it {runner} at start-up.",
                )
            )
    for before, after in facts.get("aligned", ()):
        found.append(
            Found(
                FindingCode.BLOCK_SIZE_ADJUSTED,
                None,
                f"vLLM's hybrid block-size alignment (Platform._align_hybrid_block_size) moved "
                f"the block size from {before} to {after} tokens, so that an attention page "
                "holds a Mamba state.",
            )
        )
    return found


def incomplete_config(answer: Answer) -> str | None:
    """What vLLM's model code missed when it read a field the model's ``config.json`` does
    not have (None: any other refusal). That is bad input, not vLLM refusing a deployment."""
    data = answer.data
    error, where = str(data.get("error", "")), str(data.get("where") or "")
    message = str(data.get("message", ""))
    in_model_code = where.startswith(("vllm/model_executor/models/", "vllm/transformers_utils/"))
    missing = (error == "AttributeError" and "Config' object has no attribute" in message) or (
        error == "KeyError" and in_model_code
    )
    if answer.status != "refused" or not in_model_code or not missing:
        return None
    return f"vLLM cannot build the model from its config.json: {error}: {message} ({where})"


def _refusal(answer: Answer) -> Found:
    data = answer.data
    message = str(data.get("message", ""))
    where = f" ({data['where']})" if data.get("where") else ""
    during = STEPS.get(str(data.get("step")), "start-up")
    return Found(
        refusal_code(message, data.get("facts"), str(data.get("error", ""))),
        None,
        f"vLLM {answer.vllm_version} refuses to start ({during}{where}): "
        f"{data.get('error', 'Error')}: {message}",
    )


def plan_result(
    answer: Answer,
    *,
    source: str,
    platform: PlatformId,
    description: str,
    stood_in: Sequence[str],
) -> PlanResult:
    """The plan of one start-up (an ``ok`` or ``refused`` answer)."""
    data = answer.data
    facts: Mapping[str, Any] = data.get("facts") or {"groups": []}
    groups = tuple(_group(g) for g in facts["groups"])
    refused = answer.status == "refused"
    findings = [_refusal(answer)] if refused else _findings(facts, groups)
    return PlanResult(
        source=source,
        vllm_version=str(answer.vllm_version),
        platform=platform,
        runner=str(facts.get("runner_version", "v2")),
        hooks=str(facts.get("hooks", "none")),
        speculative_method=facts.get("speculative_method"),
        groups=groups,
        findings=tuple(sort_findings(findings)),
        engine=EngineRun(description, refused, tuple(stood_in)),
    )
