# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Simple gated linear attention: one scalar log-space decay per head and step."""

from fla.ops.simple_gla.chunk import chunk_simple_gla
from fla.ops.simple_gla.fused_recurrent import fused_recurrent_simple_gla

__all__ = ['chunk_simple_gla', 'fused_recurrent_simple_gla']
