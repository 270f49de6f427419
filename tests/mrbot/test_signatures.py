# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Breaking changes: only the library's callable interface, and only callers a change really breaks."""

from __future__ import annotations

from pathlib import Path

from mrbot.records.change import ChangedFile, ChangeSet
from mrbot.signatures import breaking_changes

OP = '''
def scale(x, factor=2.0, *, cu_seqlens=None):
    return x * factor
'''
CALLERS = '''
from pkg.ops.scale import scale


def forward(x, *args, **kwargs):
    a = scale(x, 3.0)
    b = scale(x, factor=3.0)
    c = scale(*args)
    return scale(**kwargs), a, b, c
'''


def changes(tmp_path: Path, path: str, base: str, head: str) -> list[tuple[str, str, tuple[str, ...]]]:
    (tmp_path / 'pkg').mkdir(exist_ok=True)
    (tmp_path / 'pkg' / 'layers.py').write_text(CALLERS)
    change = ChangeSet(tmp_path, 'base', None, (ChangedFile(path, 'modified', text=head, base_text=base),))
    # every name exported: what is left out is left out by what it is, not by where it is exported from
    public = {(path, name) for name in ('scale', 'scale_kernel', 'naive_scale')}
    return [(b.name, b.change, b.callers) for b in breaking_changes(change, public, ['pkg/layers.py'])]


def test_a_removed_parameter_names_the_positional_caller_not_the_forwarding_ones(tmp_path):
    head = OP.replace('factor=2.0, ', '')
    assert changes(tmp_path, 'pkg/ops/scale/op.py', OP, head) == [
        ('scale', 'parameter `factor` removed', ('pkg/layers.py:6', 'pkg/layers.py:7'))]


def test_an_option_inserted_before_another_option_breaks_nothing(tmp_path):
    base = 'def scale(x, factor=2.0, cu_seqlens=None):\n    return x\n'
    head = 'def scale(x, factor=2.0, chunk_indices=None, cu_seqlens=None):\n    return x\n'
    assert changes(tmp_path, 'pkg/ops/scale/op.py', base, head) == []
    required = 'def scale(x, factor, cu_seqlens=None):\n    return x\n'
    assert [change for _, change, _ in changes(tmp_path, 'pkg/ops/scale/op.py', base, required)] == [
        'parameter `factor` is now required']


def test_kernels_and_naive_references_are_not_the_interface(tmp_path):
    kernel = '@triton.jit\ndef scale_kernel(x, T, BT: tl.constexpr):\n    pass\n'
    assert changes(tmp_path, 'pkg/ops/scale/op.py', kernel, kernel.replace('x, T', 'x, y, T')) == []
    naive = 'def naive_scale(x, factor=2.0):\n    return x\n'
    assert changes(tmp_path, 'pkg/ops/scale/naive.py', naive, naive.replace(', factor=2.0', '')) == []
