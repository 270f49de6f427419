# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The chunked simple GLA forward in Gluon for Hopper (sm_90); the backward stays the Triton kernels'.

Port layer 1 of `../shared/reference/skills.md` section 7: a literal translation of `chunk_simple_gla_fwd_kernel`
with every layout written out. Tiles are loaded to registers in a blocked layout, converted to the operand layouts of
`mma_v2` (the Ampere tensor-core instruction, which Hopper runs), and the state stays in the accumulator layout from
chunk to chunk. Later layers move the loads to TMA with mbarriers, then the products to WGMMA.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

from fla.ops.backends import BaseBackend
from fla.ops.simple_gla.chunk import CHUNK_KERNELS, chunk_launch_config
from fla.ops.simple_gla.function import KernelSet, simple_gla
from fla.utils import input_guard, nvidia_target

# Input dtypes the 16-bit tensor-core products take; float32 inputs want IEEE products, which stay with Triton.
DTYPES = (torch.bfloat16, torch.float16)
# The accumulator layout spreads 2 warps of 16 rows over the key axis of the state: its key block needs 32 rows.
MIN_BLOCK_K = 32
# The GPU targets the kernels of this module are written for, and the one place that says so: `mrbot compile` compiles
# them for these only and reports the others as not available, and the verifier refuses every other GPU. Layer 1's
# `mma_v2` would also compile for sm_100, but the layers after it use Hopper's TMA and WGMMA.
TARGETS = ('sm_90',)
# Set to 1 to serve `chunk_simple_gla` from this backend where it accepts the call, 0 (the default) to leave it off.
ENV_VAR = 'FLA_SIMPLE_GLA_GLUON'


@gluon.jit(do_not_specialize=['T'])
def chunk_simple_gla_fwd_gluon_kernel(
    q, k, v, g, o, h0, ht, cu_seqlens, scale, T,
    H: gl.constexpr, K: gl.constexpr, V: gl.constexpr, BT: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr,
    NK: gl.constexpr, USE_G: gl.constexpr, USE_INITIAL_STATE: gl.constexpr, STORE_FINAL_STATE: gl.constexpr,
    IS_VARLEN: gl.constexpr,
):
    # 4 warps: products in the mma_v2 accumulator layout, 2 x 2 warps over a tile; loads 8 elements wide per thread
    acc: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 8])
    lhs: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc, k_width=2)
    rhs: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=acc, k_width=2)
    tile: gl.constexpr = gl.BlockedLayout(size_per_thread=[1, 8], threads_per_warp=[4, 8], warps_per_cta=[4, 1],
                                          order=[1, 0])
    tile_rows: gl.constexpr = gl.SliceLayout(1, tile)
    tile_cols: gl.constexpr = gl.SliceLayout(0, tile)
    acc_rows: gl.constexpr = gl.SliceLayout(1, acc)
    acc_cols: gl.constexpr = gl.SliceLayout(0, acc)

    i_nh = gl.program_id(0).to(gl.int64)
    i_v = gl.program_id(1)
    i_k = gl.program_id(2)
    i_h = i_nh % H
    if IS_VARLEN:
        bos = gl.load(cu_seqlens + i_nh // H).to(gl.int64)
        eos = gl.load(cu_seqlens + i_nh // H + 1).to(gl.int64)
    else:
        bos = (i_nh // H) * T
        eos = bos + T

    # offsets within a chunk and within the state block, in the layout of each tile that uses them
    o_t = gl.arange(0, BT, layout=tile_rows)
    o_k = i_k * BK + gl.arange(0, BK, layout=tile_cols)
    o_v = i_v * BV + gl.arange(0, BV, layout=tile_cols)
    o_i = gl.arange(0, BT, layout=acc_rows)
    o_j = gl.arange(0, BT, layout=acc_cols)
    o_state_k = i_k * BK + gl.arange(0, BK, layout=acc_rows)
    o_state_v = i_v * BV + gl.arange(0, BV, layout=acc_cols)
    m_state = (o_state_k[:, None] < K) & (o_state_v[None, :] < V)
    p_state = i_nh * K * V + o_state_k[:, None] * V + o_state_v[None, :]
    m_causal = o_i[:, None] >= o_j[None, :]

    # [BK, BV]
    b_h = gl.zeros([BK, BV], gl.float32, layout=acc)
    if USE_INITIAL_STATE:
        b_h += gl.load(h0 + p_state, mask=m_state, other=0)
    for i_t in range(gl.cdiv(eos - bos, BT)):
        o_row = bos + i_t * BT + o_t
        m_tk = (o_row[:, None] < eos) & (o_k[None, :] < K)
        m_tv = (o_row[:, None] < eos) & (o_v[None, :] < V)
        # [BT, BK], [BT, BV]
        b_q = gl.load(q + (o_row[:, None] * H + i_h) * K + o_k[None, :], mask=m_tk, other=0)
        b_k = gl.load(k + (o_row[:, None] * H + i_h) * K + o_k[None, :], mask=m_tk, other=0)
        b_v = gl.load(v + (o_row[:, None] * H + i_h) * V + o_v[None, :], mask=m_tv, other=0)
        q_lhs = gl.convert_layout(b_q, lhs)
        # [BT, BT]
        b_A = mma_v2(q_lhs, gl.convert_layout(gl.permute(b_k, [1, 0]), rhs), gl.zeros([BT, BT], gl.float32, acc))
        # [BT, BV]
        b_o = mma_v2(q_lhs, gl.convert_layout(b_h.to(b_q.dtype), rhs), gl.zeros([BT, BV], gl.float32, acc))
        if USE_G:
            o_g = bos + i_t * BT + o_j
            # the chunk's log decays by key position; the sum over j <= i is the cumulative decay at row i
            b_g_step = gl.load(g + o_g * H + i_h, mask=o_g < eos, other=0).to(gl.float32)
            b_g = gl.sum(gl.where(m_causal, b_g_step[None, :], 0.0), axis=1)
            b_g_last = gl.sum(b_g_step, axis=0)
            b_A *= gl.exp(gl.where(m_causal, b_g[:, None] - gl.convert_layout(b_g, acc_cols)[None, :], float('-inf')))
            b_o *= gl.exp(b_g)[:, None]
            b_k_decay = gl.convert_layout(gl.exp(b_g_last - b_g), tile_rows)
            b_k_decayed = (b_k * b_k_decay[:, None]).to(b_k.dtype)
            b_h *= gl.exp(b_g_last)
        else:
            b_A = gl.where(m_causal, b_A, 0.0)
            b_k_decayed = b_k
        v_rhs = gl.convert_layout(b_v, rhs)
        b_o = mma_v2(gl.convert_layout(b_A.to(b_q.dtype), lhs), v_rhs, b_o)
        b_h = mma_v2(gl.convert_layout(gl.permute(b_k_decayed, [1, 0]), lhs), v_rhs, b_h)
        o_row_acc = bos + i_t * BT + o_i
        p_o = o + ((o_row_acc[:, None] * H + i_h) * NK + i_k) * V + o_state_v[None, :]
        gl.store(p_o, (b_o * scale).to(o.dtype.element_ty), mask=(o_row_acc[:, None] < eos) & (o_state_v[None, :] < V))
    if STORE_FINAL_STATE:
        gl.store(ht + p_state, b_h, mask=m_state)


def gluon_launch_config(K: int, V: int, dtype: torch.dtype, backward: bool) -> dict[str, Any]:
    """The Triton kernels' state blocks; the forward drops the dot precision, which 16-bit products do not have."""
    config = chunk_launch_config(K, V, dtype, backward)
    if not backward:
        del config['DOT_PRECISION']
    return config


GLUON_KERNELS = KernelSet(
    fwd=chunk_simple_gla_fwd_gluon_kernel,
    bwd_dq=CHUNK_KERNELS.bwd_dq,
    bwd_dkvg=CHUNK_KERNELS.bwd_dkvg,
    launch_config=gluon_launch_config,
)


class GluonHopperBackend(BaseBackend):
    """`chunk_simple_gla` with the forward in Gluon on Hopper, off unless `FLA_SIMPLE_GLA_GLUON=1`: port layer 1 is
    for parity, not speed (docs/decisions.md)."""

    backend_type = 'gluon_hopper'
    package_name = 'triton.experimental.gluon'
    env_var = ENV_VAR
    default_enable = False
    priority = 1

    @input_guard
    def chunk_simple_gla(self, q, k, v, g=None, scale=None, initial_state=None, output_final_state=False,
                         cu_seqlens=None):
        return simple_gla(GLUON_KERNELS, q, k, v, g, scale, initial_state, output_final_state, cu_seqlens)

    def chunk_simple_gla_verifier(self, q, k, v, g=None, scale=None, initial_state=None, output_final_state=False,
                                  cu_seqlens=None) -> tuple[bool, str | None]:
        if os.environ.get('TRITON_INTERPRET') == '1':
            return False, 'Gluon kernels do not run under TRITON_INTERPRET=1'
        if not all(isinstance(x, torch.Tensor) for x in (q, k, v)):
            return False, 'q, k and v must be tensors'
        if q.dtype not in DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
            return False, f'dtype {q.dtype}: the Gluon forward takes bfloat16 or float16 q, k and v of one dtype'
        if q.dim() != 4 or k.shape != q.shape or v.dim() != 4:
            return False, 'q, k [B, T, H, K] and v [B, T, H, V] expected'
        block_k = gluon_launch_config(q.shape[-1], v.shape[-1], q.dtype, False)['BK']
        if block_k < MIN_BLOCK_K:
            return False, f'K = {q.shape[-1]}: the Gluon forward needs a key block of at least {MIN_BLOCK_K} (K > 16)'
        target = nvidia_target(q)
        if target not in TARGETS:
            return False, f"{target or 'no CUDA GPU'}: the Gluon forward is written for {', '.join(TARGETS)} only"
        return True, None
