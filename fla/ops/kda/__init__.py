# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""KDA (Kimi Delta Attention): the delta rule with a log decay per key channel, three gate modes, grouped values."""

from fla.ops.kda.chunk import chunk_kda
from fla.ops.kda.fused_recurrent import fused_recurrent_kda

__all__ = ['chunk_kda', 'fused_recurrent_kda']
