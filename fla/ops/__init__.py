# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The kernels: one folder per op, shared kernels in `common`, the dispatch system in `backends`."""

from fla.ops.kda import chunk_kda, fused_recurrent_kda
from fla.ops.simple_gla import chunk_simple_gla, fused_recurrent_simple_gla

__all__ = ['chunk_kda', 'chunk_simple_gla', 'fused_recurrent_kda', 'fused_recurrent_simple_gla']
