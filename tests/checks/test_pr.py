# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Rules about the PR itself: title, body sections, attribution, skip keywords and added artifacts."""

from __future__ import annotations

import pytest

BODY = """## Summary
Faster chunk kernel.

## Test plan
pytest tests/ops/test_simple_gla.py on an H200.

## Benchmark
neutral: no kernel change

## Breaking changes
none
"""


def _pr_findings(report):
    return [(f.rule, f.severity, f.message) for f in report.findings]


@pytest.mark.parametrize(('title', 'expected'), [
    ('[Fix] Correct varlen offsets', []),
    ('[Simple GLA] Share the prologue', []),
    ('Fix varlen offsets', [('MR-TITLE', 'error', "title 'Fix varlen offsets' is not `[Tag] Summary`")]),
    ('[Conv][Fix] Two tags', [('MR-TITLE', 'error', "title '[Conv][Fix] Two tags' has more than one tag; use exactly one")]),
    ('[Fix]Missing space', [('MR-TITLE', 'error', "title '[Fix]Missing space' is not `[Tag] Summary`")]),
    ('[Wibble] Unknown tag', [('MR-TITLE', 'warning', 'title tag [Wibble] is not one of: Backends, Bench, Bot, Build, '
                                                     'Checks, CI, Docs, Fix, KDA, Misc, Ops, Perf, Refactor, Simple GLA, '
                                                     'Test, Utils')]),
])
def test_title(repo, title, expected):
    repo.commit({'a.txt': 'a\n'})
    assert _pr_findings(repo.check('MR-TITLE', title=title)) == expected


def test_title_from_the_single_commit_and_any_tag_when_the_list_is_empty(repo):
    repo.commit({'pyproject.toml': '[tool.mrbot]\ntitle-tags = []\n'})
    repo.commit({'a.txt': 'b\n'}, 'update things')
    assert _pr_findings(repo.check('MR-TITLE', base='HEAD~1', head='HEAD')) == [
        ('MR-TITLE', 'error', "title 'update things' is not `[Tag] Summary`")]
    repo.commit({'a.txt': 'c\n'}, '[Anything] Goes here')
    assert repo.check('MR-TITLE', base='HEAD~1', head='HEAD').findings == ()


def test_body_sections_present_and_filled(repo):
    repo.commit({'a.txt': 'a\n'})
    assert repo.check('MR-BODY', body=BODY).findings == ()
    placeholder = BODY.replace('pytest tests/ops/test_simple_gla.py on an H200.', '<!-- what you ran, where -->\nTODO')
    no_breaking = BODY.split('## Breaking changes')[0]
    assert _pr_findings(repo.check('MR-BODY', body=placeholder + '')) == [
        ('MR-BODY', 'error', "PR body section 'Test plan' is empty or holds only template text")]
    assert _pr_findings(repo.check('MR-BODY', body=no_breaking)) == [
        ('MR-BODY', 'error', "PR body has no '## Breaking changes' section")]


def test_headings_are_read_as_commonmark_writes_them_and_a_hostile_line_is_read_at_once(repo):
    repo.commit({'a.txt': 'a\n'})
    closed = BODY.replace('## Test plan', '  ### Test plan: ###').replace('## Summary', '##\tSummary')
    assert repo.check('MR-BODY', body=closed).findings == ()
    # a heading a regex took time cubic in its spaces to read (hours at 10 kB), which held the PR's report back; and
    # comment openers with no end, which a lazy regex rescanned from each of them
    hostile = BODY + '# a' + ' ' * 20_000 + 'x\n' + '<!--' * 20_000
    assert repo.check('MR-BODY', body=hostile).findings == ()
    assert _pr_findings(repo.check('MR-BODY', body=hostile.replace('## Summary', '##Summary'))) == [
        ('MR-BODY', 'error', "PR body has no '## Summary' section")]


def test_a_commit_body_is_not_held_to_the_pr_template(repo):
    base = repo.commit({'a.txt': 'a\n'})
    repo.commit({'a.txt': 'b\n'}, '[Fix] Thing\n\nJust a commit message.')
    assert repo.check('MR-BODY', base=base, head='HEAD').findings == ()


def test_tool_attribution_in_commits_and_body(repo):
    base = repo.commit({'a.txt': 'a\n'})
    repo.commit({'a.txt': 'b\n'}, '[Fix] Thing\n\nCo-authored-by: Claude <noreply@anthropic.com>')
    findings = _pr_findings(repo.check('MR-ATTRIBUTION', base=base, head='HEAD'))
    assert len(findings) == 1 and 'carries tool attribution' in findings[0][2] and 'Co-authored-by: Claude' in findings[0][2]
    body = BODY + '\n🤖 Generated with a code assistant\n'
    assert [m for _, _, m in _pr_findings(repo.check('MR-ATTRIBUTION', base='HEAD', body=body))] == [
        "PR body carries tool attribution: '🤖'"]
    repo.commit({'a.txt': 'c\n'}, '[Fix] Thing\n\nCo-authored-by: Ada Lovelace <ada@example.com>')
    assert repo.check('MR-ATTRIBUTION', base='HEAD~1', head='HEAD').findings == ()


def test_skip_keyword_only_matters_when_library_python_changed(repo):
    repo.commit({'fla/a.py': 'x = 1\n', 'docs/a.md': 'a\n'})
    repo.write({'docs/a.md': 'b\n'})
    assert repo.check('MR-SKIP', title='[Docs] Typo [skip ci]').findings == ()
    repo.write({'fla/a.py': 'x = 2\n'})
    assert _pr_findings(repo.check('MR-SKIP', title='[Fix] Tweak [skip test]')) == [
        ('MR-SKIP', 'error', 'title says [skip test] but Python under a source root changed')]


def test_profiler_reports_and_large_binaries_added(repo):
    repo.commit({'a.txt': 'a\n'})
    repo.write({'profile/run1/notes.txt': 'x\n', 'kernel.ncu-rep': b'\x00' * 10, 'weights.bin': b'\x00' * 600_000,
                'small.bin': b'\x00' * 100})
    assert sorted((f.path, f.message) for f in repo.check('MR-ARTIFACT').findings) == [
        ('kernel.ncu-rep', 'profiler report added'),
        ('profile/run1/notes.txt', 'file under a profile/ folder added'),
        ('weights.bin', 'binary file of 600000 bytes added (limit 512000)'),
    ]


def test_a_binary_over_the_read_limit_is_flagged_before_it_is_committed(repo):
    base = repo.commit({'a.txt': 'a\n'})
    repo.write({'model.pt': b'\x00' * 1_500_000})
    expected = [('model.pt', 'binary file of 1500000 bytes added (limit 512000)')]
    assert [(f.path, f.message) for f in repo.check('MR-ARTIFACT').findings] == expected
    head = repo.commit({})
    assert [(f.path, f.message) for f in repo.check('MR-ARTIFACT', base=base, head=head).findings] == expected
