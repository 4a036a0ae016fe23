"""A plan from vLLM's own start-up: the engine child's facts in the plan's JSON shape.

The groups, their block sizes, backends and kernel block sizes are what vLLM built
(``kvconfig.engine.readout``); the findings are kvconfig's reading of them, with the
codes the offline resolver uses:

* KV101: the Model Runner V2 speculator's attention reads a group with B-token pages
  while the runner split B into smaller kernel pages (vLLM starts; draft acceptance
  collapses);
* KV103: the kvconfig hooks were loaded by vLLM and handed the speculator the runner's
  value where its own vote differs;
* KV501: vLLM moved the block size away from the one asked for (hybrid alignment);
* a start-up vLLM refused: the code of the refusal's kind (KV301 an invalid backend,
  KV302 none valid, KV201/KV202 no common kernel block size for the runner or the
  speculator, KV102 the speculator's split error, KV203/KV204 no or no aligned block
  size), or KV601 for any other refusal, always with vLLM's own text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvconfig.codes import FindingCode, Severity
from kvconfig.engine.pool import Answer
from kvconfig.plan.result import Found
from kvconfig.plan.result import sort as sort_findings

#: Texts vLLM 0.33.0 raises, and the finding code each refusal is.
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
)

#: vLLM's spec kinds (``KVCacheSpecKind``) that kvconfig names differently.
KINDS = {"chunked_local_attention": "chunked_local"}


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
    runner = group.get("runner")
    differing = [v for v in values if v != runner]
    return differing[0] if differing else values[0]


def _group_json(g: Mapping[str, Any]) -> dict[str, Any]:
    block = int(g["block_size"])
    runner = g.get("runner")
    backends = []
    for b in g["backends"]:
        narrowed = b.get("kernel_block_size")
        backends.append(
            {
                "name": b["name"],
                "class": b["class"],
                "sizes": b["sizes"] if b["sizes"] is not None else [],
                "role": b["role"],
                "layers": b["layers"],
                "kernel_block_size": narrowed
                if narrowed is not None
                else (block if runner is not None else None),
            }
        )
    return {
        "id": g["id"],
        "kind": KINDS.get(g["kind"], g["kind"]),
        "block_size": block,
        "block_size_reason": "vLLM's start-up",
        "kernel_block_size": runner,
        "split": None if runner is None else block // runner,
        "packed": bool(g["packed"]),
        "layers": g["layers"],
        "backends": backends,
        "components": {"runner": runner, "speculator": _speculator_k(g)},
    }


def _who(group: Mapping[str, Any]) -> str:
    parts = []
    for b in group["backends"]:
        n = len(b["layers"])
        role = b["role"]
        sizes = ", ".join(
            str(s) if isinstance(s, int) else f"MultipleOf({s['multiple_of']})"
            for s in b["sizes"] or ()
        )
        parts.append(f"{n} {role} layer{'s' if n != 1 else ''} on {b['name']} [{sizes}]")
    return "; ".join(parts)


def _group_findings(facts: Mapping[str, Any], method: str | None) -> list[Found]:
    found: list[Found] = []
    speculator = f"The {(method or '').upper()} speculator"
    for g in facts["groups"]:
        runner, block = g.get("runner"), int(g["block_size"])
        spec = _speculator_k(g)
        if runner is None or spec is None:
            continue
        if spec != runner:
            found.append(
                Found(
                    FindingCode.COMPONENT_MISMATCH,
                    g["id"],
                    f"KV-cache group {g['id']} ({_who(g)}) has {block}-token blocks that vLLM's "
                    f"model runner split into {block // runner} kernel pages of {runner} tokens "
                    f"when it allocated the KV cache. {speculator}'s attention groups read the "
                    f"group with {spec}-token pages (vLLM's start-up, Model Runner V2): draft "
                    "steps 2 and later read the wrong KV pages; acceptance collapses while the "
                    "output stays lossless. Nothing fails.",
                    (
                        f"--block-size {runner}",
                        "give the drafter the target's attention backend "
                        "(speculative-config attention_backend)",
                        "install the kvconfig vLLM hooks (KVCONFIG_MODE=enforce hands the "
                        f"runner's {runner} to the speculator)",
                    ),
                )
            )
        elif g.get("speculator_own") not in (None, runner) and facts.get("hooks") == "enforce":
            found.append(
                Found(
                    FindingCode.MISMATCH_FIXED_BY_HOOKS,
                    g["id"],
                    f"KV-cache group {g['id']}: on its own the speculator would vote "
                    f"{g['speculator_own']}, not the runner's {runner}; the kvconfig hooks, "
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


def _refusal(answer: Answer) -> Found:
    data = answer.data
    message = str(data.get("message", ""))
    code = refusal_code(message, data.get("facts"), str(data.get("error", "")))
    where = data.get("where")
    step = {"parse": "argument parsing", "config": "create_engine_config", "engine": "start-up"}
    at = f" ({where})" if where else ""
    during = step.get(str(data.get("step")), "start-up")
    return Found(
        code,
        None,
        f"vLLM {answer.vllm_version} refuses to start ({during}{at}): "
        f"{data.get('error', 'Error')}: {message}",
    )


def plan_json(
    answer: Answer,
    *,
    source: str,
    platform: Mapping[str, Any],
    description: str,
    stood_in: Sequence[str],
) -> dict[str, Any]:
    """The plan of one start-up (an ``ok`` or ``refused`` answer) in the plan's JSON shape."""
    data = answer.data
    facts: Mapping[str, Any] = data.get("facts") or {"groups": []}
    method = facts.get("speculative_method")
    # a refused start-up is its refusal; what vLLM had built by then is shown, not judged
    refused = answer.status == "refused"
    findings = [_refusal(answer)] if refused else _group_findings(facts, method)
    ordered = sort_findings(findings)
    return {
        "verdict": "reject" if any(f.severity is Severity.ERROR for f in ordered) else "ok",
        "vllm_version": answer.vllm_version,
        "platform": dict(platform),
        "source": source,
        "runner": facts.get("runner_version", "v2"),
        "hooks": facts.get("hooks", "none"),
        "speculative_method": method,
        "groups": [_group_json(g) for g in facts["groups"]],
        "findings": [f.to_json() for f in ordered],
        "engine": {
            "kind": "vllm",
            "description": description,
            "refused": answer.status == "refused",
            "stood_in": list(stood_in),
        },
    }
