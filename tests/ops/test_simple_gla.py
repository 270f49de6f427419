# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""chunk_simple_gla and fused_recurrent_simple_gla against the naive recurrence: outputs, states and every gradient."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
import torch
import torch.nn.functional as F

from fla.ops.simple_gla import chunk_simple_gla, fused_recurrent_simple_gla
from fla.ops.simple_gla.naive import naive_recurrent_simple_gla
from fla.utils import assert_close, device

ON_GPU = device != 'cpu'
# Long sequences and 128-256 wide heads are too slow for the interpreter; they run compiled wherever a GPU is.
LARGE = pytest.mark.skipif(not ON_GPU, reason='large shape: runs compiled on a GPU')

IMPLEMENTATIONS = [
    pytest.param(chunk_simple_gla, id='chunk'),
    pytest.param(fused_recurrent_simple_gla, id='fused_recurrent'),
]

# Largest relative RMS error per compared quantity and input dtype (bf16 dg sums many rounded terms).
TOLERANCE = {
    torch.float32: {'default': 2e-3, 'dg': 2e-3},
    torch.bfloat16: {'default': 1.5e-2, 'dg': 5e-2},
}

# (B, T, H, K, V, dtype, gated, initial_state, output_final_state)
DENSE_CASES = [
    pytest.param(1, 13, 1, 16, 16, torch.float32, True, False, False, id='T13-shorter-than-chunk'),
    pytest.param(2, 100, 2, 32, 48, torch.float32, True, True, True, id='T100-K32-V48-states'),
    pytest.param(2, 64, 2, 32, 32, torch.bfloat16, True, True, True, id='T64-bf16-states'),
    pytest.param(2, 100, 2, 32, 48, torch.bfloat16, True, False, True, id='T100-bf16-final-state'),
    pytest.param(1, 70, 2, 32, 32, torch.float32, False, True, False, id='no-gate'),
    pytest.param(1, 40, 1, 160, 80, torch.float32, True, True, True, id='K160-V80-several-state-blocks'),
]
LARGE_DENSE_CASES = [
    pytest.param(4, 1000, 4, 128, 128, torch.bfloat16, True, True, True, id='T1000-K128-bf16', marks=LARGE),
    pytest.param(2, 2048, 8, 64, 64, torch.float32, True, True, True, id='T2048-K64-fp32', marks=LARGE),
    pytest.param(3, 1500, 4, 100, 60, torch.bfloat16, True, False, True, id='T1500-K100-V60-bf16', marks=LARGE),
    pytest.param(1, 777, 2, 256, 256, torch.bfloat16, True, True, True, id='T777-K256-bf16', marks=LARGE),
    pytest.param(2, 4096, 4, 64, 128, torch.bfloat16, False, True, True, id='T4096-no-gate-bf16', marks=LARGE),
]

# (cu_seqlens, H, K, V, dtype): empty and single-token sequences, and boundaries inside chunks
VARLEN_CASES = [
    pytest.param([0, 5, 70, 70, 71, 150], 2, 32, 16, torch.float32, id='ragged-with-empty-fp32'),
    pytest.param([0, 64, 100, 190], 2, 32, 32, torch.bfloat16, id='chunk-aligned-and-ragged-bf16'),
]
LARGE_VARLEN_CASES = [
    pytest.param([0, 300, 1000, 1001, 2048, 4100], 4, 128, 128, torch.bfloat16, id='long-ragged-K128-bf16', marks=LARGE),
    pytest.param([0, 15, 100, 300, 1200, 2000], 4, 100, 64, torch.float32, id='ragged-K100-fp32', marks=LARGE),
]


def _leaf(shape, dtype, transform=None) -> torch.Tensor:
    tensor = torch.randn(shape, dtype=torch.float32, device=device)
    if transform is not None:
        tensor = transform(tensor)
    return tensor.to(dtype).requires_grad_()


def _inputs(B, T, H, K, V, N, dtype, gated, initial_state):
    q, k = _leaf((B, T, H, K), dtype), _leaf((B, T, H, K), dtype)
    v = _leaf((B, T, H, V), dtype)
    g = _leaf((B, T, H), torch.float32, F.logsigmoid) if gated else None
    h0 = _leaf((N, H, K, V), torch.float32) if initial_state else None
    return q, k, v, g, h0


def _run(fn, q, k, v, g, h0, output_final_state, cu_seqlens, do, dht):
    """Forward and backward through `fn`; returns named outputs and gradients."""
    o, ht = fn(q, k, v, g, initial_state=h0, output_final_state=output_final_state, cu_seqlens=cu_seqlens)
    loss = (o.float() * do).sum()
    results = {'o': o}
    if output_final_state:
        loss = loss + (ht * dht).sum()
        results['ht'] = ht
    loss.backward()
    for name, leaf in (('dq', q), ('dk', k), ('dv', v), ('dg', g), ('dh0', h0)):
        if leaf is not None:
            results[name] = leaf.grad
            leaf.grad = None
    return results


def _compare(fn, q, k, v, g, h0, output_final_state, cu_seqlens=None):
    N = h0.shape[0] if h0 is not None else (q.shape[0] if cu_seqlens is None else cu_seqlens.numel() - 1)
    do = torch.randn(v.shape, device=device)
    dht = torch.randn(N, q.shape[2], q.shape[3], v.shape[3], device=device)
    ref = _run(naive_recurrent_simple_gla, q, k, v, g, h0, output_final_state, cu_seqlens, do, dht)
    tri = _run(fn, q, k, v, g, h0, output_final_state, cu_seqlens, do, dht)
    assert tri.keys() == ref.keys()
    tolerance = TOLERANCE[q.dtype]
    for name in ref:
        assert_close(name, ref[name], tri[name], tolerance.get(name, tolerance['default']))


@pytest.mark.parametrize('fn', IMPLEMENTATIONS)
@pytest.mark.parametrize(
    ('B', 'T', 'H', 'K', 'V', 'dtype', 'gated', 'initial_state', 'output_final_state'),
    DENSE_CASES + LARGE_DENSE_CASES,
)
def test_dense(fn, B, T, H, K, V, dtype, gated, initial_state, output_final_state):
    q, k, v, g, h0 = _inputs(B, T, H, K, V, B, dtype, gated, initial_state)
    _compare(fn, q, k, v, g, h0, output_final_state)


@pytest.mark.parametrize('fn', IMPLEMENTATIONS)
@pytest.mark.parametrize('offsets_dtype', [torch.int32, torch.int64])
@pytest.mark.parametrize(('offsets', 'H', 'K', 'V', 'dtype'), VARLEN_CASES + LARGE_VARLEN_CASES)
def test_varlen(fn, offsets_dtype, offsets, H, K, V, dtype):
    cu_seqlens = torch.tensor(offsets, dtype=offsets_dtype, device=device)
    q, k, v, g, h0 = _inputs(1, offsets[-1], H, K, V, len(offsets) - 1, dtype, True, True)
    _compare(fn, q, k, v, g, h0, True, cu_seqlens)


@pytest.mark.parametrize('fn', IMPLEMENTATIONS)
def test_varlen_matches_separate_calls(fn):
    offsets = [0, 30, 31, 100]
    q, k, v, g, h0 = _inputs(1, offsets[-1], 2, 16, 16, len(offsets) - 1, torch.float32, True, True)
    packed, packed_states = fn(q, k, v, g, initial_state=h0, output_final_state=True,
                               cu_seqlens=torch.tensor(offsets, device=device))
    for i, (bos, eos) in enumerate(pairwise(offsets)):
        part = slice(bos, eos)
        alone, alone_state = fn(q[:, part], k[:, part], v[:, part], g[:, part], initial_state=h0[i:i + 1],
                                output_final_state=True)
        assert_close(f'o of sequence {i}', alone, packed[:, part], 1e-5)
        assert_close(f'final state of sequence {i}', alone_state, packed_states[i:i + 1], 1e-5)


def _valid_arguments(B=1, T=8, H=2, K=16, V=16):
    return {
        'q': torch.randn(B, T, H, K, device=device),
        'k': torch.randn(B, T, H, K, device=device),
        'v': torch.randn(B, T, H, V, device=device),
        'g': F.logsigmoid(torch.randn(B, T, H, device=device)),
    }


BAD_INPUTS = [
    pytest.param({'q': torch.randn(8, 2, 16)}, 'q: expected a 4-D tensor [B, T, H, K]', id='q-rank'),
    pytest.param({'k': torch.randn(1, 8, 3, 16)}, 'k: expected the shape of q', id='k-heads'),
    pytest.param({'v': torch.randn(1, 8, 3, 16)}, 'v: expected H=2 heads as in q', id='v-heads'),
    pytest.param({'v': torch.randn(1, 7, 2, 16)}, 'v: expected [B, T] = (1, 8)', id='v-length'),
    pytest.param({'g': torch.randn(1, 8, 3)}, 'g: expected shape [B, T, H] = (1, 8, 2)', id='g-shape'),
    pytest.param({'q': torch.ones(1, 8, 2, 16, dtype=torch.int64)}, 'q: expected a floating-point tensor', id='q-int'),
    pytest.param({'k': torch.randn(1, 8, 2, 16).double()}, 'q, k, v: expected one dtype', id='mixed-dtypes'),
    pytest.param({'initial_state': torch.randn(2, 2, 16, 16)}, 'initial_state: expected shape [N, H, K, V] = (1, 2, 16, 16)',
                 id='state-count'),
    pytest.param({'cu_seqlens': torch.tensor([0, 9, 8])}, 'cu_seqlens: expected non-decreasing offsets', id='unsorted'),
    pytest.param({'cu_seqlens': torch.tensor([0, 4, 10])}, 'cu_seqlens: expected to start at 0 and end at T=8',
                 id='out-of-range'),
    pytest.param({'cu_seqlens': torch.tensor([0.0, 8.0])}, 'cu_seqlens: expected dtype int32 or int64', id='float-offsets'),
    pytest.param({'cu_seqlens': torch.tensor(8)}, 'cu_seqlens: expected a 1-D tensor [N + 1]', id='scalar-offsets'),
    pytest.param({'scale': '0.5'}, 'scale: expected a float or None, got str', id='scale-type'),
]


@pytest.mark.parametrize('fn', IMPLEMENTATIONS)
@pytest.mark.parametrize(('override', 'message'), BAD_INPUTS)
def test_bad_input_is_a_clear_value_error(fn, override, message):
    arguments = _valid_arguments()
    arguments.update({name: value.to(device) if isinstance(value, torch.Tensor) else value
                      for name, value in override.items()})
    with pytest.raises(ValueError, match='^' + re.escape(message)):
        fn(**arguments)


@pytest.mark.parametrize('fn', IMPLEMENTATIONS)
def test_packed_sequences_need_batch_of_one(fn):
    arguments = _valid_arguments(B=2)
    with pytest.raises(ValueError, match=r'^cu_seqlens: packed sequences need B == 1'):
        fn(**arguments, cu_seqlens=torch.tensor([0, 8], device=device))
