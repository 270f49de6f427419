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
    repo.commit({'pyproject.toml': PYPROJECT, 'fla/a.py': HEADER + 'x = 1\n'})
    repo.write({'fla/a.py': HEADER + 'x = 1\ny = x + 1\n'})
    monkeypatch.chdir(repo.root)
    code, report = _json(capsys, '--base', 'HEAD', '--title', '[Fix] Add y')
    assert (code, report['findings'], report['schema'], report['head']) == (0, [], 1, 'WORKTREE')


def test_pre_existing_violations_are_not_reported(repo, monkeypatch, capsys):
    repo.commit({'pyproject.toml': PYPROJECT, 'fla/a.py': HEADER + 'import os\n'})
    repo.write({'fla/a.py': HEADER + 'import os\nimport sys\n'})
    monkeypatch.chdir(repo.root)
    code, report = _json(capsys, '--base', 'HEAD', '--title', '[Fix] More imports')
    assert code == 1
    assert [(f['rule'], f['path'], f['line']) for f in report['findings']] == [('RUF:F401', 'fla/a.py', 4)]


def test_inline_suppression_is_counted_and_listed(repo, monkeypatch, capsys):
    repo.commit({'pyproject.toml': PYPROJECT, 'fla/a.py': HEADER})
    repo.write({'fla/a.py': HEADER + 'import os  # mrbot: ignore[RUF:F401]\nimport re  # mrbot: ignore[RUF]\nimport sys\n'})
    monkeypatch.chdir(repo.root)
    code, report = _json(capsys, '--base', 'HEAD', '--title', '[Fix] Imports')
    assert [f['line'] for f in report['findings']] == [5]
    assert [(f['rule'], f['line']) for f in report['suppressed']] == [('RUF:F401', 3), ('RUF:F401', 4)]
    main(['check', '--base', 'HEAD', '--title', '[Fix] Imports'])
    assert '2 suppressed inline: RUF:F401 at fla/a.py:3, RUF:F401 at fla/a.py:4' in capsys.readouterr().out


def test_per_path_override_turns_a_rule_off_for_matching_files(repo, monkeypatch, capsys):
    repo.commit({'pyproject.toml': PYPROJECT + '[[tool.mrbot.overrides]]\npaths = ["scripts/*"]\nrules = { RUF = "off" }\n'})
    repo.write({'scripts/tool.py': HEADER + 'import os\n', 'fla/b.py': HEADER + 'import os\n'})
    monkeypatch.chdir(repo.root)
    _, report = _json(capsys, '--base', 'HEAD', '--title', '[Fix] Tools')
    assert [(f['rule'], f['path']) for f in report['findings']] == [('RUF:F401', 'fla/b.py')]


def test_runs_from_a_subdirectory_with_root_relative_paths(repo, monkeypatch, capsys):
    repo.commit({'fla/ops/x.py': HEADER})
    repo.write({'fla/ops/x.py': 'x = 1\n'})
    monkeypatch.chdir(repo.root / 'fla' / 'ops')
    code, report = _json(capsys, '--base', 'HEAD', '--title', '[Fix] X')
    assert code == 1
    assert [(f['rule'], f['path'], f['line']) for f in report['findings']] == [('HDR001', 'fla/ops/x.py', 1)]


def test_fix_inserts_the_header_and_the_rerun_is_clean(repo, monkeypatch, capsys):
    repo.commit({'fla/a.py': HEADER})
    repo.write({'fla/new.py': 'x = 1\n'})
    monkeypatch.chdir(repo.root)
    assert main(['check', '--base', 'HEAD', '--title', '[Fix] New', '--fix']) == 0
    assert (repo.root / 'fla/new.py').read_text() == HEADER + 'x = 1\n'


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


def test_adding_a_whole_clean_op_reports_nothing(repo, monkeypatch, capsys):
    root = Path(__file__).resolve().parents[2]
    repo.commit({'pyproject.toml': (root / 'pyproject.toml').read_text()})
    op = {f'fla/ops/simple_gla_copy/{p.name}': p.read_text() for p in (root / 'fla/ops/simple_gla').iterdir() if p.is_file()}
    repo.write({**op, 'tests/ops/test_simple_gla_copy.py': (root / 'tests/ops/test_simple_gla.py').read_text()})
    monkeypatch.chdir(repo.root)
    code, report = _json(capsys, '--base', 'HEAD', '--title', '[Simple GLA] Copy the op')
    assert (code, report['findings']) == (0, [])
