# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""TST001-TST003: tests change with ops, naive references stay pure PyTorch, op tests compare gradients."""

from __future__ import annotations

KERNEL = 'import triton\n\n\ndef chunk_op(x):\n    return x\n'
NAIVE = 'import torch\n\n\ndef naive_op(x):\n    return torch.cumsum(x, 0)\n'
FORWARD_ONLY_TEST = """from fla.utils import assert_close


def test_chunk():
    x = make()
    assert_close('o', naive_op(x), chunk_op(x), 1e-3)
"""
SIMPLE_GLA = {
    'fla/ops/simple_gla/__init__.py': 'from .chunk import chunk_op\n',
    'fla/ops/simple_gla/chunk.py': KERNEL,
    'fla/ops/simple_gla/naive.py': NAIVE,
    'fla/ops/common/program.py': 'x = 1\n',
    'fla/modules/conv.py': 'x = 1\n',
    'tests/ops/test_simple_gla.py': 'def test_chunk():\n    pass\n',
}


def _where(report):
    return [(f.rule, f.severity, f.path, f.line) for f in report.findings]


def test_op_change_without_a_test_change_is_a_warning(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/ops/simple_gla/chunk.py': KERNEL + 'BT = 64\n'})
    assert _where(repo.check('TST001')) == [('TST001', 'warning', 'fla/ops/simple_gla/', 0)]


def test_module_change_without_a_test_change_is_a_warning(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/modules/conv.py': 'x = 2\n'})
    assert _where(repo.check('TST001')) == [('TST001', 'warning', 'fla/modules/', 0)]


def test_new_op_without_tests_is_an_error(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/ops/kda/__init__.py': '', 'fla/ops/kda/chunk.py': KERNEL, 'fla/ops/kda/naive.py': NAIVE})
    report = repo.check('TST001')
    assert _where(report) == [('TST001', 'error', 'fla/ops/kda/', 0)]
    assert report.findings[0].message == 'new op fla/ops/kda/ comes without tests; add tests/ops/test_kda.py'


def test_kernel_file_added_to_an_existing_op_is_not_a_new_op(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/ops/simple_gla/parallel.py': KERNEL})
    assert _where(repo.check('TST001', 'TST002')) == [('TST001', 'warning', 'fla/ops/simple_gla/', 0)]


def test_op_change_with_a_test_change_and_docs_are_fine(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/ops/simple_gla/chunk.py': KERNEL + 'BT = 64\n',
                'tests/ops/test_simple_gla.py': 'def test_chunk():\n    assert True\n'})
    assert repo.check('TST001').findings == ()
    repo.commit({})
    repo.write({'fla/ops/simple_gla/README.md': '# Simple GLA\n'})
    assert repo.check('TST001').findings == ()


def test_shared_code_needs_a_change_to_one_of_the_tests_that_reach_it(repo):
    shared = {**SIMPLE_GLA, 'fla/ops/simple_gla/chunk.py': 'from fla.ops.common.program import x\n' + KERNEL,
              'tests/ops/test_simple_gla.py': 'from fla.ops.simple_gla import chunk_op\n',
              'tests/ops/test_other.py': 'def test_other():\n    pass\n',
              'pyproject.toml': '[tool.mrbot]\nglobal-paths = []\n'}
    repo.commit(shared)
    repo.write({'fla/ops/common/program.py': 'x = 2\n', 'tests/ops/test_other.py': 'def test_other():\n    assert 1\n'})
    report = repo.check('TST001')
    assert _where(report) == [('TST001', 'warning', 'fla/ops/common/program.py', 0)]
    assert report.findings[0].message == ('shared code changed, but none of the tests that reach it did '
                                          '(tests/ops/test_simple_gla.py)')
    repo.write({'tests/ops/test_simple_gla.py': 'from fla.ops.simple_gla import chunk_op\n\nassert chunk_op\n'})
    assert repo.check('TST001').findings == ()


def test_a_platform_backend_of_shared_kernels_rewritten_with_no_test_changed_is_reported(repo):
    # upstream rewrote kernels under ops/common/backends/ with no test changed, and TST001 passed them by
    backend = ('from fla.ops.common.program import program\n\n\nclass AscendBackend:\n'
               '    def program(self, x):\n        return x\n')
    shared = {**SIMPLE_GLA, 'fla/ops/simple_gla/chunk.py': 'from fla.ops.common.program import program\n' + KERNEL,
              'fla/ops/common/program.py': 'from fla.ops.backends import dispatch\n\n\n@dispatch("common")\n'
                                           'def program(x):\n    return x\n',
              'fla/ops/common/backends/__init__.py': 'from .ascend import AscendBackend\n',
              'fla/ops/common/backends/ascend.py': backend,
              'fla/ops/backends/__init__.py': 'def dispatch(op, module=None):\n    return lambda f: f\n',
              'tests/ops/test_simple_gla.py': 'from fla.ops.simple_gla import chunk_op\n',
              'pyproject.toml': '[tool.mrbot]\nglobal-paths = []\n'}
    repo.commit(shared)
    repo.write({'fla/ops/common/backends/ascend.py': backend.replace('return x', 'return x + 0')})
    assert _where(repo.check('TST001')) == [('TST001', 'warning', 'fla/ops/common/backends/ascend.py', 0)]


def test_new_op_without_naive_reference(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/ops/kda/__init__.py': '', 'fla/ops/kda/chunk.py': KERNEL})
    report = repo.check('TST002')
    assert _where(report) == [('TST002', 'error', 'fla/ops/kda/', 0)]
    assert report.findings[0].message == 'new op fla/ops/kda/ has no naive.py reference'


def test_new_folder_of_kernels_shared_by_ops_needs_no_reference_unless_a_test_imports_it(repo):
    repo.commit(SIMPLE_GLA)
    shared = {'fla/ops/atk/__init__.py': '', 'fla/ops/atk/chunk_atk_fwd.py': KERNEL,
              'fla/ops/precond_kda/__init__.py': 'from fla.ops.atk.chunk_atk_fwd import kernel\n',
              'fla/ops/precond_kda/naive.py': NAIVE}
    repo.write(shared)
    assert repo.check('TST002').findings == ()
    repo.write({'tests/ops/test_atk.py': 'from fla.ops.atk import chunk_atk_fwd\n'})
    assert _where(repo.check('TST002')) == [('TST002', 'error', 'fla/ops/atk/', 0)]


def test_new_op_with_pure_naive_reference_is_fine(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/ops/kda/__init__.py': '', 'fla/ops/kda/chunk.py': KERNEL, 'fla/ops/kda/naive.py': NAIVE})
    assert repo.check('TST002').findings == ()


def test_triton_import_added_to_a_naive_reference(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/ops/simple_gla/naive.py': 'import torch\nfrom triton import language as tl\n' + NAIVE.split('\n', 1)[1]})
    report = repo.check('TST002')
    assert _where(report) == [('TST002', 'error', 'fla/ops/simple_gla/naive.py', 2)]
    assert report.findings[0].message == 'naive.py imports triton; the reference must be pure PyTorch'


def test_triton_import_already_in_the_base_is_not_reported(repo):
    repo.commit({**SIMPLE_GLA, 'fla/ops/simple_gla/naive.py': 'import triton.language as tl\n' + NAIVE})
    repo.write({'fla/ops/simple_gla/naive.py': 'import triton.language as tl\n' + NAIVE + '\nSCALE = 1.0\n'})
    assert repo.check('TST002').findings == ()


def test_forward_only_op_test(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'tests/ops/test_kda.py': FORWARD_ONLY_TEST})
    report = repo.check('TST003')
    assert _where(report) == [('TST003', 'warning', 'tests/ops/test_kda.py', 6)]
    assert report.findings[0].message == 'assert_close compares outputs, but no gradient is checked anywhere in this file'


def test_op_test_that_compares_gradients_is_fine(repo):
    repo.commit(SIMPLE_GLA)
    backward = FORWARD_ONLY_TEST + "    chunk_op(x).sum().backward()\n    assert_close('dx', ref_dx, x.grad, 1e-3)\n"
    autograd = FORWARD_ONLY_TEST.replace('from fla.utils import assert_close', 'import torch') \
        .replace('assert_close(', 'torch.testing.assert_close(') + '    torch.autograd.grad(chunk_op(x).sum(), x)\n'
    repo.write({'tests/ops/test_kda.py': backward, 'tests/ops/test_gla.py': autograd})
    assert repo.check('TST003').findings == ()


def test_forward_comparisons_outside_op_test_modules_are_not_checked(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'tests/ops/helpers.py': FORWARD_ONLY_TEST, 'tests/mrbot/test_kda.py': FORWARD_ONLY_TEST})
    assert repo.check('TST003').findings == ()


def test_a_forward_only_test_file_is_reported_only_when_a_comparison_is_added(repo):
    repo.commit({**SIMPLE_GLA, 'tests/ops/test_kda.py': FORWARD_ONLY_TEST})
    repo.write({'tests/ops/test_kda.py': FORWARD_ONLY_TEST + '\n\nSHAPES = [(1, 64)]\n'})
    assert repo.check('TST003').findings == ()
    repo.write({'tests/ops/test_kda.py': FORWARD_ONLY_TEST + "    assert_close('o2', ref, tri, 1e-3)\n"})
    assert [f.line for f in repo.check('TST003').findings] == [6]
