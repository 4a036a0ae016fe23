"""``python tests/release_rules.py``: the ``versions.Rules`` row of the installed vLLM,
read from its own code (printed as JSON), for ``tests/test_release_drift.py``.

Each flag is observed in the function vLLM runs, not assumed from a release number:
a function's presence, its signature, the text of its body, or its answer.
"""

from __future__ import annotations

import inspect
import json
import typing


def observe() -> dict[str, object]:
    """The installed vLLM's rules, flag by flag."""
    from vllm.config.cache import CacheDType
    from vllm.distributed.kv_transfer.kv_connector import utils as connector_utils
    from vllm.model_executor.layers.attention.mla_attention import MLAAttention
    from vllm.platforms.interface import Platform
    from vllm.transformers_utils import config
    from vllm.v1.attention.backend import AttentionBackend
    from vllm.v1.attention.backends import fa_utils, flash_attn
    from vllm.v1.attention.backends.flashinfer import FlashInferBackend
    from vllm.v1.attention.backends.mla.flashmla_sparse import FlashMLASparseBackend
    from vllm.v1.worker import utils
    from vllm.v1.worker.gpu.spec_decode.speculator import DraftModelSpeculator

    set_attn = inspect.getsource(DraftModelSpeculator.set_attn)
    mla_spec = inspect.getsource(MLAAttention.get_kv_cache_spec)
    alignment = (
        "runner"
        if hasattr(utils, "customize_attention_spec")
        else "mla"
        if "block_stride_alignment" in mla_spec
        else "none"
    )
    hybrid = inspect.getsource(Platform._align_hybrid_block_size)
    turbo = [d for d in typing.get_args(CacheDType) if d.startswith("turboquant")]
    sparse_512 = 512 in FlashMLASparseBackend.get_supported_head_sizes()
    combination = inspect.getsource(FlashMLASparseBackend.supports_combination)
    at_512 = combination.partition("head_size == 512")[2].partition("return")[0]
    nope: tuple[str, ...] = ("auto", "bfloat16", "float16") if sparse_512 else ()
    if sparse_512 and "fp8_ds_mla" in at_512:
        nope = (*nope, "fp8_ds_mla")
    return {
        "vote_with_specs": "kv_cache_specs"
        in inspect.signature(utils.select_common_block_size).parameters,
        "backends_take_specs": "kv_cache_spec"
        in inspect.signature(AttentionBackend.get_supported_kernel_block_sizes).parameters,
        "packed_keeps_block": "block_stride > t.layer_stride"
        in inspect.getsource(utils.prepare_kernel_block_sizes),
        "speculator_revotes": "init_attn_backend(" in set_attn
        and "kernel_block_sizes" not in set_attn,
        "quantized_by_name": not all(flash_attn.is_quantized_kv_cache(d) for d in turbo),
        "preferred_over_backends": hasattr(Platform, "_preferred_block_size_for_backends"),
        "hybrid_over_backends": hasattr(Platform, "_check_aligned_block_size"),
        "checkpoint_grid": "get_mamba_prefill_checkpoint_alignment" in hybrid,
        "fa4_sm90_fp8": "head_size in (None, 512)"
        in inspect.getsource(fa_utils.flash_attn_supports_kv_cache_dtype),
        "flashinfer_nvfp4_fa2": "supports_combination" in vars(FlashInferBackend),
        "connector_transfer_layers": hasattr(
            connector_utils, "get_current_attn_backends_and_specs"
        ),
        "spec_alignment": alignment,
        "sparse_mla_nope": list(nope),
        "speculators_verifier_checked": "validate_repo_id"
        in inspect.getsource(config.maybe_override_with_speculators),
    }


if __name__ == "__main__":
    print(json.dumps(observe()))
