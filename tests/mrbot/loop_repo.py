# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""A small kernel repository for `mrbot loop` tests: one Triton op, its naive reference, a NaN-poisoning conftest and
a gate that compares the two, with a bench spec. `DELAY` stands for the work a candidate makes faster or slower."""

from __future__ import annotations

KERNEL = '''# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The elementwise product of two tensors, row-summed."""

import time

import torch
import triton
import triton.language as tl


@triton.jit
def product_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(x + offsets, mask=mask) * tl.load(y + offsets, mask=mask), mask=mask)


def product_sum(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    product_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    time.sleep(DELAY)
    return out.sum(-1)
'''
NAIVE = '''# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The reference of product_sum."""


def naive_product_sum(x, y):
    return (x * y).sum(-1)
'''
UTILS = '''# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""How a kernel's output is compared with its reference."""

import torch


def assert_close(name, ref, tri, ratio):
    error = ((ref - tri).pow(2).mean().sqrt() / ref.pow(2).mean().sqrt()).item()
    assert not torch.isnan(tri).any() and error <= ratio, f'{name}: relative error {error}'
'''
CONFTEST = '''# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Uninitialized memory is NaN in the op tests, so a kernel that skips part of its output fails."""

import os

import pytest
import torch

os.environ.setdefault('TRITON_INTERPRET', '1')


@pytest.fixture(autouse=True)
def poison(monkeypatch):
    empty_like = torch.empty_like
    monkeypatch.setattr(torch, 'empty_like', lambda *a, **k: empty_like(*a, **k).fill_(float('nan')))
'''
GATE = '''# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""product_sum against its reference."""

import pytest
import torch

from pkg.ops.product.chunk import product_sum
from pkg.ops.product.naive import naive_product_sum
from pkg.utils import assert_close

TOLERANCE = {torch.float32: 1e-5}
CASES = [
    pytest.param(2, 100, id='B2-D100'),
    pytest.param(3, 64, id='B3-D64'),
]


@pytest.mark.parametrize(('B', 'D'), CASES)
def test_product_sum(B, D):
    x, y = torch.randn(B, D), torch.randn(B, D)
    assert_close('out', naive_product_sum(x, y), product_sum(x, y), TOLERANCE[torch.float32])
'''
PYPROJECT = '''[tool.mrbot]
source-roots = ["pkg"]
compile-targets = ["sm_90"]

[tool.mrbot.bench.ops.product]
callable = "pkg.ops.product.chunk:product_sum"
gate = "tests/ops/test_product.py"
modes = ["fwd"]

[tool.mrbot.bench.ops.product.inputs]
x = { shape = ["B", "D"], dtype = "float32", requires-grad = false }
y = { shape = ["B", "D"], dtype = "float32", requires-grad = false }

[tool.mrbot.bench.ops.product.shapes]
small = { B = 4, D = 64 }
wide = { B = 2, D = 256 }
'''


def files(delay: float) -> dict[str, str]:
    """The repository with the op taking `delay` seconds beyond its kernel."""
    return {'pkg/__init__.py': '', 'pkg/ops/__init__.py': '', 'pkg/ops/product/__init__.py': '',
            'pkg/ops/product/chunk.py': KERNEL.replace('DELAY', repr(delay)), 'pkg/ops/product/naive.py': NAIVE,
            'pkg/utils.py': UTILS, 'tests/conftest.py': CONFTEST, 'tests/ops/test_product.py': GATE,
            'pyproject.toml': PYPROJECT, '.gitignore': '__pycache__/\n'}
