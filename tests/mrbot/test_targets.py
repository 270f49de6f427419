# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Targets a kernel is not written for: a module's `TARGETS` declaration, read without importing it; the matrix's
'not available' cells, which nothing compiles and no rule calls a failure; and how the command and the PR body show
them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from mrbot.cli import main
from mrbot.compile.launches import Launch
from mrbot.compile.matrix import evidence_of, plan_cells
from mrbot.compile.stage import compile_change
from mrbot.evidence import Evidence, Step, checklist, conclusion
from mrbot.prepare import render_body
from mrbot.records import MrbotError
from mrbot.repo.workspace import Workspace
from mrbot.summary import ChangeSummary
from mrbot.targets import TARGETS, declared_targets

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'
SM90, SM100 = TARGETS['sm_90'], TARGETS['sm_100']


@pytest.mark.parametrize(('text', 'declared'), [
    pytest.param("TARGETS = ('sm_90',)\n", ('sm_90',), id='tuple'),
    pytest.param("TARGETS: tuple[str, ...] = ['sm_100', 'sm_90', 'sm_100']\n", ('sm_100', 'sm_90'), id='annotated-list'),
    pytest.param('DTYPES = (1,)\n', None, id='none'),
    pytest.param("if True:\n    TARGETS = ('sm_90',)\n", None, id='not-at-top-level'),
    pytest.param("TARGETS = (\n", None, id='does-not-parse'),
])
def test_a_module_declares_its_targets_at_top_level(text, declared):
    assert declared_targets(text, 'lib/ops.py') == declared


@pytest.mark.parametrize(('text', 'message'), [
    pytest.param("\nTARGETS = 'sm_90'\n", "lib/ops.py:2: TARGETS declares the targets the module's kernels are written "
                 "for: a tuple of target names such as ('sm_90',), got 'sm_90'", id='a-string'),
    pytest.param("TARGETS = ('sm90',)\n", "lib/ops.py:1: TARGETS: unknown target 'sm90'; expected some of sm_80, "
                 'sm_86, sm_89, sm_90, sm_100, sm_103, sm_120', id='a-typo'),
    pytest.param('TARGETS = ()\n', 'lib/ops.py:1: TARGETS: expected at least one target of sm_80, sm_86, sm_89, '
                 'sm_90, sm_100, sm_103, sm_120', id='empty'),
])
def test_a_declaration_that_is_not_one_is_an_error_naming_the_file(text, message):
    with pytest.raises(MrbotError) as error:
        declared_targets(text, 'lib/ops.py')
    assert str(error.value) == message


def test_our_gluon_module_declares_hopper_only():
    # read, not imported: the bot's tests run no library code (tests/ops checks the verifier honours the declaration)
    path = Path(__file__).resolve().parents[2] / 'fla/ops/simple_gla/backends/gluon_hopper.py'
    assert declared_targets(path.read_text(encoding='utf-8'), path.name) == ('sm_90',)


def _launch(config_index: int, path: str = 'lib/hopper.py') -> Launch:
    specialization = {'signature': {'x': '*fp16'}, 'constant_keys': [], 'constant_vals': [], 'attrs_keys': [],
                      'attrs_vals': [], 'options': {}}
    return Launch('square_kernel', 'lib.hopper', path, 10, 'hash', specialization, f'config {config_index}',
                  config_index, 2, origins=('bench:square',))


def test_the_first_target_a_kernel_is_written_for_gets_the_deep_compile():
    launches = [_launch(0), _launch(1), _launch(0, path='lib/other.py')]
    cells = plan_cells(launches, (SM90, SM100), 'auto', {'lib/hopper.py': ('sm_100',)})
    assert [(launch.path, launch.config_index, target.name, depth) for launch, target, depth in cells] == [
        ('lib/hopper.py', 0, 'sm_90', 'ttgir'), ('lib/hopper.py', 0, 'sm_100', 'sass'),
        ('lib/hopper.py', 1, 'sm_100', 'sass'),
        ('lib/other.py', 0, 'sm_90', 'sass'), ('lib/other.py', 0, 'sm_100', 'ttgir')]


# A WGMMA kernel: Hopper only. At the default depth sm_100 compiles it through TTGIR without complaint, and ptxas
# aborts on it (`Cannot select: intrinsic %llvm.nvvm.wgmma...`): the declaration is what keeps that cell out.
HOPPER = HEADER + textwrap.dedent('''
    import torch
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma

    TARGETS = ('sm_90',)


    @gluon.jit
    def square_kernel(x, y, BLOCK: gl.constexpr):
        tile: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
        acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK, 16])
        shared: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK, BLOCK], gl.float16)
        o_r = gl.arange(0, BLOCK, layout=gl.SliceLayout(1, tile))
        o_c = gl.arange(0, BLOCK, layout=gl.SliceLayout(0, tile))
        p_x = o_r[:, None] * BLOCK + o_c[None, :]
        x_smem = gl.allocate_shared_memory(gl.float16, [BLOCK, BLOCK], shared, gl.load(x + p_x))
        fence_async_shared()
        b_y = warpgroup_mma(x_smem, x_smem, gl.zeros([BLOCK, BLOCK], gl.float32, acc))
        gl.store(y + p_x, gl.convert_layout(b_y, tile))


    def square(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty(x.shape, dtype=torch.float32)
        square_kernel[(1,)](x, y, BLOCK=64, num_warps=4)
        return y
''')


KERNEL = f"lib/hopper.py:{next(n for n, line in enumerate(HOPPER.splitlines(), 1) if 'def square_kernel' in line)}"


@pytest.fixture
def hopper_library(repo, monkeypatch):
    repo.commit({'pyproject.toml': '[tool.mrbot]\nsource-roots = ["lib"]\n', 'lib/__init__.py': HEADER,
                 'tests/conftest.py': HEADER + "import os\n\nos.environ.setdefault('TRITON_INTERPRET', '1')\n"},
                '[Test] Base')
    repo.write({'lib/hopper.py': HOPPER, 'tests/test_hopper.py': HEADER + textwrap.dedent('''
        import torch

        from lib.hopper import square


        def test_square():
            square(torch.ones(64, 64, dtype=torch.float16))
    ''')})
    monkeypatch.chdir(repo.root)
    return repo


def test_a_target_the_module_is_not_written_for_is_not_available_and_no_failure(hopper_library, capsys):
    # through ptxas: sm_100 would abort there if it were compiled
    assert main(['compile', '--all', '--targets', 'sm_90,sm_100', '--depth', 'sass', '--format', 'json']) == 0
    report = json.loads(capsys.readouterr().out)
    assert report['findings'] == []
    cells = report['compile']['cells']
    assert [(c['kernel'], c['target'], c['status']) for c in cells] == [('square_kernel', 'sm_90', 'ok'),
                                                                          ('square_kernel', 'sm_100', 'unavailable')]
    assert cells[1]['error'] == "lib/hopper.py declares TARGETS = ('sm_90',): its kernels are written for sm_90 only"
    assert report['compile']['declared'] == {'lib/hopper.py': ['sm_90']}
    assert main(['compile', '--all', '--targets', 'sm_90,sm_100', '--depth', 'sass']) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split() == ['square_kernel', KERNEL, 'ok', '8', 'KiB,', 'spills', '0', 'B', 'not',
                                           'available']
    assert f"not available for sm_100: square_kernel ({KERNEL}), whose module declares TARGETS = ('sm_90',)" in out
    assert ': 0 compiled, 1 cached, 1 not available, in ' in out


def test_the_pr_body_says_not_available_and_ticks_the_compile_item(hopper_library):
    matrix = compile_change(Workspace.load(hopper_library.root), None, 'sm_90,sm_100', quiet=True)
    change = ChangeSummary('a' * 40, 'WORKTREE', 'main', '[Ops] Square', 'flag', (), (), (), ())
    steps = [Step('compile', 'done'), *(Step(name, 'skipped', detail='not part of this test')
                                        for name in ('tests', 'breaking', 'bench', 'update'))]
    record = Evidence('2026-12-06T00:00:00+00:00', 'Triton interpreter (CPU)', change, steps=steps,
                      compile=evidence_of(matrix))
    record.conclusion, record.checklist = conclusion(record), checklist(record)
    body = render_body(record, hopper_library.root, Workspace.load(hopper_library.root).config)
    assert ('Compiles for sm_90, sm_100: every kernel the change reaches, in each specialization its tests and '
            'benchmarks launch, compiled on the CPU with Triton') in body
    assert '(1 compiles of a specialization for a target, all of them now' in body
    row = next(line for line in body.splitlines() if line.startswith('| `square_kernel`'))
    assert row == f'| `square_kernel` (`{KERNEL}`) | ok, 8 KiB of 227 KiB shared | not available: written for sm_90 |'
    item = next(i for i in record.checklist if 'ompile' in i.item)
    assert (item.item, item.done) == ('Kernels compile for sm_90 and sm_100', True)
