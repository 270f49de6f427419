# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The optimization loop: a frozen contract, one gated and timed change per try, and a claim or a no-go at the end."""
