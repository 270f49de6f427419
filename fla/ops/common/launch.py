# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Host-side pieces of a launch shared by the ops: sizing a state block, and summing per-block partial results."""

from __future__ import annotations

import torch
import triton


def state_block(dim: int, cap: int) -> int:
    """Block covering `dim` (a power of two, at least 16, the smallest `tl.dot` operand), at most `cap`."""
    return min(max(16, triton.next_power_of_2(dim)), cap)


def reduce_partials(partials: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`[..., P, D] -> [..., D]` in `dtype`: the sum of the partials that P state blocks wrote; one is the result."""
    if partials.shape[-2] == 1:
        return partials.squeeze(-2).to(dtype)
    return partials.sum(-2).to(dtype)
