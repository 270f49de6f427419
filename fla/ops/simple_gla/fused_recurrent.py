# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Fused recurrent simple GLA: one program per (sequence, head, state block) steps through the tokens one at a time."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from fla.ops.common.launch import state_block
from fla.ops.common.program import final_state_gradient_block, initial_state_block, state_program
from fla.ops.simple_gla.function import KernelSet, simple_gla
from fla.utils import autotune, input_guard

RECURRENT_CONFIGS = [triton.Config({}, num_warps=w) for w in (1, 2, 4)]
RECURRENT_KEY = ['H', 'K', 'V', 'BK', 'BV', 'USE_G']


@triton.jit
def recurrent_state_step(b_h, b_k, b_v, g, row, i_h, H: tl.constexpr, USE_G: tl.constexpr):
    """The `[BK, BV]` state after token `row`: decayed by the token's gate when `USE_G`, plus its k v^T."""
    if USE_G:
        b_h *= tl.exp(tl.load(g + row * H + i_h).to(tl.float32))
    b_h += b_k[:, None] * b_v[None, :]
    return b_h


@autotune(RECURRENT_CONFIGS, key=RECURRENT_KEY)
@triton.jit(do_not_specialize=['T'])
def fused_recurrent_simple_gla_fwd_kernel(
    q, k, v, g, o, h0, ht, cu_seqlens, scale, T,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    NK: tl.constexpr, USE_G: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, STORE_FINAL_STATE: tl.constexpr,
    IS_VARLEN: tl.constexpr,
):
    i_h, i_k, _, bos, eos, o_k, m_k, o_v, m_v, o_state, m_state = state_program(cu_seqlens, T, H, K, V, BK, BV, IS_VARLEN)

    # [BK, BV]
    b_h = initial_state_block(h0, o_state, m_state, BK, BV, USE_INITIAL_STATE)
    for row in range(bos, eos):
        # [BK]
        b_q = tl.load(q + (row * H + i_h) * K + o_k, mask=m_k, other=0).to(tl.float32) * scale
        b_k = tl.load(k + (row * H + i_h) * K + o_k, mask=m_k, other=0).to(tl.float32)
        # [BV]
        b_v = tl.load(v + (row * H + i_h) * V + o_v, mask=m_v, other=0).to(tl.float32)
        b_h = recurrent_state_step(b_h, b_k, b_v, g, row, i_h, H, USE_G)
        b_o = tl.sum(b_h * b_q[:, None], axis=0)
        p_o = o + ((row * H + i_h) * NK + i_k) * V + o_v
        tl.store(p_o, b_o.to(p_o.dtype.element_ty), mask=m_v)
    if STORE_FINAL_STATE:
        tl.store(ht + o_state, b_h, mask=m_state)


@autotune(RECURRENT_CONFIGS, key=RECURRENT_KEY)
@triton.jit(do_not_specialize=['T'])
def fused_recurrent_simple_gla_bwd_kernel_dq(
    q, k, v, g, do, dq, q_dot_dq, h0, cu_seqlens, scale, T,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    NK: tl.constexpr, NV: tl.constexpr, USE_G: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, IS_VARLEN: tl.constexpr,
):
    i_h, i_k, i_v, bos, eos, o_k, m_k, o_v, m_v, o_state, m_state = state_program(cu_seqlens, T, H, K, V, BK, BV, IS_VARLEN)

    # [BK, BV]
    b_h = initial_state_block(h0, o_state, m_state, BK, BV, USE_INITIAL_STATE)
    for row in range(bos, eos):
        # [BK]
        b_k = tl.load(k + (row * H + i_h) * K + o_k, mask=m_k, other=0).to(tl.float32)
        # [BV]
        b_v = tl.load(v + (row * H + i_h) * V + o_v, mask=m_v, other=0).to(tl.float32)
        b_do = tl.load(do + (row * H + i_h) * V + o_v, mask=m_v, other=0).to(tl.float32)
        b_h = recurrent_state_step(b_h, b_k, b_v, g, row, i_h, H, USE_G)
        b_dq = tl.sum(b_h * b_do[None, :], axis=1) * scale
        p_dq = dq + ((row * H + i_h) * NV + i_v) * K + o_k
        tl.store(p_dq, b_dq.to(p_dq.dtype.element_ty), mask=m_k)
        if USE_G:
            # q . dq in float32, before dq is rounded to its storage dtype
            b_q = tl.load(q + (row * H + i_h) * K + o_k, mask=m_k, other=0).to(tl.float32)
            tl.store(q_dot_dq + (row * H + i_h) * (NK * NV) + i_k * NV + i_v, tl.sum(b_q * b_dq, axis=0))


@autotune(RECURRENT_CONFIGS, key=RECURRENT_KEY)
@triton.jit(do_not_specialize=['T'])
def fused_recurrent_simple_gla_bwd_kernel_dkvg(
    q, k, v, g, do, q_dot_dq, ht, dht, dk, dv, dg, dh0, cu_seqlens, scale, T,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    NK: tl.constexpr, NV: tl.constexpr, USE_G: tl.constexpr, USE_INITIAL_STATE: tl.constexpr,
    USE_FINAL_STATE_GRADIENT: tl.constexpr, IS_VARLEN: tl.constexpr,
):
    i_h, i_k, i_v, bos, eos, o_k, m_k, o_v, m_v, o_state, m_state = state_program(cu_seqlens, T, H, K, V, BK, BV, IS_VARLEN)

    # [BK, BV]; the gradient of the log decay summed over all later positions of the sequence
    b_dh, b_dg_carry = final_state_gradient_block(dht, ht, o_state, m_state, BK, BV, USE_FINAL_STATE_GRADIENT, USE_G)
    for row in range(eos - 1, bos - 1, -1):
        # [BK]
        b_q = tl.load(q + (row * H + i_h) * K + o_k, mask=m_k, other=0).to(tl.float32)
        b_k = tl.load(k + (row * H + i_h) * K + o_k, mask=m_k, other=0).to(tl.float32)
        # [BV]
        b_v = tl.load(v + (row * H + i_h) * V + o_v, mask=m_v, other=0).to(tl.float32)
        b_do = tl.load(do + (row * H + i_h) * V + o_v, mask=m_v, other=0).to(tl.float32)
        b_dh += (b_q * scale)[:, None] * b_do[None, :]
        b_dk = tl.sum(b_dh * b_v[None, :], axis=1)
        b_dv = tl.sum(b_dh * b_k[:, None], axis=0)
        if USE_G:
            o_partial = (row * H + i_h) * (NK * NV) + i_k * NV + i_v
            b_dg_carry += tl.load(q_dot_dq + o_partial) - tl.sum(b_k * b_dk, axis=0)
            tl.store(dg + o_partial, b_dg_carry)
            b_dh *= tl.exp(tl.load(g + row * H + i_h).to(tl.float32))
        p_dk = dk + ((row * H + i_h) * NV + i_v) * K + o_k
        tl.store(p_dk, b_dk.to(p_dk.dtype.element_ty), mask=m_k)
        p_dv = dv + ((row * H + i_h) * NK + i_k) * V + o_v
        tl.store(p_dv, b_dv.to(p_dv.dtype.element_ty), mask=m_v)
    if USE_INITIAL_STATE:
        tl.store(dh0 + o_state, b_dh.to(dh0.dtype.element_ty), mask=m_state)


def recurrent_launch_config(K: int, V: int, dtype: torch.dtype, backward: bool) -> dict[str, Any]:
    """State block per program: at most 64 x 64 float32 values, enough programs for short batches."""
    return {'BK': state_block(K, 64), 'BV': state_block(V, 64)}


RECURRENT_KERNELS = KernelSet(
    fwd=fused_recurrent_simple_gla_fwd_kernel,
    bwd_dq=fused_recurrent_simple_gla_bwd_kernel_dq,
    bwd_dkvg=fused_recurrent_simple_gla_bwd_kernel_dkvg,
    launch_config=recurrent_launch_config,
)


@input_guard
def fused_recurrent_simple_gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Simple gated linear attention computed token by token, for decoding and as a second reference.

    Arguments and results are those of `fla.ops.simple_gla.chunk_simple_gla`.
    """
    return simple_gla(RECURRENT_KERNELS, q, k, v, g, scale, initial_state, output_final_state, cu_seqlens)
