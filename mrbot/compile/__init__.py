# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The compilation matrix: launch capture without a GPU, ahead-of-time compiles per target on the CPU, findings."""
