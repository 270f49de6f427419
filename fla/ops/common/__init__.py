# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Pieces shared between ops: argument checks and device helpers for per-sequence kernels."""
