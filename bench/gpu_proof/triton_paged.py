"""A small paged decode-attention kernel in Triton, used by ``run.py``.

Layout (vLLM's NHD paged layout): ``k_cache``/``v_cache`` are ``[num_pages, page_size, H_kv, D]``
views; ``block_table[s, i]`` is the page that holds tokens ``i*page_size ..`` of sequence ``s``.
Grouped-query attention: the ``G = H_q // H_kv`` query heads ``h*G .. h*G+G-1`` share KV head ``h``.

Each sequence contributes ``q_len`` query tokens, at positions ``L-q_len .. L-1`` (``L`` = its
length); each attends causally to every key up to and including its own position.  With
``q_len == 1`` this is plain decode.
"""

from __future__ import annotations

import torch
import triton  # type: ignore[import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-untyped, unused-ignore]


@triton.jit  # type: ignore[untyped-decorator, unused-ignore]
def _paged_attention_kernel(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    q_ptr,
    k_ptr,
    v_ptr,
    out_ptr,
    table_ptr,
    seq_lens_ptr,
    stride_qt,
    stride_qh,
    stride_kp,
    stride_kt,
    stride_kh,
    stride_vp,
    stride_vt,
    stride_vh,
    stride_ot,
    stride_oh,
    stride_table,
    q_len,
    sm_scale,
    GQA: tl.constexpr,
    GQA_PAD: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    PAGE: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    token = tl.program_id(0)
    kv_head = tl.program_id(1)
    seq = token // q_len
    seq_len = tl.load(seq_lens_ptr + seq)
    n_keys = seq_len - q_len + token % q_len + 1

    rows = tl.arange(0, GQA_PAD)
    row_ok = rows < GQA
    heads = kv_head * GQA + rows
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + token * stride_qt + heads[:, None] * stride_qh + dims[None, :],
        mask=row_ok[:, None],
        other=0.0,
    )

    m_i = tl.full([GQA_PAD], float("-inf"), tl.float32)
    l_i = tl.zeros([GQA_PAD], tl.float32)
    acc = tl.zeros([GQA_PAD, HEAD_DIM], tl.float32)
    offs = tl.arange(0, BLOCK_N)
    for start in range(0, n_keys, BLOCK_N):
        pos = start + offs
        key_ok = pos < n_keys
        page = tl.load(table_ptr + seq * stride_table + pos // PAGE, mask=key_ok, other=0)
        in_page = pos % PAGE
        k_rows = page.to(tl.int64) * stride_kp + in_page * stride_kt + kv_head * stride_kh
        k = tl.load(k_ptr + k_rows[:, None] + dims[None, :], mask=key_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where(key_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v_rows = page.to(tl.int64) * stride_vp + in_page * stride_vt + kv_head * stride_vh
        v = tl.load(v_ptr + v_rows[:, None] + dims[None, :], mask=key_ok[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    out = acc / l_i[:, None]
    tl.store(
        out_ptr + token * stride_ot + heads[:, None] * stride_oh + dims[None, :],
        out.to(out_ptr.dtype.element_ty),
        mask=row_ok[:, None],
    )


def paged_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    *,
    q_len: int,
    out: torch.Tensor,
    block_n: int = 64,
) -> torch.Tensor:
    """Paged attention over ``[num_pages, page, H_kv, D]`` caches; writes and returns ``out``.

    ``q`` and ``out`` are ``[num_seqs * q_len, H_q, D]``; ``block_table`` is int32
    ``[num_seqs, width]`` with at least ``ceil(L / page)`` valid columns per row.
    """
    num_tokens, num_q_heads, head_dim = q.shape
    _, page, num_kv_heads, _ = k_cache.shape
    if num_q_heads % num_kv_heads != 0:
        raise ValueError("query heads must be a multiple of KV heads")
    if q.stride(-1) != 1 or k_cache.stride(-1) != 1 or v_cache.stride(-1) != 1:
        raise ValueError("head dimension must be contiguous")
    gqa = num_q_heads // num_kv_heads
    grid = (num_tokens, num_kv_heads)
    _paged_attention_kernel[grid](
        q,
        k_cache,
        v_cache,
        out,
        block_table,
        seq_lens,
        q.stride(0),
        q.stride(1),
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(2),
        v_cache.stride(0),
        v_cache.stride(1),
        v_cache.stride(2),
        out.stride(0),
        out.stride(1),
        block_table.stride(0),
        q_len,
        head_dim**-0.5,
        GQA=gqa,
        GQA_PAD=max(16, triton.next_power_of_2(gqa)),
        HEAD_DIM=head_dim,
        PAGE=page,
        BLOCK_N=block_n,
        num_warps=4,
        num_stages=2,
    )
    return out
