"""What the CUDA MLA backends' ``validate_configuration`` checks.

Mirrors the MLA backends under ``vllm/v1/attention/backends/mla/`` (FlashInfer MLA and
its sparse variants, TokenSpeed, CUTLASS, FlashAttention MLA and its sparse variants,
FlashMLA and FlashMLA sparse, Triton MLA): the ``supports_*`` overrides and each
``supports_combination``, which reads the target model's MLA dimensions
(``hf_text_config``: ``Machine.facts``).
"""

from __future__ import annotations

from kvconfig.mirror.traits import Machine, Request, Traits

_MLA_KV = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3")
_MLA_HEADS = (320, 512, 576)


def _fact(m: Machine, key: str, default: int | None = None) -> int | None:
    return m.facts.get(key, default)


def _fi_mla(r: Request, m: Machine) -> str | None:
    nope = _fact(m, "qk_nope_head_dim", 1)
    if nope not in (64, 128, 192):
        return f"FlashInfer MLA kernel requires qk_nope_head_dim in [64, 128, 192], but got {nope}"
    return None


def _flashmla(r: Request, m: Machine) -> str | None:
    if r.use_sparse:
        return None if m.major in (9, 10) else "FlashMLA Sparse needs Hopper or Blackwell DC"
    return None if m.major == 9 else "FlashMLA Dense is only supported on Hopper devices."


def _fa_mla(r: Request, m: Machine) -> str | None:
    if not (m.fa_ok(3) and m.major == 9):
        return "FlashAttention MLA not supported on this device"
    return None


def _fa_mla_sparse(r: Request, m: Machine) -> str | None:
    if r.kv_cache_dtype not in ("auto", "float16", "bfloat16"):
        return "FlashAttention MLA Sparse currently supports only FP16/BF16 KV cache"
    if (why := _fa_mla(r, m)) is not None:
        return why
    if "index_topk" not in m.facts:
        return "FlashAttention MLA Sparse requires model with index_topk"
    return None


def _fi_mla_sparse(r: Request, m: Machine) -> str | None:
    if r.kv_cache_dtype == "fp8_ds_mla":
        return "FLASHINFER_MLA_SPARSE SM10 does not support fp8_ds_mla kv-cache dtype"
    nope, rope = _fact(m, "qk_nope_head_dim"), _fact(m, "qk_rope_head_dim")
    if rope == 0:
        if nope != 256 or _fact(m, "kv_lora_rank") != 512:
            return "FlashInfer native no-rope MLA requires qk_nope_head_dim=256, kv_lora_rank=512"
    elif nope not in (128, 192):
        return f"FlashInfer MLA Sparse kernel requires qk_nope_head_dim in [128, 192], got {nope}"
    if "index_topk" not in m.facts:
        return "FlashInfer MLA Sparse requires model with index_topk config"
    return None


def _fa4_mla_sparse(r: Request, m: Machine) -> str | None:
    topk = _fact(m, "index_topk")
    if topk is None or topk % 128:
        return f"FA4 sparse MLA requires index_topk % 128 == 0, got {topk}"
    dims = (_fact(m, "kv_lora_rank"), _fact(m, "qk_rope_head_dim"))
    if dims != (512, 64):
        return f"FA4 sparse MLA requires (kv_lora_rank, qk_rope_head_dim) == (512, 64), got {dims}"
    if r.num_heads not in (8, 16, 32, 64, 128):
        return f"FA4 sparse MLA requires 8, 16, 32, 64 or 128 query heads, got {r.num_heads}"
    return None


def _flashmla_sparse(r: Request, m: Machine) -> str | None:
    if r.head_size == 512:
        ok = r.kv_cache_dtype in m.rules.sparse_mla_nope and m.major == 9
        if not ok or _fact(m, "qk_rope_head_dim", 64) != 0:
            return "FLASHMLA_SPARSE supports head_size 512 only for rope-free models on SM90"
    if r.kv_cache_dtype == "nvfp4_ds_mla" and m.major != 10:
        return "FLASHMLA_SPARSE only supports the nvfp4_ds_mla kv-cache dtype on SM100"
    return None


def _fi_mla_sparse_sm90(r: Request, m: Machine) -> str | None:
    if _fact(m, "kv_lora_rank") != 512:
        return "FLASHINFER_MLA_SPARSE_SM90 requires kv_lora_rank=512"
    if _fact(m, "qk_rope_head_dim") not in (0, 64):
        return "FLASHINFER_MLA_SPARSE_SM90 requires qk_rope_head_dim in (0, 64)"
    return None


def _fi_mla_sparse_sm120(r: Request, m: Machine) -> str | None:
    topk = _fact(m, "index_topk")
    if topk is None:
        return "FLASHINFER_MLA_SPARSE_SM120 requires a model with index_topk config"
    if topk != 2048:
        return f"FLASHINFER_MLA_SPARSE_SM120 requires index_topk=2048; got {topk}"
    return None


def _tokenspeed(r: Request, m: Machine) -> str | None:
    dims = tuple(_fact(m, k, 0) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    if dims != (128, 64, 128):
        return f"tokenspeed_mla requires DeepSeek R1 MLA dimensions (128, 64, 128), got {dims}"
    return None


#: ``validate_configuration`` of the CUDA MLA backends (``v1/attention/backends/mla/*``);
#: vLLM's Linux wheel depends on ``tokenspeed-mla``, so TOKENSPEED_MLA's import check passes.
MLA_TRAITS: dict[str, Traits] = {
    "FLASHINFER_MLA": Traits(
        kv_dtypes=_MLA_KV,
        head_sizes=lambda h, m: h in _MLA_HEADS,
        capability=lambda m: m.major == 10,
        mla=True,
        non_causal=True,
        combination=_fi_mla,
    ),
    "TOKENSPEED_MLA": Traits(
        kv_dtypes=("fp8", "fp8_e4m3"),
        head_sizes=lambda h, m: h in _MLA_HEADS,
        capability=lambda m: m.major == 10,
        mla=True,
        non_causal=True,
        combination=_tokenspeed,
    ),
    "CUTLASS_MLA": Traits(
        kv_dtypes=_MLA_KV,
        head_sizes=lambda h, m: h in _MLA_HEADS,
        capability=lambda m: m.major == 10,
        mla=True,
    ),
    "FLASH_ATTN_MLA": Traits(
        kv_dtypes=("auto", "float16", "bfloat16"),
        head_sizes=lambda h, m: h in _MLA_HEADS,
        capability=lambda m: m.major == 9,
        mla=True,
        batch_invariant=True,
        combination=_fa_mla,
    ),
    "FLASHMLA": Traits(
        kv_dtypes=_MLA_KV,
        head_sizes=lambda h, m: h in _MLA_HEADS,
        capability=lambda m: m.major in (9, 10),
        mla=True,
        combination=_flashmla,
    ),
    "TRITON_MLA": Traits(kv_dtypes=_MLA_KV, mla=True, non_causal=True, batch_invariant=True),
    "FLASHMLA_SPARSE": Traits(
        dtypes=("bfloat16",),
        kv_dtypes=("auto", "bfloat16", "fp8_ds_mla", "fp8", "nvfp4_ds_mla"),
        head_sizes=lambda h, m: h == 576 or (h == 512 and bool(m.rules.sparse_mla_nope)),
        capability=lambda m: m.major in (9, 10),
        mla=True,
        sparse=True,
        combination=_flashmla_sparse,
    ),
    "FLASHINFER_MLA_SPARSE": Traits(
        kv_dtypes=_MLA_KV,
        head_sizes=lambda h, m: h in (512, 576),
        capability=lambda m: m.major == 10,
        mla=True,
        sparse=True,
        combination=_fi_mla_sparse,
    ),
    "FLASH_ATTN_MLA_SPARSE": Traits(
        kv_dtypes=("auto", "float16", "bfloat16"),
        capability=lambda m: m.major == 9,
        mla=True,
        sparse=True,
        combination=_fa_mla_sparse,
    ),
    "FLASH_ATTN_MLA_SPARSE_FA4": Traits(
        dtypes=("bfloat16",),
        kv_dtypes=("auto", "bfloat16"),
        head_sizes=lambda h, m: h == 576,
        capability=lambda m: m.major == 10,
        mla=True,
        sparse=True,
        combination=_fa4_mla_sparse,
    ),
    "FLASHINFER_MLA_SPARSE_SM90": Traits(
        dtypes=("bfloat16",),
        kv_dtypes=("auto", "bfloat16", "fp8", "fp8_e4m3"),
        head_sizes=lambda h, m: h in (512, 576),
        capability=lambda m: m.major == 9,
        mla=True,
        sparse=True,
        combination=_fi_mla_sparse_sm90,
    ),
    "FLASHINFER_MLA_SPARSE_SM120": Traits(
        dtypes=("bfloat16",),
        kv_dtypes=("auto", "fp8", "fp8_e4m3", "fp8_ds_mla"),
        head_sizes=lambda h, m: h in (512, 576),
        capability=lambda m: m.major == 12,
        mla=True,
        sparse=True,
        combination=_fi_mla_sparse_sm120,
    ),
}
