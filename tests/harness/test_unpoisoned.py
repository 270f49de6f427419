# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Outside tests/ops and tests/modules, and after every kernel test, the allocators are torch's own."""

import torch


def test_allocators_are_torchs_own_outside_kernel_tests():
    for allocator in (torch.empty, torch.empty_like, torch.Tensor.new_empty):
        assert allocator.__name__ != 'allocate_poisoned'
