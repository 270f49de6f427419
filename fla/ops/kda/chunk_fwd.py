# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Forward of chunked KDA: chunk-local log decay, the WY form of each chunk, the state pass, the output.

Chunk-parallel kernels run one program per (chunk, value head), the forward's scores one per (16-row sub-chunk, value
head); the state pass runs one program per (sequence, value head, value block) and walks the chunks in order. Inside a
chunk the decay is per key channel, so the scores `sum_c x_ic y_jc e^(G_ic - G_jc)` are no plain matrix product: they
are taken in 16-row sub-chunks, as products through the log decay at a reference row r, `x_i e^(G_i - G_r)` by
`y_j e^(G_r - G_j)`. Through the boundary before a sub-chunk (the backward's blocks between sub-chunks) every exponent
is a difference `G_i - G_j` with `i` at or after `j`, or one of its two parts around r, so it is at most 0 whenever
the per-step log decay is (and with positive steps at most their sum over one chunk); masked entries are -inf before
the exponential. A factor that underflows belongs to a product no larger than itself. Through the middle row m of a
sub-chunk (the forward's whole block row of the sub-chunk, the backward's 16 x 16 blocks on the diagonal) the parts
`G_i - G_m` and `G_m - G_j` of rows inside the sub-chunk have either sign, so a key block goes through the middle row
only where every `|G_i - G_m|` of the sub-chunk (of all four, in the backward) is at most `DIAGONAL_SPAN` (always with
a safe gate, whose 8 steps from the middle row stay within 40); an earlier key's part is at most 0 as before, and a
factor of it that underflows belongs to a product below e^-23 of `|x_i| |y_j|`. With steeper decay the diagonal
blocks are taken one key column at a time, every exponent again a difference `G_i - G_j`, and the forward's blocks
before them through the boundary. The differences come from chunk-local cumulative sums, so each carries an absolute
error near `|G| * 2^-24`, about 2e-5 at the -320 a saturated safe gate reaches in one chunk.

Every product takes float32 operands (TF32 on tensor cores unless the inputs are float32 under torch's 'highest' matmul
precision) and accumulates in float32. What one kernel hands the next (W, U, the scores, `M`, the states, the
corrections `U - W S`) is stored in bf16 for bf16 inputs, halving the bytes the state pass and the output read, and in
float32 otherwise (`intermediate_dtype`); the log decay is always float32. Rounding them all to bf16 moved the worst
error of six bf16 cases of the KDA suite from 0.22 to 0.25 of its tolerance, the output's own bf16 rounding being most
of either (`docs/performance.md`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from fla.ops.common.launch import fitting_configs, state_block
from fla.ops.common.program import block_range, load_tile, program_place, state_block_offsets, store_tile
from fla.utils import autotune

# tokens per chunk, and per sub-chunk of the intra-chunk scores
CHUNK_SIZE = 64
SUB_CHUNK_SIZE = 16
# The largest |G_i - G_m| at which a diagonal block goes through tensor cores: e^64 and e^-64 are normal float32 and
# TF32 numbers, so neither factor overflows or flushes to zero, with room for |q| and |k| up to 1e10.
DIAGONAL_SPAN = tl.constexpr(64.0)
CHUNK_CONFIGS = [triton.Config({}, num_warps=w, num_stages=s) for w in (4, 8) for s in (2, 3)]
CHUNK_KEY = ['H', 'HV', 'K', 'V', 'BK', 'BV', 'DOT_PRECISION']
# The forward's scores run a program per 16-row sub-chunk, holding `[16, BK]` tiles and the chunk's keys `[BT, BK]`.
SUB_CHUNK_CONFIGS = [triton.Config({}, num_warps=w, num_stages=s) for w in (4, 8) for s in (1, 2)]
# The state passes walk the chunks in order: the next chunk's loads in flight (num_stages) hide their latency, and each
# stage holds another copy of the chunk's tiles, so which configs fit depends on the head size (`state_pass_shared`).
STATE_CONFIGS = [triton.Config({}, num_warps=w, num_stages=s) for w in (4, 8) for s in (1, 2, 3)]


@dataclass(frozen=True)
class ChunkLayout:
    """Where the chunks of a batch lie, and where their states are stored.

    Chunk `i_t` of sequence `n`, starting at row `bos`, owns the stored state `bos // BT + n + i_t`: distinct for every
    sequence without reading the lengths on the host, `B * T // BT + N` slots in all. Packed sequences add
    `chunk_rows`, the first row and the sequence end of the chunk in each slot; a slot no chunk owns has its first row
    at its end, so its program does nothing.
    """

    B: int
    T: int
    N: int
    cu_seqlens: torch.Tensor | None
    chunk_rows: torch.Tensor | None

    @property
    def num_states(self) -> int:
        return self.B * self.T // CHUNK_SIZE + self.N

    def grid(self, HV: int, *blocks: int) -> tuple[int, ...]:
        """Grid of a chunk-parallel kernel: `(slots, HV)` packed, `(chunks per sequence, B * HV)` dense."""
        if self.cu_seqlens is not None:
            return (self.num_states, HV, *blocks)
        return (triton.cdiv(self.T, CHUNK_SIZE), self.B * HV, *blocks)


def chunk_layout(B: int, T: int, cu_seqlens: torch.Tensor | None) -> ChunkLayout:
    """The layout of a batch; packed sequences get their slot table on the device, without a host sync."""
    if cu_seqlens is None:
        return ChunkLayout(B, T, B, None, None)
    N = cu_seqlens.numel() - 1
    bos, eos = cu_seqlens[:-1].long(), cu_seqlens[1:].long()
    first = bos // CHUNK_SIZE + torch.arange(N, device=bos.device)
    slots = torch.arange(T // CHUNK_SIZE + N, device=bos.device)
    seq = torch.searchsorted(first, slots, right=True) - 1
    rows = torch.stack((torch.minimum(bos[seq] + (slots - first[seq]) * CHUNK_SIZE, eos[seq]), eos[seq]), dim=1)
    return ChunkLayout(B, T, N, cu_seqlens, rows.contiguous())


def dot_precision(dtype: torch.dtype) -> str:
    """IEEE float32 dots for float32 inputs under torch's default 'highest' matmul precision, TF32 otherwise."""
    return 'ieee' if dtype == torch.float32 and torch.get_float32_matmul_precision() == 'highest' else 'tf32'


def intermediate_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of what the kernels hand each other for inputs of `dtype`: bf16 for bf16, float32 otherwise (float16's
    range is too narrow for the states of long sequences without decay)."""
    return torch.bfloat16 if dtype == torch.bfloat16 else torch.float32


@triton.jit
def chunk_place(chunk_rows, T, HV: tl.constexpr, BT: tl.constexpr, IS_VARLEN: tl.constexpr):
    """Return `(i_c, i_hv, row0, eos)` of a chunk-parallel program: the chunk's state slot, its value head, its first
    row and the end row of its sequence, as int64."""
    return chunk_place_at(tl.program_id(0).to(tl.int64), tl.program_id(1).to(tl.int64), chunk_rows, T, HV, BT,
                          IS_VARLEN)


@triton.jit
def chunk_place_at(i_t, i_nh, chunk_rows, T, HV: tl.constexpr, BT: tl.constexpr, IS_VARLEN: tl.constexpr):
    """`chunk_place` of the program at `(i_t, i_nh)` of `ChunkLayout.grid`, both int64."""
    if IS_VARLEN:
        i_c, i_hv = i_t, i_nh
        row0 = tl.load(chunk_rows + 2 * i_c)
        eos = tl.load(chunk_rows + 2 * i_c + 1)
    else:
        i_n, i_hv = i_nh // HV, i_nh % HV
        bos = i_n * T
        i_c = bos // BT + i_n + i_t
        row0 = bos + i_t * BT
        eos = bos + T
    return i_c, i_hv, row0, eos


@triton.jit
def chunk_place_rows(chunk_rows, T, H: tl.constexpr, HV: tl.constexpr, BT: tl.constexpr, IS_VARLEN: tl.constexpr):
    """Return `(i_c, i_hv, i_h, row0, eos, o_t, o_row, m_t, m_tt)` of a chunk-parallel program: `chunk_place`, its key
    head, its rows as offsets in the chunk and in the batch, their mask and the mask of a `[BT, BT]` score tile."""
    i_c, i_hv, row0, eos = chunk_place(chunk_rows, T, HV, BT, IS_VARLEN)
    o_t = tl.arange(0, BT)
    o_row = row0 + o_t
    m_t = o_row < eos
    return i_c, i_hv, i_hv // (HV // H), row0, eos, o_t, o_row, m_t, m_t[:, None] & (o_t < BT)[None, :]


@triton.jit
def first_state_slot(i_n, bos, BT: tl.constexpr):
    """State slot of the first chunk of sequence `i_n`, which starts at row `bos` (see `ChunkLayout`)."""
    return bos // BT + i_n


@triton.jit
def state_pass_place(cu_seqlens, T, H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
                     BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, IS_VARLEN: tl.constexpr):
    """Return `(i_hv, i_h, bos, eos, i_c0, o_k, m_k, o_v, m_v, o_state, m_state)` of a state-pass program: its value
    head and key head, its rows, the state slot of its first chunk, its key and value blocks, and the offsets and mask
    of its block of a `[N, HV, K, V]` state."""
    i_nh, i_hv, _, i_v, bos, eos = program_place(cu_seqlens, T, HV, IS_VARLEN)
    o_k, m_k = block_range(0, BK, K)
    o_v, m_v = block_range(i_v, BV, V)
    o_state, m_state = state_block_offsets(i_nh, o_k, o_v, m_k, m_v, K, V)
    return (i_hv, i_hv // (HV // H), bos, eos, first_state_slot(i_nh // HV, bos, BT), o_k, m_k, o_v, m_v, o_state,
            m_state)


@triton.jit
def state_pass_chunk(states, b_state, i_c0, i_t, i_hv, bos, eos, o_k, o_v, m_k, m_v, HV: tl.constexpr,
                     K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr):
    """Store `b_state` as the state before chunk `i_t` of a state-pass program and return the chunk's first row, its
    rows `o_row`, their mask and its `[BT, BK]` and `[BT, BV]` masks."""
    o_chunk, m_chunk = state_block_offsets((i_c0 + i_t) * HV + i_hv, o_k, o_v, m_k, m_v, K, V)
    tl.store(states + o_chunk, b_state.to(states.dtype.element_ty), mask=m_chunk)
    row0 = bos + i_t * BT
    o_row = row0 + tl.arange(0, BT)
    m_t = o_row < eos
    return row0, o_row, m_t, m_t[:, None] & m_k[None, :], m_t[:, None] & m_v[None, :]


@triton.jit
def load_row(x, row, i_h, H: tl.constexpr, D: tl.constexpr, o_d, m_d):
    """Entries `o_d` of head `i_h` at one row of a `[B * T, H, D]` tensor; masked entries read 0."""
    return tl.load(x + (row * H + i_h) * D + o_d, mask=m_d, other=0)


@triton.jit
def load_chunk_state(h, i_c, i_hv, row0, eos, o_k, o_v, m_k, m_v, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr):
    """[BK, BV] float32: a block of the state stored for slot `i_c`; zeros for a slot no chunk owns, which nothing
    writes."""
    o_chunk, m_state = state_block_offsets(i_c * HV + i_hv, o_k, o_v, m_k, m_v, K, V)
    return tl.load(h + o_chunk, mask=m_state & (row0 < eos), other=0).to(tl.float32)


@triton.jit
def chunk_last_log_decay(gk, row0, eos, i_hv, HV: tl.constexpr, K: tl.constexpr, o_k, m_k, BT: tl.constexpr):
    """[BK]: the cumulative log decay at the chunk's last row, the decay of the whole chunk; 0 for an empty slot."""
    return load_row(gk, tl.minimum(row0 + BT, eos) - 1, i_hv, HV, K, o_k, m_k & (row0 < eos))


@triton.jit
def sub_chunk_log_decay(gk, b_g, row0, eos, i_hv, HV: tl.constexpr, K: tl.constexpr, o_k, m_k, BT: tl.constexpr,
                        BC: tl.constexpr):
    """[BT, BK]: each row's cumulative log decay since the end of the previous sub-chunk, at most 0; 0 on padding."""
    o_t = tl.arange(0, BT)
    m_t = row0 + o_t < eos
    m_prev = (o_t >= BC) & m_t
    # [BT, BK]
    b_g_prev = load_tile(gk, row0 + (o_t // BC) * BC - 1, i_hv, HV, K, o_k, m_prev[:, None] & m_k[None, :])
    return tl.where(m_t[:, None] & m_k[None, :], b_g - b_g_prev, 0)


@triton.jit
def sub_chunk_midpoint_log_decay(gk, b_g, row0, eos, i_hv, HV: tl.constexpr, K: tl.constexpr, o_k, m_k,
                                 BT: tl.constexpr, BC: tl.constexpr):
    """[BT, BK] `G_i - G_m`, m the middle row of row i's sub-chunk (or the sequence's last row, where that comes
    first), 0 on padding; and whether every entry is within `DIAGONAL_SPAN`, so the diagonal blocks can be products."""
    o_t = tl.arange(0, BT)
    m_tk = (row0 + o_t < eos)[:, None] & m_k[None, :]
    o_rm = tl.minimum(row0 + (o_t // BC) * BC + BC // 2 - 1, eos - 1)
    # [BT, BK]
    b_gd = tl.where(m_tk, b_g - load_tile(gk, o_rm, i_hv, HV, K, o_k, m_tk), 0)
    return b_gd, tl.max(tl.max(tl.abs(b_gd), axis=1), axis=0) <= DIAGONAL_SPAN


@triton.jit
def key_block_tiles(k, gk, i_k, i_h, i_hv, row0, eos, o_row, m_t, H: tl.constexpr, HV: tl.constexpr,
                    K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr):
    """Return `(o_k, m_k, m_tk, b_k, b_g, b_gs, b_gd, diagonal_fits)`: key block `i_k` of a chunk as the intra-chunk
    passes read it, its offsets and masks, the `[BT, BK]` tiles of k and the cumulative log decay, and the log decays
    `sub_chunk_log_decay` and `sub_chunk_midpoint_log_decay` derive from it."""
    o_k, m_k = block_range(i_k, BK, K)
    m_tk = m_t[:, None] & m_k[None, :]
    b_k = load_tile(k, o_row, i_h, H, K, o_k, m_tk)
    b_g = load_tile(gk, o_row, i_hv, HV, K, o_k, m_tk)
    b_gs = sub_chunk_log_decay(gk, b_g, row0, eos, i_hv, HV, K, o_k, m_k, BT, BC)
    b_gd, diagonal_fits = sub_chunk_midpoint_log_decay(gk, b_g, row0, eos, i_hv, HV, K, o_k, m_k, BT, BC)
    return o_k, m_k, m_tk, b_k, b_g, b_gs, b_gd, diagonal_fits


@triton.jit
def diagonal_blocks(BT: tl.constexpr, BC: tl.constexpr):
    """[BT, BT] the entries at or below the diagonal of the diagonal sub-chunk blocks."""
    o_t = tl.arange(0, BT)
    return ((o_t // BC)[:, None] == (o_t // BC)[None, :]) & (o_t[:, None] >= o_t[None, :])


@triton.jit
def sub_chunk_fits(gk, i_hv, HV: tl.constexpr, K: tl.constexpr, row_s, eos, BC: tl.constexpr, BK: tl.constexpr):
    """Return `(diagonal_fits, row_m)`: whether every `|G_i - G_m|` of the sub-chunk from `row_s` is at most
    `DIAGONAL_SPAN`, over all key channels, and its middle row m (or the sequence's last row, where that comes first)."""
    o_c = tl.arange(0, BC)
    m_c = row_s + o_c < eos
    row_m = tl.minimum(row_s + BC // 2 - 1, eos - 1)
    # [BC, BK]
    b_span = tl.zeros([BC, BK], dtype=tl.float32)
    for i_k in range(tl.cdiv(K, BK)):
        o_k, m_k = block_range(i_k, BK, K)
        m_ck = m_c[:, None] & m_k[None, :]
        b_gm = load_row(gk, row_m, i_hv, HV, K, o_k, m_k & (row_s < eos))
        b_g = load_tile(gk, row_s + o_c, i_hv, HV, K, o_k, m_ck)
        b_span = tl.maximum(b_span, tl.where(m_ck, tl.abs(b_g - b_gm[None, :]), 0))
    return tl.max(tl.max(b_span, axis=1), axis=0) <= DIAGONAL_SPAN, row_m


@triton.jit
def decayed_scores(q, k, gk, i_k, i_h, i_hv, H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, row0, row_s, eos,
                   row_r, n_cols, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """Two [BC, BT]: `sum_c x_ic k_jc e^(G_ic - G_jc)` over key block `i_k` for x = q and x = k, i the rows of the
    sub-chunk from `row_s`, j the chunk's rows from `row0` before column `n_cols`; 0 from that column on.

    Both are one product through the reference row `row_r`, `x_i e^(G_i - G_r)` by `k_j e^(G_r - G_j)`, the keys read
    as a `[BT, BK]` tile. Entries with `j > i` before column `n_cols` are not 0 and, through the middle row, may not
    be finite: the caller masks them.
    """
    o_k, m_k = block_range(i_k, BK, K)
    o_c, o_t = tl.arange(0, BC), tl.arange(0, BT)
    m_ik = (row_s + o_c < eos)[:, None] & m_k[None, :]
    # [BC, BK] the sub-chunk's rows; [BK] G_r
    b_q = load_tile(q, row_s + o_c, i_h, H, K, o_k, m_ik)
    b_k = load_tile(k, row_s + o_c, i_h, H, K, o_k, m_ik)
    b_g = load_tile(gk, row_s + o_c, i_hv, HV, K, o_k, m_ik)
    b_gr = load_row(gk, row_r, i_hv, HV, K, o_k, m_k & (n_cols > 0))
    # [BC, BK] e^(G_i - G_r)
    b_up = tl.exp(tl.where(m_ik & (n_cols > 0), b_g - b_gr[None, :], float('-inf')))
    # [BK, BT] k_j e^(G_r - G_j)
    m_jk = ((o_t < n_cols) & (row0 + o_t < eos))[:, None] & m_k[None, :]
    b_kj = load_tile(k, row0 + o_t, i_h, H, K, o_k, m_jk)
    b_gj = load_tile(gk, row0 + o_t, i_hv, HV, K, o_k, m_jk)
    b_kr = tl.trans(b_kj * tl.exp(tl.where(m_jk, b_gr[None, :] - b_gj, float('-inf'))))
    return (tl.dot(b_q * b_up, b_kr, input_precision=DOT_PRECISION),
            tl.dot(b_k * b_up, b_kr, input_precision=DOT_PRECISION))


@triton.jit
def diagonal_columns(q, k, gk, i_k, i_h, i_hv, H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, i_s, row_s, eos,
                     BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr):
    """Two [BC, BT]: the diagonal 16 x 16 block of both scores of `decayed_scores` for the sub-chunk from `row_s`,
    sub-chunk `i_s` of its chunk, over key block `i_k`, one key column at a time, every exponent a difference
    `G_i - G_j` with `j <= i`; 0 in the other columns and above the diagonal."""
    o_k, m_k = block_range(i_k, BK, K)
    o_c, o_t = tl.arange(0, BC), tl.arange(0, BT)
    m_ik = (row_s + o_c < eos)[:, None] & m_k[None, :]
    # [BC, BK]
    b_q = load_tile(q, row_s + o_c, i_h, H, K, o_k, m_ik).to(tl.float32)
    b_k = load_tile(k, row_s + o_c, i_h, H, K, o_k, m_ik).to(tl.float32)
    b_g = load_tile(gk, row_s + o_c, i_hv, HV, K, o_k, m_ik)
    b_sq = tl.zeros([BC, BT], dtype=tl.float32)
    b_sk = tl.zeros([BC, BT], dtype=tl.float32)
    for j in range(BC):
        # [BK] row j of the sub-chunk; [BC, BK] k_j e^(G_i - G_j) for the rows i at or after it
        m_kj = m_k & (row_s + j < eos)
        b_kj = load_row(k, row_s + j, i_h, H, K, o_k, m_kj).to(tl.float32)
        b_gj = load_row(gk, row_s + j, i_hv, HV, K, o_k, m_kj)
        b_kj = b_kj[None, :] * tl.exp(tl.where((o_c >= j)[:, None] & m_ik, b_g - b_gj[None, :], float('-inf')))
        m_col = (o_t == i_s * BC + j)[None, :]
        b_sq += tl.where(m_col, tl.sum(b_q * b_kj, axis=1)[:, None], 0)
        b_sk += tl.where(m_col, tl.sum(b_k * b_kj, axis=1)[:, None], 0)
    return b_sq, b_sk


@triton.jit
def precise_dot(b_a, b_b, DOT_PRECISION: tl.constexpr):
    """`a @ b` to about float32 accuracy: three TF32 products where the kernel's dots are TF32, else IEEE."""
    if DOT_PRECISION == 'tf32':  # noqa: SIM108
        b_c = tl.dot(b_a, b_b, input_precision='tf32x3')
    else:
        b_c = tl.dot(b_a, b_b, input_precision='ieee')
    return b_c


@triton.jit
def unit_lower_inverse(a, row0, eos, i_hv, HV: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
                       DOT_PRECISION: tl.constexpr):
    """[BT, BT]: `(I + A)^-1` of a chunk's strictly lower triangular `A`, stored float32 `[B * T, HV, BT]` at `a` (rows
    from `row0`; those from `eos` on read as 0), by its four diagonal blocks of 16 rows, in products only.

    `P`, the diagonal blocks of A on one tile, is nilpotent (`P^16 = 0`), so the block-diagonal
    `D = (I + P)^-1 = (I - P)(I + P^2)(I + P^4)(I + P^8)`: three squarings and three products on tensor cores, where
    forward substitution took 15 dependent steps of reductions. With `L` the blocks below the diagonal,
    `(I + A)^-1 = (I + D L)^-1 D`, and `N = D L` is zero from its fourth power on, so `(I + N)^-1 = (I - N)(I + N^2)`.
    """
    tl.static_assert(BT // BC == 4 and BC == 16)
    o_t = tl.arange(0, BT)
    o_row = row0 + o_t
    m_block = (o_t // BC)[:, None] == (o_t // BC)[None, :]
    b_I = tl.where(o_t[:, None] == o_t[None, :], 1.0, 0.0)
    b_A = load_tile(a, o_row, i_hv, HV, BT, o_t, (o_row < eos)[:, None] & (o_t < BT)[None, :])
    b_P = tl.where(m_block, b_A, 0)
    b_D = b_I - b_P
    for _ in tl.static_range(3):
        # P^2, P^4, P^8, each factor of D in turn
        b_P = precise_dot(b_P, b_P, DOT_PRECISION)
        b_D = precise_dot(b_D, b_I + b_P, DOT_PRECISION)
    b_N = precise_dot(b_D, tl.where(m_block, 0, b_A), DOT_PRECISION)
    b_N_inverse = precise_dot(b_I - b_N, b_I + precise_dot(b_N, b_N, DOT_PRECISION), DOT_PRECISION)
    return precise_dot(b_N_inverse, b_D, DOT_PRECISION)


@autotune(CHUNK_CONFIGS, key=['HV', 'K', 'BK'])
@triton.jit(do_not_specialize=['T'])
def chunk_kda_fwd_kernel_log_decay(
    g, gk, chunk_rows, T,
    HV: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, IS_VARLEN: tl.constexpr,
):
    i_c, i_hv, row0, eos = chunk_place(chunk_rows, T, HV, BT, IS_VARLEN)
    o_row = row0 + tl.arange(0, BT)
    m_t = o_row < eos
    for i_k in range(tl.cdiv(K, BK)):
        o_k, m_k = block_range(i_k, BK, K)
        m_tk = m_t[:, None] & m_k[None, :]
        # [BT, BK]
        b_g = tl.cumsum(load_tile(g, o_row, i_hv, HV, K, o_k, m_tk).to(tl.float32), axis=0)
        tl.store(gk + (o_row[:, None] * HV + i_hv) * K + o_k[None, :], b_g, mask=m_tk)


@autotune(SUB_CHUNK_CONFIGS, key=['H', 'HV', 'K', 'BK', 'DOT_PRECISION'])
@triton.jit(do_not_specialize=['T'])
def chunk_kda_fwd_kernel_intra(
    q, k, gk, beta, aqk, akk, chunk_rows, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr,
    IS_VARLEN: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    # one program per sub-chunk of a chunk: its block row of both score matrices
    i_p = tl.program_id(0).to(tl.int64)
    i_c, i_hv, row0, eos = chunk_place_at(i_p // (BT // BC), tl.program_id(1).to(tl.int64), chunk_rows, T, HV, BT,
                                          IS_VARLEN)
    i_s = i_p % (BT // BC)
    i_h = i_hv // (HV // H)
    o_c, o_t = tl.arange(0, BC), tl.arange(0, BT)
    row_s = row0 + i_s * BC
    o_row = row_s + o_c
    m_c = o_row < eos

    diagonal_fits, row_m = sub_chunk_fits(gk, i_hv, HV, K, row_s, eos, BC, BK)
    # [BC, BT]
    b_Aqk = tl.zeros([BC, BT], dtype=tl.float32)
    b_Akk = tl.zeros([BC, BT], dtype=tl.float32)
    if diagonal_fits:
        # the whole block row through the middle row
        n_cols = tl.where(row_s < eos, (i_s + 1) * BC, 0)
        for i_k in range(tl.cdiv(K, BK)):
            b_sq, b_sk = decayed_scores(q, k, gk, i_k, i_h, i_hv, H, HV, K, row0, row_s, eos, row_m, n_cols, BT, BC,
                                        BK, DOT_PRECISION)
            b_Aqk += b_sq
            b_Akk += b_sk
    else:
        # the blocks before the diagonal through the row before the sub-chunk, the diagonal block by columns
        n_cols = tl.where(row_s < eos, i_s * BC, 0)
        for i_k in range(tl.cdiv(K, BK)):
            b_sq, b_sk = decayed_scores(q, k, gk, i_k, i_h, i_hv, H, HV, K, row0, row_s, eos, row_s - 1, n_cols, BT,
                                        BC, BK, DOT_PRECISION)
            b_Aqk += b_sq
            b_Akk += b_sk
        for i_k in range(tl.cdiv(K, BK)):
            b_cq, b_ck = diagonal_columns(q, k, gk, i_k, i_h, i_hv, H, HV, K, i_s, row_s, eos, BT, BC, BK)
            b_Aqk += b_cq
            b_Akk += b_ck
    # [BC]
    b_beta = tl.load(beta + o_row * HV + i_hv, mask=m_c, other=0)
    m_ct = m_c[:, None] & (o_t < BT)[None, :]
    # [BC, BT] the chunk's column of each entry against its row's
    o_ij = o_t[None, :] - (i_s * BC + o_c)[:, None]
    store_tile(aqk, o_row, i_hv, HV, BT, o_t, tl.where(o_ij <= 0, b_Aqk, 0), m_ct)
    # A = diag(beta) strictly-lower(Akk), which the WY kernel inverts
    store_tile(akk, o_row, i_hv, HV, BT, o_t, tl.where(o_ij < 0, b_beta[:, None] * b_Akk, 0), m_ct)


@triton.jit
def store_wy(b_Mb, k, v, gk, w, u, o_row, m_t, i_h, i_hv, H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr,
             V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """Store a chunk's W = Mb (k e^G) and U = Mb v, from `b_Mb` [BT, BT] = M diag(beta)."""
    for i_k in range(tl.cdiv(K, BK)):
        o_k, m_k = block_range(i_k, BK, K)
        m_tk = m_t[:, None] & m_k[None, :]
        b_k = load_tile(k, o_row, i_h, H, K, o_k, m_tk)
        b_g = load_tile(gk, o_row, i_hv, HV, K, o_k, m_tk)
        # [BT, BK]
        b_w = tl.dot(b_Mb, b_k * tl.exp(b_g), input_precision=DOT_PRECISION)
        store_tile(w, o_row, i_hv, HV, K, o_k, b_w, m_tk)
    for i_v in range(tl.cdiv(V, BV)):
        o_v, m_v = block_range(i_v, BV, V)
        m_tv = m_t[:, None] & m_v[None, :]
        # [BT, BV]
        b_v = load_tile(v, o_row, i_hv, HV, V, o_v, m_tv)
        b_u = tl.dot(b_Mb, b_v.to(tl.float32), input_precision=DOT_PRECISION)
        store_tile(u, o_row, i_hv, HV, V, o_v, b_u, m_tv)


@autotune(CHUNK_CONFIGS, key=CHUNK_KEY)
@triton.jit(do_not_specialize=['T'])
def chunk_kda_fwd_kernel_wy(
    k, v, gk, beta, akk, akk_inv, w, u, chunk_rows, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
    BK: tl.constexpr, BV: tl.constexpr, INVERT: tl.constexpr, STORE_INVERSE: tl.constexpr, IS_VARLEN: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    i_c, i_hv, i_h, row0, eos, o_t, o_row, m_t, m_tt = chunk_place_rows(chunk_rows, T, H, HV, BT, IS_VARLEN)
    # [BT]
    b_beta = tl.load(beta + o_row * HV + i_hv, mask=m_t, other=0)
    if INVERT:
        # [BT, BT] M = (I + A)^-1 of the A the intra-chunk kernel stored, kept at `akk_inv` if asked
        b_M = unit_lower_inverse(akk, row0, eos, i_hv, HV, BT, BC, DOT_PRECISION)
        if STORE_INVERSE:
            store_tile(akk_inv, o_row, i_hv, HV, BT, o_t, b_M, m_tt)
    else:
        # [BT, BT] M, as the forward stored it
        b_M = load_tile(akk_inv, o_row, i_hv, HV, BT, o_t, m_tt).to(tl.float32)
    store_wy(b_M * b_beta[None, :], k, v, gk, w, u, o_row, m_t, i_h, i_hv, H, HV, K, V, BK, BV, DOT_PRECISION)


def state_pass_shared(key_tiles: tuple[str, ...], value_tiles: tuple[str, ...], scores: bool) -> Callable:
    """A shared-memory estimate of a state pass, for `fitting_configs`: per stage the chunk's `[BT, BK]` tiles of the
    named key-side tensors (float32 when not an argument) and `[BT, BV]` tiles of the value-side ones, and a float32
    `[BT, BT]` score tile if `scores`; then the float32 state `[BK, BV]`. Laid against what Triton allocates for
    sm_90 and sm_100 (`mrbot compile`) at K = V = 128 and 256, it counts high, by up to a third."""

    def bytes_of(name: str, args: dict[str, Any]) -> int:
        tensor = args.get(name)
        return tensor.element_size() if isinstance(tensor, torch.Tensor) else 4

    def estimate(config: triton.Config, args: dict[str, Any]) -> int:
        BT, BK, BV = args['BT'], args['BK'], args['BV']
        stage = (BT * BK * sum(bytes_of(name, args) for name in key_tiles)
                 + BT * BV * sum(bytes_of(name, args) for name in value_tiles) + (BT * BT * 4 if scores else 0))
        return config.num_stages * stage + BK * BV * 4

    return estimate


@autotune(STATE_CONFIGS, key=CHUNK_KEY,
          prune_configs_by={'early_config_prune': fitting_configs(state_pass_shared(('k', 'w', 'gk'), ('u',), False))})
@triton.jit(do_not_specialize=['T'])
def chunk_kda_fwd_kernel_h(
    k, w, u, gk, v_new, h, h0, ht, cu_seqlens, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, STORE_FINAL_STATE: tl.constexpr, IS_VARLEN: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    i_hv, i_h, bos, eos, i_c0, o_k, m_k, o_v, m_v, o_state, m_state = state_pass_place(
        cu_seqlens, T, H, HV, K, V, BT, BK, BV, IS_VARLEN)

    # [BK, BV]
    b_h = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL_STATE:
        b_h += tl.load(h0 + o_state, mask=m_state, other=0).to(tl.float32)
    for i_t in range(tl.cdiv(eos - bos, BT)):
        row0, o_row, m_t, m_tk, m_tv = state_pass_chunk(h, b_h, i_c0, i_t, i_hv, bos, eos, o_k, o_v, m_k, m_v, HV, K,
                                                        V, BT)
        # [BT, BK]
        b_w = load_tile(w, o_row, i_hv, HV, K, o_k, m_tk).to(tl.float32)
        b_k = load_tile(k, o_row, i_h, H, K, o_k, m_tk)
        b_g = load_tile(gk, o_row, i_hv, HV, K, o_k, m_tk)
        # [BT, BV] the delta rule's corrections, U - W S
        b_v_new = load_tile(u, o_row, i_hv, HV, V, o_v, m_tv).to(tl.float32)
        b_v_new -= tl.dot(b_w, b_h, input_precision=DOT_PRECISION)
        store_tile(v_new, o_row, i_hv, HV, V, o_v, b_v_new, m_tv)
        # [BK]
        b_g_last = chunk_last_log_decay(gk, row0, eos, i_hv, HV, K, o_k, m_k, BT)
        # [BT, BK] k_i e^(G_last - G_i)
        b_k_decayed = b_k * tl.exp(tl.where(m_tk, b_g_last[None, :] - b_g, float('-inf')))
        b_h *= tl.exp(b_g_last)[:, None]
        b_h += tl.dot(tl.trans(b_k_decayed), b_v_new, input_precision=DOT_PRECISION)
    if STORE_FINAL_STATE:
        tl.store(ht + o_state, b_h, mask=m_state)


@autotune(CHUNK_CONFIGS, key=CHUNK_KEY)
@triton.jit(do_not_specialize=['T'])
def chunk_kda_fwd_kernel_o(
    q, v_new, gk, aqk, h, o, chunk_rows, scale, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, IS_VARLEN: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    i_c, i_hv, i_h, row0, eos, o_t, o_row, m_t, m_tt = chunk_place_rows(chunk_rows, T, H, HV, BT, IS_VARLEN)
    i_v = tl.program_id(2)
    o_v, m_v = block_range(i_v, BV, V)
    m_tv = m_t[:, None] & m_v[None, :]

    # [BT, BV]
    b_o = tl.zeros([BT, BV], dtype=tl.float32)
    for i_k in range(tl.cdiv(K, BK)):
        o_k, m_k = block_range(i_k, BK, K)
        m_tk = m_t[:, None] & m_k[None, :]
        # [BT, BK]
        b_q = load_tile(q, o_row, i_h, H, K, o_k, m_tk)
        b_g = load_tile(gk, o_row, i_hv, HV, K, o_k, m_tk)
        # [BK, BV] the state before the chunk
        b_h = load_chunk_state(h, i_c, i_hv, row0, eos, o_k, o_v, m_k, m_v, HV, K, V)
        b_o += tl.dot(b_q * tl.exp(b_g), b_h, input_precision=DOT_PRECISION)
    # [BT, BT]
    b_A = load_tile(aqk, o_row, i_hv, HV, BT, o_t, m_tt).to(tl.float32)
    b_v_new = load_tile(v_new, o_row, i_hv, HV, V, o_v, m_tv).to(tl.float32)
    b_o += tl.dot(b_A, b_v_new, input_precision=DOT_PRECISION)
    p_o = o + (o_row[:, None] * HV + i_hv) * V + o_v[None, :]
    tl.store(p_o, (b_o * scale).to(p_o.dtype.element_ty), mask=m_tv)


def _smallest_block(precision: str) -> int:
    """The narrowest key or value block a kernel's dots get: 16, the smallest `tl.dot` operand, but 32 for TF32, which
    Triton 3.6 miscompiles for sm_90 with a 16-wide operand (compute-sanitizer: shared-memory reads past the block's
    allocation, then wrong outputs or an illegal address; H200, 2026-12-03)."""
    return 32 if precision == 'tf32' else 16


def key_blocks(K: int, dtype: torch.dtype) -> dict[str, Any]:
    """The key block of the chunk-parallel kernels for inputs of `dtype`, at most 64 wide, and their dots' precision."""
    precision = dot_precision(dtype)
    return {'BK': state_block(K, 64, _smallest_block(precision)), 'DOT_PRECISION': precision}


def chunk_blocks(K: int, V: int, dtype: torch.dtype) -> dict[str, Any]:
    """`key_blocks` and the value block, at most 64 wide."""
    blocks = key_blocks(K, dtype)
    return {**blocks, 'BV': state_block(V, 64, _smallest_block(blocks['DOT_PRECISION']))}


def output_blocks(K: int, V: int, dtype: torch.dtype) -> dict[str, Any]:
    """The chunk-parallel blocks with value blocks up to 128 wide: the output kernel reads a chunk's q and log decay once
    per value block."""
    blocks = chunk_blocks(K, V, dtype)
    return {**blocks, 'BV': state_block(V, 128, _smallest_block(blocks['DOT_PRECISION']))}


def state_pass_blocks(K: int, V: int, dtype: torch.dtype) -> dict[str, Any]:
    """The whole key dimension per program of the state passes, a value block keeping the state at 8192 values, and
    the dots' precision, for inputs of `dtype`."""
    precision = dot_precision(dtype)
    smallest = _smallest_block(precision)
    BK = state_block(K, 256, smallest)
    return {'BK': BK, 'BV': state_block(V, max(smallest, 8192 // BK), smallest), 'DOT_PRECISION': precision}


def chunk_kda_fwd_log_decay(g: torch.Tensor, layout: ChunkLayout) -> torch.Tensor:
    """The cumulative log decay from each chunk's start, float32 `[B, T, HV, K]`."""
    HV, K = g.shape[2], g.shape[3]
    gk = torch.empty_like(g, dtype=torch.float32)
    chunk_kda_fwd_kernel_log_decay[layout.grid(HV)](
        g, gk, layout.chunk_rows, layout.T,
        HV=HV, K=K, BT=CHUNK_SIZE, BK=state_block(K, 64), IS_VARLEN=layout.cu_seqlens is not None,
    )
    return gk


def chunk_kda_fwd_intra(
    q: torch.Tensor, k: torch.Tensor, gk: torch.Tensor, beta: torch.Tensor, layout: ChunkLayout,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The decayed causal scores `Aqk`, in `intermediate_dtype`, and `A = diag(beta) strictly-lower(Akk)`, float32, both
    `[B, T, HV, BT]`, row i of its chunk's matrix at token i."""
    B, T, H, K = q.shape
    HV = gk.shape[2]
    aqk = q.new_empty(B, T, HV, CHUNK_SIZE, dtype=intermediate_dtype(q.dtype))
    akk = q.new_empty(B, T, HV, CHUNK_SIZE, dtype=torch.float32)
    grid = layout.grid(HV)
    chunk_kda_fwd_kernel_intra[(grid[0] * (CHUNK_SIZE // SUB_CHUNK_SIZE), *grid[1:])](
        q, k, gk, beta, aqk, akk, layout.chunk_rows, T,
        H=H, HV=HV, K=K, BT=CHUNK_SIZE, BC=SUB_CHUNK_SIZE, IS_VARLEN=layout.cu_seqlens is not None,
        **key_blocks(K, q.dtype),
    )
    return aqk, akk


def _wy(k: torch.Tensor, v: torch.Tensor, gk: torch.Tensor, beta: torch.Tensor, akk: torch.Tensor | None,
        akk_inv: torch.Tensor | None, layout: ChunkLayout) -> tuple[torch.Tensor, torch.Tensor]:
    B, T, H, K = k.shape
    HV, V = v.shape[2], v.shape[3]
    w = k.new_empty(B, T, HV, K, dtype=intermediate_dtype(k.dtype))
    u = torch.empty_like(v, dtype=w.dtype)
    chunk_kda_fwd_kernel_wy[layout.grid(HV)](
        k, v, gk, beta, akk, akk_inv, w, u, layout.chunk_rows, T,
        H=H, HV=HV, K=K, V=V, BT=CHUNK_SIZE, BC=SUB_CHUNK_SIZE, INVERT=akk is not None,
        STORE_INVERSE=akk is not None and akk_inv is not None, IS_VARLEN=layout.cu_seqlens is not None,
        **chunk_blocks(K, V, k.dtype),
    )
    return w, u


def chunk_kda_fwd_inverse_wy(
    k: torch.Tensor, v: torch.Tensor, gk: torch.Tensor, beta: torch.Tensor, akk: torch.Tensor, layout: ChunkLayout,
    store_inverse: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """W and U of the WY form, in `intermediate_dtype`, through `M = (I + A)^-1` of the A that `chunk_kda_fwd_intra`
    stored; and, if asked, M itself, in `intermediate_dtype`."""
    akk_inv = torch.empty_like(akk, dtype=intermediate_dtype(k.dtype)) if store_inverse else None
    w, u = _wy(k, v, gk, beta, akk, akk_inv, layout)
    return w, u, akk_inv


def chunk_kda_fwd_wy(
    k: torch.Tensor, v: torch.Tensor, gk: torch.Tensor, beta: torch.Tensor, akk_inv: torch.Tensor, layout: ChunkLayout,
) -> tuple[torch.Tensor, torch.Tensor]:
    """W and U of the WY form, in `intermediate_dtype`, from the M that `chunk_kda_fwd_inverse_wy` stored."""
    return _wy(k, v, gk, beta, None, akk_inv, layout)


def chunk_kda_fwd_h(
    k: torch.Tensor, w: torch.Tensor, u: torch.Tensor, gk: torch.Tensor, initial_state: torch.Tensor | None,
    output_final_state: bool, layout: ChunkLayout,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The state before every chunk `[slots, HV, K, V]` and the corrections `U - W S`, both in the dtype of U; the
    float32 final states."""
    B, T, H, K = k.shape
    HV, V = u.shape[2], u.shape[3]
    blocks = state_pass_blocks(K, V, k.dtype)
    h = k.new_empty(layout.num_states, HV, K, V, dtype=u.dtype)
    v_new = torch.empty_like(u)
    final_state = k.new_empty(layout.N, HV, K, V, dtype=torch.float32) if output_final_state else None
    chunk_kda_fwd_kernel_h[(layout.N * HV, triton.cdiv(V, blocks['BV']))](
        k, w, u, gk, v_new, h, initial_state, final_state, layout.cu_seqlens, T,
        H=H, HV=HV, K=K, V=V, BT=CHUNK_SIZE, USE_INITIAL_STATE=initial_state is not None,
        STORE_FINAL_STATE=output_final_state, IS_VARLEN=layout.cu_seqlens is not None, **blocks,
    )
    return h, v_new, final_state


def chunk_kda_fwd_o(
    q: torch.Tensor, v_new: torch.Tensor, gk: torch.Tensor, aqk: torch.Tensor, h: torch.Tensor, scale: float,
    layout: ChunkLayout,
) -> torch.Tensor:
    B, T, H, K = q.shape
    HV, V = v_new.shape[2], v_new.shape[3]
    blocks = output_blocks(K, V, q.dtype)
    o = torch.empty_like(v_new, dtype=q.dtype)
    chunk_kda_fwd_kernel_o[layout.grid(HV, triton.cdiv(V, blocks['BV']))](
        q, v_new, gk, aqk, h, o, layout.chunk_rows, scale, T,
        H=H, HV=HV, K=K, V=V, BT=CHUNK_SIZE, IS_VARLEN=layout.cu_seqlens is not None, **blocks,
    )
    return o


@dataclass(frozen=True)
class ForwardKept:
    """What the forward keeps for the backward: the cumulative log decay, the decayed scores `Aqk` and `M`, so that
    the backward recomputes only W, U and the states (`[B, T, HV, K]` float32, twice `[B, T, HV, BT]` in
    `intermediate_dtype`)."""

    gk: torch.Tensor
    aqk: torch.Tensor
    akk_inv: torch.Tensor


def chunk_kda_fwd(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, scale: float,
    initial_state: torch.Tensor | None, output_final_state: bool, layout: ChunkLayout, keep: bool,
) -> tuple[torch.Tensor, torch.Tensor | None, ForwardKept | None]:
    """The output, the final states, and with `keep` what the backward reads."""
    gk = chunk_kda_fwd_log_decay(g, layout)
    aqk, akk = chunk_kda_fwd_intra(q, k, gk, beta, layout)
    w, u, akk_inv = chunk_kda_fwd_inverse_wy(k, v, gk, beta, akk, layout, store_inverse=keep)
    h, v_new, final_state = chunk_kda_fwd_h(k, w, u, gk, initial_state, output_final_state, layout)
    o = chunk_kda_fwd_o(q, v_new, gk, aqk, h, scale, layout)
    return o, final_state, ForwardKept(gk, aqk, akk_inv) if keep else None
