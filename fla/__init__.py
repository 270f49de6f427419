# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""fla: linear-attention kernels in Triton, each with a pure-PyTorch reference."""

from fla.ops import chunk_simple_gla, fused_recurrent_simple_gla

__all__ = ['chunk_simple_gla', 'fused_recurrent_simple_gla']
