# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The ground floor: the repository one command works on (`workspace`), what its Python files import (`index`) and
the graph built from that (`graph`), and the ops it declares for benchmarking (`ops`). The stages read these; nothing
here knows a stage."""
