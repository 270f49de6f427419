# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The rule pack mrbot checks a change against: one module per rule family, each rule with a stable id."""
