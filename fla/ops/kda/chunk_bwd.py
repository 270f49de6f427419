# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Backward of chunked KDA: the state-gradient pass, then three chunk-parallel kernels through the WY form.

The forward keeps its cumulative log decay, the decayed scores `Aqk` and `M = (I + A)^-1`; the backward recomputes
from them W, U, the states and the corrections `v_new = U - W S` rather than keeping those, then walks the chunks in
reverse for the gradient of the state at every chunk boundary. Per chunk, with S the state before it, dS' the gradient
of the state after it, `Gl = G_last` and `rows`, `cols` the gradients of the decayed scores with respect to their left
and right factors:

    dv_new = s Aqk^T do + (k e^(Gl - G)) dS'              dS = e^Gl dS' + s (q e^G)^T do - W^T dv_new
    dW = -dv_new S^T    dM = dv_new (beta v)^T + dW (beta k e^G)^T    dv = beta M^T dv_new
    dA = -M^T dM M^T (strictly lower)    dAqk = s do v_new^T (lower)
    dq = s (do S^T) e^G + rows(dAqk, k)
    dk = beta (M^T dW) e^G + beta rows(dA, k) + cols(diag(beta) dA, k) + cols(dAqk, q) + (v_new dS'^T) e^(Gl - G)
    dbeta = sum(v * M^T dv_new) + sum(k e^G * M^T dW) + sum(k * rows(dA, k)), summed over each row

The gradient of the cumulative log decay is x times the gradient of every factor `x e^(+G)` minus that of every
`x e^(-G)`, plus `<S, dS'> e^Gl` on the chunk's last row; a reverse cumulative sum over the chunk turns it into that of
the per-step decay. Terms that cancel exactly there (the undecayed diagonal scores `q_i k_i` and the last row's own
state term) are left out: under strong decay their rounding would exceed the gradient itself.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from fla.ops.common.launch import fitting_configs
from fla.ops.common.program import block_range, load_tile, store_tile
from fla.ops.kda.chunk_fwd import (
    CHUNK_CONFIGS,
    CHUNK_KEY,
    CHUNK_SIZE,
    STATE_CONFIGS,
    SUB_CHUNK_SIZE,
    ChunkLayout,
    ForwardKept,
    chunk_blocks,
    chunk_kda_fwd_h,
    chunk_kda_fwd_wy,
    chunk_last_log_decay,
    chunk_place_rows,
    diagonal_blocks,
    key_block_tiles,
    key_blocks,
    load_chunk_state,
    load_row,
    state_pass_blocks,
    state_pass_chunk,
    state_pass_place,
    state_pass_shared,
)
from fla.utils import autotune


@triton.jit
def decayed_rows(b_dA, b_y, b_g, b_gs, b_gd, diagonal_fits, y, i_y, HY: tl.constexpr, gk, i_hv, HV: tl.constexpr,
                 row0, eos, o_k, m_k, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
                 DOT_PRECISION: tl.constexpr):
    """[BT, BK]: `sum_j dA_ij y_jc e^(G_ic - G_jc)` over `j <= i`, for a `dA` that is 0 above the diagonal.

    The gradient of a score matrix of `decayed_scores` with respect to its left factor; `b_y` holds the chunk's rows
    of the right factor y, also in memory at `y`, head `i_y` of `HY`; the log decays as `key_block_tiles` returns them.
    """
    o_t = tl.arange(0, BT)
    m_t = row0 + o_t < eos
    b_r = tl.zeros_like(b_g)
    b_yf = b_y.to(tl.float32)
    for i_s in range(1, tl.cdiv(tl.minimum(eos - row0, BT), BC)):
        # [BK] G_r at the end of sub-chunk i_s - 1; y_j e^(G_r - G_j) for the rows before it
        b_gr = load_row(gk, row0 + i_s * BC - 1, i_hv, HV, K, o_k, m_k)
        b_yr = b_yf * tl.exp(tl.where((o_t < i_s * BC)[:, None], b_gr[None, :] - b_g, float('-inf')))
        b_dAs = tl.where((o_t // BC == i_s)[:, None] & (o_t < i_s * BC)[None, :], b_dA, 0)
        b_r += tl.dot(b_dAs, b_yr, input_precision=DOT_PRECISION)
    b_r *= tl.exp(b_gs)
    if diagonal_fits:
        # e^(G_i - G_m) times the diagonal blocks of dA by y_j e^(G_m - G_j)
        b_dAd = tl.where(diagonal_blocks(BT, BC), b_dA, 0)
        b_r += tl.dot(b_dAd, b_yf * tl.exp(-b_gd), input_precision=DOT_PRECISION) * tl.exp(b_gd)
    else:
        for j in range(BC):
            # row j of each row's own sub-chunk, when at or before that row
            o_rj = row0 + (o_t // BC) * BC + j
            m_j = ((o_t % BC >= j) & m_t)[:, None] & m_k[None, :]
            b_yj = load_tile(y, o_rj, i_y, HY, K, o_k, m_j).to(tl.float32)
            b_gj = load_tile(gk, o_rj, i_hv, HV, K, o_k, m_j)
            # [BT] dA at (i, that row)
            b_dAj = tl.sum(tl.where(o_t[None, :] == ((o_t // BC) * BC + j)[:, None], b_dA, 0), axis=1)
            b_r += b_dAj[:, None] * b_yj * tl.exp(tl.where(m_j, b_g - b_gj, float('-inf')))
    return b_r


@triton.jit
def decayed_cols(b_dA, b_x, b_g, b_gd, diagonal_fits, x, i_x, HX: tl.constexpr, gk, i_hv, HV: tl.constexpr, row0, eos,
                 o_k, m_k, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """[BT, BK]: row j is `sum_i dA_ij x_ic e^(G_ic - G_jc)` over `i >= j`, for a `dA` that is 0 above the diagonal.

    The gradient of `decayed_scores` with respect to its right operand; `b_x` holds the chunk's rows of x, which is
    also in memory at `x`, head `i_x` of `HX`. Blocks between sub-chunks go through G at the end of row j's sub-chunk.
    """
    o_t = tl.arange(0, BT)
    m_t = row0 + o_t < eos
    b_c = tl.zeros_like(b_g)
    b_xf = b_x.to(tl.float32)
    # [BT(j), BT(i)]
    b_dAt = tl.trans(b_dA)
    for i_s in range(0, tl.cdiv(tl.minimum(eos - row0, BT), BC) - 1):
        # [BK] G_e at the end of sub-chunk i_s; x_i e^(G_i - G_e) for the rows after it
        b_ge = load_row(gk, row0 + (i_s + 1) * BC - 1, i_hv, HV, K, o_k, m_k)
        b_xe = b_xf * tl.exp(tl.where(((o_t >= (i_s + 1) * BC) & m_t)[:, None], b_g - b_ge[None, :], float('-inf')))
        b_dAs = tl.where((o_t // BC == i_s)[:, None] & (o_t >= (i_s + 1) * BC)[None, :], b_dAt, 0)
        b_c += tl.dot(b_dAs, b_xe, input_precision=DOT_PRECISION)
    # [BT, BK] e^(G_e - G_j), e the end of row j's sub-chunk; 1 past the sequence end, where nothing came above
    o_re = row0 + (o_t // BC) * BC + BC - 1
    m_e = (o_re < eos)[:, None] & m_k[None, :]
    b_c *= tl.exp(tl.where(m_e, load_tile(gk, o_re, i_hv, HV, K, o_k, m_e) - b_g, 0))
    if diagonal_fits:
        # e^(G_m - G_j) times the diagonal blocks of dA^T by x_i e^(G_i - G_m)
        b_dAd = tl.trans(tl.where(diagonal_blocks(BT, BC), b_dA, 0))
        b_c += tl.dot(b_dAd, b_xf * tl.exp(b_gd), input_precision=DOT_PRECISION) * tl.exp(-b_gd)
    else:
        for i_l in range(BC):
            # row i_l of each row's own sub-chunk, when at or after that row
            o_ri = row0 + (o_t // BC) * BC + i_l
            m_i = ((o_t % BC <= i_l) & (o_ri < eos))[:, None] & m_k[None, :]
            b_xi = load_tile(x, o_ri, i_x, HX, K, o_k, m_i).to(tl.float32)
            b_gi = load_tile(gk, o_ri, i_hv, HV, K, o_k, m_i)
            # [BT] dA at (that row, j)
            b_dAi = tl.sum(tl.where(o_t[:, None] == ((o_t // BC) * BC + i_l)[None, :], b_dA, 0), axis=0)
            b_c += b_dAi[:, None] * b_xi * tl.exp(tl.where(m_i, b_gi - b_g, float('-inf')))
    return b_c


@autotune(STATE_CONFIGS, key=CHUNK_KEY, prune_configs_by={
    'early_config_prune': fitting_configs(state_pass_shared(('q', 'k', 'w', 'gk'), ('do',), True))})
@triton.jit(do_not_specialize=['T'])
def chunk_kda_bwd_kernel_dh(
    q, k, w, gk, aqk, do, dht, dh, dh0, dv_new, cu_seqlens, scale, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, USE_FINAL_STATE_GRADIENT: tl.constexpr,
    IS_VARLEN: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    i_hv, i_h, bos, eos, i_c0, o_k, m_k, o_v, m_v, o_state, m_state = state_pass_place(
        cu_seqlens, T, H, HV, K, V, BT, BK, BV, IS_VARLEN)
    o_t = tl.arange(0, BT)

    # [BK, BV] the gradient of the state after the current chunk
    b_dh = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_FINAL_STATE_GRADIENT:
        b_dh += tl.load(dht + o_state, mask=m_state, other=0).to(tl.float32)
    for i_t in range(tl.cdiv(eos - bos, BT) - 1, -1, -1):
        row0, o_row, m_t, m_tk, m_tv = state_pass_chunk(dh, b_dh, i_c0, i_t, i_hv, bos, eos, o_k, o_v, m_k, m_v, HV,
                                                        K, V, BT)
        # [BT, BK]
        b_q = load_tile(q, o_row, i_h, H, K, o_k, m_tk)
        b_k = load_tile(k, o_row, i_h, H, K, o_k, m_tk)
        b_w = load_tile(w, o_row, i_hv, HV, K, o_k, m_tk).to(tl.float32)
        b_g = load_tile(gk, o_row, i_hv, HV, K, o_k, m_tk)
        # [BT, BV]
        b_do = load_tile(do, o_row, i_hv, HV, V, o_v, m_tv).to(tl.float32)
        # [BT, BT]
        b_A = load_tile(aqk, o_row, i_hv, HV, BT, o_t, m_t[:, None] & (o_t < BT)[None, :]).to(tl.float32)
        # [BK]
        b_g_last = chunk_last_log_decay(gk, row0, eos, i_hv, HV, K, o_k, m_k, BT)
        b_k_decayed = b_k * tl.exp(tl.where(m_tk, b_g_last[None, :] - b_g, float('-inf')))
        # [BT, BV] the gradient of the corrections, through the outputs and the next state
        b_dv_new = tl.dot(tl.trans(b_A), b_do, input_precision=DOT_PRECISION) * scale
        b_dv_new += tl.dot(b_k_decayed, b_dh, input_precision=DOT_PRECISION)
        store_tile(dv_new, o_row, i_hv, HV, V, o_v, b_dv_new, m_tv)
        b_dh *= tl.exp(b_g_last)[:, None]
        b_dh += tl.dot(tl.trans(b_q * tl.exp(b_g)), b_do, input_precision=DOT_PRECISION) * scale
        b_dh -= tl.dot(tl.trans(b_w), b_dv_new, input_precision=DOT_PRECISION)
    if USE_INITIAL_STATE:
        tl.store(dh0 + o_state, b_dh.to(dh0.dtype.element_ty), mask=m_state)


@autotune(CHUNK_CONFIGS, key=CHUNK_KEY)
@triton.jit(do_not_specialize=['T'])
def chunk_kda_bwd_kernel_wy(
    k, v, gk, beta, akk_inv, h, dv_new, dv, dk, dg, dbeta, dA, chunk_rows, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, IS_VARLEN: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    i_c, i_hv, i_h, row0, eos, o_t, o_row, m_t, m_tt = chunk_place_rows(chunk_rows, T, H, HV, BT, IS_VARLEN)

    # [BT, BT] M = (I + A)^-1
    b_M = load_tile(akk_inv, o_row, i_hv, HV, BT, o_t, m_tt).to(tl.float32)
    # [BT]
    b_beta = tl.load(beta + o_row * HV + i_hv, mask=m_t, other=0)
    b_dbeta = tl.zeros([BT], dtype=tl.float32)
    # [BT, BT]
    b_dM = tl.zeros([BT, BT], dtype=tl.float32)
    for i_v in range(tl.cdiv(V, BV)):
        o_v, m_v = block_range(i_v, BV, V)
        m_tv = m_t[:, None] & m_v[None, :]
        # [BT, BV]
        b_v = load_tile(v, o_row, i_hv, HV, V, o_v, m_tv).to(tl.float32)
        b_dv_new = load_tile(dv_new, o_row, i_hv, HV, V, o_v, m_tv).to(tl.float32)
        b_dM += tl.dot(b_dv_new, tl.trans(b_v * b_beta[:, None]), input_precision=DOT_PRECISION)
        # the gradient of beta v
        b_dvb = tl.dot(tl.trans(b_M), b_dv_new, input_precision=DOT_PRECISION)
        b_dbeta += tl.sum(b_v * b_dvb, axis=1)
        p_dv = dv + (o_row[:, None] * HV + i_hv) * V + o_v[None, :]
        tl.store(p_dv, (b_dvb * b_beta[:, None]).to(p_dv.dtype.element_ty), mask=m_tv)
    for i_k in range(tl.cdiv(K, BK)):
        o_k, m_k = block_range(i_k, BK, K)
        m_tk = m_t[:, None] & m_k[None, :]
        # [BT, BK]
        b_k = load_tile(k, o_row, i_h, H, K, o_k, m_tk).to(tl.float32)
        b_g = load_tile(gk, o_row, i_hv, HV, K, o_k, m_tk)
        b_kg = b_k * tl.exp(b_g)
        # [BT, BK] the gradient of W through the corrections U - W S
        b_dw = tl.zeros([BT, BK], dtype=tl.float32)
        for i_v in range(tl.cdiv(V, BV)):
            o_v, m_v = block_range(i_v, BV, V)
            # [BT, BV]
            b_dv_new = load_tile(dv_new, o_row, i_hv, HV, V, o_v, m_t[:, None] & m_v[None, :]).to(tl.float32)
            # [BK, BV]
            b_h = load_chunk_state(h, i_c, i_hv, row0, eos, o_k, o_v, m_k, m_v, HV, K, V)
            b_dw -= tl.dot(b_dv_new, tl.trans(b_h), input_precision=DOT_PRECISION)
        b_dM += tl.dot(b_dw, tl.trans(b_kg * b_beta[:, None]), input_precision=DOT_PRECISION)
        # the gradient of beta k e^G
        b_dkgb = tl.dot(tl.trans(b_M), b_dw, input_precision=DOT_PRECISION)
        b_dbeta += tl.sum(b_kg * b_dkgb, axis=1)
        b_dk = b_dkgb * b_beta[:, None] * tl.exp(b_g)
        o_tk = (o_row[:, None] * HV + i_hv) * K + o_k[None, :]
        tl.store(dk + o_tk, b_dk, mask=m_tk)
        tl.store(dg + o_tk, b_dk * b_k, mask=m_tk)
    # [BT, BT] dA = -M^T dM M^T, on the strictly lower triangle where A lives
    b_dA = -tl.dot(tl.dot(tl.trans(b_M), b_dM, input_precision=DOT_PRECISION), tl.trans(b_M),
                   input_precision=DOT_PRECISION)
    b_dA = tl.where(o_t[:, None] > o_t[None, :], b_dA, 0)
    store_tile(dA, o_row, i_hv, HV, BT, o_t, b_dA, m_tt)
    tl.store(dbeta + o_row * HV + i_hv, b_dbeta, mask=m_t)


# they add to the partials of `bwd_wy` in place, so each config the tuner times must start from them again
@autotune(CHUNK_CONFIGS, key=CHUNK_KEY, restore_value=['dk', 'dg', 'dbeta'])
@triton.jit(do_not_specialize=['T'])
def chunk_kda_bwd_kernel_intra_keys(
    k, gk, beta, dA, dk, dg, dbeta, chunk_rows, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr,
    IS_VARLEN: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    """The gradient through A = diag(beta) Akk: into its left and right key factors and beta."""
    i_c, i_hv, i_h, row0, eos, o_t, o_row, m_t, m_tt = chunk_place_rows(chunk_rows, T, H, HV, BT, IS_VARLEN)
    # [BT]
    b_beta = tl.load(beta + o_row * HV + i_hv, mask=m_t, other=0)
    b_dbeta = tl.load(dbeta + o_row * HV + i_hv, mask=m_t, other=0)
    # [BT, BT] the gradient of A, and diag(beta) dA, that of the decayed scores Akk themselves
    b_dA = load_tile(dA, o_row, i_hv, HV, BT, o_t, m_tt).to(tl.float32)
    b_dA_beta = b_dA * b_beta[:, None]
    for i_k in range(tl.cdiv(K, BK)):
        o_k, m_k, m_tk, b_k, b_g, b_gs, b_gd, diagonal_fits = key_block_tiles(
            k, gk, i_k, i_h, i_hv, row0, eos, o_row, m_t, H, HV, K, BT, BC, BK)
        # [BT, BK] the gradient of the left factor k of A, and of its right factor
        b_dk_left = decayed_rows(b_dA, b_k, b_g, b_gs, b_gd, diagonal_fits, k, i_h, H, gk, i_hv, HV, row0, eos, o_k,
                                 m_k, K, BT, BC, DOT_PRECISION)
        b_dk_right = decayed_cols(b_dA_beta, b_k, b_g, b_gd, diagonal_fits, k, i_h, H, gk, i_hv, HV, row0, eos, o_k,
                                  m_k, K, BT, BC, DOT_PRECISION)
        b_kf = b_k.to(tl.float32)
        o_tk = (o_row[:, None] * HV + i_hv) * K + o_k[None, :]
        b_dk = tl.load(dk + o_tk, mask=m_tk, other=0) + b_beta[:, None] * b_dk_left + b_dk_right
        b_dgk = tl.load(dg + o_tk, mask=m_tk, other=0) + b_kf * (b_beta[:, None] * b_dk_left - b_dk_right)
        b_dbeta += tl.sum(b_kf * b_dk_left, axis=1)
        tl.store(dk + o_tk, b_dk, mask=m_tk)
        tl.store(dg + o_tk, b_dgk, mask=m_tk)
    tl.store(dbeta + o_row * HV + i_hv, b_dbeta, mask=m_t)


@autotune(CHUNK_CONFIGS, key=CHUNK_KEY, restore_value=['dk', 'dg'])
@triton.jit(do_not_specialize=['T'])
def chunk_kda_bwd_kernel_intra_scores(
    q, k, gk, v_new, h, dh, do, dq, dk, dg, chunk_rows, scale, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
    BK: tl.constexpr, BV: tl.constexpr, IS_VARLEN: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    """The gradient through the decayed scores Aqk and the states: dq whole, the rest of dk, and the gradient of the
    cumulative log decay turned into that of the per-step decay."""
    i_c, i_hv, i_h, row0, eos, o_t, o_row, m_t, m_tt = chunk_place_rows(chunk_rows, T, H, HV, BT, IS_VARLEN)
    # the chunk's last row, which carries the gradient of the decay over the whole chunk
    m_last = o_t == tl.minimum(eos - row0, BT) - 1

    # [BT, BT] the gradient of the decayed scores q k^T
    b_dAqk = tl.zeros([BT, BT], dtype=tl.float32)
    for i_v in range(tl.cdiv(V, BV)):
        o_v, m_v = block_range(i_v, BV, V)
        m_tv = m_t[:, None] & m_v[None, :]
        # [BT, BV]
        b_do = load_tile(do, o_row, i_hv, HV, V, o_v, m_tv).to(tl.float32)
        b_v_new = load_tile(v_new, o_row, i_hv, HV, V, o_v, m_tv).to(tl.float32)
        b_dAqk += tl.dot(b_do, tl.trans(b_v_new), input_precision=DOT_PRECISION)
    # [BT] the diagonal apart, since its undecayed terms cancel exactly in the decay gradient (module docstring)
    b_dAqk_diag = tl.sum(tl.where(o_t[:, None] == o_t[None, :], b_dAqk, 0), axis=1) * scale
    b_dAqk = tl.where(o_t[:, None] > o_t[None, :], b_dAqk * scale, 0)
    for i_k in range(tl.cdiv(K, BK)):
        o_k, m_k, m_tk, b_k, b_g, b_gs, b_gd, diagonal_fits = key_block_tiles(
            k, gk, i_k, i_h, i_hv, row0, eos, o_row, m_t, H, HV, K, BT, BC, BK)
        b_q = load_tile(q, o_row, i_h, H, K, o_k, m_tk)
        # [BK]
        b_g_last = chunk_last_log_decay(gk, row0, eos, i_hv, HV, K, o_k, m_k, BT)
        b_dg_last = tl.zeros([BK], dtype=tl.float32)
        # [BT, BK] do S^T and v_new dS'^T, S the state before the chunk and dS' the gradient of the one after
        b_dq = tl.zeros([BT, BK], dtype=tl.float32)
        b_dk_decayed = tl.zeros([BT, BK], dtype=tl.float32)
        for i_v in range(tl.cdiv(V, BV)):
            o_v, m_v = block_range(i_v, BV, V)
            m_tv = m_t[:, None] & m_v[None, :]
            # [BT, BV]
            b_do = load_tile(do, o_row, i_hv, HV, V, o_v, m_tv).to(tl.float32)
            b_v_new = load_tile(v_new, o_row, i_hv, HV, V, o_v, m_tv).to(tl.float32)
            # [BK, BV]
            b_h = load_chunk_state(h, i_c, i_hv, row0, eos, o_k, o_v, m_k, m_v, HV, K, V)
            b_dh = load_chunk_state(dh, i_c, i_hv, row0, eos, o_k, o_v, m_k, m_v, HV, K, V)
            b_dq += tl.dot(b_do, tl.trans(b_h), input_precision=DOT_PRECISION)
            b_dk_decayed += tl.dot(b_v_new, tl.trans(b_dh), input_precision=DOT_PRECISION)
            b_dg_last += tl.sum(b_h * b_dh, axis=1)
        b_dq *= tl.exp(b_g) * scale
        b_dq += decayed_rows(b_dAqk, b_k, b_g, b_gs, b_gd, diagonal_fits, k, i_h, H, gk, i_hv, HV, row0, eos, o_k, m_k,
                             K, BT, BC, DOT_PRECISION)
        # [BT, BK] the gradient of the right factor k of the scores
        b_dk_right = decayed_cols(b_dAqk, b_q, b_g, b_gd, diagonal_fits, q, i_h, H, gk, i_hv, HV, row0, eos, o_k,
                                  m_k, K, BT, BC, DOT_PRECISION)
        b_qf, b_kf = b_q.to(tl.float32), b_k.to(tl.float32)
        # [BT, BK] k_i e^(G_last - G_i), which carries the corrections into the next state
        b_k_decay = tl.exp(tl.where(m_tk, b_g_last[None, :] - b_g, float('-inf')))
        b_dk_state = b_dk_decayed * b_k_decay
        o_tk = (o_row[:, None] * HV + i_hv) * K + o_k[None, :]
        b_dk = tl.load(dk + o_tk, mask=m_tk, other=0) + b_dk_right + b_dk_state + b_dAqk_diag[:, None] * b_qf
        # the cumulative decay's gradient, less the last row's own state term that cancels exactly (module docstring)
        b_dg_state = tl.where(m_last[:, None], 0, b_kf * b_dk_state)
        b_dgk = tl.load(dg + o_tk, mask=m_tk, other=0) + b_qf * b_dq - b_kf * b_dk_right - b_dg_state
        b_dg_last = b_dg_last * tl.exp(b_g_last) + tl.sum(b_dg_state, axis=0)
        b_dgk += tl.where(m_last[:, None], b_dg_last[None, :], 0)
        tl.store(dq + o_tk, b_dq + b_dAqk_diag[:, None] * b_kf, mask=m_tk)
        tl.store(dk + o_tk, b_dk, mask=m_tk)
        tl.store(dg + o_tk, tl.cumsum(b_dgk, axis=0, reverse=True), mask=m_tk)


def chunk_kda_bwd_dh(
    q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, gk: torch.Tensor, aqk: torch.Tensor, do: torch.Tensor,
    dht: torch.Tensor | None, initial_state: torch.Tensor | None, scale: float, layout: ChunkLayout,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """The gradient of the state after every chunk and dv_new, both in the dtype of W; that of the initial state."""
    B, T, H, K = q.shape
    HV, V = do.shape[2], do.shape[3]
    blocks = state_pass_blocks(K, V, q.dtype)
    dh = q.new_empty(layout.num_states, HV, K, V, dtype=w.dtype)
    dh0 = torch.empty_like(initial_state) if initial_state is not None else None
    dv_new = do.new_empty(B, T, HV, V, dtype=w.dtype)
    chunk_kda_bwd_kernel_dh[(layout.N * HV, triton.cdiv(V, blocks['BV']))](
        q, k, w, gk, aqk, do, dht, dh, dh0, dv_new, layout.cu_seqlens, scale, T,
        H=H, HV=HV, K=K, V=V, BT=CHUNK_SIZE, USE_INITIAL_STATE=initial_state is not None,
        USE_FINAL_STATE_GRADIENT=dht is not None, IS_VARLEN=layout.cu_seqlens is not None, **blocks,
    )
    return dh, dh0, dv_new


def chunk_kda_bwd_wy(
    k: torch.Tensor, v: torch.Tensor, gk: torch.Tensor, beta: torch.Tensor, akk_inv: torch.Tensor, h: torch.Tensor,
    dv_new: torch.Tensor, layout: ChunkLayout,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """dv, and the WY parts of dk, of the gradient of the cumulative log decay and of dbeta (float32); dA."""
    B, T, H, K = k.shape
    HV, V = v.shape[2], v.shape[3]
    dv = torch.empty_like(v)
    dk = k.new_empty(B, T, HV, K, dtype=torch.float32)
    dg = torch.empty_like(gk)
    dbeta = torch.empty_like(beta, dtype=torch.float32)
    dA = torch.empty_like(akk_inv)
    chunk_kda_bwd_kernel_wy[layout.grid(HV)](
        k, v, gk, beta, akk_inv, h, dv_new, dv, dk, dg, dbeta, dA, layout.chunk_rows, T,
        H=H, HV=HV, K=K, V=V, BT=CHUNK_SIZE, IS_VARLEN=layout.cu_seqlens is not None,
        **chunk_blocks(K, V, k.dtype),
    )
    return dv, dk, dg, dbeta, dA


def chunk_kda_bwd_intra(
    q: torch.Tensor, k: torch.Tensor, gk: torch.Tensor, beta: torch.Tensor, v_new: torch.Tensor, h: torch.Tensor,
    dh: torch.Tensor, do: torch.Tensor, dA: torch.Tensor, dk: torch.Tensor, dg: torch.Tensor, dbeta: torch.Tensor,
    scale: float, layout: ChunkLayout,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """dq, dk per value head and dg, dbeta, all float32; dk, dg and dbeta add to the partials of `bwd_wy` in place.

    Two kernels, so that no program holds more than two `[BT, BT]` score gradients beside its key block's tiles: the
    keys' part through A, then the scores' and the states' part, which also sums the decay's gradient over the chunk."""
    B, T, H, K = q.shape
    HV, V = v_new.shape[2], v_new.shape[3]
    varlen = layout.cu_seqlens is not None
    chunk_kda_bwd_kernel_intra_keys[layout.grid(HV)](
        k, gk, beta, dA, dk, dg, dbeta, layout.chunk_rows, T,
        H=H, HV=HV, K=K, BT=CHUNK_SIZE, BC=SUB_CHUNK_SIZE, IS_VARLEN=varlen, **key_blocks(K, q.dtype),
    )
    dq = q.new_empty(B, T, HV, K, dtype=torch.float32)
    chunk_kda_bwd_kernel_intra_scores[layout.grid(HV)](
        q, k, gk, v_new, h, dh, do, dq, dk, dg, layout.chunk_rows, scale, T,
        H=H, HV=HV, K=K, V=V, BT=CHUNK_SIZE, BC=SUB_CHUNK_SIZE, IS_VARLEN=varlen, **chunk_blocks(K, V, q.dtype),
    )
    return dq, dk, dg, dbeta


def _sum_value_heads(x: torch.Tensor, H: int, dtype: torch.dtype) -> torch.Tensor:
    # [B, T, HV, K] -> [B, T, H, K]: value heads sharing a query/key head add their gradients
    B, T, HV, K = x.shape
    return x.view(B, T, H, HV // H, K).sum(3).to(dtype)


def chunk_kda_bwd(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kept: ForwardKept, beta: torch.Tensor, scale: float,
    initial_state: torch.Tensor | None, do: torch.Tensor, dht: torch.Tensor | None, layout: ChunkLayout,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    gk, aqk, akk_inv = kept.gk, kept.aqk, kept.akk_inv
    w, u = chunk_kda_fwd_wy(k, v, gk, beta, akk_inv, layout)
    h, v_new, _ = chunk_kda_fwd_h(k, w, u, gk, initial_state, False, layout)
    dh, dh0, dv_new = chunk_kda_bwd_dh(q, k, w, gk, aqk, do, dht, initial_state, scale, layout)
    dv, dk, dg, dbeta, dA = chunk_kda_bwd_wy(k, v, gk, beta, akk_inv, h, dv_new, layout)
    dq, dk, dg, dbeta = chunk_kda_bwd_intra(q, k, gk, beta, v_new, h, dh, do, dA, dk, dg, dbeta, scale, layout)
    H = q.shape[2]
    return _sum_value_heads(dq, H, q.dtype), _sum_value_heads(dk, H, k.dtype), dv, dg, dbeta, dh0
