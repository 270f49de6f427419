# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The harness poisons uninitialized float memory in kernel tests, so a partial write cannot pass."""

import torch

from fla.utils import device


def test_float_allocations_are_nan():
    template = torch.zeros(4, device=device)
    for tensor in (torch.empty(4, device=device), torch.empty_like(template), template.new_empty(3, 2)):
        assert torch.isnan(tensor).all()


def test_grad_leaves_and_integer_allocations_still_work():
    leaf = torch.empty(4, device=device, requires_grad=True)
    assert leaf.is_leaf and leaf.requires_grad
    assert torch.empty(4, dtype=torch.int64, device=device).dtype == torch.int64
    assert torch.zeros(2, dtype=torch.int32, device=device).new_empty(3).dtype == torch.int32


def test_a_partial_write_is_visible():
    out = torch.empty(8, device=device)
    out[:6] = 1.0
    assert torch.isnan(out[6:]).all()
