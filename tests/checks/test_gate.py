# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""GATE001-GATE004: the correctness gate stays frozen, strict, complete and at full precision."""

from __future__ import annotations

import pytest

KERNEL = """import triton.language as tl


def chunk_fwd(BK, BV):
    b_h = tl.zeros([BK, BV], dtype=tl.float32)
    return b_h
"""
OP_TEST = """import pytest
import torch

from fla.utils import assert_close

ON_GPU = False
TOLERANCE = {
    torch.float32: {'default': 2e-3, 'dg': 2e-3},
    torch.bfloat16: {'default': 1.5e-2, 'dg': 5e-2},
}
CASES = [
    pytest.param(1, 13, torch.float32, id='T13-shorter-than-chunk'),
    pytest.param(2, 100, torch.bfloat16, id='T100-bf16'),
]


@pytest.mark.parametrize(('B', 'T', 'dtype'), CASES)
def test_chunk(B, T, dtype):
    ref, tri = run(B, T, dtype)
    assert_close('o', ref, tri, TOLERANCE[dtype]['default'])


@pytest.mark.skipif(not ON_GPU, reason='large shape: runs compiled on a GPU')
@pytest.mark.parametrize('T', [63, 100, 2048])
def test_varlen(T):
    ref, tri = run(1, T, torch.float32)
    assert_close('o', ref, tri, ratio=1e-3)
"""
SIMPLE_GLA = {
    'fla/ops/simple_gla/chunk.py': KERNEL,
    'fla/ops/simple_gla/naive.py': 'import torch\n',
    'fla/ops/kda/chunk.py': KERNEL,
    'tests/ops/test_simple_gla.py': OP_TEST,
    'tests/ops/test_kda.py': OP_TEST,
}
FASTER_KERNEL = KERNEL.replace('return b_h', 'return b_h * 1')


def _where(report):
    return [(f.rule, f.path, f.line) for f in report.findings]


def _messages(report):
    return [f.message for f in report.findings]


def _line(text, fragment):
    return next(number for number, line in enumerate(text.splitlines(), 1) if fragment in line)


def test_performance_change_that_edits_its_tests_and_reference(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/ops/simple_gla/chunk.py': FASTER_KERNEL, 'fla/ops/simple_gla/naive.py': 'import torch\n\nx = 1\n',
                'tests/ops/test_simple_gla.py': OP_TEST + '\n# tuned\n'})
    report = repo.check('GATE001', title='[Perf] Fuse the state update')
    assert _where(report) == [('GATE001', 'fla/ops/simple_gla/naive.py', 0), ('GATE001', 'tests/ops/test_simple_gla.py', 0)]
    assert _messages(report)[1] == ('tests/ops/test_simple_gla.py is modified: a performance change must leave its gate '
                                    'frozen (the tests and naive.py of simple_gla)')


def test_performance_flag_and_a_deleted_test_file(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/ops/simple_gla/chunk.py': FASTER_KERNEL, 'tests/ops/test_simple_gla.py': None})
    assert _where(repo.check('GATE001', title='[Simple GLA] Faster', perf=True)) == [
        ('GATE001', 'tests/ops/test_simple_gla.py', 0)]


@pytest.mark.parametrize(('title', 'files'), [
    pytest.param('[Perf] Faster chunk', {'fla/ops/simple_gla/chunk.py': FASTER_KERNEL}, id='kernel-only'),
    pytest.param('[Perf] Faster chunk', {'fla/ops/simple_gla/chunk.py': FASTER_KERNEL,
                                         'tests/ops/test_kda.py': OP_TEST + '\n# other op\n'}, id='other-ops-test'),
    pytest.param('[Fix] Correct chunk', {'fla/ops/simple_gla/chunk.py': FASTER_KERNEL,
                                         'tests/ops/test_simple_gla.py': OP_TEST + '\n# regression\n'}, id='not-perf'),
])
def test_gate_left_frozen_or_not_a_performance_change(repo, title, files):
    repo.commit(SIMPLE_GLA)
    repo.write(files)
    assert repo.check('GATE001', title=title).findings == ()


@pytest.mark.parametrize(('old', 'new', 'fragment', 'message'), [
    pytest.param("'default': 2e-3, 'dg': 2e-3", "'default': 5e-3, 'dg': 2e-3", '5e-3',
                 'tolerance loosened from 2e-3 to 5e-3', id='table-entry'),
    pytest.param('ratio=1e-3', 'ratio=1e-2', 'ratio=1e-2', 'tolerance loosened from 1e-3 to 1e-2', id='ratio-keyword'),
])
def test_loosened_tolerance(repo, old, new, fragment, message):
    repo.commit(SIMPLE_GLA)
    head = OP_TEST.replace(old, new)
    repo.write({'tests/ops/test_simple_gla.py': head})
    report = repo.check('GATE002')
    assert _where(report) == [('GATE002', 'tests/ops/test_simple_gla.py', _line(head, fragment))]
    assert _messages(report) == [message]


def test_tightened_tolerance_and_other_numbers_are_fine(repo):
    repo.commit({**SIMPLE_GLA, 'tests/ops/test_kda.py': OP_TEST + 'values = x.tolist()[0]\n'})
    repo.write({'tests/ops/test_simple_gla.py': OP_TEST.replace("'dg': 5e-2", "'dg': 2e-2").replace('2048', '4096'),
                'tests/ops/test_kda.py': OP_TEST + 'values = x.tolist()[1]\n'})
    assert repo.check('GATE002').findings == ()


def test_loose_tolerance_already_in_the_base_is_not_reported(repo):
    loose = OP_TEST.replace("'default': 2e-3", "'default': 5e-1")
    repo.commit({**SIMPLE_GLA, 'tests/ops/test_simple_gla.py': loose})
    repo.write({'tests/ops/test_simple_gla.py': loose.replace("'dg': 5e-2", "'dg': 4e-2")})
    assert repo.check('GATE002').findings == ()


def test_removed_case_is_reported_at_its_list_even_when_the_change_only_deletes(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'tests/ops/test_simple_gla.py': OP_TEST.replace("    pytest.param(2, 100, torch.bfloat16, id='T100-bf16'),\n",
                                                                '')})
    report = repo.check('GATE003')
    assert _where(report) == [('GATE003', 'tests/ops/test_simple_gla.py', _line(OP_TEST, 'CASES = ['))]
    assert _messages(report) == ["parametrized case 'T100-bf16' of list CASES removed"]


def test_removed_inline_case_is_reported_at_its_decorator(repo):
    repo.commit(SIMPLE_GLA)
    head = OP_TEST.replace('[63, 100, 2048]', '[63, 100]')
    repo.write({'tests/ops/test_simple_gla.py': head})
    report = repo.check('GATE003')
    assert _where(report) == [('GATE003', 'tests/ops/test_simple_gla.py', _line(head, "parametrize('T'"))]
    assert _messages(report) == ['parametrized case 2048 of test_varlen removed']


def test_added_reordered_and_renamed_cases_are_fine(repo):
    repo.commit(SIMPLE_GLA)
    first_case = "    pytest.param(1, 13, torch.float32, id='T13-shorter-than-chunk'),\n"
    head = (OP_TEST.replace('[63, 100, 2048]', '[2048, 100, 63, 777]')
            .replace('def test_varlen', 'def test_varlen_dense')
            .replace(first_case, first_case + "    pytest.param(1, 7, torch.float32, id='T7'),\n")
            .replace('torch.bfloat16, id=', 'torch.bfloat16,\n                 id='))
    repo.write({'tests/ops/test_simple_gla.py': head})
    assert repo.check('GATE003').findings == ()


def test_skip_added(repo):
    repo.commit(SIMPLE_GLA)
    head = OP_TEST.replace('def test_chunk', "@pytest.mark.skip(reason='flaky')\ndef test_chunk")
    repo.write({'tests/ops/test_simple_gla.py': head})
    report = repo.check('GATE003')
    assert _where(report) == [('GATE003', 'tests/ops/test_simple_gla.py', _line(head, 'pytest.mark.skip('))]
    assert _messages(report) == ['pytest.mark.skip added: the case no longer runs in the gate']


def test_a_module_skip_moved_onto_the_tests_that_need_it_is_not_a_new_skip(repo):
    # upstream moved a flash-attn skipif off the whole module onto the two tests that need it: more runs, not fewer
    mark = "pytest.mark.skipif(not HAS_FLASH, reason='needs flash-attn')"
    first_test = "]\n\n\n@pytest.mark.parametrize(('B'"
    base = OP_TEST.replace(first_test, first_test.replace(']', f']\npytestmark = {mark}', 1), 1)
    assert 'pytestmark' in base
    repo.commit({**SIMPLE_GLA, 'tests/ops/test_simple_gla.py': base})
    head = OP_TEST.replace('def test_chunk', f'@{mark}\ndef test_chunk', 1).replace(
        "@pytest.mark.skipif(not ON_GPU", f"@{mark}\n@pytest.mark.skipif(not ON_GPU", 1)
    repo.write({'tests/ops/test_simple_gla.py': head})
    assert repo.check('GATE003').findings == ()
    # with the module's skip kept, a skip on a test is new
    other = base.replace('def test_chunk', "@pytest.mark.skipif(IS_SLOW, reason='slow')\ndef test_chunk", 1)
    repo.write({'tests/ops/test_simple_gla.py': other})
    assert _where(repo.check('GATE003')) == [('GATE003', 'tests/ops/test_simple_gla.py', _line(other, 'IS_SLOW'))]


def test_skip_on_an_added_test_is_not_reported_and_on_an_existing_one_is(repo):
    repo.commit(SIMPLE_GLA)
    added = ("\n\n@pytest.mark.skipif(device_platform == 'intel', reason='Intel Triton failure')\n"
             "@pytest.mark.parametrize('T', [70, 200])\ndef test_partial_last_chunk(T):\n"
             "    if T > 100:\n        pytest.skip('too long for the interpreter')\n    assert T\n")
    head = OP_TEST.replace('def test_chunk', "@pytest.mark.xfail(reason='flaky')\ndef test_chunk") + added
    repo.write({'tests/ops/test_simple_gla.py': head})
    assert _where(repo.check('GATE003')) == [('GATE003', 'tests/ops/test_simple_gla.py', _line(head, 'mark.xfail('))]


@pytest.mark.parametrize('skip', [
    pytest.param("@pytest.mark.skipif(IS_NPU, reason='not on NPU yet')\n", id='another-platforms-skip'),
    pytest.param("@pytest.mark.skipif(not (IS_NVIDIA or IS_NPU), reason='CUDA or NPU')\n", id='skip-off-nvidia'),
    pytest.param("@skip_npu\n", id='a-named-mark-for-another-platform'),
])
def test_skips_the_gate_runs_past_take_no_case_out_of_it(repo, skip):
    # upstream's GATE003 false alarms: a skip that holds only on another platform, where the gate runs on NVIDIA GPUs
    repo.commit(SIMPLE_GLA)
    named = "skip_npu = pytest.mark.skipif(fu.IS_NPU, reason='not on NPU yet')\n\n\n"
    head = OP_TEST.replace('CASES = [', named + 'CASES = [').replace('def test_chunk', skip + 'def test_chunk')
    repo.write({'tests/ops/test_simple_gla.py': head})
    assert repo.check('GATE003').findings == ()


def test_a_skip_under_backend_dispatch_or_a_mark_for_new_tests_only_takes_no_case_out_of_the_gate(repo):
    repo.commit(SIMPLE_GLA)
    dispatched = ("    if os.environ.get('FLA_DISABLE_BACKEND_DISPATCH') != '1' and B > 1:\n"
                  "        pytest.skip(reason='not in the backend; the Triton run has it')\n")
    fresh = ("\n\nFRESH = pytest.mark.skipif(not HAS_PACKAGE, reason='needs the package')\n\n\n"
             "@FRESH\ndef test_fresh():\n    assert True\n")
    head = OP_TEST.replace("    ref, tri = run(B, T, dtype)\n", dispatched + "    ref, tri = run(B, T, dtype)\n") + fresh
    repo.write({'tests/ops/test_simple_gla.py': head})
    assert repo.check('GATE003').findings == ()
    # the same mark on a test the base had, or a skip that holds on one of the gate's GPUs, takes cases out
    taken = head.replace('def test_chunk', '@FRESH\ndef test_chunk', 1).replace(
        "@pytest.mark.parametrize('T', [63", "@pytest.mark.skipif(IS_NVIDIA_HOPPER, reason='later')\n"
                                            "@pytest.mark.parametrize('T', [63")
    repo.write({'tests/ops/test_simple_gla.py': taken})
    assert _where(repo.check('GATE003')) == [('GATE003', 'tests/ops/test_simple_gla.py', _line(taken, 'IS_NVIDIA_HOPPER')),
                                             ('GATE003', 'tests/ops/test_simple_gla.py', _line(taken, 'FRESH = '))]


def test_skip_already_in_the_base_moved_or_in_a_new_file_is_not_reported(repo):
    repo.commit(SIMPLE_GLA)
    skipif = "@pytest.mark.skipif(not ON_GPU, reason='large shape: runs compiled on a GPU')\n"
    parametrize = "@pytest.mark.parametrize('T', [63, 100, 2048])\n"
    moved = OP_TEST.replace(skipif, '').replace(parametrize, parametrize + skipif)
    repo.write({'tests/ops/test_simple_gla.py': moved, 'tests/ops/test_gla.py': OP_TEST})
    assert repo.check('GATE003').findings == ()


def test_tf32_as_a_parametrized_op_mode_is_not_a_setting(repo):
    repo.commit(SIMPLE_GLA)
    cases = ("\n\n@pytest.mark.parametrize('precision', ['ieee', 'tf32'])\ndef test_modes(precision):\n    assert precision\n"
             "\n\nMODES = [pytest.param('tf32', id='tf32')]\n")
    repo.write({'tests/ops/test_simple_gla.py': SIMPLE_GLA['tests/ops/test_simple_gla.py'] + cases})
    assert repo.check('GATE004').findings == ()


@pytest.mark.parametrize(('path', 'line', 'message'), [
    pytest.param('tests/ops/test_simple_gla.py', 'torch.backends.cuda.matmul.allow_tf32 = True',
                 'torch.backends.cuda.matmul.allow_tf32 = True turns TF32 on', id='allow-in-test'),
    pytest.param('fla/ops/simple_gla/chunk.py', "torch.set_float32_matmul_precision('high')",
                 "set_float32_matmul_precision('high') turns TF32 on", id='matmul-precision-in-library'),
    pytest.param('tests/ops/test_simple_gla.py', "PRECISION = 'tf32'", "'tf32' turns TF32 on", id='string-in-test'),
])
def test_tf32_turned_on(repo, path, line, message):
    repo.commit(SIMPLE_GLA)
    repo.write({path: SIMPLE_GLA[path] + line + '\n'})
    report = repo.check('GATE004')
    assert _where(report) == [('GATE004', path, len(SIMPLE_GLA[path].splitlines()) + 1)]
    assert _messages(report) == [message]


def test_accumulator_narrowed(repo):
    repo.commit(SIMPLE_GLA)
    repo.write({'fla/ops/simple_gla/chunk.py': KERNEL.replace('dtype=tl.float32', 'dtype=tl.bfloat16')})
    report = repo.check('GATE004')
    assert _where(report) == [('GATE004', 'fla/ops/simple_gla/chunk.py', _line(KERNEL, 'tl.zeros'))]
    assert _messages(report) == ['precision narrowed from tl.float32 to tl.bfloat16']


def test_full_precision_and_library_launch_config_are_fine(repo):
    narrow = KERNEL.replace('dtype=tl.float32', 'dtype=tl.bfloat16')
    repo.commit({**SIMPLE_GLA, 'fla/ops/simple_gla/chunk.py': narrow})
    launch_config = "\n\ndef config(exact):\n    return {'DOT_PRECISION': 'ieee' if exact else 'tf32'}\n"
    repo.write({'fla/ops/simple_gla/chunk.py': KERNEL + launch_config,
                'tests/ops/test_simple_gla.py': OP_TEST + "# allow_tf32 = True would be faster\n"
                                                          "torch.set_float32_matmul_precision('highest')\n"})
    assert repo.check('GATE004').findings == ()


def test_tf32_already_in_the_base_is_not_reported(repo):
    relaxed = OP_TEST + 'torch.backends.cuda.matmul.allow_tf32 = True\n'
    repo.commit({**SIMPLE_GLA, 'tests/ops/test_simple_gla.py': relaxed})
    repo.write({'tests/ops/test_simple_gla.py': relaxed + 'torch.backends.cudnn.allow_tf32 = False\n'})
    assert repo.check('GATE004').findings == ()
