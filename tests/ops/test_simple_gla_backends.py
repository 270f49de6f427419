# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The Gluon Hopper backend of `chunk_simple_gla`: its verifier's verdicts, the routes dispatch takes through it or
past it to the Triton op, and, on a Hopper GPU, its forward against the Triton forward."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn.functional as F

from fla.ops.backends import DISABLE_ENV_VAR
from fla.ops.simple_gla import chunk_simple_gla
from fla.ops.simple_gla.backends import GluonHopperBackend, gluon_hopper, registry
from fla.utils import assert_close, device

ENV_VAR = GluonHopperBackend.env_var
ON_HOPPER = device == 'cuda' and torch.cuda.get_device_capability()[0] == 9
# Long sequences and wide heads are too slow for the interpreter; they run compiled wherever a GPU is.
LARGE = pytest.mark.skipif(device == 'cpu', reason='large shape: runs compiled on a GPU')
# Largest relative RMS error of the Gluon forward against the Triton forward: the same bf16 products in another order.
TOLERANCE = {'o': 5e-3, 'ht': 1e-3, 'gradient': 5e-3}
# The inputs a loss of the op's outputs is differentiated by.
GRADIENT_INPUTS = ('q', 'k', 'v', 'g', 'initial_state')


@pytest.fixture(autouse=True)
def dispatch_enabled(monkeypatch):
    """Dispatch on and the backend in its default state unless a test switches it."""
    monkeypatch.delenv(DISABLE_ENV_VAR, raising=False)
    monkeypatch.delenv(ENV_VAR, raising=False)


def _arguments(B=2, T=100, H=2, K=64, V=48, dtype=torch.bfloat16, offsets=None, on=device) -> dict:
    N = B if offsets is None else len(offsets) - 1
    return {'q': torch.randn(B, T, H, K, device=on).to(dtype), 'k': torch.randn(B, T, H, K, device=on).to(dtype),
            'v': torch.randn(B, T, H, V, device=on).to(dtype), 'g': F.logsigmoid(torch.randn(B, T, H, device=on)),
            'initial_state': 0.1 * torch.randn(N, H, K, V, device=on), 'output_final_state': True,
            'cu_seqlens': None if offsets is None else torch.tensor(offsets, dtype=torch.int32, device=on)}


def _with_gradients(args: dict) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """The op's outputs, and the gradients of a fixed loss of both by every floating input: the backward reads the
    forward's final state (the decay's gradient carried from it), so an error of the forward reaches them."""
    leaves = {name: args[name].detach().clone().requires_grad_() for name in GRADIENT_INPUTS if args[name] is not None}
    o, ht = chunk_simple_gla(**{**args, **leaves})
    generator = torch.Generator(device=o.device).manual_seed(1)
    do = torch.randn(o.shape, generator=generator, device=o.device)
    dht = torch.randn(ht.shape, generator=generator, device=ht.device)
    ((o.float() * do).sum() + (ht * dht).sum()).backward()
    return o.detach(), ht.detach(), {name: leaf.grad for name, leaf in leaves.items()}


@pytest.fixture
def served(monkeypatch) -> list[str]:
    """The names of the backends that served each call of `chunk_simple_gla`."""
    calls: list[str] = []
    original = GluonHopperBackend.chunk_simple_gla

    def recording(self, *args, **kwargs):
        calls.append(self.backend_type)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(GluonHopperBackend, 'chunk_simple_gla', recording)
    return calls


def test_the_backend_is_registered_and_off_by_default(served):
    assert [b.backend_type for b in registry.backends()] == ['gluon_hopper']
    assert not GluonHopperBackend.is_enabled()
    chunk_simple_gla(**_arguments(T=8))
    assert served == []


def test_verifier_and_backend_take_the_parameters_of_the_public_function():
    expected = list(inspect.signature(chunk_simple_gla).parameters)
    backend = GluonHopperBackend()
    assert list(inspect.signature(backend.chunk_simple_gla_verifier).parameters) == expected
    assert list(inspect.signature(backend.chunk_simple_gla).parameters) == expected


@pytest.mark.parametrize(('case', 'architecture', 'reason'), [
    pytest.param({'dtype': torch.float32}, 'sm_90', 'dtype torch.float32: the Gluon forward takes bfloat16 or float16 '
                 'q, k and v of one dtype', id='float32'),
    pytest.param({'K': 16}, 'sm_90', 'K = 16: the Gluon forward needs a key block of at least 32 (K > 16)', id='K16'),
    pytest.param({}, 'sm_80', 'sm_80: the Gluon forward is written for sm_90 only', id='ampere'),
    pytest.param({}, 'sm_100', 'sm_100: the Gluon forward is written for sm_90 only', id='blackwell'),
    pytest.param({}, None, 'no CUDA GPU: the Gluon forward is written for sm_90 only', id='no-gpu'),
])
def test_verifier_names_what_it_does_not_take(monkeypatch, case, architecture, reason):
    monkeypatch.delenv('TRITON_INTERPRET', raising=False)
    monkeypatch.setattr(gluon_hopper, 'nvidia_target', lambda tensor: architecture)
    assert GluonHopperBackend().chunk_simple_gla_verifier(**_arguments(T=8, **case)) == (False, reason)


def test_verifier_refuses_the_interpreter_and_non_tensors(monkeypatch):
    verify = GluonHopperBackend().chunk_simple_gla_verifier
    monkeypatch.setenv('TRITON_INTERPRET', '1')
    assert verify(**_arguments(T=8)) == (False, 'Gluon kernels do not run under TRITON_INTERPRET=1')
    monkeypatch.delenv('TRITON_INTERPRET')
    assert verify(q=[[0.0]], k=[[0.0]], v=[[0.0]]) == (False, 'q, k and v must be tensors')


@pytest.mark.parametrize('case', [
    pytest.param({}, id='dense'),
    pytest.param({'dtype': torch.float16, 'K': 100, 'V': 60}, id='fp16-K100-V60'),
    pytest.param({'B': 1, 'T': 190, 'offsets': (0, 64, 100, 100, 190)}, id='varlen'),
])
def test_verifier_accepts_16_bit_inputs_on_hopper(monkeypatch, case):
    monkeypatch.delenv('TRITON_INTERPRET', raising=False)
    monkeypatch.setattr(gluon_hopper, 'nvidia_target', lambda tensor: 'sm_90')
    assert GluonHopperBackend().chunk_simple_gla_verifier(**_arguments(**case)) == (True, None)


def test_the_verifier_takes_the_gpus_it_accepts_from_the_module_targets(monkeypatch):
    monkeypatch.delenv('TRITON_INTERPRET', raising=False)
    monkeypatch.setattr(gluon_hopper, 'nvidia_target', lambda tensor: 'sm_100')
    monkeypatch.setattr(gluon_hopper, 'TARGETS', ('sm_90', 'sm_100'))
    assert GluonHopperBackend().chunk_simple_gla_verifier(**_arguments(T=8)) == (True, None)
    monkeypatch.setattr(gluon_hopper, 'TARGETS', ('sm_120',))
    assert GluonHopperBackend().chunk_simple_gla_verifier(**_arguments(T=8)) == (
        False, 'sm_100: the Gluon forward is written for sm_120 only')


def test_forced_off_and_dispatch_off_leave_the_triton_op(monkeypatch, served):
    monkeypatch.setattr(gluon_hopper, 'nvidia_target', lambda tensor: 'sm_90')
    monkeypatch.setenv(ENV_VAR, '0')
    chunk_simple_gla(**_arguments(T=8))
    monkeypatch.setenv(ENV_VAR, '1')
    monkeypatch.setenv(DISABLE_ENV_VAR, '1')
    chunk_simple_gla(**_arguments(T=8))
    assert served == []


@pytest.mark.parametrize('case', [
    pytest.param({}, id='dense-K64-V48'),
    pytest.param({'T': 70, 'K': 100, 'V': 60, 'dtype': torch.float16}, id='fp16-K100-V60'),
    pytest.param({'B': 1, 'T': 150, 'K': 32, 'V': 32, 'offsets': (0, 5, 64, 64, 65, 150)}, id='varlen-ragged-with-empty'),
    pytest.param({'B': 4, 'T': 1000, 'H': 4, 'K': 128, 'V': 128}, id='T1000-K128', marks=LARGE),
    pytest.param({'T': 300, 'K': 256, 'V': 100, 'dtype': torch.float16}, id='fp16-K256-two-key-blocks', marks=LARGE),
    pytest.param({'B': 1, 'T': 2100, 'H': 4, 'K': 128, 'V': 128, 'offsets': (0, 300, 1000, 1001, 2048, 2100)},
                 id='long-varlen-K128', marks=LARGE),
    # tiles a TMA box covers only in part: float32 partial outputs of two key blocks, a key block half past K, V below
    # the smallest value block
    pytest.param({'T': 300, 'K': 256, 'V': 128, 'dtype': torch.float16}, id='fp16-K256-V128-two-key-blocks',
                 marks=LARGE),
    pytest.param({'T': 200, 'K': 160, 'V': 64}, id='K160-a-key-block-half-past-K', marks=LARGE),
    pytest.param({'T': 200, 'K': 64, 'V': 8}, id='V8', marks=LARGE),
])
def test_forced_on_serves_16_bit_calls_with_the_triton_results(monkeypatch, served, case):
    """Where the verifier accepts (a Hopper GPU), the Gluon forward serves and agrees with the Triton forward, and so
    do the gradients the Triton backward takes from it; elsewhere the call falls through to the Triton op."""
    torch.manual_seed(0)
    args = _arguments(**case)
    monkeypatch.setenv(DISABLE_ENV_VAR, '1')
    reference_o, reference_ht, reference_gradients = _with_gradients(args)
    monkeypatch.delenv(DISABLE_ENV_VAR)
    monkeypatch.setenv(ENV_VAR, '1')
    o, ht, gradients = _with_gradients(args)
    assert served == (['gluon_hopper'] if ON_HOPPER else [])
    assert_close('o', reference_o, o, TOLERANCE['o'])
    assert_close('ht', reference_ht, ht, TOLERANCE['ht'])
    assert gradients.keys() == reference_gradients.keys() == set(GRADIENT_INPUTS)
    for name, gradient in gradients.items():
        assert_close(f'd{name}', reference_gradients[name], gradient, TOLERANCE['gradient'])


@pytest.mark.parametrize('gated', [True, False], ids=['gated', 'no-gate'])
def test_a_nan_in_one_packed_sequence_reaches_no_other(monkeypatch, served, gated):
    """Non-finite keys and values of one packed sequence leave the sequence before it finite and as the Triton forward
    gives it, although its last chunk's tile holds them (the Gluon forward's TMA boxes on Hopper)."""
    torch.manual_seed(0)
    args = _arguments(B=1, T=200, offsets=(0, 100, 200))
    if not gated:
        args['g'] = None
    args['k'][0, 110] = float('nan')
    args['v'][0, 120] = float('inf')
    monkeypatch.setenv(DISABLE_ENV_VAR, '1')
    reference = chunk_simple_gla(**args)
    monkeypatch.delenv(DISABLE_ENV_VAR)
    monkeypatch.setenv(ENV_VAR, '1')
    o, ht = chunk_simple_gla(**args)
    assert served == (['gluon_hopper'] if ON_HOPPER else [])
    assert torch.isfinite(o[:, :100]).all() and torch.isfinite(ht[0]).all()
    assert_close('o', reference[0][:, :100], o[:, :100], TOLERANCE['o'])
    assert_close('ht', reference[1][0], ht[0], TOLERANCE['ht'])
