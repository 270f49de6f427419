# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`scripts/interpreter_bounds.py` names a kernel that reads past its tensors under the interpreter, where the read
itself passes silently, and stays quiet on the same kernel masked to its tensor."""

import importlib.util
import os
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

pytestmark = pytest.mark.skipif(os.environ.get('TRITON_INTERPRET') != '1', reason='checks the Triton interpreter')


@triton.jit
def copy_sixteen_kernel(source, target, READABLE: tl.constexpr):
    offsets = tl.arange(0, 16)
    tl.store(target + offsets, tl.load(source + offsets, mask=offsets < READABLE, other=0.0))


@pytest.fixture
def outside(monkeypatch):
    path = Path(__file__).resolve().parents[2] / 'scripts' / 'interpreter_bounds.py'
    spec = importlib.util.spec_from_file_location('interpreter_bounds', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.check_addresses(monkeypatch.setattr)


def test_a_read_past_the_tensor_is_named_with_its_kernel_and_count(outside):
    # torch aligns CPU storages to 64 bytes, so the 16 bytes after the source's 48 belong to no other tensor
    copy_sixteen_kernel[(1,)](torch.zeros(12), torch.zeros(16), READABLE=16)
    assert dict(outside) == {('copy_sixteen_kernel', 'load'): 4}


def test_the_masked_twin_is_quiet(outside):
    copy_sixteen_kernel[(1,)](torch.zeros(12), torch.zeros(16), READABLE=12)
    assert not outside
