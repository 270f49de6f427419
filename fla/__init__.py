# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""fla: linear-attention kernels in Triton, each with a pure-PyTorch reference.

Each op is imported from its own package (`fla.ops.simple_gla`, `fla.ops.kda`); the package roots import nothing, so
that importing one op never runs another's code, and a change to one op selects only the tests that use it.
"""
