# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The kernels: one package per op (`simple_gla`, `kda`), shared kernels in `common`, the dispatch system in `backends`."""
