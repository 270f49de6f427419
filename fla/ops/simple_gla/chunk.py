# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Chunked simple GLA: one program per (sequence, head, state block) walks the chunks, the state stays in registers."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from fla.ops.backends import dispatch
from fla.ops.common.launch import state_block
from fla.ops.common.program import (
    chunk_rows,
    final_state_gradient_block,
    initial_state_block,
    load_key_value_tiles,
    load_tile,
    state_program,
)
from fla.ops.simple_gla.function import KernelSet, simple_gla
from fla.utils import autotune, input_guard

CHUNK_CONFIGS = [triton.Config({}, num_warps=w, num_stages=s) for w in (4, 8) for s in (2, 3)]
CHUNK_KEY = ['H', 'K', 'V', 'BK', 'BV', 'USE_G', 'DOT_PRECISION']


@triton.jit
def chunk_positions(BT: tl.constexpr):
    """Positions `[BT]` of a chunk's rows and its causal `[BT, BT]` mask, true where column j <= row i."""
    o_t = tl.arange(0, BT)
    return o_t, o_t[:, None] >= o_t[None, :]


@triton.jit
def chunk_log_decay(g, o_row, m_t, i_h, H: tl.constexpr, BT: tl.constexpr):
    """Cumulative log decay of each row from the chunk start, and its value at the chunk end (padding adds 0)."""
    b_g = tl.cumsum(tl.load(g + o_row * H + i_h, mask=m_t, other=0).to(tl.float32), axis=0)
    return b_g, tl.sum(tl.where(tl.arange(0, BT) == BT - 1, b_g, 0), axis=0)


@triton.jit
def apply_chunk_decay(b_A, b_state_read, b_k, b_h, g, o_row, m_t, i_h, m_causal, H: tl.constexpr, BT: tl.constexpr,
                      USE_G: tl.constexpr):
    """The chunk's causal `[BT, BT]` product, state read and keys decayed by g, and the state decayed across the chunk."""
    if USE_G:
        b_g, b_g_last = chunk_log_decay(g, o_row, m_t, i_h, H, BT)
        b_A *= tl.exp(tl.where(m_causal, b_g[:, None] - b_g[None, :], float('-inf')))
        b_state_read *= tl.exp(b_g)[:, None]
        b_k_decayed = (b_k * tl.exp(b_g_last - b_g)[:, None]).to(b_k.dtype)
        b_h *= tl.exp(b_g_last)
    else:
        b_A = tl.where(m_causal, b_A, 0)
        b_k_decayed = b_k
    return b_A, b_state_read, b_k_decayed, b_h


@autotune(CHUNK_CONFIGS, key=CHUNK_KEY)
@triton.jit(do_not_specialize=['T'])
def chunk_simple_gla_fwd_kernel(
    q, k, v, g, o, h0, ht, cu_seqlens, scale, T,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    NK: tl.constexpr, USE_G: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, STORE_FINAL_STATE: tl.constexpr,
    IS_VARLEN: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    i_h, i_k, _, bos, eos, o_k, m_k, o_v, m_v, o_state, m_state = state_program(cu_seqlens, T, H, K, V, BK, BV, IS_VARLEN)
    o_t, m_causal = chunk_positions(BT)

    # [BK, BV]
    b_h = initial_state_block(h0, o_state, m_state, BK, BV, USE_INITIAL_STATE)
    for i_t in range(tl.cdiv(eos - bos, BT)):
        o_row, m_t, m_tk, m_tv = chunk_rows(bos, eos, i_t, o_t, m_k, m_v, BT)
        # [BT, BK]
        b_q = load_tile(q, o_row, i_h, H, K, o_k, m_tk)
        # [BT, BK], [BT, BV]
        b_k, b_v = load_key_value_tiles(k, v, o_row, i_h, H, K, V, o_k, o_v, m_tk, m_tv)
        # [BT, BT]
        b_A = tl.dot(b_q, tl.trans(b_k), input_precision=DOT_PRECISION)
        # [BT, BV]
        b_o = tl.dot(b_q, b_h.to(b_q.dtype), input_precision=DOT_PRECISION)
        b_A, b_o, b_k_decayed, b_h = apply_chunk_decay(b_A, b_o, b_k, b_h, g, o_row, m_t, i_h, m_causal, H, BT, USE_G)
        b_o += tl.dot(b_A.to(b_v.dtype), b_v, input_precision=DOT_PRECISION)
        b_h += tl.dot(tl.trans(b_k_decayed), b_v, input_precision=DOT_PRECISION)
        p_o = o + ((o_row[:, None] * H + i_h) * NK + i_k) * V + o_v[None, :]
        tl.store(p_o, (b_o * scale).to(p_o.dtype.element_ty), mask=m_tv)
    if STORE_FINAL_STATE:
        tl.store(ht + o_state, b_h, mask=m_state)


@autotune(CHUNK_CONFIGS, key=CHUNK_KEY)
@triton.jit(do_not_specialize=['T'])
def chunk_simple_gla_bwd_kernel_dq(
    q, k, v, g, do, dq, q_dot_dq, h0, cu_seqlens, scale, T,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    NK: tl.constexpr, NV: tl.constexpr, USE_G: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, IS_VARLEN: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    i_h, i_k, i_v, bos, eos, o_k, m_k, o_v, m_v, o_state, m_state = state_program(cu_seqlens, T, H, K, V, BK, BV, IS_VARLEN)
    o_t, m_causal = chunk_positions(BT)

    # [BK, BV]
    b_h = initial_state_block(h0, o_state, m_state, BK, BV, USE_INITIAL_STATE)
    for i_t in range(tl.cdiv(eos - bos, BT)):
        o_row, m_t, m_tk, m_tv = chunk_rows(bos, eos, i_t, o_t, m_k, m_v, BT)
        # [BT, BK], [BT, BV]
        b_k, b_v = load_key_value_tiles(k, v, o_row, i_h, H, K, V, o_k, o_v, m_tk, m_tv)
        # [BT, BV]
        b_do = load_tile(do, o_row, i_h, H, V, o_v, m_tv)
        # [BT, BT]
        b_dA = tl.dot(b_do, tl.trans(b_v), input_precision=DOT_PRECISION)
        # [BT, BK]
        b_dq = tl.dot(b_do, tl.trans(b_h).to(b_do.dtype), input_precision=DOT_PRECISION)
        b_dA, b_dq, b_k_decayed, b_h = apply_chunk_decay(b_dA, b_dq, b_k, b_h, g, o_row, m_t, i_h, m_causal, H, BT, USE_G)
        b_dq += tl.dot(b_dA.to(b_k.dtype), b_k, input_precision=DOT_PRECISION)
        b_h += tl.dot(tl.trans(b_k_decayed), b_v, input_precision=DOT_PRECISION)
        b_dq *= scale
        p_dq = dq + ((o_row[:, None] * H + i_h) * NV + i_v) * K + o_k[None, :]
        tl.store(p_dq, b_dq.to(p_dq.dtype.element_ty), mask=m_tk)
        if USE_G:
            # q . dq in float32, before dq is rounded to its storage dtype
            b_q = load_tile(q, o_row, i_h, H, K, o_k, m_tk).to(tl.float32)
            tl.store(q_dot_dq + (o_row * H + i_h) * (NK * NV) + i_k * NV + i_v, tl.sum(b_q * b_dq, axis=1), mask=m_t)


@autotune(CHUNK_CONFIGS, key=CHUNK_KEY)
@triton.jit(do_not_specialize=['T'])
def chunk_simple_gla_bwd_kernel_dkvg(
    q, k, v, g, do, q_dot_dq, ht, dht, dk, dv, dg, dh0, cu_seqlens, scale, T,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    NK: tl.constexpr, NV: tl.constexpr, USE_G: tl.constexpr, USE_INITIAL_STATE: tl.constexpr,
    USE_FINAL_STATE_GRADIENT: tl.constexpr, IS_VARLEN: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    i_h, i_k, i_v, bos, eos, o_k, m_k, o_v, m_v, o_state, m_state = state_program(cu_seqlens, T, H, K, V, BK, BV, IS_VARLEN)
    o_t = tl.arange(0, BT)
    # [BT(j), BT(i)]: the transposed causal mask, key position j on rows, query position i on columns
    m_causal_t = o_t[:, None] <= o_t[None, :]

    # [BK, BV]; the gradient of the log decay summed over all later positions of the sequence
    b_dh, b_dg_carry = final_state_gradient_block(dht, ht, o_state, m_state, BK, BV, USE_FINAL_STATE_GRADIENT, USE_G)
    for i_t in range(tl.cdiv(eos - bos, BT) - 1, -1, -1):
        o_row, m_t, m_tk, m_tv = chunk_rows(bos, eos, i_t, o_t, m_k, m_v, BT)
        # [BT, BK]
        b_q = load_tile(q, o_row, i_h, H, K, o_k, m_tk)
        # [BT, BK], [BT, BV]
        b_k, b_v = load_key_value_tiles(k, v, o_row, i_h, H, K, V, o_k, o_v, m_tk, m_tv)
        # [BT, BV]
        b_do = load_tile(do, o_row, i_h, H, V, o_v, m_tv)
        # [BT, BT], transposed: row j (key), column i (query)
        b_At = tl.dot(b_k, tl.trans(b_q), input_precision=DOT_PRECISION)
        b_dAt = tl.dot(b_v, tl.trans(b_do), input_precision=DOT_PRECISION)
        if USE_G:
            b_g, b_g_last = chunk_log_decay(g, o_row, m_t, i_h, H, BT)
            b_decay_t = tl.exp(tl.where(m_causal_t, b_g[None, :] - b_g[:, None], float('-inf')))
            b_At *= b_decay_t
            b_dAt *= b_decay_t
            b_k_decay = tl.exp(b_g_last - b_g)
            b_q_decay = tl.exp(b_g)
        else:
            b_At = tl.where(m_causal_t, b_At, 0)
            b_dAt = tl.where(m_causal_t, b_dAt, 0)
            b_k_decay = tl.full([BT], 1.0, dtype=tl.float32)
            b_q_decay = tl.full([BT], 1.0, dtype=tl.float32)
        # [BT, BV]
        b_dv = tl.dot(b_At.to(b_do.dtype), b_do, input_precision=DOT_PRECISION) * scale
        b_dv += tl.dot((b_k * b_k_decay[:, None]).to(b_k.dtype), b_dh.to(b_k.dtype), input_precision=DOT_PRECISION)
        # [BT, BK]
        b_dk = tl.dot(b_dAt.to(b_q.dtype), b_q, input_precision=DOT_PRECISION) * scale
        b_dk += tl.dot(b_v, tl.trans(b_dh).to(b_v.dtype), input_precision=DOT_PRECISION) * b_k_decay[:, None]
        if USE_G:
            o_partial = (o_row * H + i_h) * (NK * NV) + i_k * NV + i_v
            # [BT]
            b_q_dot_dq = tl.load(q_dot_dq + o_partial, mask=m_t, other=0)
            # [BT, BK]
            b_k_dot_dk = b_k.to(tl.float32) * b_dk
            b_dg_step = b_q_dot_dq - tl.sum(b_k_dot_dk, axis=1)
            b_dg = tl.cumsum(b_dg_step, axis=0, reverse=True) + b_dg_carry
            # summed from the tiles, not from b_dg_step: Triton 3.6 aborts compiling a sum of that row sum for sm_100
            b_dg_carry += tl.sum(b_q_dot_dq, axis=0) - tl.sum(b_k_dot_dk)
            tl.store(dg + o_partial, b_dg, mask=m_t)
        if USE_G:
            b_dh *= tl.exp(b_g_last)
        b_dh += tl.dot(tl.trans((b_q * (b_q_decay * scale)[:, None]).to(b_q.dtype)), b_do, input_precision=DOT_PRECISION)
        p_dk = dk + ((o_row[:, None] * H + i_h) * NV + i_v) * K + o_k[None, :]
        tl.store(p_dk, b_dk.to(p_dk.dtype.element_ty), mask=m_tk)
        p_dv = dv + ((o_row[:, None] * H + i_h) * NK + i_k) * V + o_v[None, :]
        tl.store(p_dv, b_dv.to(p_dv.dtype.element_ty), mask=m_tv)
    if USE_INITIAL_STATE:
        tl.store(dh0 + o_state, b_dh.to(dh0.dtype.element_ty), mask=m_state)


def chunk_launch_config(K: int, V: int, dtype: torch.dtype, backward: bool) -> dict[str, Any]:
    """State block per program and dot precision for one launch.

    The forward splits V across programs for parallelism, which costs nothing since its partial sums run over K only;
    the backward keeps whole 128-wide heads because splitting them costs float32 partials and reductions
    (docs/performance.md). 4-byte inputs use 64-wide blocks to fit shared memory. Float32 dots follow
    `torch.get_float32_matmul_precision()`: 'highest' (torch's default) means IEEE float32, anything else TF32.
    """
    cap_k, cap_v = (128, 128) if backward else (128, 64)
    if dtype.itemsize > 2:
        cap_k = cap_v = 64
    exact = dtype == torch.float32 and torch.get_float32_matmul_precision() == 'highest'
    return {'BK': state_block(K, cap_k), 'BV': state_block(V, cap_v), 'BT': 64, 'DOT_PRECISION': 'ieee' if exact else 'tf32'}


CHUNK_KERNELS = KernelSet(
    fwd=chunk_simple_gla_fwd_kernel,
    bwd_dq=chunk_simple_gla_bwd_kernel_dq,
    bwd_dkvg=chunk_simple_gla_bwd_kernel_dkvg,
    launch_config=chunk_launch_config,
)


@dispatch('simple_gla')
@input_guard
def chunk_simple_gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    r"""Simple gated linear attention by chunks of 64: $S_t = e^{g_t} S_{t-1} + k_t v_t^\top$, $o_t = s\, S_t^\top q_t$.

    Args:
        q (torch.Tensor):
            Queries of shape `[B, T, H, K]`.
        k (torch.Tensor):
            Keys of shape `[B, T, H, K]`.
        v (torch.Tensor):
            Values of shape `[B, T, H, V]`.
        g (torch.Tensor, Optional):
            Log-space decay per head and step, of shape `[B, T, H]`; `None` means no decay.
            Default: `None`.
        scale (float, Optional):
            Query scale.
            Default: `K ** -0.5`.
        initial_state (torch.Tensor, Optional):
            State before the first token of each sequence, of shape `[N, H, K, V]`.
            Default: `None` (zeros).
        output_final_state (bool, Optional):
            Whether to return the state after the last token of each sequence.
            Default: `False`.
        cu_seqlens (torch.Tensor, Optional):
            Cumulative lengths `[N + 1]` (int32 or int64) of sequences packed along T; then `B == 1`.
            Default: `None`.

    Returns:
        o (torch.Tensor):
            Outputs of shape `[B, T, H, V]` in the dtype of `v`.
        final_state (torch.Tensor):
            Float32 states of shape `[N, H, K, V]`, or `None` unless `output_final_state` is `True`.
    """
    return simple_gla(CHUNK_KERNELS, q, k, v, g, scale, initial_state, output_final_state, cu_seqlens)
