# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""mrbot: turns a change to a Triton kernel repository into a merge-ready pull request with the evidence behind it."""
