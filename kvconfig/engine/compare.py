"""Where the offline plan and vLLM's start-up disagree (``--engine both``).

Both plans have the documented JSON shape. They agree when the verdicts agree, when both
reject for the same cause (the finding codes of their errors: a refused start-up's code
is one of the offline plan's errors; vLLM's refusals that kvconfig does not classify,
KV601, never match), and, group
by group, the kind, the block size B, the kernel block size k, the runner's and the
speculator's values, packing, and each backend with the layers it serves (by role).
Findings' wording, block-size reasons and backend class paths are not compared: the
offline side names a backend class from its catalog, vLLM's side names the class it
imported, and they may differ for dynamically created subclasses.

A start-up that runs out of GPU memory for the KV cache (KV603) compares as no
difference: the offline plan decides page sizes, not capacity (docs/engine.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _backends(group: Mapping[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    return sorted((b["name"], b["role"], tuple(b["layers"])) for b in group["backends"])


def _layer_sets(group: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    layers = group["layers"]
    return tuple(layers.get("target", ())), tuple(layers.get("draft", ()))


FIELDS = ("kind", "block_size", "kernel_block_size", "packed")


def causes(plan: Mapping[str, Any]) -> list[str]:
    """The codes of a plan's errors (what rejects it), in order, each once."""
    return list(dict.fromkeys(f["code"] for f in plan["findings"] if f["severity"] == "error"))


def cause_differs(offline: Sequence[str], engine: Sequence[str], refused: bool) -> bool:
    """Whether two rejections have different causes. A refused start-up stops at its first
    refusal, so its code must be one of the offline plan's; otherwise (vLLM started and
    kvconfig judged what it built) the codes must be the same. An unclassified refusal
    (KV601) matches nothing: the offline plan has not modelled it."""
    if refused:
        return not engine or engine[0] == "KV601" or engine[0] not in offline
    return set(offline) != set(engine)


def differences(offline: Mapping[str, Any], engine: Mapping[str, Any]) -> list[str]:
    """Every disagreement, one sentence each (empty: the plans agree)."""
    found: list[str] = []
    refusal = causes(engine)
    refused = bool(engine.get("engine", {}).get("refused"))
    if refused and refusal == ["KV603"]:
        return found  # vLLM ran out of memory before it planned: the offline plan has no view
    if offline["verdict"] == "unknown":
        return found  # kvconfig could not derive the model (KV401): nothing to compare
    codes_off, codes_eng = ", ".join(causes(offline)), ", ".join(refusal)
    if offline["verdict"] != engine["verdict"]:
        found.append(
            f"verdict: offline {offline['verdict']}{f' ({codes_off})' if codes_off else ''}, "
            f"vLLM {engine['verdict']}{f' ({codes_eng})' if codes_eng else ''}"
        )
    elif offline["verdict"] == "reject" and cause_differs(causes(offline), refusal, refused):
        found.append(f"cause: offline rejects with {codes_off}, vLLM with {codes_eng}")
    if refused:
        return found  # vLLM stopped part-way: only the verdict and its cause compare
    off_groups, eng_groups = offline["groups"], engine["groups"]
    if len(off_groups) != len(eng_groups):
        found.append(f"groups: offline {len(off_groups)}, vLLM {len(eng_groups)}")
        return found
    for a, b in zip(off_groups, eng_groups, strict=True):
        gid = b["id"]
        for name in FIELDS:
            if a[name] != b[name]:
                found.append(f"group {gid} {name}: offline {a[name]}, vLLM {b[name]}")
        for part in ("runner", "speculator"):
            x, y = a["components"][part], b["components"][part]
            if x != y:
                found.append(f"group {gid} {part}: offline {x}, vLLM {y}")
        if _layer_sets(a) != _layer_sets(b):
            found.append(f"group {gid} layers: offline and vLLM group different layers")
        elif _backends(a) != _backends(b):
            off = "; ".join(f"{n} ({r}, {len(ls)})" for n, r, ls in _backends(a))
            eng = "; ".join(f"{n} ({r}, {len(ls)})" for n, r, ls in _backends(b))
            found.append(f"group {gid} backends: offline {off}; vLLM {eng}")
    return found
