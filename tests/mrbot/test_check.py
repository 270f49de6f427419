# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot check` end to end: only added lines, inline suppression, per-path settings, --fix, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from mrbot.cli import main

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'
PYPROJECT = '[tool.ruff.lint]\nselect = ["F"]\n'


def _json(capsys, *argv):
    code = main(['check', '--format', 'json', *argv])
    return code, json.loads(capsys.readouterr().out)


def test_clean_change_exits_zero_with_no_findings(repo, monkeypatch, capsys):
    repo.commit({'pyproject.toml': PYPROJECT, 'lib/a.py': HEADER + 'x = 1\n'})
    repo.write({'lib/a.py': HEADER + 'x = 1\ny = x + 1\n'})
    monkeypatch.chdir(repo.root)
    code, report = _json(capsys, '--base', 'HEAD', '--title', '[Fix] Add y')
    assert (code, report['findings'], report['schema'], report['head']) == (0, [], 1, 'WORKTREE')


def test_pre_existing_violations_are_not_reported(repo, monkeypatch, capsys):
    repo.commit({'pyproject.toml': PYPROJECT, 'lib/a.py': HEADER + 'import os\n'})
    repo.write({'lib/a.py': HEADER + 'import os\nimport sys\n'})
    monkeypatch.chdir(repo.root)
    code, report = _json(capsys, '--base', 'HEAD', '--title', '[Fix] More imports')
    assert code == 1
    assert [(f['rule'], f['path'], f['line']) for f in report['findings']] == [('RUF:F401', 'lib/a.py', 4)]


def test_inline_suppression_is_counted_and_listed(repo, monkeypatch, capsys):
    repo.commit({'pyproject.toml': PYPROJECT, 'lib/a.py': HEADER})
    repo.write({'lib/a.py': HEADER + 'import os  # mrbot: ignore[RUF:F401]\nimport re  # mrbot: ignore[RUF]\nimport sys\n'})
    monkeypatch.chdir(repo.root)
    code, report = _json(capsys, '--base', 'HEAD', '--title', '[Fix] Imports')
    assert [f['line'] for f in report['findings']] == [5]
    assert [(f['rule'], f['line']) for f in report['suppressed']] == [('RUF:F401', 3), ('RUF:F401', 4)]
    main(['check', '--base', 'HEAD', '--title', '[Fix] Imports'])
    assert '2 suppressed inline: RUF:F401 at lib/a.py:3, RUF:F401 at lib/a.py:4' in capsys.readouterr().out


def test_per_path_override_turns_a_rule_off_for_matching_files(repo, monkeypatch, capsys):
    repo.commit({'pyproject.toml': PYPROJECT + '[[tool.mrbot.overrides]]\npaths = ["scripts/*"]\nrules = { RUF = "off" }\n'})
    repo.write({'scripts/tool.py': HEADER + 'import os\n', 'lib/b.py': HEADER + 'import os\n'})
    monkeypatch.chdir(repo.root)
    _, report = _json(capsys, '--base', 'HEAD', '--title', '[Fix] Tools')
    assert [(f['rule'], f['path']) for f in report['findings']] == [('RUF:F401', 'lib/b.py')]


def test_runs_from_a_subdirectory_with_root_relative_paths(repo, monkeypatch, capsys):
    repo.commit({'lib/ops/x.py': HEADER})
    repo.write({'lib/ops/x.py': 'x = 1\n'})
    monkeypatch.chdir(repo.root / 'lib' / 'ops')
    code, report = _json(capsys, '--base', 'HEAD', '--title', '[Fix] X')
    assert code == 1
    assert [(f['rule'], f['path'], f['line']) for f in report['findings']] == [('HDR001', 'lib/ops/x.py', 1)]


def test_fix_inserts_the_header_says_so_and_the_rerun_is_clean(repo, monkeypatch, capsys):
    repo.commit({'lib/a.py': HEADER})
    repo.write({'lib/new.py': 'x = 1\n', 'lib/windows.py': 'y = 2\r\n'})
    monkeypatch.chdir(repo.root)
    assert main(['check', '--base', 'HEAD', '--title', '[Fix] New', '--fix', '--no-compile']) == 0
    assert (repo.root / 'lib/new.py').read_text() == HEADER + 'x = 1\n'
    assert (repo.root / 'lib/windows.py').read_bytes().endswith(b'y = 2\r\n')
    assert capsys.readouterr().err.splitlines() == ['lib/new.py: fixed HDR001 (License header missing or wrong)',
                                                    'lib/windows.py: fixed HDR001 (License header missing or wrong)']


def test_diff_prints_the_fix_and_writes_nothing(repo, monkeypatch, capsys):
    repo.commit({'lib/a.py': HEADER})
    repo.write({'lib/new.py': 'x = 1'})
    monkeypatch.chdir(repo.root)
    assert main(['check', '--base', 'HEAD', '--title', '[Fix] New', '--diff', '--no-compile']) == 1
    assert capsys.readouterr().out == ('--- a/lib/new.py\n+++ b/lib/new.py\n@@ -1 +1,3 @@\n' + ''.join(
        f'+{line}\n' for line in HEADER.splitlines()) + ' x = 1\n\\ No newline at end of file\n')
    assert (repo.root / 'lib/new.py').read_text() == 'x = 1'
    repo.write({'lib/new.py': HEADER + 'x = 1\n'})
    assert main(['check', '--base', 'HEAD', '--title', '[Fix] New', '--diff', '--no-compile']) == 0
    assert capsys.readouterr().out == ''


def test_named_files_are_checked_whole_and_alone(repo, monkeypatch, capsys):
    repo.commit({'pyproject.toml': PYPROJECT, 'lib/old.py': 'import os\n', 'lib/other.py': 'import sys\n'})
    repo.write({'lib/other.py': 'import sys\nimport re\n'})
    monkeypatch.chdir(repo.root / 'lib')
    code, report = _json(capsys, '--no-compile', 'old.py')
    assert code == 1
    assert [(f['rule'], f['path'], f['line']) for f in report['findings']] == [('HDR001', 'lib/old.py', 1),
                                                                              ('RUF:F401', 'lib/old.py', 1)]
    assert main(['check', '--no-compile', '--fix', 'old.py', 'other.py']) == 1
    assert capsys.readouterr().err.splitlines() == ['lib/old.py: fixed HDR001 (License header missing or wrong)',
                                                    'lib/other.py: fixed HDR001 (License header missing or wrong)']


def test_named_files_that_cannot_be_checked_are_one_line_errors(repo, monkeypatch, capsys, tmp_path_factory):
    repo.commit({'a.py': HEADER})
    monkeypatch.chdir(repo.root)
    outside = tmp_path_factory.mktemp('outside') / 'b.py'
    outside.write_text(HEADER)
    for argv, error in [
        (['missing.py'], 'missing.py: no such file; expected the path of a file in this repository'),
        ([str(outside)], f'{outside}: outside the repository {repo.root}; expected a file inside it'),
        (['--base', 'HEAD', 'a.py'], '--base describes a change, but FILE arguments check files whole: pass one or '
                                     'the other'),
    ]:
        assert main(['check', *argv]) == 2
        assert capsys.readouterr().err == f'mrbot check: error: {error}\n'


def test_the_pre_commit_hook_checks_the_files_it_is_given(repo, monkeypatch, capsys):
    hooks = (Path(__file__).parents[2] / '.pre-commit-hooks.yaml').read_text()
    for setting in ('- id: mrbot-check', '  entry: mrbot check', '  language: python', '  types: [python]',
                    '  pass_filenames: true'):
        assert f'\n{setting}\n' in hooks
    repo.commit({'a.py': HEADER, 'b.py': 'x = 1\n'})
    monkeypatch.chdir(repo.root)
    assert main(['check', '--no-compile', 'a.py']) == 0
    assert main(['check', '--no-compile', 'b.py']) == 1


def test_usage_and_repository_errors_exit_two_with_one_line(repo, monkeypatch, capsys, tmp_path_factory):
    repo.commit({'a.py': HEADER})
    monkeypatch.chdir(repo.root)
    assert main(['check', '--base', 'nope']) == 2
    assert capsys.readouterr().err == "mrbot check: error: unknown revision 'nope': expected a branch, tag or commit of " \
                                      "this repository\n"
    assert main(['check', '--base', 'HEAD', '--body-file', 'missing.md']) == 2
    assert capsys.readouterr().err.startswith('mrbot check: error: --body-file missing.md: cannot read it (')
    assert main(['check', '--head', 'HEAD', '--fix']) == 2
    monkeypatch.chdir(tmp_path_factory.mktemp('elsewhere'))
    assert main(['check']) == 2
    assert capsys.readouterr().err.endswith(': not inside a git repository\n')


def test_pr_title_and_body_come_from_the_github_event(repo, monkeypatch, capsys, tmp_path_factory):
    repo.commit({'a.py': HEADER})
    event = tmp_path_factory.mktemp('event') / 'event.json'
    event.write_text(json.dumps({'pull_request': {'title': 'no tag here', 'body': None}}))
    monkeypatch.setenv('GITHUB_EVENT_PATH', str(event))
    monkeypatch.chdir(repo.root)
    _, report = _json(capsys, '--base', 'HEAD')
    assert {f['rule'] for f in report['findings']} == {'MR-TITLE', 'MR-BODY'}


CLEAN_KERNEL = HEADER + '''"""A new op written the way CONTRIBUTING asks."""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=['T'])
def scale_rows_fwd_kernel(x, y, T, D: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr, USE_SCALE: tl.constexpr):
    i_t = tl.program_id(0).to(tl.int64)
    # [BT]
    o_t = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, BD)
    m_td = (o_t[:, None] < T) & (o_d[None, :] < D)
    # [BT, BD]
    b_x = tl.load(x + o_t[:, None] * D + o_d[None, :], mask=m_td, other=0)
    if USE_SCALE:
        b_x = b_x * 2
    tl.store(y + o_t[:, None] * D + o_d[None, :], b_x, mask=m_td)


def scale_rows(x, use_scale=True):
    """Copy `x` of shape `[T, D]`, doubled when asked.

    Args:
        x (torch.Tensor):
            Rows to copy.
        use_scale (bool, Optional):
            Whether to double them.
            Default: `True`.
    """
    y = x.new_empty(x.shape)
    T, D = x.shape
    scale_rows_fwd_kernel[(triton.cdiv(T, 16),)](x, y, T, D=D, BT=16, BD=triton.next_power_of_2(D), USE_SCALE=use_scale)
    return y
'''
CLEAN_NAIVE = HEADER + '''"""Reference for scale_rows."""


def naive_scale_rows(x, use_scale=True):
    return x * 2 if use_scale else x.clone()
'''
CLEAN_TEST = HEADER + '''import torch

from fla.ops.scale_rows.chunk import scale_rows
from fla.ops.scale_rows.naive import naive_scale_rows
from fla.utils import assert_close, device


def test_chunk():
    x = torch.randn(100, 24, device=device, requires_grad=True)
    assert_close('y', naive_scale_rows(x), scale_rows(x), 1e-6)
    naive_scale_rows(x).sum().backward()
    assert x.grad is not None
'''


def test_adding_a_clean_op_reports_nothing(repo, monkeypatch, capsys):
    root = Path(__file__).resolve().parents[2]
    repo.commit({'pyproject.toml': (root / 'pyproject.toml').read_text()})
    repo.write({'fla/ops/scale_rows/__init__.py': HEADER, 'fla/ops/scale_rows/chunk.py': CLEAN_KERNEL,
                'fla/ops/scale_rows/naive.py': CLEAN_NAIVE, 'tests/ops/test_scale_rows.py': CLEAN_TEST})
    monkeypatch.chdir(repo.root)
    code, report = _json(capsys, '--base', 'HEAD', '--title', '[Ops] Add scale_rows')
    assert (code, report['findings']) == (0, [])
