# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`fla.utils.nvidia_target`: the NVIDIA target a kernel launched on a tensor is compiled for, which backends
compare with the targets their module declares."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from triton.runtime import driver

from fla.utils import assert_close, device, nvidia_target

ON_CPU = pytest.mark.skipif(device != 'cpu', reason='the stand-in driver stands for a GPU only where there is none')


class _StandIn:
    """A driver naming a target, as the compile matrix's launch capture installs."""

    def __init__(self, backend: str, arch: int | str) -> None:
        self.target = SimpleNamespace(backend=backend, arch=arch)

    def get_current_target(self):
        return self.target


@ON_CPU
def test_a_tensor_off_the_gpu_has_no_target_without_a_driver():
    assert nvidia_target(torch.zeros(1)) is None


@ON_CPU
@pytest.mark.parametrize(('backend', 'arch', 'target'), [
    pytest.param('cuda', 90, 'sm_90', id='hopper'),
    pytest.param('cuda', 100, 'sm_100', id='blackwell'),
    pytest.param('hip', 'gfx942', None, id='amd'),
])
def test_a_stand_in_driver_names_the_target(monkeypatch, backend, arch, target):
    monkeypatch.setattr(driver, '_active', _StandIn(backend, arch))
    assert nvidia_target(torch.zeros(1)) == target


@pytest.mark.skipif(device == 'cpu', reason='needs a GPU')
def test_a_tensor_on_the_gpu_has_the_target_of_its_gpu():
    target = nvidia_target(torch.zeros(1, device=device))
    assert target is None or (target.startswith('sm_') and target[3:].isdigit())


def test_a_sum_whose_terms_cancel_is_judged_against_the_terms_sizes():
    terms = torch.tensor([[1000.0, -999.0], [500.0, -499.5]], dtype=torch.float64)
    ref = terms.sum(1)
    # off by 1e-5 of the terms' sizes, and by 1.3% of the sums
    rounded = ref + torch.tensor([0.01, -0.01], dtype=torch.float64)
    with pytest.raises(AssertionError, match='relative RMS error 1.26'):
        assert_close('sum', ref, rounded, 2e-3)
    assert_close('sum', ref, rounded, 2e-3, magnitude=terms.abs().sum(1))
    with pytest.raises(AssertionError, match='sum: relative RMS error'):
        assert_close('sum', ref, ref + 10, 2e-3, magnitude=terms.abs().sum(1))
