# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Test harness: interpreter on CPU-only machines, a fixed seed per test, NaN-poisoned allocations for kernel tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

# Triton decides at decoration time whether a kernel is interpreted, so this must precede every fla import.
if not torch.cuda.is_available():  # mrbot: ignore[PLT001]
    os.environ.setdefault('TRITON_INTERPRET', '1')

# a compile server outlives the test that started it; the one test of servers turns them on for itself
os.environ.setdefault('MRBOT_COMPILE_SERVER', '0')

TESTS_DIR = Path(__file__).parent
POISONED_DIRS = {'ops', 'modules'}
SEED = 42


def _poisoning(allocate):
    def allocate_poisoned(*args, **kwargs):
        tensor = allocate(*args, **kwargs)
        if (tensor.is_floating_point() or tensor.is_complex()) and not tensor.requires_grad \
                and not torch.compiler.is_compiling():
            tensor.fill_(float('nan'))
        return tensor

    return allocate_poisoned


@pytest.fixture(autouse=True)
def seed_each_test() -> None:
    torch.manual_seed(SEED)


@pytest.fixture(autouse=True)
def poison_uninitialized_memory(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fill float tensors from torch.empty, torch.empty_like and Tensor.new_empty with NaN in kernel tests.

    A kernel that leaves part of its output unwritten then fails its comparison instead of passing on leftover zeros.
    """
    relative = Path(request.node.path).resolve().relative_to(TESTS_DIR.resolve())
    if relative.parts[0] not in POISONED_DIRS:
        return
    monkeypatch.setattr(torch, 'empty', _poisoning(torch.empty))
    monkeypatch.setattr(torch, 'empty_like', _poisoning(torch.empty_like))
    monkeypatch.setattr(torch.Tensor, 'new_empty', _poisoning(torch.Tensor.new_empty))

