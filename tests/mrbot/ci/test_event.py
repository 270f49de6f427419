# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What a CI job reads of its event and writes back: where the base of its checkout is, the webhook payload, and the
step's outputs."""

from __future__ import annotations

import json

import pytest

from mrbot.ci.event import base_branches
from mrbot.cli import main

TARGETS = ('origin/main', 'main')


def test_a_repository_whose_default_branch_is_not_main_finds_its_base_by_the_events_default_branch(tmp_path):
    # a GitHub job's clone of upstream's layout has origin/master and no origin/main
    (tmp_path / 'event.json').write_text(json.dumps({'repository': {'default_branch': 'master'}}))
    assert base_branches(TARGETS, {'GITHUB_EVENT_PATH': str(tmp_path / 'event.json')}) == (
        'origin/main', 'main', 'origin/master', 'master')
    # GitLab's jobs take their target from GitLab's API: whoever runs a job sets its variables, predefined ones too
    assert base_branches(TARGETS, {'CI_MERGE_REQUEST_TARGET_BRANCH_NAME': 'a' * 40, 'CI_DEFAULT_BRANCH': 'x'}) == TARGETS


def test_a_branch_name_git_would_read_as_an_option_or_a_payload_without_one_adds_nothing(tmp_path):
    (tmp_path / 'event.json').write_text(json.dumps({'repository': {'default_branch': '--output=/tmp/x'}}))
    assert base_branches(TARGETS, {'GITHUB_EVENT_PATH': str(tmp_path / 'event.json')}) == TARGETS
    for payload in ('not json', '[]', '{"repository": "x"}'):
        (tmp_path / 'event.json').write_text(payload)
        assert base_branches(TARGETS, {'GITHUB_EVENT_PATH': str(tmp_path / 'event.json')}) == TARGETS
    assert base_branches(TARGETS, {}) == TARGETS


@pytest.mark.parametrize(('event', 'garble', 'message'), [
    ('pull_request', lambda p: p['pull_request'].update(number='x'),
     'pull_request.number: expected a whole number, got the string "x"'),
    ('pull_request', lambda p: p['pull_request'].update(title=5), 'pull_request.title: expected a string, got 5'),
    ('pull_request', lambda p: p['pull_request'].update(body={'a': 1}),
     'pull_request.body: expected a string or null, got an object'),
    ('pull_request', lambda p: p['pull_request'].update(body=['a']),
     'pull_request.body: expected a string or null, got a list'),
    ('pull_request', lambda p: p['pull_request'].pop('head'), 'pull_request.head: missing, expected an object'),
    ('issue_comment', lambda p: p['comment'].update(user='alice'), 'comment.user: expected an object, got the string "alice"'),
    ('issue_comment', lambda p: p['comment'].update(body=7), 'comment.body: expected a string or null, got 7'),
    ('issue_comment', lambda p: p['issue'].update(number=True), 'issue.number: expected a whole number, got true'),
    ('workflow_run', lambda p: p['workflow_run'].update(head_repository='x/y'),
     'workflow_run.head_repository: expected an object or null, got the string "x/y"'),
    ('workflow_run', lambda p: p.pop('workflow_run'), 'workflow_run: missing, expected an object'),
])
def test_a_payload_no_forge_sends_is_one_line_and_exit_2(bot, capsys, event, garble, message):
    payload = {'pull_request': bot.pull_request_payload, 'issue_comment': lambda: bot.comment_payload('/test'),
               'workflow_run': lambda: bot.workflow_run_payload(9300, bot.head, [bot.number])}[event]()
    garble(payload)
    code, _, _ = bot.act(event, payload, *(['--artifact', str(bot.tmp)] if event == 'workflow_run' else []))
    err = capsys.readouterr().err
    assert code == 2 and f'the webhook payload: {message}' in err and len(err.strip().splitlines()) == 1
    assert [author for author, _ in bot.server.comments_on(bot.number) if author != 'alice'] == []


def test_an_output_file_the_step_cannot_write_is_refused_before_the_work(bot, capsys, monkeypatch):
    payload = bot.pull_request_payload()
    bot.act('pull_request', payload)
    before = bot.server.comments_on(bot.number)
    step = bot.tmp / 'garbled'
    step.mkdir()
    (step / 'event.json').write_text(json.dumps(payload))
    for name, value in {'GITHUB_EVENT_NAME': 'pull_request', 'GITHUB_EVENT_PATH': str(step / 'event.json'),
                        'GITHUB_OUTPUT': '/nonexistent/output'}.items():
        monkeypatch.setenv(name, value)
    assert main(['action']) == 2
    assert 'GITHUB_OUTPUT=/nonexistent/output: cannot append to it' in capsys.readouterr().err
    assert bot.server.comments_on(bot.number) == before
