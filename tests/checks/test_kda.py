# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""KDA001: a change to one of KDA's gate paths, the safe gate and the softplus gate, without the other is noted."""

from __future__ import annotations

import textwrap

import pytest

GATE = 'fla/ops/kda/inputs.py'
KERNEL = 'fla/ops/kda/gate.py'

ONE_LINE_GATE = textwrap.dedent('''
    import torch
    import torch.nn.functional as F


    def kda_gate(g, A_log, dt_bias, safe_gate, lower_bound):
        """The log decay of a raw gate."""
        x = g.float() + dt_bias
        rate = A_log.float().exp()[:, None]
        return lower_bound * torch.sigmoid(rate * x) if safe_gate else -rate * F.softplus(x)


    def check(safe_gate, lower_bound):
        if safe_gate and not -5 <= lower_bound < 0:
            raise ValueError('lower_bound: expected a number in [-5, 0)')
''').lstrip()

BRANCHED_KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def gate_kernel(g, A_log, LOWER_BOUND, SAFE_GATE: tl.constexpr):
        b_a = tl.exp(tl.load(A_log))
        b_x = tl.load(g)
        if not SAFE_GATE:
            b_g = -b_a * tl.log(1 + tl.exp(b_x))
        else:
            b_x = b_a * b_x
            b_g = LOWER_BOUND * tl.sigmoid(b_x)
        return b_g
''').lstrip()

PASS_THROUGH = textwrap.dedent('''
    from fla.ops.kda.inputs import run_kda


    def chunk_kda(q, k, v, g, beta, use_gate_in_kernel=False, A_log=None, dt_bias=None):
        return run_kda(q, k, v, g, beta, use_gate_in_kernel, A_log, dt_bias)
''').lstrip()


@pytest.fixture
def repo(repo):
    repo.commit({GATE: ONE_LINE_GATE, KERNEL: BRANCHED_KERNEL, 'fla/ops/kda/chunk.py': PASS_THROUGH,
                 'fla/ops/simple_gla/gate.py': ONE_LINE_GATE})
    return repo


def _line(text: str, fragment: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if fragment in line)


def _findings(report) -> list[tuple[str, str, str, int]]:
    return [(f.rule, f.severity, f.path, f.line) for f in report.findings]


def test_one_sided_change_of_the_safe_gate_on_a_shared_line_is_noted(repo):
    head = ONE_LINE_GATE.replace('torch.sigmoid(rate * x)', 'torch.sigmoid(rate * x.clamp(-20, 20))')
    repo.write({GATE: head})
    report = repo.check('KDA001')
    line = _line(head, 'clamp')
    assert _findings(report) == [('KDA001', 'note', GATE, line)]
    assert report.findings[0].message == (
        f'the safe gate path (`lower_bound * sigmoid`) changed on line {line} but the softplus gate path did not; '
        'confirm that the change is meant to be one-sided')


def test_one_sided_change_of_the_softplus_branch_under_not_is_noted(repo):
    head = BRANCHED_KERNEL.replace('tl.log(1 + tl.exp(b_x))', 'tl.log(1 + tl.exp(tl.minimum(b_x, 20.0)))')
    repo.write({KERNEL: head})
    report = repo.check('KDA001')
    assert _findings(report) == [('KDA001', 'note', KERNEL, _line(head, 'tl.minimum'))]
    assert report.findings[0].message.startswith('the softplus gate path changed on line')


def test_removing_lines_of_one_branch_only_is_noted_on_the_file(repo):
    repo.write({KERNEL: BRANCHED_KERNEL.replace('        b_x = b_a * b_x\n', '')})
    report = repo.check('KDA001')
    assert _findings(report) == [('KDA001', 'note', KERNEL, 0)]
    assert 'safe gate path (`lower_bound * sigmoid`) changed (lines removed)' in report.findings[0].message


@pytest.mark.parametrize('files', [
    pytest.param({GATE: ONE_LINE_GATE.replace('sigmoid(rate * x)', 'sigmoid(rate * x.clamp(-20, 20))')
                  .replace('softplus(x)', 'softplus(x.clamp(-20, 20))')}, id='both-sides-of-one-line'),
    pytest.param({KERNEL: BRANCHED_KERNEL.replace('tl.exp(b_x))', 'tl.exp(b_x - 1.0))').replace('b_a * b_x', 'b_a * b_x * 2')},
                 id='both-branches'),
    pytest.param({KERNEL: BRANCHED_KERNEL.replace('if not SAFE_GATE:', 'if not SAFE_GATE or LOWER_BOUND == 0:')},
                 id='the-test-decides-both'),
])
def test_change_to_both_paths_is_fine(repo, files):
    repo.write(files)
    assert repo.check('KDA001').findings == ()


@pytest.mark.parametrize('files', [
    pytest.param({GATE: ONE_LINE_GATE.replace('x = g.float() + dt_bias', 'x = g.float() + dt_bias.float()')},
                 id='shared-input-of-both-paths'),
    pytest.param({GATE: ONE_LINE_GATE.replace('expected a number', 'expected a float')}, id='string-only'),
    pytest.param({GATE: ONE_LINE_GATE.replace('raise ValueError', 'raise TypeError')}, id='raise-in-a-safe-branch'),
    pytest.param({GATE: ONE_LINE_GATE.replace('"""The log decay of a raw gate."""', '"""The log decay."""')},
                 id='docstring-only'),
    pytest.param({'fla/ops/kda/chunk.py': PASS_THROUGH.replace('A_log=None, dt_bias=None',
                                                               'A_log=None, dt_bias=None, safe_gate=False, lower_bound=None')
                  .replace('A_log, dt_bias)', 'A_log, dt_bias, safe_gate, lower_bound)')}, id='passing-options-on'),
    pytest.param({'fla/ops/simple_gla/gate.py': ONE_LINE_GATE.replace('sigmoid(rate * x)', 'sigmoid(rate * x * 2)')},
                 id='outside-kda'),
])
def test_change_to_neither_path_or_outside_kda_is_fine(repo, files):
    repo.write(files)
    assert repo.check('KDA001').findings == ()


def test_new_file_with_one_path_only_is_noted(repo):
    safe_only = 'def safe_gate_fwd(x, rate, lower_bound):\n    return lower_bound * x.mul(rate).sigmoid()\n'
    repo.write({'fla/ops/kda/safe_gate.py': safe_only})
    assert _findings(repo.check('KDA001')) == [('KDA001', 'note', 'fla/ops/kda/safe_gate.py', 2)]


@pytest.mark.parametrize('title, body', [
    ('[KDA] Clamp the lower-bound gate', ''),
    ('[KDA] Clamp the gate', 'Only the safe gate saturates; the softplus path is unbounded by design.'),
])
def test_a_one_sided_change_the_pr_names_is_not_noted(repo, title, body):
    # the note asks the author to say the change is meant for one path: a title or body naming that path has said so
    repo.write({GATE: ONE_LINE_GATE.replace('torch.sigmoid(rate * x)', 'torch.sigmoid(rate * x.clamp(-20, 20))')})
    assert repo.check('KDA001', title=title, body=body).findings == ()
