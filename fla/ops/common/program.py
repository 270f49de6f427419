# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Device helpers for kernels whose programs each own one state block of one head of one sequence, dense or packed.

The grid is `(N * H, NV, NK)`: sequence and head on the first axis (the only one with room for large batches), then
the value block and the key block of the state.
"""

import triton
import triton.language as tl


@triton.jit
def sequence_bounds(cu_seqlens, i_n, T, IS_VARLEN: tl.constexpr):
    """Return the first row and one past the last row of sequence `i_n`, as int64 row indices into `[B * T]`."""
    if IS_VARLEN:
        bos = tl.load(cu_seqlens + i_n).to(tl.int64)
        eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
    else:
        bos = i_n.to(tl.int64) * T
        eos = bos + T
    return bos, eos


@triton.jit
def program_place(cu_seqlens, T, H: tl.constexpr, IS_VARLEN: tl.constexpr):
    """Return `(i_nh, i_h, i_k, i_v, bos, eos)`: the sequence-head index (int64), head, state block and row range."""
    i_nh, i_v, i_k = tl.program_id(0).to(tl.int64), tl.program_id(1), tl.program_id(2)
    bos, eos = sequence_bounds(cu_seqlens, i_nh // H, T, IS_VARLEN)
    return i_nh, i_nh % H, i_k, i_v, bos, eos


@triton.jit
def block_range(i_block, BLOCK: tl.constexpr, DIM: tl.constexpr):
    """Offsets of block `i_block` along a dimension of size `DIM`, and the mask of those inside it."""
    o_block = i_block * BLOCK + tl.arange(0, BLOCK)
    return o_block, o_block < DIM


@triton.jit
def state_block_offsets(i_nh, o_k, o_v, m_k, m_v, K: tl.constexpr, V: tl.constexpr):
    """Offsets and mask of a `[BK, BV]` block of the state of sequence-head `i_nh` in a `[N, H, K, V]` tensor."""
    return i_nh * K * V + o_k[:, None] * V + o_v[None, :], m_k[:, None] & m_v[None, :]


@triton.jit
def state_program(cu_seqlens, T, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                  IS_VARLEN: tl.constexpr):
    """The state program's place and blocks: `(i_h, i_k, i_v, bos, eos, o_k, m_k, o_v, m_v, o_state, m_state)`."""
    i_nh, i_h, i_k, i_v, bos, eos = program_place(cu_seqlens, T, H, IS_VARLEN)
    o_k, m_k = block_range(i_k, BK, K)
    o_v, m_v = block_range(i_v, BV, V)
    o_state, m_state = state_block_offsets(i_nh, o_k, o_v, m_k, m_v, K, V)
    return i_h, i_k, i_v, bos, eos, o_k, m_k, o_v, m_v, o_state, m_state


@triton.jit
def initial_state_block(h0, o_state, m_state, BK: tl.constexpr, BV: tl.constexpr, USE_INITIAL_STATE: tl.constexpr):
    """[BK, BV] float32: the program's block of the initial state at `h0`, or zeros without one."""
    b_h = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL_STATE:
        b_h += tl.load(h0 + o_state, mask=m_state, other=0).to(tl.float32)
    return b_h


@triton.jit
def final_state_gradient_block(dht, ht, o_state, m_state, BK: tl.constexpr, BV: tl.constexpr,
                               USE_FINAL_STATE_GRADIENT: tl.constexpr, USE_G: tl.constexpr):
    """The program's `[BK, BV]` float32 block of the final state's gradient (zeros without one), and the scalar log
    decay's gradient it carries to every position of the sequence: the sum of `dht * ht` over the block."""
    b_dh = tl.zeros([BK, BV], dtype=tl.float32)
    b_dg_carry = tl.zeros([], dtype=tl.float32)
    if USE_FINAL_STATE_GRADIENT:
        b_dh += tl.load(dht + o_state, mask=m_state, other=0).to(tl.float32)
        if USE_G:
            b_dg_carry += tl.sum(tl.sum(b_dh * tl.load(ht + o_state, mask=m_state, other=0).to(tl.float32), axis=1), axis=0)
    return b_dh, b_dg_carry


@triton.jit
def chunk_rows(bos, eos, i_t, o_t, m_k, m_v, BT: tl.constexpr):
    """Rows of chunk `i_t` of the sequence `[bos, eos)`, their mask, and the chunk's `[BT, BK]` and `[BT, BV]` masks."""
    o_row = bos + i_t * BT + o_t
    m_t = o_row < eos
    return o_row, m_t, m_t[:, None] & m_k[None, :], m_t[:, None] & m_v[None, :]


@triton.jit
def load_tile(x, o_row, i_h, H: tl.constexpr, D: tl.constexpr, o_d, mask):
    """Rows `o_row` of head `i_h`, columns `o_d`, of a `[B * T, H, D]` tensor; masked entries read 0."""
    return tl.load(x + (o_row[:, None] * H + i_h) * D + o_d[None, :], mask=mask, other=0)


@triton.jit
def store_tile(x, o_row, i_h, H: tl.constexpr, D: tl.constexpr, o_d, value, mask):
    """Store `value` at rows `o_row` of head `i_h`, columns `o_d`, of a `[B * T, H, D]` tensor, in its dtype."""
    p_x = x + (o_row[:, None] * H + i_h) * D + o_d[None, :]
    tl.store(p_x, value.to(p_x.dtype.element_ty), mask=mask)


@triton.jit
def load_key_value_tiles(k, v, o_row, i_h, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, o_k, o_v, m_tk, m_tv):
    """Rows `o_row` of head `i_h` of the keys `[B * T, H, K]` at columns `o_k` and the values `[B * T, H, V]` at `o_v`."""
    return load_tile(k, o_row, i_h, H, K, o_k, m_tk), load_tile(v, o_row, i_h, H, V, o_v, m_tv)
