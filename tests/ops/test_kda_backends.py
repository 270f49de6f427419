# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""KDA's backends: the PyTorch chunked `chunk_kda` against the naive recurrence, its verifier's verdicts, and the routes
that dispatch takes through it or past it to the Triton op."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn.functional as F

from fla.ops.backends import DISABLE_ENV_VAR, dispatch
from fla.ops.kda import chunk_kda
from fla.ops.kda.backends import TorchChunkedBackend, registry
from fla.ops.kda.naive import naive_recurrent_kda
from fla.utils import assert_close, device

# Largest relative RMS error of the output and the final state per input dtype: both sides compute in float32.
TOLERANCE = {
    torch.float32: {'o': 1e-5, 'ht': 1e-5},
    torch.bfloat16: {'o': 5e-3, 'ht': 1e-5},
}
ENV_VAR = TorchChunkedBackend.env_var


@pytest.fixture(autouse=True)
def dispatch_enabled(monkeypatch):
    """Dispatch on and the backend in its default state unless a test switches it."""
    monkeypatch.delenv(DISABLE_ENV_VAR, raising=False)
    monkeypatch.delenv(ENV_VAR, raising=False)


def _arguments(B=1, T=70, H=1, HV=1, K=32, V=16, dtype=torch.float32, gate='pre', initial_state=True, offsets=None,
               lower_bound=-5.0, g_scale=1.0, g_shift=0.0, l2norm=False, beta_sigmoid=False, on=device,
               requires_grad=False) -> dict:
    """One call of `chunk_kda`. `gate` is 'pre' (g is log decay), 'in-kernel' (softplus) or 'safe' (sigmoid)."""
    N = B if offsets is None else len(offsets) - 1

    def tensor(*shape, dtype=torch.float32, transform=None):
        x = torch.randn(shape, device=on)
        return (transform(x) if transform is not None else x).to(dtype).requires_grad_(requires_grad)

    unit = None if l2norm else (lambda x: F.normalize(x, dim=-1))
    args = {'q': tensor(B, T, H, K, dtype=dtype, transform=unit), 'k': tensor(B, T, H, K, dtype=dtype, transform=unit),
            'v': tensor(B, T, HV, V, dtype=dtype),
            'beta': tensor(B, T, HV, dtype=dtype, transform=None if beta_sigmoid else torch.sigmoid),
            'output_final_state': True, 'use_qk_l2norm_in_kernel': l2norm, 'use_beta_sigmoid_in_kernel': beta_sigmoid}
    if gate == 'pre':
        args['g'] = tensor(B, T, HV, K, transform=lambda x: F.logsigmoid(g_scale * x) + g_shift)
    else:
        args['g'] = tensor(B, T, HV, K, transform=lambda x: g_scale * x + g_shift)
        args.update(use_gate_in_kernel=True, A_log=tensor(HV, transform=lambda x: torch.log(1 + 15 * torch.rand_like(x))),
                    dt_bias=tensor(HV * K, transform=lambda x: 0.5 * x))
        if gate == 'safe':
            args.update(safe_gate=True, lower_bound=lower_bound)
    if initial_state:
        args['initial_state'] = tensor(N, HV, K, V, transform=lambda x: 0.1 * x)
    if offsets is not None:
        args['cu_seqlens'] = torch.tensor(offsets, dtype=torch.int32, device=on)
    return args


CASES = [
    pytest.param({'T': 1}, id='T1'),
    pytest.param({'T': 64, 'B': 2, 'H': 2, 'HV': 2}, id='T64-one-chunk-mha'),
    pytest.param({'T': 150, 'H': 2, 'HV': 4, 'K': 24, 'V': 40}, id='T150-gva-K24-V40'),
    pytest.param({'T': 100, 'initial_state': False}, id='no-initial-state'),
    pytest.param({'T': 130, 'gate': 'in-kernel', 'beta_sigmoid': True}, id='in-kernel-gate-raw-beta'),
    pytest.param({'T': 130, 'gate': 'safe', 'l2norm': True}, id='safe-gate-l2norm'),
    pytest.param({'T': 130, 'gate': 'safe', 'lower_bound': -5.0, 'g_scale': 0.0, 'g_shift': 50.0},
                 id='safe-gate-saturated-at-lower-bound'),
    pytest.param({'T': 130, 'gate': 'in-kernel', 'g_scale': 30.0}, id='large-abs-g-plus-dt-bias'),
    pytest.param({'T': 130, 'g_shift': -5.0}, id='long-cumulative-decay'),
    pytest.param({'T': 90, 'H': 1, 'HV': 2, 'dtype': torch.bfloat16, 'gate': 'safe'}, id='gva-bf16'),
    pytest.param({'T': 150, 'offsets': (0, 5, 70, 70, 71, 150), 'H': 1, 'HV': 2}, id='varlen-ragged-with-empty-gva'),
    pytest.param({'T': 192, 'offsets': (0, 64, 100, 192), 'gate': 'in-kernel', 'K': 16, 'V': 32},
                 id='varlen-chunk-aligned-K16-V32'),
]


@pytest.mark.parametrize('case', CASES)
def test_torch_chunked_matches_the_naive_recurrence(case):
    args = _arguments(**case)
    o, ht = TorchChunkedBackend().chunk_kda(**args)
    ref_o, ref_ht = naive_recurrent_kda(**args)
    assert o.dtype == args['v'].dtype and ht.dtype == torch.float32
    assert torch.isfinite(o).all() and torch.isfinite(ht).all()
    tolerance = TOLERANCE[args['v'].dtype]
    # the backend serves only calls without gradients, so there is no backward to compare
    assert_close('o', ref_o, o, tolerance['o'])  # mrbot: ignore[TST003]
    assert_close('ht', ref_ht, ht, tolerance['ht'])


def test_torch_chunked_without_final_state_returns_none():
    args = {**_arguments(T=20), 'output_final_state': False}
    o, ht = TorchChunkedBackend().chunk_kda(**args)
    assert ht is None
    assert_close('o', naive_recurrent_kda(**args)[0], o, TOLERANCE[torch.float32]['o'])


def test_torch_chunked_needs_no_triton_interpreter_on_the_cpu(monkeypatch):
    """The backend is what a CPU without the interpreter runs; only the Triton ops need it there."""
    import fla.ops.common.validation

    monkeypatch.setattr(fla.ops.common.validation, 'IS_TRITON_INTERPRETER', False)
    args = _arguments(T=20, on='cpu')
    with pytest.raises(ValueError, match='^q: tensors are on the CPU, where Triton kernels run only with TRITON_INTERPRET=1'):
        chunk_kda(**args)
    o, _ = TorchChunkedBackend().chunk_kda(**args)
    assert_close('o', naive_recurrent_kda(**args)[0], o, TOLERANCE[torch.float32]['o'])


def test_torch_chunked_checks_arguments_like_the_op():
    args = {**_arguments(T=8), 'lower_bound': -1.0}
    with pytest.raises(ValueError, match='^lower_bound: only used with safe_gate=True'):
        TorchChunkedBackend().chunk_kda(**args)


def test_verifier_takes_the_parameters_of_the_public_function():
    """naive_recurrent_kda takes its arguments as chunk_kda does; the verifier and the backend take them too."""
    expected = list(inspect.signature(naive_recurrent_kda).parameters)
    backend = TorchChunkedBackend()
    assert list(inspect.signature(backend.chunk_kda_verifier).parameters) == expected
    assert list(inspect.signature(backend.chunk_kda).parameters) == expected


def test_verifier_accepts_inference_on_the_cpu_in_any_dtype_and_float32_elsewhere():
    verify = TorchChunkedBackend().chunk_kda_verifier
    assert verify(**_arguments(T=4, on='cpu', dtype=torch.bfloat16)) == (True, None)
    assert verify(**_arguments(T=4, on='meta')) == (True, None)
    with torch.no_grad():
        assert verify(**_arguments(T=4, gate='safe', requires_grad=True)) == (True, None)


@pytest.mark.parametrize(('case', 'reason'), [
    pytest.param({'requires_grad': True}, 'an input requires grad and the torch_chunked backend has no backward',
                 id='grad-required'),
    pytest.param({'on': 'meta', 'dtype': torch.bfloat16},
                 'torch.bfloat16 on meta: off the CPU the torch_chunked backend serves float32 only', id='device-dtype'),
    pytest.param({'K': 300}, 'head size K=300 is over 256, the largest chunk_kda accepts', id='K-over-256'),
])
def test_verifier_rejection_names_its_reason(case, reason):
    assert TorchChunkedBackend().chunk_kda_verifier(**_arguments(T=4, **case)) == (False, reason)


def test_verifier_rejects_a_gate_parameter_that_requires_grad():
    args = _arguments(T=4, gate='in-kernel')
    args['A_log'].requires_grad_()
    assert TorchChunkedBackend().chunk_kda_verifier(**args) == (
        False, 'an input requires grad and the torch_chunked backend has no backward')


def test_backend_is_registered_and_off_by_default(monkeypatch):
    assert [b.backend_type for b in registry.backends()] == ['torch_chunked']
    assert not TorchChunkedBackend.is_enabled()
    monkeypatch.setenv(ENV_VAR, '1')
    assert TorchChunkedBackend.is_enabled()


@pytest.fixture
def backend_calls(monkeypatch):
    """Count the calls that dispatch hands to the backend, which still computes them."""
    calls = []
    serve = TorchChunkedBackend.chunk_kda

    def counted(self, *args, **kwargs):
        calls.append(kwargs)
        return serve(self, *args, **kwargs)

    monkeypatch.setattr(TorchChunkedBackend, 'chunk_kda', counted)
    return calls


def _stand_in_op():
    """A `chunk_kda` dispatched through the real KDA registry whose own body only says that it ran."""

    @dispatch('kda')
    def chunk_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                  use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False, A_log=None, dt_bias=None, safe_gate=False,
                  lower_bound=None, use_beta_sigmoid_in_kernel=False, cu_seqlens=None):
        return 'default'

    return chunk_kda


@pytest.mark.parametrize(('env', 'requires_grad', 'route'), [
    pytest.param('1', False, 'backend', id='on-accepted'),
    pytest.param('1', True, 'default', id='on-rejected-grad'),
    pytest.param(None, False, 'default', id='off-by-default'),
    pytest.param('0', False, 'default', id='switched-off'),
])
def test_dispatch_route(monkeypatch, backend_calls, env, requires_grad, route):
    if env is not None:
        monkeypatch.setenv(ENV_VAR, env)
    result = _stand_in_op()(**_arguments(T=10, requires_grad=requires_grad))
    assert (result == 'default') == (route == 'default')
    assert len(backend_calls) == (route == 'backend')


def test_bypass_env_var_skips_an_enabled_backend(monkeypatch, backend_calls):
    monkeypatch.setenv(ENV_VAR, '1')
    monkeypatch.setenv(DISABLE_ENV_VAR, '1')
    assert _stand_in_op()(**_arguments(T=10)) == 'default'
    assert backend_calls == []


@pytest.mark.parametrize(('requires_grad', 'served'), [
    pytest.param(False, True, id='inference-served-by-backend'),
    pytest.param(True, False, id='training-falls-through-to-triton'),
])
def test_chunk_kda_dispatch(monkeypatch, backend_calls, requires_grad, served):
    """The real op: an accepted call is the backend's, a rejected one the Triton op's; both match the reference."""
    from fla.ops.kda.chunk import chunk_kda

    monkeypatch.setenv(ENV_VAR, '1')
    args = _arguments(T=20, K=16, V=16, gate='safe', requires_grad=requires_grad)
    o, ht = chunk_kda(**args)
    assert len(backend_calls) == served
    ref_o, ref_ht = naive_recurrent_kda(**args)
    assert_close('o', ref_o, o, 2e-3)
    assert_close('ht', ref_ht, ht, 2e-3)
