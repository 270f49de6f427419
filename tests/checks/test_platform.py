# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""PLT001: direct platform checks and 'cuda' literals in tests and library code instead of the fla.utils helpers."""

from __future__ import annotations

DIRECT = '''import pytest
import torch

ON_CUDA = torch.cuda.is_available()
MAJOR = torch.cuda.get_device_capability(0)[0]
NAME = torch.cuda.get_device_name()
ON_AMD = torch.version.hip is not None
CUDA_VERSION = torch.version.cuda
ON_INTEL = torch.xpu.is_available()


def test_op():
    x = torch.randn(4).cuda()
    y = torch.zeros(4, device='cuda')
    z = torch.ones(4, device=torch.device('cuda:1'))
    v = (torch.ones(4)
         .cuda())
    w = torch.ones(4).to('cuda')
    assert x.shape == y.shape == z.shape == w.shape == v.shape
'''
DIRECT_LINES = [4, 5, 6, 7, 8, 9, 13, 14, 15, 17, 18]

HELPERS = '''import torch

from fla.utils import IS_NVIDIA_HOPPER, device, device_platform

# torch.cuda.is_available() is asked once, in fla.utils
ON_GPU = device != 'cpu'
ON_NVIDIA = device_platform == 'cuda'


def test_op():
    x = torch.zeros(4, device=device).to(device)
    assert IS_NVIDIA_HOPPER or x.device.type in ('cpu', 'cuda')
'''


def _where(report) -> list[tuple[str, str, int]]:
    return [(f.rule, f.path, f.line) for f in report.findings]


def test_direct_checks_and_cuda_literals_in_tests_are_reported(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({'tests/ops/test_demo.py': DIRECT})
    report = repo.check('PLT001')
    assert _where(report) == [('PLT001', 'tests/ops/test_demo.py', line) for line in DIRECT_LINES]
    assert {f.severity for f in report.findings} == {'warning'}
    assert report.findings[0].message == ("`torch.cuda.is_available` checks the platform directly; use `fla.utils.device` "
                                          "(`device != 'cpu'`) or `IS_NVIDIA` / `IS_AMD` from `fla.utils`")
    assert report.findings[1].message == ('`torch.cuda.get_device_capability` checks the platform directly; use '
                                          '`IS_NVIDIA_HOPPER` / `IS_NVIDIA_BLACKWELL` from `fla.utils`')


def test_library_code_is_checked_but_not_the_helpers_module_nor_other_folders(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({
        'fla/ops/demo/chunk.py': 'import torch\n\nON_AMD = bool(torch.version.hip)\n',
        'fla/utils.py': DIRECT,
        'fla/utils/_device.py': DIRECT,
        'benchmarks/demo.py': DIRECT,
    })
    assert _where(repo.check('PLT001')) == [('PLT001', 'fla/ops/demo/chunk.py', 3)]


def test_platform_helpers_are_not_reported(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({'tests/ops/test_demo.py': HELPERS})
    assert _where(repo.check('PLT001')) == []


def test_direct_check_already_in_the_base_is_not_reported(repo):
    repo.commit({'tests/ops/test_demo.py': DIRECT})
    repo.write({'tests/ops/test_demo.py': DIRECT + '\n\ndef test_more():\n    assert True\n'})
    assert _where(repo.check('PLT001')) == []


def test_a_test_pinning_a_platform_flag_to_the_raw_capability_is_not_reported(repo):
    # upstream's: a test that asserts a flag of fla.utils matches the device's exact capability has the query as its
    # subject; the skip that guards it goes through the flag, as it should
    repo.commit({'README.md': 'demo\n'})
    pinned = ("import pytest\nimport torch\n\nfrom fla.utils import IS_NVIDIA_HOPPER\n\n\n"
              "@pytest.mark.skipif(not IS_NVIDIA_HOPPER, reason='the flag is set on Hopper alone')\n"
              "def test_the_hopper_flag_is_the_exact_capability():\n"
              "    assert torch.cuda.get_device_capability()[0] == 9\n\n\n"
              "def test_op():\n    if torch.cuda.get_device_capability()[0] == 9:\n        assert True\n")
    repo.write({'tests/ops/test_demo.py': pinned})
    assert [f.line for f in repo.check('PLT001').findings] == [pinned.splitlines().index(
        '    if torch.cuda.get_device_capability()[0] == 9:') + 1]
