# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""chunk_kda and fused_recurrent_kda against the naive recurrence, across KDA's coverage matrix: dense and varlen,
forward and backward, the three gate modes, raw and post-sigmoid beta, qk L2 norm, MHA and GVA, K != V, states, and
the gate extremes."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import pairwise

import pytest
import torch
import torch.nn.functional as F

from fla.ops.kda import chunk_kda, fused_recurrent_kda
from fla.ops.kda.naive import naive_kda_gate, naive_recurrent_kda
from fla.utils import assert_close, device

ON_GPU = device != 'cpu'
# Long sequences and 128-wide heads are too slow for the interpreter; they run compiled wherever a GPU is.
LARGE = pytest.mark.skipif(not ON_GPU, reason='large shape: runs compiled on a GPU')

IMPLEMENTATIONS = [
    pytest.param(chunk_kda, id='chunk'),
    pytest.param(fused_recurrent_kda, id='fused_recurrent'),
]

# Largest relative RMS error per compared quantity and input dtype.
TOLERANCE = {
    torch.float32: {'default': 2e-3},
    torch.bfloat16: {'default': 2e-2, 'dg': 5e-2, 'dbeta': 5e-2, 'dA_log': 5e-2, 'ddt_bias': 5e-2},
}


def _leaf(shape, dtype, transform=None) -> torch.Tensor:
    tensor = torch.randn(shape, dtype=torch.float32, device=device)
    if transform is not None:
        tensor = transform(tensor)
    return tensor.to(dtype).requires_grad_()


def _unit(x: torch.Tensor) -> torch.Tensor:
    # without the in-kernel norm, the caller keeps keys at unit norm, as the delta rule needs to stay stable
    return F.normalize(x, dim=-1)


@dataclass(frozen=True)
class Case:
    """One KDA call: its shapes, dtype and options; `arguments()` builds fresh leaves for it.

    `gate` is 'pre' (g is log decay: logsigmoid(g_scale * x) + g_shift), 'in-kernel' or 'safe' (g is raw:
    g_scale * x + g_shift); `A_log` None draws rates in [1, 16].
    """

    B: int = 1
    T: int = 33
    H: int = 1
    HV: int = 1
    K: int = 32
    V: int = 16
    dtype: torch.dtype = torch.float32
    gate: str = 'pre'
    beta_sigmoid: bool = False
    l2norm: bool = False
    initial_state: bool = True
    output_final_state: bool = True
    offsets: tuple[int, ...] | None = None
    lower_bound: float = -5.0
    g_scale: float = 1.0
    g_shift: float = 0.0
    A_log: float | None = None

    def arguments(self) -> dict:
        B, T, H, HV, K, V, dtype = self.B, self.T, self.H, self.HV, self.K, self.V, self.dtype
        N = B if self.offsets is None else len(self.offsets) - 1
        normalize = None if self.l2norm else _unit
        args = {'q': _leaf((B, T, H, K), dtype, normalize), 'k': _leaf((B, T, H, K), dtype, normalize),
                'v': _leaf((B, T, HV, V), dtype),
                'beta': _leaf((B, T, HV), dtype, None if self.beta_sigmoid else torch.sigmoid),
                'use_qk_l2norm_in_kernel': self.l2norm, 'use_beta_sigmoid_in_kernel': self.beta_sigmoid,
                'output_final_state': self.output_final_state}
        if self.gate == 'pre':
            args['g'] = _leaf((B, T, HV, K), torch.float32, lambda x: F.logsigmoid(x * self.g_scale) + self.g_shift)
        else:
            args['g'] = _leaf((B, T, HV, K), torch.float32, lambda x: x * self.g_scale + self.g_shift)
            args['A_log'] = _leaf((HV,), torch.float32, (lambda x: torch.full_like(x, self.A_log)) if self.A_log is not None
                                  else (lambda x: torch.log(1 + 15 * torch.rand_like(x))))
            args['dt_bias'] = _leaf((HV * K,), torch.float32, lambda x: x * 0.5)
            args['use_gate_in_kernel'] = True
            if self.gate == 'safe':
                args.update(safe_gate=True, lower_bound=self.lower_bound)
        if self.initial_state:
            args['initial_state'] = _leaf((N, HV, K, V), torch.float32, lambda x: x * 0.1)
        if self.offsets is not None:
            args['cu_seqlens'] = torch.tensor(list(self.offsets), dtype=torch.int32, device=device)
        return args


GRADIENTS = {'dq': 'q', 'dk': 'k', 'dv': 'v', 'dg': 'g', 'dbeta': 'beta', 'dh0': 'initial_state', 'dA_log': 'A_log',
             'ddt_bias': 'dt_bias'}


def _run(fn, args: dict, do: torch.Tensor, dht: torch.Tensor) -> dict:
    """Forward and backward through `fn`; returns named outputs and gradients."""
    o, ht = fn(**args)
    loss = (o.float() * do).sum()
    results = {'o': o}
    if args['output_final_state']:
        loss = loss + (ht * dht).sum()
        results['ht'] = ht
    loss.backward()
    for name, argument in GRADIENTS.items():
        leaf = args.get(argument)
        if leaf is not None:
            results[name] = leaf.grad
            leaf.grad = None
    return results


def _gate_term_sizes(args: dict, do: torch.Tensor, dht: torch.Tensor) -> dict:
    """dA_log and ddt_bias sum one term per position and key channel, of both signs; each term's size summed instead,
    from the reference's gradient at the gate it makes: what the rounding of a sum scales with, when terms cancel."""
    raw, A_log, dt_bias = (args[name].detach() for name in ('g', 'A_log', 'dt_bias'))

    def gate(A_log: torch.Tensor, dt_bias: torch.Tensor) -> torch.Tensor:
        return naive_kda_gate(raw, A_log, dt_bias, args.get('safe_gate', False), args.get('lower_bound'))

    decay = gate(A_log, dt_bias).requires_grad_()
    pre = {**args, 'g': decay, 'use_gate_in_kernel': False, 'A_log': None, 'dt_bias': None}
    dgate = _run(naive_recurrent_kda, pre, do, dht)['dg']
    by_A_log = torch.func.jvp(lambda a: gate(a, dt_bias), (A_log,), (torch.ones_like(A_log),))[1]
    by_bias = torch.func.jvp(lambda b: gate(A_log, b), (dt_bias,), (torch.ones_like(dt_bias),))[1]
    return {'dA_log': (dgate * by_A_log).abs().sum((0, 1, 3)), 'ddt_bias': (dgate * by_bias).abs().sum((0, 1)).flatten()}


def _compare(fn, case: Case) -> None:
    args = case.arguments()
    N = case.B if case.offsets is None else len(case.offsets) - 1
    do = torch.randn(case.B, case.T, case.HV, case.V, device=device)
    dht = torch.randn(N, case.HV, case.K, case.V, device=device)
    ref = _run(naive_recurrent_kda, args, do, dht)
    tri = _run(fn, args, do, dht)
    assert tri.keys() == ref.keys()
    sizes = _gate_term_sizes(args, do, dht) if case.gate != 'pre' else {}
    tolerance = TOLERANCE[case.dtype]
    for name in ref:
        assert torch.isfinite(tri[name]).all(), f'{name}: non-finite values'
        assert_close(name, ref[name], tri[name], tolerance.get(name, tolerance['default']), magnitude=sizes.get(name))


CASES = [
    pytest.param(Case(T=1), id='T1'),
    pytest.param(Case(T=13, initial_state=False, output_final_state=False), id='T13-no-states'),
    pytest.param(Case(T=64, H=2, HV=2), id='T64-one-chunk-mha'),
    pytest.param(Case(T=65, H=1, HV=2, K=24, V=16), id='T65-gva-K24'),
    pytest.param(Case(T=130, H=1, HV=2, K=32, V=48, dtype=torch.bfloat16), id='T130-gva-V48-bf16'),
    pytest.param(Case(T=70, gate='in-kernel', beta_sigmoid=True), id='in-kernel-gate-raw-beta'),
    pytest.param(Case(T=70, gate='safe', l2norm=True), id='safe-gate-l2norm'),
    pytest.param(Case(T=70, H=2, HV=4, gate='in-kernel', l2norm=True, beta_sigmoid=True, dtype=torch.bfloat16),
                 id='in-kernel-gva-l2norm-bf16'),
    pytest.param(Case(T=50, K=16, V=32, gate='safe', dtype=torch.bfloat16, initial_state=False), id='safe-K16-V32-bf16'),
]
EXTREME_CASES = [
    pytest.param(Case(T=130, gate='safe', lower_bound=-5.0, g_scale=10.0, g_shift=5.0), id='safe-lower-bound-5-saturated'),
    pytest.param(Case(T=130, gate='safe', lower_bound=-1e-3), id='safe-lower-bound-near-0'),
    pytest.param(Case(T=70, gate='in-kernel', g_scale=30.0), id='large-abs-g-plus-dt-bias'),
    pytest.param(Case(T=70, gate='in-kernel', A_log=4.0), id='extreme-A_log-high'),
    pytest.param(Case(T=70, gate='in-kernel', A_log=-8.0), id='extreme-A_log-low'),
    pytest.param(Case(T=130, gate='pre', g_shift=-5.0), id='long-cumulative-decay'),
    pytest.param(Case(T=130, gate='pre', g_scale=0.0, g_shift=-1e-4), id='no-decay'),
]
VARLEN_CASES = [
    pytest.param(Case(T=150, offsets=(0, 5, 70, 70, 71, 150), H=1, HV=2), id='ragged-with-empty-gva'),
    pytest.param(Case(T=190, offsets=(0, 64, 100, 190), gate='safe', dtype=torch.bfloat16), id='chunk-aligned-safe-bf16'),
]
LARGE_CASES = [
    pytest.param(Case(B=2, T=1000, H=4, HV=4, K=128, V=128, dtype=torch.bfloat16, gate='safe', l2norm=True), id='T1000-K128',
                 marks=LARGE),
    pytest.param(Case(B=1, T=2048, H=2, HV=8, K=128, V=128, dtype=torch.bfloat16, gate='in-kernel', beta_sigmoid=True),
                 id='T2048-gva', marks=LARGE),
    pytest.param(Case(T=4100, offsets=(0, 300, 1000, 1001, 2048, 4100), H=4, HV=4, K=128, V=128, dtype=torch.bfloat16),
                 id='long-ragged', marks=LARGE),
]


@pytest.mark.parametrize('fn', IMPLEMENTATIONS)
@pytest.mark.parametrize('case', CASES + EXTREME_CASES + VARLEN_CASES + LARGE_CASES)
def test_matches_the_naive_recurrence(fn, case):
    _compare(fn, case)


@pytest.mark.parametrize('fn', IMPLEMENTATIONS)
def test_varlen_matches_separate_calls(fn):
    offsets = (0, 30, 31, 100)
    args = Case(T=100, offsets=offsets, gate='safe').arguments()
    packed, packed_states = fn(**args)
    for i, (bos, eos) in enumerate(pairwise(offsets)):
        part = slice(bos, eos)
        alone = {**args, 'cu_seqlens': None, 'initial_state': args['initial_state'][i:i + 1]}
        alone.update({name: args[name][:, part] for name in ('q', 'k', 'v', 'g', 'beta')})
        o, state = fn(**alone)
        assert_close(f'o of sequence {i}', o, packed[:, part], 1e-5)
        assert_close(f'final state of sequence {i}', state, packed_states[i:i + 1], 1e-5)


def test_safe_gate_stays_finite_over_a_long_saturated_sequence():
    """lower_bound -5 on every channel and step: 64 tokens accumulate -320 in log space within one chunk."""
    args = Case(T=260, gate='safe', lower_bound=-5.0, g_scale=0.0, g_shift=50.0, initial_state=True).arguments()
    o, state = chunk_kda(**args)
    assert torch.isfinite(o).all() and torch.isfinite(state).all()
    ref, ref_state = naive_recurrent_kda(**args)
    assert_close('o', ref, o, 2e-3)
    assert_close('ht', ref_state, state, 2e-3)
    assert math.isfinite(o.abs().max().item())


def _valid_arguments(**overrides):
    B, T, H, HV, K, V = 1, 8, 2, 4, 16, 16
    arguments = {'q': torch.randn(B, T, H, K, device=device), 'k': torch.randn(B, T, H, K, device=device),
                 'v': torch.randn(B, T, HV, V, device=device), 'g': torch.randn(B, T, HV, K, device=device),
                 'beta': torch.rand(B, T, HV, device=device)}
    arguments.update({name: value.to(device) if isinstance(value, torch.Tensor) else value
                      for name, value in overrides.items()})
    return arguments


BAD_INPUTS = [
    pytest.param({'v': torch.randn(1, 8, 3, 16)}, 'v: expected a multiple of H=2 value heads', id='hv-not-multiple'),
    pytest.param({'g': torch.randn(1, 8, 4)}, 'g: expected shape [B, T, HV, K] = (1, 8, 4, 16)', id='g-shape'),
    pytest.param({'beta': torch.rand(1, 8, 2)}, 'beta: expected shape [B, T, HV] = (1, 8, 4)', id='beta-heads'),
    pytest.param({'use_gate_in_kernel': True}, 'A_log: required with use_gate_in_kernel=True', id='no-A_log'),
    pytest.param({'use_gate_in_kernel': True, 'A_log': torch.randn(2)}, 'A_log: expected shape [HV] = (4,)',
                 id='A_log-shape'),
    pytest.param({'use_gate_in_kernel': True, 'A_log': torch.randn(4), 'dt_bias': torch.randn(16)},
                 'dt_bias: expected shape [HV * K] = (64,)', id='dt_bias-shape'),
    pytest.param({'A_log': torch.randn(4)}, 'A_log, dt_bias: only used with use_gate_in_kernel=True', id='A_log-unused'),
    pytest.param({'safe_gate': True, 'lower_bound': -1.0}, 'safe_gate: requires use_gate_in_kernel=True',
                 id='safe-without-in-kernel'),
    pytest.param({'use_gate_in_kernel': True, 'A_log': torch.randn(4), 'safe_gate': True, 'lower_bound': -6.0},
                 'lower_bound: expected a number in [-5, 0) with safe_gate=True, got -6.0', id='lower-bound-below'),
    pytest.param({'use_gate_in_kernel': True, 'A_log': torch.randn(4), 'safe_gate': True, 'lower_bound': 0.0},
                 'lower_bound: expected a number in [-5, 0) with safe_gate=True, got 0.0', id='lower-bound-zero'),
    pytest.param({'use_gate_in_kernel': True, 'A_log': torch.randn(4), 'safe_gate': True},
                 'lower_bound: expected a number in [-5, 0) with safe_gate=True, got None', id='lower-bound-missing'),
    pytest.param({'lower_bound': -1.0}, 'lower_bound: only used with safe_gate=True', id='lower-bound-unused'),
    pytest.param({'initial_state': torch.randn(1, 2, 16, 16)}, 'initial_state: expected shape [N, HV, K, V] = (1, 4, 16, 16)',
                 id='state-heads'),
    pytest.param({'q': torch.randn(1, 8, 2, 300), 'k': torch.randn(1, 8, 2, 300)}, 'q: expected a head size K of at most 256',
                 id='K-too-large'),
]


@pytest.mark.parametrize('fn', IMPLEMENTATIONS)
@pytest.mark.parametrize(('overrides', 'message'), BAD_INPUTS)
def test_bad_input_is_a_clear_value_error_before_launch(fn, overrides, message):
    with pytest.raises(ValueError, match='^' + re.escape(message)):
        fn(**_valid_arguments(**overrides))
