"""Run vLLM 0.33.0's own start-up code for a kvconfig deployment, on CPU.

kvconfig resolves the deployment; this harness then builds what vLLM's worker and
engine core would hold and runs vLLM's real functions on it, under
``tools.catalog.emulate``:

1. one stand-in layer per cache layer, registered in ``static_forward_context`` in
   kvconfig's order, whose ``get_kv_cache_spec`` *is* the real layer class's method
   (``Attention``, ``MLAAttention``, ``DeepseekV32IndexerCache``,
   ``MiniMaxM3IndexerCache``, ``MiniMaxM3SparseAttention``; Mamba layers subclass the
   real mixer and take their state shapes and dtypes from the real model class's
   ``get_mamba_state_shape_from_config`` / ``get_mamba_state_dtype_from_config``),
   each returning the real backend class kvconfig selected;
2. the model's real config hooks (``MODELS_CONFIG_MAP``,
   ``HybridAttentionMambaModelConfig``), then the platform's real
   ``update_block_size_for_backend`` (B, hybrid alignment, Mamba padding);
3. the real ``attn_utils.get_kv_cache_spec`` (``customize_attention_spec``, draft
   stamping), ``get_kv_cache_groups`` and ``get_kv_cache_config_from_groups``;
4. the real Model Runner V2 ``init_attn_backend`` (attention groups and
   ``prepare_kernel_block_sizes``) over all layers, then over the draft layers
   alone as the speculator runs it. Only metadata-builder creation is skipped.

What is not vLLM's own code: the stand-in layers' attributes, which are the facts
kvconfig derived (heads, head sizes, cache dtypes, backends); and the config objects,
which carry only what these functions read.
"""

from __future__ import annotations

import copy
import json
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kvconfig.plan.result import PlanResult
from kvconfig.schemas.deployment import Deployment
from tools.catalog import emulate
from tools.catalog.emulate import Emulation

_TORCH = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}

#: kvconfig mamba_type -> the real mixer class path.
_MIXERS = {
    "gdn_attention": "vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn."
    "QwenGatedDeltaNetAttention",
    "mamba2": "vllm.model_executor.layers.mamba.mamba_mixer2.MambaMixer2",
    "mamba1": "vllm.model_executor.layers.mamba.mamba_mixer.MambaMixer",
}


@dataclass(frozen=True)
class VllmOutcome:
    """What vLLM's own code decided."""

    block_size: int
    mamba_block_size: int | None
    mamba_page_size_padded: int | None
    groups: list[tuple[tuple[str, ...], str, int]]
    """Per KV-cache group: its layers, the spec kind, B."""
    runner: list[int]
    """``prepare_kernel_block_sizes`` over every layer (the runner's allocation)."""
    speculator: list[int] | None
    """The same over the draft layers only (MRV2 ``DraftModelSpeculator.set_attn``)."""
    draft_groups: frozenset[int]
    """Groups holding draft layers."""


def _ns(**kw: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**kw)


def _hf(config: dict[str, Any]) -> Any:
    """A config.json as an attribute bag (what vLLM's hf_config offers its readers)."""
    return json.loads(json.dumps(config), object_hook=_Attrs)


class _Attrs(dict):  # type: ignore[type-arg]
    """A dict whose keys are also attributes, like transformers' configs."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError as err:
            raise AttributeError(name) from err


def _model_config(setup: Deployment, model_json: dict[str, Any] | None, emu: Emulation) -> Any:
    from tools.catalog.emulate import _FakeModelConfig

    mc = _FakeModelConfig(emu)
    text = (model_json or {}).get("text_config") or model_json or {}
    mc.hf_config = _hf(model_json or {})
    mc.hf_text_config = _hf(text)
    target = [l for l in setup.layers if l.role == "target"]
    mc.dtype = _TORCH[target[0].dtype]
    mc.architecture = ((model_json or {}).get("architectures") or ["?"])[0]
    mc.architectures = [mc.architecture]
    mc.is_hybrid = any(l.kind == "mamba" for l in setup.layers)
    mc.max_model_len = setup.max_model_len or 8192
    mc.model_impl = "auto"
    mc.convert_type = "none"
    mc.runner_type = "generate"
    mc.supports_kv_cache_grouping = False
    mc.hf_overrides = {}
    return mc


def _emulation(setup: Deployment, plan: PlanResult) -> Emulation:
    from tests.vllm_truth import emulation_for

    return emulation_for(setup, plan)


@contextmanager
def _no_metadata_builders() -> Iterator[None]:
    """Skip phase 3 of ``init_attn_backend`` (GPU metadata builders)."""
    from vllm.v1.worker import utils as wutils
    from vllm.v1.worker.gpu import attn_utils

    saved = (wutils.AttentionGroup.create_metadata_builders, attn_utils.get_attn_cg_support)
    wutils.AttentionGroup.create_metadata_builders = lambda self, *a, **k: None  # type: ignore[method-assign]
    attn_utils.get_attn_cg_support = lambda *a, **k: None  # type: ignore[assignment]
    try:
        yield
    finally:
        wutils.AttentionGroup.create_metadata_builders = saved[0]  # type: ignore[method-assign]
        attn_utils.get_attn_cg_support = saved[1]


def _layers(setup: Deployment, plan: PlanResult, cfg: Any) -> dict[str, Any]:
    """Stand-in layers whose spec methods are vLLM's own, in kvconfig's order."""
    from vllm.model_executor.layers.attention.attention import Attention
    from vllm.model_executor.layers.attention.mla_attention import (
        MLAAttention,
        _canonicalize_sparse_mla_kv_cache_dtype,
    )
    from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
    from vllm.model_executor.models.deepseek_v2 import DeepseekV32IndexerCache
    from vllm.models.minimax_m3.common.indexer import MiniMaxM3IndexerCache
    from vllm.models.minimax_m3.nvidia.model import MiniMaxM3SparseAttention
    from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
    from vllm.v1.attention.backend import AttentionType

    class Layer(AttentionLayerBase):
        def __init__(self, spec_fn: Any, backend: Any, **attrs: Any) -> None:
            self.__dict__.update(attrs)
            self._spec_fn = spec_fn
            self._backend = backend

        def get_attn_backend(self) -> Any:
            return self._backend

        def get_kv_cache_spec(self, vllm_config: Any) -> Any:
            return self._spec_fn(self, vllm_config)

    facts = setup.model_facts
    tp = setup.tensor_parallel_size
    out: dict[str, Any] = {}
    mamba_model = None
    for info in plan.layers:
        l = info.layer
        kv = l.kv_cache_dtype or setup.kv_cache_dtype
        draft = l.role == "draft"
        heads = max(1, l.num_heads // tp)
        for name in l.names():
            if l.kind == "mamba":
                if mamba_model is None:
                    mamba_model = _model_class(cfg)
                out[name] = _mamba_layer(l.mamba_type or "", mamba_model, cfg, draft)
                continue
            backend = emulate.load(info.class_path)
            if l.kind in ("mla_attention", "sparse_mla"):
                sparse = l.kind == "sparse_mla"
                out[name] = Layer(
                    MLAAttention.get_kv_cache_spec,
                    backend,
                    kv_cache_dtype=_canonicalize_sparse_mla_kv_cache_dtype(backend, kv),
                    head_size=l.head_size,
                    sliding_window=None,
                    topk_buffer_width=facts.get("index_topk") if sparse else None,
                    indexer=object() if sparse else None,
                    non_causal_multi_token_decode=False,
                    num_heads=heads,
                    is_draft_layer=draft,
                )
            elif l.kind == "indexer" and backend.get_name() == "DEEPSEEK_V32_INDEXER":
                out[name] = Layer(
                    DeepseekV32IndexerCache.get_kv_cache_spec,
                    backend,
                    cache_config=cfg.cache_config,
                    head_dim=l.head_size,
                    dtype=torch.uint8,
                    is_draft_layer=draft,
                )
            elif l.kind == "indexer":
                out[name] = Layer(
                    MiniMaxM3IndexerCache.get_kv_cache_spec,
                    backend,
                    head_dim=l.head_size,
                    dtype=torch.bfloat16,
                    is_draft_layer=draft,
                )
            elif backend.get_name() in ("MINIMAX_M3_SPARSE", "CUTLASS_MSA", "TRITON_MSA"):
                out[name] = Layer(
                    MiniMaxM3SparseAttention.get_kv_cache_spec,
                    backend,
                    num_kv_heads=max(1, l.num_kv_heads // tp),
                    head_dim=l.head_size,
                    kv_cache_dtype=kv,
                    kv_cache_torch_dtype=kv_cache_dtype_str_to_dtype(kv, cfg.model_config),
                    num_heads=heads,
                    is_draft_layer=draft,
                )
            else:
                out[name] = Layer(
                    Attention.get_kv_cache_spec,
                    backend,
                    attn_type=AttentionType.DECODER,
                    attn_backend=backend,
                    kv_cache_dtype=kv,
                    kv_cache_torch_dtype=kv_cache_dtype_str_to_dtype(kv, cfg.model_config),
                    sliding_window=l.sliding_window if l.kind == "sliding_window" else None,
                    num_kv_heads=max(1, l.num_kv_heads // tp),
                    head_size=l.head_size,
                    head_size_v=l.head_size_v or l.head_size,
                    num_heads=heads,
                    is_draft_layer=draft,
                )
    return out


def _model_class(cfg: Any) -> Any:
    from vllm.model_executor.models import ModelRegistry

    cls, _ = ModelRegistry.resolve_model_cls(cfg.model_config.architecture, cfg.model_config)
    return cls


def _mamba_layer(kind: str, model_cls: Any, cfg: Any, draft: bool) -> Any:
    """A real mixer subclass whose state comes from the model class's own calculators."""
    from torch import nn

    real = emulate.load(_MIXERS[kind])
    checkpoint = None
    if kind == "gdn_attention" and cfg.cache_config.mamba_cache_mode == "align":
        # QwenGatedDeltaNetAttention.__init__: FlashInfer prefill exports checkpoints.
        from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import (
            FLASHINFER_GDN_CHECKPOINT_ALIGNMENT,
            _resolve_gdn_prefill_backend,
        )

        if _resolve_gdn_prefill_backend(cfg)[1] == "flashinfer":
            checkpoint = FLASHINFER_GDN_CHECKPOINT_ALIGNMENT

    class Mixer(real):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            nn.Module.__init__(self)
            self.vllm_config = cfg
            self.model_config = cfg.model_config
            self.cache_config = cfg.cache_config
            self._checkpoint_alignment = checkpoint
            self.use_replayssm = False
            self.is_draft_layer = draft

        def get_state_shape(self) -> Any:
            return model_cls.get_mamba_state_shape_from_config(cfg)

        def get_state_dtype(self) -> Any:
            return model_cls.get_mamba_state_dtype_from_config(cfg)

    return Mixer()


def _vllm_config(
    setup: Deployment,
    plan: PlanResult,
    model_json: dict[str, Any] | None,
    emu: Emulation,
    base: Any,
) -> Any:
    from vllm.config import CacheConfig

    cfg = base
    cache = CacheConfig(
        block_size=setup.block_size or CacheConfig.DEFAULT_BLOCK_SIZE,
        cache_dtype=setup.kv_cache_dtype,  # type: ignore[arg-type]
        enable_prefix_caching=setup.prefix_caching,
    )
    if setup.block_size is None:
        cache.user_specified_block_size = False
    layout = (setup.kv_cache_layout or "LBNHC").upper()
    cache.kv_cache_layout = {"NHD": "LBNHC", "HND": "LBHNC"}.get(layout, layout)
    cfg.cache_config = cache
    cfg.model_config = _model_config(setup, model_json, emu)
    cfg.scheduler_config = _ns(
        disable_hybrid_kv_cache_manager=setup.disable_hybrid_kv_cache_manager,
        enable_chunked_prefill=True,
        max_num_batched_tokens=8192,
    )
    cfg.parallel_config.use_ubatching = False
    cfg.parallel_config.num_ubatches = 1
    cfg.parallel_config.pcp_shard_decode_requests = False
    cfg.attention_config.hisparse_config = None
    cfg.additional_config = {}
    cfg.kv_transfer_config = None
    cfg.structured_outputs_config = _ns(reasoning_parser="")
    cfg.compilation_config.cudagraph_capture_sizes = None
    cfg.compilation_config.max_cudagraph_capture_size = None
    cfg.num_speculative_tokens = setup.num_speculative_tokens
    cfg.speculative_config = (
        _ns(num_speculative_tokens=setup.num_speculative_tokens, method=setup.speculative_method)
        if setup.speculative_method
        else None
    )
    return cfg


@contextmanager
def _configured(
    setup: Deployment, plan: PlanResult, model_json: dict[str, Any] | None
) -> Iterator[Any]:
    """The emulated platform and a VllmConfig of the deployment, after the architecture's
    ``MODELS_CONFIG_MAP`` hook (``verify_and_update_config``)."""
    from vllm.model_executor.models.config import MODELS_CONFIG_MAP

    emu = _emulation(setup, plan)
    with emulate.emulated(emu) as base:
        cfg = _vllm_config(setup, plan, model_json, emu, base)
        hook = MODELS_CONFIG_MAP.get(cfg.model_config.architecture)
        if hook is not None:
            hook.verify_and_update_config(cfg)
        yield cfg


def run_vllm(setup: Deployment, plan: PlanResult, model_json: dict[str, Any] | None) -> VllmOutcome:
    """vLLM's own B, groups and kernel block sizes for ``setup`` (layers as ``plan`` has them)."""
    from vllm.model_executor.models.config import (
        HybridAttentionMambaModelConfig,
    )
    from vllm.platforms import current_platform
    from vllm.v1.core.kv_cache_planning import (
        get_kv_cache_config_from_groups,
        get_kv_cache_groups,
    )
    from vllm.v1.kv_cache_interface import get_kv_cache_spec_kind
    from vllm.v1.worker.gpu import attn_utils

    with _configured(setup, plan, model_json) as cfg:
        if cfg.model_config.is_hybrid:
            HybridAttentionMambaModelConfig.verify_and_update_config(cfg)
        layers = _layers(setup, plan, cfg)
        cfg.compilation_config.static_forward_context.update(layers)
        type(current_platform).update_block_size_for_backend(cfg)
        specs = attn_utils.get_kv_cache_spec(cfg)
        groups = get_kv_cache_groups(cfg, dict(specs))
        kv_config = get_kv_cache_config_from_groups(cfg, groups, 1 << 34)
        draft = {n for n, layer in layers.items() if layer.is_draft_layer}
        with _no_metadata_builders():
            _, _, runner = attn_utils.init_attn_backend(
                copy.deepcopy(kv_config), cfg, torch.device("cpu")
            )
            speculator = None
            if draft:
                _, _, speculator = attn_utils.init_attn_backend(
                    copy.deepcopy(kv_config), cfg, torch.device("cpu"), active_layer_names=draft
                )
        return VllmOutcome(
            block_size=cfg.cache_config.block_size,
            mamba_block_size=cfg.cache_config.mamba_block_size,
            mamba_page_size_padded=cfg.cache_config.mamba_page_size_padded,
            groups=[
                (
                    tuple(g.layer_names),
                    get_kv_cache_spec_kind(g.kv_cache_spec).value,
                    g.kv_cache_spec.block_size,
                )
                for g in groups
            ],
            runner=list(runner),
            speculator=list(speculator) if speculator is not None else None,
            draft_groups=frozenset(
                i for i, g in enumerate(groups) if draft.intersection(g.layer_names)
            ),
        )


def mamba_state_bytes(setup: Deployment, plan: PlanResult, model_json: dict[str, Any]) -> int:
    """The unpadded MambaSpec page vLLM's own model class computes for this deployment
    (its ``get_mamba_state_shape_from_config`` and ``get_mamba_state_dtype_from_config``,
    after the architecture's ``MODELS_CONFIG_MAP`` hook)."""
    from vllm.v1.kv_cache_interface import MambaSpec

    with _configured(setup, plan, model_json) as cfg:
        cls = _model_class(cfg)
        spec = MambaSpec(
            shapes=tuple(cls.get_mamba_state_shape_from_config(cfg)),
            dtypes=tuple(cls.get_mamba_state_dtype_from_config(cfg)),
            block_size=1,
        )
        return int(spec.page_size_bytes)


def model_json_of(path: Path) -> dict[str, Any]:
    """A model folder's config.json."""
    data: dict[str, Any] = json.loads((path / "config.json").read_text())
    return data
