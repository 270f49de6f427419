# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Fused recurrent KDA: one program per (sequence, value head, value block) steps through the tokens one at a time.

Every value column of the state evolves on its own, so a program holds the whole key dimension of a `[K, BV]` slice
of the state in registers. The backward needs the states in reverse order: the forward stores the state every `BT`
steps, and the backward recomputes one chunk's states from its checkpoint into a scratch buffer, then walks the
chunk back.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from fla.ops.common.launch import reduce_partials, state_block
from fla.ops.common.program import block_range, program_place, state_block_offsets
from fla.ops.kda.inputs import run_kda
from fla.utils import autotune, input_guard

RECURRENT_CONFIGS = [triton.Config({}, num_warps=w) for w in (1, 2, 4)]
RECURRENT_KEY = ['H', 'HV', 'K', 'V', 'BK', 'BV']
# Steps between two stored states: the backward recomputes at most this many states from each.
CHECKPOINT_EVERY = 64


@triton.jit
def load_head_vector(x, row, i_head, HEADS: tl.constexpr, D: tl.constexpr, o_d, m_d):
    """Entries `o_d` of head `i_head` at row `row` of a `[B * T, HEADS, D]` tensor, as float32; masked ones read 0."""
    return tl.load(x + (row * HEADS + i_head) * D + o_d, mask=m_d, other=0).to(tl.float32)


@triton.jit
def delta_rule_residual(b_h, b_k, b_v):
    """The part of the value `[BV]` that the decayed state `[BK, BV]` does not yet recall from the key: `v - S^T k`."""
    return b_v - tl.sum(b_h * b_k[:, None], axis=0)


@triton.jit
def checkpoint_index(i_n, i_t, bos, BT: tl.constexpr):
    """Index of the state stored before chunk `i_t` of sequence `i_n`; a sequence's chunks start at `bos // BT + i_n`,
    distinct for every sequence without a host-side count, so `B * T // BT + N` states hold them all."""
    return bos // BT + i_n + i_t


@triton.jit
def recurrent_place(cu_seqlens, T, H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
                    BK: tl.constexpr, BV: tl.constexpr, IS_VARLEN: tl.constexpr):
    """Return `(i_nh, i_n, i_hv, i_h, i_v, bos, eos, o_k, m_k, o_v, m_v, o_kv, m_state)` of a recurrent program: its
    sequence-value head, sequence, value head and key head, its value block, its rows, its key and value blocks, and
    the offsets and mask of its block within one `[K, V]` state."""
    i_nh, i_hv, _, i_v, bos, eos = program_place(cu_seqlens, T, HV, IS_VARLEN)
    o_k, m_k = block_range(0, BK, K)
    o_v, m_v = block_range(i_v, BV, V)
    o_kv, m_state = state_block_offsets(0, o_k, o_v, m_k, m_v, K, V)
    return i_nh, i_nh // HV, i_hv, i_hv // (HV // H), i_v, bos, eos, o_k, m_k, o_v, m_v, o_kv, m_state


@autotune(RECURRENT_CONFIGS, key=RECURRENT_KEY)
@triton.jit(do_not_specialize=['T'])
def fused_recurrent_kda_fwd_kernel(
    q, k, v, g, beta, o, h0, ht, checkpoints, cu_seqlens, scale, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, STORE_FINAL_STATE: tl.constexpr,
    SAVE_CHECKPOINTS: tl.constexpr, IS_VARLEN: tl.constexpr,
):
    i_nh, i_n, i_hv, i_h, i_v, bos, eos, o_k, m_k, o_v, m_v, o_kv, m_state = recurrent_place(
        cu_seqlens, T, H, HV, K, V, BK, BV, IS_VARLEN)

    # [BK, BV]
    b_h = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL_STATE:
        b_h += tl.load(h0 + i_nh * K * V + o_kv, mask=m_state, other=0).to(tl.float32)
    for i_t in range(tl.cdiv(eos - bos, BT)):
        if SAVE_CHECKPOINTS:
            p_checkpoint = checkpoints + (checkpoint_index(i_n, i_t, bos, BT) * HV + i_hv) * K * V + o_kv
            tl.store(p_checkpoint, b_h, mask=m_state)
        for row in range(bos + i_t * BT, tl.minimum(bos + (i_t + 1) * BT, eos)):
            # [BK]
            b_q = load_head_vector(q, row, i_h, H, K, o_k, m_k) * scale
            b_k = load_head_vector(k, row, i_h, H, K, o_k, m_k)
            b_g = load_head_vector(g, row, i_hv, HV, K, o_k, m_k)
            # [BV]
            b_v = load_head_vector(v, row, i_hv, HV, V, o_v, m_v)
            b_beta = tl.load(beta + row * HV + i_hv).to(tl.float32)
            b_h *= tl.exp(b_g)[:, None]
            b_h += b_beta * b_k[:, None] * delta_rule_residual(b_h, b_k, b_v)[None, :]
            b_o = tl.sum(b_h * b_q[:, None], axis=0)
            p_o = o + (row * HV + i_hv) * V + o_v
            tl.store(p_o, b_o.to(p_o.dtype.element_ty), mask=m_v)
    if STORE_FINAL_STATE:
        tl.store(ht + i_nh * K * V + o_kv, b_h, mask=m_state)


@autotune(RECURRENT_CONFIGS, key=RECURRENT_KEY)
@triton.jit(do_not_specialize=['T'])
def fused_recurrent_kda_bwd_kernel(
    q, k, v, g, beta, do, dht, checkpoints, scratch, dq, dk, dv, dg, dbeta, dh0, cu_seqlens, scale, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, NV: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, USE_FINAL_STATE_GRADIENT: tl.constexpr,
    SCRATCH_BY_ROW: tl.constexpr, IS_VARLEN: tl.constexpr,
):
    i_nh, i_n, i_hv, i_h, i_v, bos, eos, o_k, m_k, o_v, m_v, o_kv, m_state = recurrent_place(
        cu_seqlens, T, H, HV, K, V, BK, BV, IS_VARLEN)
    # this program's BT slots of the [rows, HV, K, V] scratch: either its sequence's first rows or BT of its own
    scratch_base = bos if SCRATCH_BY_ROW else i_n * BT

    # [BK, BV]
    b_dh = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_FINAL_STATE_GRADIENT:
        b_dh += tl.load(dht + i_nh * K * V + o_kv, mask=m_state, other=0).to(tl.float32)
    for i_t in range(tl.cdiv(eos - bos, BT) - 1, -1, -1):
        row_start = bos + i_t * BT
        row_end = tl.minimum(row_start + BT, eos)
        # [BK, BV]
        b_h = tl.load(checkpoints + (checkpoint_index(i_n, i_t, bos, BT) * HV + i_hv) * K * V + o_kv, mask=m_state, other=0)
        # the previous chunk's walk back read these slots, in a thread layout that may differ from this one's
        tl.debug_barrier()
        for row in range(row_start, row_end):
            # [BK]
            b_k = load_head_vector(k, row, i_h, H, K, o_k, m_k)
            b_g = load_head_vector(g, row, i_hv, HV, K, o_k, m_k)
            # [BV]
            b_v = load_head_vector(v, row, i_hv, HV, V, o_v, m_v)
            b_do = load_head_vector(do, row, i_hv, HV, V, o_v, m_v)
            b_beta = tl.load(beta + row * HV + i_hv).to(tl.float32)
            b_h *= tl.exp(b_g)[:, None]
            tl.store(scratch + ((scratch_base + row - row_start) * HV + i_hv) * K * V + o_kv, b_h, mask=m_state)
            b_h += b_beta * b_k[:, None] * delta_rule_residual(b_h, b_k, b_v)[None, :]
            # [BK]
            b_dq = tl.sum(b_h * b_do[None, :], axis=1) * scale
            p_dq = dq + ((row * HV + i_hv) * NV + i_v) * K + o_k
            tl.store(p_dq, b_dq.to(p_dq.dtype.element_ty), mask=m_k)
        # the walk back reads slots that other threads of this program may have written
        tl.debug_barrier()
        for row in range(row_end - 1, row_start - 1, -1):
            # [BK]
            b_q = load_head_vector(q, row, i_h, H, K, o_k, m_k) * scale
            b_k = load_head_vector(k, row, i_h, H, K, o_k, m_k)
            b_g = load_head_vector(g, row, i_hv, HV, K, o_k, m_k)
            # [BV]
            b_v = load_head_vector(v, row, i_hv, HV, V, o_v, m_v)
            b_do = load_head_vector(do, row, i_hv, HV, V, o_v, m_v)
            b_beta = tl.load(beta + row * HV + i_hv).to(tl.float32)
            # [BK, BV] the state after this step's decay, before its delta-rule update
            b_h = tl.load(scratch + ((scratch_base + row - row_start) * HV + i_hv) * K * V + o_kv, mask=m_state, other=0)
            b_dh += b_q[:, None] * b_do[None, :]
            # [BV]
            b_u = delta_rule_residual(b_h, b_k, b_v)
            b_dh_k = tl.sum(b_dh * b_k[:, None], axis=0)
            b_du = b_beta * b_dh_k
            # [BK]
            b_dk = b_beta * tl.sum(b_dh * b_u[None, :], axis=1) - tl.sum(b_h * b_du[None, :], axis=1)
            b_dh -= b_k[:, None] * b_du[None, :]
            b_dg = tl.sum(b_h * b_dh, axis=1)
            b_dh *= tl.exp(b_g)[:, None]
            o_partial = (row * HV + i_hv) * NV + i_v
            tl.store(dbeta + o_partial, tl.sum(b_dh_k * b_u, axis=0))
            tl.store(dg + o_partial * K + o_k, b_dg, mask=m_k)
            p_dk = dk + o_partial * K + o_k
            tl.store(p_dk, b_dk.to(p_dk.dtype.element_ty), mask=m_k)
            p_dv = dv + (row * HV + i_hv) * V + o_v
            tl.store(p_dv, b_du.to(p_dv.dtype.element_ty), mask=m_v)
    if USE_INITIAL_STATE:
        tl.store(dh0 + i_nh * K * V + o_kv, b_dh.to(dh0.dtype.element_ty), mask=m_state)


def recurrent_launch_config(K: int, V: int) -> dict[str, int]:
    """The whole key dimension per program, and a value block that keeps a `[BK, BV]` state at 4096 float32 values."""
    BK = state_block(K, 256)
    return {'BK': BK, 'BV': state_block(V, max(16, 4096 // BK))}


def fused_recurrent_kda_fwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float,
    initial_state: torch.Tensor | None,
    output_final_state: bool,
    save_checkpoints: bool,
    cu_seqlens: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    N = B if cu_seqlens is None else cu_seqlens.numel() - 1
    config = recurrent_launch_config(K, V)
    NV = triton.cdiv(V, config['BV'])
    o = torch.empty_like(v)
    final_state = q.new_empty(N, HV, K, V, dtype=torch.float32) if output_final_state else None
    # a sequence of L tokens stores cdiv(L, BT) states from slot bos // BT + n on; see checkpoint_index
    checkpoints = q.new_empty(B * T // CHECKPOINT_EVERY + N, HV, K, V, dtype=torch.float32) if save_checkpoints else None
    fused_recurrent_kda_fwd_kernel[(N * HV, NV)](
        q, k, v, g, beta, o, initial_state, final_state, checkpoints, cu_seqlens, scale, T,
        H=H, HV=HV, K=K, V=V, BT=CHECKPOINT_EVERY,
        USE_INITIAL_STATE=initial_state is not None,
        STORE_FINAL_STATE=output_final_state,
        SAVE_CHECKPOINTS=save_checkpoints,
        IS_VARLEN=cu_seqlens is not None,
        **config,
    )
    return o, final_state, checkpoints


def fused_recurrent_kda_bwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    do: torch.Tensor,
    dht: torch.Tensor | None,
    scale: float,
    checkpoints: torch.Tensor,
    initial_state_dtype: torch.dtype | None,
    cu_seqlens: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    N = B if cu_seqlens is None else cu_seqlens.numel() - 1
    config = recurrent_launch_config(K, V)
    NV = triton.cdiv(V, config['BV'])
    # each program needs BT slots: the first rows of its sequence when tokens are fewer than N * BT, else BT of its own
    scratch_by_row = B * T < N * CHECKPOINT_EVERY
    scratch = q.new_empty(B * T if scratch_by_row else N * CHECKPOINT_EVERY, HV, K, V, dtype=torch.float32)

    # the value heads of one query head and the value blocks each give a partial of dq and dk
    partials = HV // H * NV
    dq = q.new_empty(B, T, HV, NV, K, dtype=q.dtype if partials == 1 else torch.float32)
    dk = k.new_empty(B, T, HV, NV, K, dtype=k.dtype if partials == 1 else torch.float32)
    dv = torch.empty_like(v)
    dg = q.new_empty(B, T, HV, NV, K, dtype=torch.float32)
    dbeta = q.new_empty(B, T, HV, NV, dtype=torch.float32)
    dh0 = q.new_empty(N, HV, K, V, dtype=initial_state_dtype) if initial_state_dtype is not None else None
    fused_recurrent_kda_bwd_kernel[(N * HV, NV)](
        q, k, v, g, beta, do, dht, checkpoints, scratch, dq, dk, dv, dg, dbeta, dh0, cu_seqlens, scale, T,
        H=H, HV=HV, K=K, V=V, BT=CHECKPOINT_EVERY, NV=NV,
        USE_INITIAL_STATE=initial_state_dtype is not None,
        USE_FINAL_STATE_GRADIENT=dht is not None,
        SCRATCH_BY_ROW=scratch_by_row,
        IS_VARLEN=cu_seqlens is not None,
        **config,
    )
    dq = reduce_partials(dq.view(B, T, H, partials, K), q.dtype)
    dk = reduce_partials(dk.view(B, T, H, partials, K), k.dtype)
    return dq, dk, dv, reduce_partials(dg, g.dtype), dbeta.sum(-1).to(beta.dtype), dh0


class FusedRecurrentKDAFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, q, k, v, g, beta, scale, initial_state, output_final_state, save_checkpoints, cu_seqlens):
        o, final_state, checkpoints = fused_recurrent_kda_fwd(
            q, k, v, g, beta, scale, initial_state, output_final_state, save_checkpoints, cu_seqlens,
        )
        ctx.save_for_backward(q, k, v, g, beta, checkpoints, cu_seqlens)
        ctx.scale = scale
        ctx.initial_state_dtype = initial_state.dtype if initial_state is not None else None
        return o, final_state

    @staticmethod
    def backward(ctx, do, dht):
        q, k, v, g, beta, checkpoints, cu_seqlens = ctx.saved_tensors
        dq, dk, dv, dg, dbeta, dh0 = fused_recurrent_kda_bwd(
            q, k, v, g, beta, do.contiguous(), dht.contiguous() if dht is not None else None,
            ctx.scale, checkpoints, ctx.initial_state_dtype, cu_seqlens,
        )
        return dq, dk, dv, dg, dbeta, None, dh0, None, None, None


def _fused_recurrent_kda_core(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float,
    initial_state: torch.Tensor | None,
    output_final_state: bool,
    cu_seqlens: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    # only a call autograd will go back through needs the checkpoints, and inside forward grad mode is always off
    save_checkpoints = torch.is_grad_enabled() and any(
        x is not None and x.requires_grad for x in (q, k, v, g, beta, initial_state)
    )
    return FusedRecurrentKDAFunction.apply(q, k, v, g, beta, scale, initial_state, output_final_state, save_checkpoints,
                                           cu_seqlens)


@input_guard
def fused_recurrent_kda(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    use_gate_in_kernel: bool = False,
    A_log: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    safe_gate: bool = False,
    lower_bound: float | None = None,
    use_beta_sigmoid_in_kernel: bool = False,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    r"""Kimi Delta Attention token by token: $S_t = (I - \beta_t k_t k_t^\top)\,\mathrm{diag}(e^{g_t}) S_{t-1}
    + \beta_t k_t v_t^\top$, $o_t = s\, S_t^\top q_t$; for decoding and as a second reference.

    Arguments and results are those of `fla.ops.kda.chunk_kda`, grouped value heads (HV > H) included.
    """
    return run_kda(_fused_recurrent_kda_core, q, k, v, g, beta, scale, initial_state, output_final_state,
                   use_qk_l2norm_in_kernel, use_gate_in_kernel, A_log, dt_bias, safe_gate, lower_bound,
                   use_beta_sigmoid_in_kernel, cu_seqlens)
