"""vLLM 0.33.0's own answer for a kvconfig plan: the same KV-cache config, built from real
vLLM objects and real backend classes, voted by vLLM's real functions.

Used by the fidelity tests; imports vLLM (under kvconfig's emulated platform).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvconfig.plan.result import GroupResult, PlanResult
from kvconfig.schemas.deployment import Deployment
from tools.catalog.emulate import Emulation, emulated, load

DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32"}


@dataclass
class Truth:
    """vLLM's values for one group."""

    runner: int | str
    speculator: int | str | None


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def _spec(info: Any, block_size: int, tp: int, kv_cache_dtype: str) -> Any:
    """The layer's KV-cache spec as vLLM's Attention layer builds it (dense kinds)."""
    from vllm.v1.kv_cache_interface import FullAttentionSpec, SlidingWindowSpec, get_kv_quant_mode

    layer = info.layer
    kv_heads = max(1, layer.num_kv_heads // tp)
    common: dict[str, Any] = {
        "block_size": block_size,
        "num_kv_heads": kv_heads,
        "head_size": layer.head_size,
        "dtype": _torch_dtype(layer.dtype),
        "kv_quant_mode": get_kv_quant_mode(layer.kv_cache_dtype or kv_cache_dtype),
    }
    if layer.head_size_v is not None:
        common["head_size_v"] = layer.head_size_v
    if layer.kind == "sliding_window":
        return SlidingWindowSpec(sliding_window=layer.sliding_window, **common)
    return FullAttentionSpec(**common)


def vllm_values(dep: Deployment, plan: PlanResult, emu: Emulation) -> list[Truth]:
    """Per group: vLLM's runner vote and the speculator's value (V1 narrowing or V2 re-vote)."""
    from vllm.v1.kv_cache_interface import (
        KVCacheConfig,
        KVCacheGroupSpec,
        KVCacheTensor,
        UniformTypeKVCacheSpecs,
    )
    from vllm.v1.worker.utils import (
        AttentionGroup,
        customize_attention_spec,
        prepare_kernel_block_sizes,
    )

    s = dep
    # Model Runner V1 and the hooks hand the runner's sizes to the drafter inside vLLM's
    # start-up: tests/test_fidelity_runners.py compares those with the engine mode.
    assert s.runner == "v2" and s.hooks == "none", "V2 without hooks only"
    out: list[Truth] = []
    with emulated(emu):
        groups, tensors = [], []
        attn_all: list[list[Any]] = []
        attn_draft: list[list[Any]] = []
        for g in plan.groups:
            specs: dict[str, Any] = {}
            keyed: dict[tuple[Any, ...], Any] = {}
            keyed_draft: dict[tuple[Any, ...], Any] = {}
            for v in g.voters:
                backend = load(v.class_path)
                for name in v.layers:
                    info = next(i for i in plan.layers if name in i.layer.names())
                    spec = customize_attention_spec(
                        backend, _spec(info, g.block_size, s.tensor_parallel_size, s.kv_cache_dtype)
                    )
                    specs[name] = spec
                    key = (backend.full_cls_name(), spec, info.heads_per_rank)
                    for table, wanted in ((keyed, True), (keyed_draft, info.layer.role == "draft")):
                        if not wanted:
                            continue
                        if key not in table:
                            table[key] = AttentionGroup(backend, [], spec, g.id)
                        table[key].layer_names.append(name)
                    page = spec.page_size_bytes
                    tensors.append(
                        KVCacheTensor(
                            size=page * 8, layers=[name], layer_stride=page * 8, block_stride=page
                        )
                    )
            first = next(iter(specs.values()))
            merged: Any
            try:
                merged = first.merge(list(specs.values()))
            except AssertionError:
                merged = UniformTypeKVCacheSpecs.from_specs(specs)
                assert merged is not None, "kvconfig grouped layers vLLM would not group"
            groups.append(KVCacheGroupSpec(list(specs), merged))
            attn_all.append(list(keyed.values()))
            attn_draft.append(list(keyed_draft.values()))
        config = KVCacheConfig(num_blocks=8, kv_cache_tensors=tensors, kv_cache_groups=groups)
        try:
            runner: list[int] | str = prepare_kernel_block_sizes(config, attn_all)
        except ValueError as err:
            runner = str(err)
        try:
            own: list[int] | str = prepare_kernel_block_sizes(config, attn_draft)
        except ValueError as err:
            own = str(err)
        for gid in range(len(plan.groups)):
            r = runner if isinstance(runner, str) else runner[gid]
            spec_value: int | str | None = None
            if attn_draft[gid] and s.speculative_method is not None and isinstance(r, int):
                spec_value = own if isinstance(own, str) else own[gid]
            out.append(Truth(r, spec_value))
    return out


def emulation_for(dep: Deployment, plan: PlanResult) -> Emulation:
    """The emulated machine and target config matching a plan's deployment.

    The target's config is what the first target attention layer says (the model config
    vLLM's backends read); model facts (MLA dimensions, soft-capping, ...) become the
    emulated ``hf_text_config``.
    """
    s = dep
    attention = ("full_attention", "sliding_window", "mla_attention", "sparse_mla")
    targets = [i.layer for i in plan.layers if i.layer.role == "target"]
    first = next((l for l in targets if l.kind in attention), targets[0])
    return Emulation(
        vendor=plan.platform.vendor,
        capability=plan.platform.capability,
        num_heads=first.num_heads,
        num_kv_heads=first.num_kv_heads,
        head_size=first.head_size,
        cache_dtype=s.kv_cache_dtype,
        tensor_parallel_size=s.tensor_parallel_size,
        use_trtllm_attention=s.attention.use_trtllm_attention,
        flash_attn_version=s.attention.flash_attn_version,
        cubins=s.trtllm_cubins,
        batch_invariant=s.env.get("VLLM_BATCH_INVARIANT", "0") not in ("", "0"),
        use_mla=first.kind in ("mla_attention", "sparse_mla"),
        hf_extra=dict(s.model_facts),
    )


def kvconfig_values(groups: Sequence[GroupResult]) -> list[tuple[int | None, int | None]]:
    """kvconfig's (runner, speculator) per group."""
    return [(g.runner_k, g.speculator_k) for g in groups]
