# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The report on a pull or merge request's diff, through `mrbot action`: one comment, edited in place, and a check
run; graded by the settings of the branch it targets, never the PR's own, however old the commit it branched from."""

from __future__ import annotations

import json

from mrbot.ci.artifacts import ARTIFACT
from mrbot.cli import main
from tests.mrbot.ci.fakerunner import HEADER, PYPROJECT
from tests.mrbot.forges.fakeforge import created_at


def test_report_is_one_comment_edited_in_place_and_a_check_run_each_time(bot):
    code, outputs, summary = bot.act('pull_request', bot.pull_request_payload())
    # HDR001 on the new file's first line, and SEL001 (no test reaches it), which has no line to annotate
    assert code == 0 and outputs == {'pr': str(bot.number), 'errors': '1', 'findings': '2'}
    comments = bot.server.comments_on(bot.number)
    assert len(comments) == 1 and comments[0][0] == 'github-actions[bot]'
    assert 'HDR001' in comments[0][1] and 'pkg/shift.py:1' in comments[0][1]
    assert '### mrbot check' in summary
    [run] = bot.server.check_runs
    assert run['head_sha'] == bot.head and run['conclusion'] == 'failure' and run['name'] == 'mrbot check'
    assert [(a['path'], a['start_line'], a['annotation_level']) for a in run['annotations']] == [
        ('pkg/shift.py', 1, 'failure')]
    # the author fixes the header and pushes: the same comment is edited, never a second one
    bot.head = bot.repo.commit({'pkg/shift.py': HEADER + 'def shift(x):\n    return x + 1\n'}, '[Ops] Header')
    bot.server.branches['topic'] = bot.head
    code, outputs, _ = bot.act('pull_request', bot.pull_request_payload('synchronize'))
    assert code == 0 and outputs['errors'] == '0'
    comments = bot.server.comments_on(bot.number)
    assert len(comments) == 1 and '**1 warning** in 1 changed file.' in comments[0][1] and 'HDR001' not in comments[0][1]
    assert [r['conclusion'] for r in bot.server.check_runs] == ['failure', 'success']


def test_a_report_notifies_nobody_and_carries_no_html_of_the_pr(bot):
    bot.head = bot.repo.commit({'pkg/@octocat <b>x</b>.py': 'x = 1\n'}, '[Ops] More')
    bot.server.branches['topic'] = bot.head
    payload = bot.pull_request_payload(title='@octo-org/everyone [Ops] Add shift')
    payload['pull_request']['head']['sha'] = bot.head
    bot.act('pull_request', payload)
    [(_, report)] = bot.server.comments_on(bot.number)
    assert '@octo-org' not in report and '@\u2060octo-org/everyone' in report
    assert '<b>' not in report and '@octocat' not in report


def test_a_pr_cannot_switch_a_rule_off_for_itself(bot):
    quieter = PYPROJECT.replace('[tool.mrbot]\n', '[tool.mrbot]\nrules = { HDR001 = "off" }\n')
    bot.head = bot.repo.commit({'pyproject.toml': quieter}, '[Ops] Quieter')
    bot.server.branches['topic'] = bot.head
    _, outputs, _ = bot.act('pull_request', bot.pull_request_payload('synchronize'))
    assert outputs['errors'] == '1' and 'HDR001' in bot.server.comments_on(bot.number)[0][1]


def test_a_pr_that_adds_a_setting_still_gets_its_report(bot):
    bot.head = bot.repo.commit({'pyproject.toml': PYPROJECT.replace('[tool.mrbot]\n', '[tool.mrbot]\nnew-setting = 1\n')},
                               '[Ops] A setting from the future')
    bot.server.branches['topic'] = bot.head
    code, outputs, _ = bot.act('pull_request', bot.pull_request_payload('synchronize'))
    assert code == 0 and outputs['pr'] == str(bot.number) and len(bot.server.comments_on(bot.number)) == 1


# A ruff rule the base branch takes up after the change branched: a public function wants a docstring.
STRICTER = PYPROJECT + '\n[tool.ruff.lint]\nselect = ["E", "F", "D103"]\n'


def _advance_main(repo) -> str:
    """A commit on main after the change branched, adding the stricter ruff rule; the branch stays checked out."""
    repo.git('checkout', '-q', 'main')
    tip = repo.commit({'pyproject.toml': STRICTER}, '[Build] Docstrings on public functions')
    repo.git('checkout', '-q', 'topic')
    return tip


def test_a_pr_branched_before_a_ruff_rule_was_added_is_checked_by_it(bot):
    # N4: ruff's configuration came from the merge base, so a pull request branched from an old commit escaped
    # every ruff rule the base branch took up since
    bot.base = bot.server.branches['main'] = _advance_main(bot.repo)
    folder = bot.tmp / 'artifact'
    code, outputs, _ = bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    assert code == 0
    report = json.loads((folder / ARTIFACT).read_text())
    assert 'RUF:D103' in report['body'] and 'pkg/shift.py:1' in report['body']
    assert ('pkg/shift.py', 1, 'RUF:D103') in [(a['path'], a['line'], a['title']) for a in report['check']['annotations']]


def test_a_gitlab_merge_request_is_checked_by_the_target_as_it_was_when_its_head_was_pushed(lab, repo, monkeypatch):
    server, iid, head = lab
    server.branches['main'] = _advance_main(repo)
    # GitLab records the target's tip with each push: the push of this head came after the new rule
    server.push(iid, head, created_at(1))
    assert main(['action', '--forge', 'gitlab']) == 0
    [(_, note)] = server.notes_on(iid)
    assert 'RUF:D103' in note
