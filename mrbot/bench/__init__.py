# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot bench`: before/after timings of the ops a change touches, on one GPU, interleaved, judged with statistics."""
