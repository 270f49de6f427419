# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""GAME001-GAME003: a performance change keeps running its kernels, on every call, on the stream the benchmark times."""

from __future__ import annotations

import pytest

CHUNK = """import functools

import torch
import triton

from fla.ops.utils import prepare_chunk_indices


def chunk_fwd(q, k, v, cu_seqlens=None):
    o = torch.empty_like(v)
    chunk_indices = prepare_chunk_indices(cu_seqlens, 64) if cu_seqlens is not None else None
    grid = (triton.cdiv(q.shape[1], 64), q.shape[0] * q.shape[2])
    chunk_fwd_kernel[grid](q, k, v, o, chunk_indices, BT=64)
    return o


class ChunkFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, q, k, v):
        return chunk_fwd(q, k, v)


def chunk_simple_gla(q, k, v):
    return ChunkFunction.apply(q, k, v)
"""
LAUNCH = '    chunk_fwd_kernel[grid](q, k, v, o, chunk_indices, BT=64)\n'
PATH = 'fla/ops/simple_gla/chunk.py'
OP = {PATH: CHUNK, 'fla/ops/simple_gla/naive.py': 'import torch\n', 'tests/ops/test_simple_gla.py': 'import torch\n'}


def _where(report):
    return [(f.rule, f.path, f.line) for f in report.findings]


def _messages(report):
    return [f.message for f in report.findings]


def _line(text, fragment):
    return next(number for number, line in enumerate(text.splitlines(), 1) if fragment in line)


@pytest.mark.parametrize(('replacement', 'fragment', 'message'), [
    pytest.param('    o = torch.matmul((q * k).tril(), v)\n', 'torch.matmul',
                 'torch.matmul replaces the launch of chunk_fwd_kernel in chunk_fwd', id='matmul'),
    pytest.param('    o = (q * k).tril() @ v\n', ' @ ',
                 '@ replaces the launch of chunk_fwd_kernel in chunk_fwd', id='matmul-operator'),
    pytest.param('    o = torch.nn.functional.scaled_dot_product_attention(q, k, v)\n', 'scaled_dot',
                 'torch.nn.functional.scaled_dot_product_attention replaces the launch of chunk_fwd_kernel in chunk_fwd',
                 id='sdpa'),
])
def test_kernel_replaced_by_a_vendor_routine(repo, replacement, fragment, message):
    repo.commit(OP)
    head = CHUNK.replace(LAUNCH, replacement)
    repo.write({PATH: head})
    report = repo.check('GAME001', title='[Perf] Faster chunk')
    assert _where(report) == [('GAME001', PATH, _line(head, fragment))]
    assert _messages(report) == [message]


def test_kernel_replaced_outside_a_performance_change_is_not_reported(repo):
    repo.commit(OP)
    repo.write({PATH: CHUNK.replace(LAUNCH, '    o = torch.matmul(q, k)\n')})
    assert repo.check('GAME001', title='[Simple GLA] Use matmul').findings == ()


def test_kernel_kept_with_a_matmul_prologue_or_in_the_reference_is_not_reported(repo):
    repo.commit(OP)
    prologue = '    k = torch.matmul(k, torch.eye(k.shape[-1], device=k.device))\n'
    repo.write({PATH: CHUNK.replace(LAUNCH, prologue + LAUNCH),
                'fla/ops/simple_gla/naive.py': 'import torch\n\n\ndef naive(q, k, v):\n    return torch.matmul(q, k)\n'})
    assert repo.check('GAME001', perf=True).findings == ()


EXISTING = '    o = o + torch.matmul(q, k)\n'


@pytest.mark.parametrize('head', [
    pytest.param(LAUNCH.replace('chunk_fwd_kernel', 'fused_chunk_fwd_kernel') + EXISTING + '    o = torch.mm(o, v)\n',
                 id='renamed-kernel-and-a-new-mm'),
    pytest.param(EXISTING.replace('torch.matmul(q, k)', 'torch.matmul(\n        q, k)'),
                 id='launch-removed-and-an-existing-matmul-reformatted'),
])
def test_renamed_kernel_or_existing_vendor_call_is_not_reported(repo, head):
    repo.commit({**OP, PATH: CHUNK.replace(LAUNCH, LAUNCH + EXISTING)})
    repo.write({PATH: CHUNK.replace(LAUNCH, head)})
    assert repo.check('GAME001', perf=True).findings == ()


@pytest.mark.parametrize(('head', 'fragment', 'message'), [
    pytest.param(CHUNK.replace('\n\ndef chunk_fwd', '\n_OUTPUTS = {}\n\n\ndef chunk_fwd').replace(
        '    return o\n', '    _OUTPUTS[(q.data_ptr(), k.data_ptr())] = o\n    return o\n'),
        '_OUTPUTS[(', '_OUTPUTS[...] in chunk_fwd caches inputs or outputs across calls', id='dict-keyed-on-address'),
    pytest.param(CHUNK.replace('\n\ndef chunk_fwd', '\n_OUTPUTS = OrderedDict()\n\n\ndef chunk_fwd').replace(
        '        return chunk_fwd(q, k, v)\n',
        '        o = chunk_fwd(q, k, v)\n        _OUTPUTS.setdefault(id(q), o)\n        return o\n'),
        'setdefault', '_OUTPUTS.setdefault(...) in ChunkFunction.forward caches inputs or outputs across calls',
        id='setdefault-through-a-launching-function'),
    pytest.param(CHUNK.replace('def chunk_simple_gla', '@functools.lru_cache(maxsize=8)\ndef chunk_simple_gla'),
                 'lru_cache', '@functools.lru_cache caches the results of chunk_simple_gla across calls',
                 id='lru-cache-on-the-op'),
    pytest.param(CHUNK.replace('    o = torch.empty_like(v)\n', '    global _LAST\n    o = torch.empty_like(v)\n')
                 .replace('    return o\n', '    _LAST = o\n    return o\n'),
                 '_LAST = o', 'global _LAST keeps o from chunk_fwd across calls', id='global'),
])
def test_results_cached_across_calls(repo, head, fragment, message):
    repo.commit(OP)
    repo.write({PATH: head})
    report = repo.check('GAME002', title='[Perf] Faster chunk')
    assert _where(report) == [('GAME002', PATH, _line(head, fragment))]
    assert _messages(report) == [message]
    assert repo.check('GAME002', title='[Simple GLA] Faster chunk').findings == ()


def test_metadata_caches_are_not_reported(repo):
    repo.commit(OP)
    helpers = ('\n\n@tensor_cache\ndef prepare_lens(cu_seqlens):\n    return torch.diff(cu_seqlens)\n'
               '\n\n@functools.lru_cache(maxsize=None)\ndef prepare_chunk_indices(cu_seqlens, chunk_size):\n'
               '    return torch.stack([cu_seqlens // chunk_size, cu_seqlens % chunk_size], 1)\n'
               '\n\n@functools.lru_cache(maxsize=1)\ndef get_multiprocessor_count(index=0):\n'
               "    return torch.cuda.get_device_properties(index).multi_processor_count\n"
               '\n\n_LAYOUTS = {}\n\n\ndef build_layout(B, T, BT):\n    _LAYOUTS[(B, T, BT)] = torch.arange(B * T // BT)\n'
               '    return _LAYOUTS[(B, T, BT)]\n')
    first = '    o = torch.empty_like(v)\n'
    warned = CHUNK.replace(first, '    global _WARNED\n    _WARNED = True\n' + first)
    repo.write({PATH: warned + helpers})
    assert repo.check('GAME002', perf=True).findings == ()


@pytest.mark.parametrize(('added', 'found'), [
    pytest.param('    side = torch.cuda.Stream()\n', 'torch.cuda.Stream', id='stream'),
    pytest.param('    o.record_stream(torch.cuda.current_stream())\n', '.record_stream', id='record-stream'),
])
def test_stream_tricks(repo, added, found):
    repo.commit(OP)
    head = CHUNK.replace(LAUNCH, added + LAUNCH)
    repo.write({PATH: head})
    report = repo.check('GAME003', perf=True)
    assert _where(report) == [('GAME003', PATH, _line(head, added.strip()))]
    assert _messages(report) == [f'{found}(...) lets work escape the stream the benchmark times']
    assert repo.check('GAME003').findings == ()


def test_streams_in_tests_and_the_reference_are_not_reported(repo):
    repo.commit(OP)
    stream = 'import torch\n\nwith torch.cuda.stream(torch.cuda.Stream()):\n    x = torch.ones(1)\n'
    repo.write({'fla/ops/simple_gla/naive.py': stream, 'tests/ops/test_simple_gla.py': stream})
    assert repo.check('GAME003', title='[Perf] Faster chunk').findings == ()
