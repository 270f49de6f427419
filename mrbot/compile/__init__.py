# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The compilation matrix: launch capture without a GPU, ahead-of-time compiles per target on the CPU, findings."""

import re

# A compile-time block size's name in Triton code (`BT`, `BK`, `BLOCK_SIZE`): what a specialization's shared memory grows
# with, for the compile matrix, and what the Triton rules take for a bounded size.
BLOCK_SIZE_NAME = re.compile(r'^B[A-Z0-9][A-Z0-9_]*$')
