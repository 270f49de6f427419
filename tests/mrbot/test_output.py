# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The report formats: text for people, json, markdown for the PR comment, SARIF for code scanning, GitHub annotations."""

from __future__ import annotations

import json

import pytest

from mrbot.output import format_report
from mrbot.rules import all_rules

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'


@pytest.fixture
def report(repo):
    repo.commit({'pyproject.toml': '[tool.ruff.lint]\nselect = ["F"]\n', 'lib/a.py': HEADER})
    repo.write({'lib/a.py': HEADER + 'import os  # mrbot: ignore[RUF]\nimport json\n', 'lib/b.py': 'x = 1\n'})
    return repo.check(title='no tag: 100%, really')


def test_text_shows_each_finding_with_its_source_line_caret_and_hint(report):
    text = format_report(report, 'text', all_rules())
    assert 'lib/a.py\n' in text and '4:8  error   RUF:F401' in text
    assert '        4 | import json\n' in text and '          |        ^\n' in text
    assert 'pull request\n' in text and 'MR-TITLE' in text
    assert text.rstrip().splitlines()[-1].startswith('3 errors in 2 changed files (')
    assert '1 suppressed inline: RUF:F401 at lib/a.py:3' in text


def test_json_follows_the_schema(report):
    data = json.loads(format_report(report, 'json', all_rules()))
    assert data['schema'] == 1 and data['head'] == 'WORKTREE' and len(data['base']) == 40
    assert set(data['findings'][0]) == {'rule', 'severity', 'path', 'line', 'column', 'message', 'hint'}
    assert [(f['rule'], f['path'], f['line']) for f in data['findings']] == [
        ('MR-TITLE', '', 0), ('RUF:F401', 'lib/a.py', 4), ('HDR001', 'lib/b.py', 1)]


def test_a_column_counts_from_1_in_every_format(report):
    # `import json` on line 4: ruff points at `json`, the eighth character
    data = json.loads(format_report(report, 'json', all_rules()))
    assert [f['column'] for f in data['findings'] if f['rule'] == 'RUF:F401'] == [8]
    assert '4:8  error   RUF:F401' in format_report(report, 'text', all_rules())
    sarif = json.loads(format_report(report, 'sarif', all_rules()))
    assert [r['locations'][0]['physicalLocation']['region']['startColumn'] for r in sarif['runs'][0]['results']
            if r['ruleId'] == 'RUF:F401'] == [8]
    assert 'file=lib/a.py,line=4,col=8,' in format_report(report, 'github', all_rules())


def test_markdown_has_a_summary_a_table_and_details_per_file(report):
    markdown = format_report(report, 'markdown', all_rules())
    assert '**3 errors** in 2 changed files.' in markdown
    assert "| ❌ error | `MR-TITLE` | pull request | title 'no tag: 100%, really' is not `[Tag] Summary` |" in markdown
    assert '<details><summary>lib/b.py (1)</summary>' in markdown
    assert 'Suppressed inline: `RUF:F401` at lib/a.py:3.' in markdown


def test_markdown_for_a_clean_change(repo):
    repo.commit({'a.txt': 'a\n'})
    repo.write({'a.txt': 'b\n'})
    markdown = format_report(repo.check(title='[Fix] A'), 'markdown', all_rules())
    assert 'No findings on this change (1 changed file).' in markdown


def test_sarif_is_2_1_0_with_rules_and_locations(report):
    sarif = json.loads(format_report(report, 'sarif', all_rules()))
    assert sarif['version'] == '2.1.0'
    run = sarif['runs'][0]
    assert [r['id'] for r in run['tool']['driver']['rules']] == ['HDR001', 'MR-TITLE', 'RUF:F401']
    located = [r for r in run['results'] if 'locations' in r]
    assert [(r['ruleId'], r['locations'][0]['physicalLocation']['region']['startLine']) for r in located] == [
        ('RUF:F401', 4), ('HDR001', 1)]
    assert all(run['tool']['driver']['rules'][r['ruleIndex']]['id'] == r['ruleId'] for r in run['results'])


def test_github_workflow_commands_escape_their_data(report):
    lines = format_report(report, 'github', all_rules()).splitlines()
    assert lines[0].startswith("::error title=MR-TITLE::title 'no tag: 100%25, really' is not")
    assert lines[1].startswith('::error file=lib/a.py,line=4,col=8,title=RUF%3AF401::')
    assert lines[-1] == 'mrbot check: 3 errors'
