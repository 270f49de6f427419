# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""CMP001-CMP004: what the compilation matrix found, reported once per kernel and problem, where it points."""

from __future__ import annotations

from mrbot.compile.launches import Capture, Launch
from mrbot.compile.matrix import Cell, CellResult, CompileMatrix
from mrbot.records.compiles import Kernel
from mrbot.targets import TARGETS

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'
SM90, SM100 = TARGETS['sm_90'], TARGETS['sm_100']


def launch(kernel: str = 'state_kernel', K: int = 128, warps: int = 4, origin: str = 'tests/test_op.py::test_big') -> Launch:
    specialization = {'signature': {'x': '*bf16', 'K': 'constexpr', 'BK': 'constexpr'},
                      'constant_keys': [[1], [2]], 'constant_vals': [K, min(K, 64)], 'attrs_keys': [], 'attrs_vals': [],
                      'options': {'num_warps': warps}}
    return Launch(kernel, 'lib.kernels', 'lib/kernels.py', 10, 'hash', specialization, origins=(origin,))


def matrix(*cells: Cell, unlaunched: tuple[Kernel, ...] = ()) -> CompileMatrix:
    return CompileMatrix((SM90, SM100), cells, Capture((), (), (), (), 0.0), '3.6.0', 2, 1.0, ('lib/kernels.py',),
                         unlaunched)


def ok(shared: int = 1024, spills: int | None = None) -> CellResult:
    return CellResult('ok', 'sass' if spills is not None else 'ttgir', shared=shared, registers=255 if spills else None,
                      spills=spills)


def failed(error: str, line: int = 14, status: str = 'error') -> CellResult:
    return CellResult(status, 'ttgir', error=error, error_path='lib/kernels.py', error_line=line)


def test_a_kernel_that_does_not_compile_is_one_error_at_the_line_the_compiler_names(repo):
    repo.commit({'lib/kernels.py': HEADER})
    error = "CompilationError: Loop-carried variable _ has initial type int32 but is re-assigned to <['{}'], int1>"
    found = repo.check('CMP001', matrix=matrix(
        Cell(launch(K=32), SM90, failed(error.format(32))), Cell(launch(K=32), SM100, failed(error.format(32))),
        Cell(launch(K=128), SM90, failed(error.format(64))), Cell(launch(K=128), SM100, failed(error.format(64))),
        Cell(launch(kernel='other_kernel'), SM90, ok()))).findings
    assert [(f.rule, f.severity, f.path, f.line) for f in found] == [('CMP001', 'error', 'lib/kernels.py', 14)]
    assert found[0].message.startswith('state_kernel (lib/kernels.py:10) does not compile for sm_90 and sm_100 with '
                                       'Triton 3.6.0: CompilationError: Loop-carried variable _')
    assert '4 of 4 specializations, e.g. K=32, BK=32, num_warps=4 (launched by tests/test_op.py::test_big)' in found[0].message


def test_a_compiler_abort_and_a_compile_past_its_time_are_errors(repo):
    repo.commit({'lib/kernels.py': HEADER})
    found = repo.check('CMP001', matrix=matrix(
        Cell(launch(), SM100, failed('the compiler aborted (SIGABRT): Assertion `rank >= 2` failed.', status='crashed')),
        Cell(launch(kernel='slow_kernel'), SM90, failed('no result after 900 s', line=10, status='timeout')))).findings
    assert [(f.severity, f.message.split(':')[0]) for f in found] == [
        ('error', 'slow_kernel (lib/kernels.py'), ('error', 'state_kernel (lib/kernels.py')]
    assert 'did not finish compiling for sm_90' in found[0].message
    assert 'does not compile for sm_100 with Triton 3.6.0: the compiler aborted (SIGABRT)' in found[1].message


def test_kernels_that_compile_everywhere_give_no_finding(repo):
    repo.commit({'lib/kernels.py': HEADER})
    assert repo.check('CMP001', 'CMP002', matrix=matrix(Cell(launch(), SM90, ok()), Cell(launch(), SM100, ok()))
                      ).findings == ()


def test_no_matrix_no_compile_finding(repo):
    repo.commit({'lib/kernels.py': HEADER})
    assert repo.check('CMP001', 'CMP002', 'CMP003', 'CMP004').findings == ()


def test_shared_memory_over_the_limit_names_the_worst_config_even_when_others_fit(repo):
    repo.commit({'lib/kernels.py': HEADER})
    found = repo.check('CMP002', matrix=matrix(
        Cell(launch(warps=4), SM90, ok(238_080)), Cell(launch(warps=8), SM90, ok(245_760)),
        Cell(launch(K=64), SM90, ok(100_000)), Cell(launch(warps=4), SM100, ok(200_000)))).findings
    assert [(f.rule, f.severity, f.path, f.line) for f in found] == [('CMP002', 'error', 'lib/kernels.py', 10)]
    assert found[0].message == ('state_kernel asks for 245,760 bytes of shared memory per block on sm_90, over its '
                                '232,448: 2 of 3 specializations, e.g. K=128, BK=64, num_warps=8 (launched by '
                                'tests/test_op.py::test_big)')


def test_spills_are_a_note_with_the_worst_specialization(repo):
    repo.commit({'lib/kernels.py': HEADER})
    found = repo.check('CMP003', matrix=matrix(Cell(launch(warps=4), SM90, ok(spills=3712)),
                                               Cell(launch(warps=8), SM90, ok(spills=0)))).findings
    assert [(f.rule, f.severity) for f in found] == [('CMP003', 'note')]
    assert found[0].message == ('state_kernel spills 3,712 bytes (stores and loads) on sm_90 with 255 registers per '
                                'thread, at K=128, BK=64, num_warps=4; 1 of the specializations compiled through ptxas '
                                'spill')


def test_no_spill_or_no_ptxas_figure_is_no_note(repo):
    repo.commit({'lib/kernels.py': HEADER})
    assert repo.check('CMP003', matrix=matrix(Cell(launch(), SM90, ok(spills=0)), Cell(launch(), SM100, ok()))
                      ).findings == ()


def test_a_kernel_no_test_launches_is_a_warning(repo):
    repo.commit({'lib/kernels.py': HEADER})
    found = repo.check('CMP004', matrix=matrix(Cell(launch(), SM90, ok()),
                                               unlaunched=(Kernel('lib/kernels.py', 'backward_kernel', 30),))).findings
    assert [(f.rule, f.severity, f.path, f.line, f.message) for f in found] == [
        ('CMP004', 'warning', 'lib/kernels.py', 30, 'backward_kernel was launched by none of the tests and benchmark rows '
                                                 'that reach it, so it was not compiled')]


def test_every_launched_kernel_is_no_note(repo):
    repo.commit({'lib/kernels.py': HEADER})
    assert repo.check('CMP004', matrix=matrix(Cell(launch(), SM90, ok()))).findings == ()


def test_a_target_the_kernel_is_not_written_for_is_no_finding(repo):
    repo.commit({'lib/kernels.py': HEADER})
    unavailable = CellResult('unavailable', 'ttgir', error="lib/kernels.py declares TARGETS = ('sm_90',): its kernels "
                                                          'are written for sm_90 only', error_path='lib/kernels.py',
                             error_line=10)
    assert repo.check('CMP001', 'CMP002', 'CMP003', 'CMP004', matrix=matrix(
        Cell(launch(), SM90, ok(spills=0)), Cell(launch(), SM100, unavailable))).findings == ()
