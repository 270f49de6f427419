# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Every path git can hold keeps its findings: spaces, tabs, newlines, quotes and bytes that are not UTF-8."""

from __future__ import annotations

import json
import os

import pytest

from mrbot import git
from mrbot.cli import main

# A name git stores as bytes; Python holds the byte that is not UTF-8 as a surrogate escape, as os.fsdecode does.
NOT_UTF8 = os.fsdecode(b'caf\xe9.py')
NAMES = {
    'space': 'with space.py',
    'space in a folder': 'my dir/a.py',
    'tab': 'tab\tname.py',
    'newline': 'new\nline.py',
    'quote and backslash': 'say "hi" \\ there.py',
    'not UTF-8': NOT_UTF8,
}
HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'


def _todo_findings(report) -> list[tuple[str, int]]:
    return [(f.path, f.line) for f in report.findings]


@pytest.mark.parametrize('name', NAMES.values(), ids=NAMES.keys())
def test_a_modified_file_keeps_its_line_findings_in_the_working_tree_and_with_head(repo, name):
    base = repo.commit({name: 'x = 1\n'})
    repo.write({name: 'x = 1\n# TODO: later\n'})
    assert _todo_findings(repo.check('CMT003', base=base)) == [(name, 2)]
    head = repo.commit({})
    assert _todo_findings(repo.check('CMT003', base=base, head=head)) == [(name, 2)]


@pytest.mark.parametrize('name', NAMES.values(), ids=NAMES.keys())
def test_an_added_and_a_renamed_file_keep_their_paths_and_lines(repo, name):
    moved = name.replace('.py', ' moved.py')
    base = repo.commit({'old.py': 'a = 1\nb = 2\nc = 3\nd = 4\n'})
    head = repo.commit({'old.py': None, name: 'new\n', moved: 'a = 1\nb = 2\nc = 3\nD = 4\n'})
    files = {f.path: f for f in git.changeset(repo.root, base, head).files}
    assert files[name].added_lines == {1} and files[name].text == 'new\n'
    renamed = files[moved]
    assert (renamed.status, renamed.old_path, renamed.added_lines) == ('renamed', 'old.py', {4})
    assert renamed.base_text == 'a = 1\nb = 2\nc = 3\nd = 4\n'


def test_a_name_that_is_not_utf8_is_reported_escaped_and_read_back_exactly(repo, monkeypatch, capsys):
    repo.commit({'a.py': HEADER})
    report_name = os.fsdecode(b'r\xe9sum\xe9.ncu-rep')
    repo.write({report_name: 'profile\n'})
    monkeypatch.chdir(repo.root)
    assert main(['check', '--no-compile', '--base', 'HEAD', '--title', '[Fix] Profile']) == 1
    out = capsys.readouterr().out
    assert 'r\\xe9sum\\xe9.ncu-rep' in out and 'profiler report added' in out
    main(['check', '--no-compile', '--base', 'HEAD', '--title', '[Fix] Profile', '--format', 'json'])
    findings = json.loads(capsys.readouterr().out)['findings']
    assert [(os.fsencode(f['path']), f['rule']) for f in findings] == [(b'r\xe9sum\xe9.ncu-rep', 'MR-ARTIFACT')]


def test_a_file_named_on_the_command_line_may_have_any_name(repo, monkeypatch, capsys):
    repo.commit({'a.py': HEADER})
    repo.write({'tab\tname.py': 'x = 1\n'})
    monkeypatch.chdir(repo.root)
    assert main(['check', '--no-compile', '--format', 'json', 'tab\tname.py']) == 1
    findings = json.loads(capsys.readouterr().out)['findings']
    assert [(f['path'], f['rule']) for f in findings] == [('tab\tname.py', 'HDR001')]


def test_test_list_and_prepare_show_a_name_that_is_not_utf8_escaped(repo, monkeypatch, capsys):
    repo.commit({'pkg/__init__.py': HEADER, 'tests/test_pkg.py': HEADER + 'import pkg\n'}, '[Test] Base')
    repo.write({os.path.join('pkg', NOT_UTF8): HEADER + 'X = 1\n'})
    monkeypatch.chdir(repo.root)
    assert main(['test', '--list', '--base', 'HEAD']) == 0
    captured = capsys.readouterr()
    assert captured.out == '0 test files selected for 1 changed file\n' and captured.err == ''
    assert main(['prepare', '--base', 'HEAD', '--no-tests', '--no-compile', '--no-bench', '--title', '[Fix] Cafe']) in (0, 1)
    captured = capsys.readouterr()
    assert 'Traceback' not in captured.err and 'internal error' not in captured.err
    assert 'pkg/caf\\xe9.py' in (repo.root / '.mrbot' / 'pr_body.md').read_text(encoding='utf-8')
