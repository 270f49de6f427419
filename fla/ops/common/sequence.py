# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Device helpers for kernels that walk one sequence per program, dense or packed (varlen)."""

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
