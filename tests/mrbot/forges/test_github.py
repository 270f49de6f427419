# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What only the GitHub adapter does, with the real PyGithub against a fake GitHub on loopback.

What both adapters do alike is tested in test_contract.py.
"""

from __future__ import annotations

import time

import pytest

from mrbot.forges import Annotation, Forge, connect, marker
from mrbot.records import MrbotError
from tests.mrbot.forges.fakeforge import (
    ACTIONS_TOKEN,
    BACKOFF,
    READ_ONLY_TOKEN,
    FakeGitHub,
    created_at,
    sha,
)

REPORT = marker('report')


def _connect(server: FakeGitHub, token: str) -> Forge:
    return connect('github', server.project, url=server.url, token=token, environ={}, backoff=BACKOFF)


def test_a_token_that_cannot_read_its_user_edits_only_bot_comments(github_server: FakeGitHub):
    github_server.open_pull('feature')
    github_server.add_comment(1, f'{REPORT}\nquoting the bot', login='alice')
    github_server.add_comment(1, f'{REPORT}\nearlier run', login='github-actions[bot]', type='Bot')
    comment = _connect(github_server, ACTIONS_TOKEN).upsert_comment(1, 'report', 'this run')
    assert (comment.id, comment.created) == (2, False)
    assert github_server.comments_on(1) == [('alice', f'{REPORT}\nquoting the bot'),
                                            ('github-actions[bot]', f'{REPORT}\nthis run')]


def test_without_its_user_the_bot_trusts_only_the_actions_account_or_the_app_it_is_told(github_server: FakeGitHub):
    github_server.open_pull('feature')
    github_server.add_comment(1, 'from Actions', login='github-actions[bot]', type='Bot')
    github_server.add_comment(1, 'from an app anyone may install', login='helpful-app[bot]', type='Bot')
    notes = _connect(github_server, ACTIONS_TOKEN).comments(1)
    assert [(note.author, note.by_bot) for note in notes] == [('github-actions[bot]', True), ('helpful-app[bot]', False)]
    app = connect('github', github_server.project, url=github_server.url, token=ACTIONS_TOKEN,
                  environ={'MRBOT_BOT_LOGIN': 'helpful-app[bot]'}, backoff=BACKOFF)
    assert [note.by_bot for note in app.comments(1)] == [False, True]


@pytest.mark.parametrize(('permission', 'role', 'expected'), [
    ('admin', 'admin', 'admin'),
    ('write', 'maintain', 'maintain'),
    ('write', 'write', 'write'),
    ('read', 'triage', 'triage'),
    ('read', 'read', 'read'),
    ('write', 'kernel-reviewer', 'write'),
    ('read', None, 'read'),
    ('none', 'none', 'none'),
])
def test_permission_is_the_role_else_the_legacy_permission(github: Forge, github_server: FakeGitHub, permission, role,
                                                           expected):
    github_server.collaborators['bob'] = (permission, role)
    assert github.permission('bob') == expected


def _past() -> str:
    return str(int(time.time()) - 60)


# The plain 429 with a Retry-After, which GitLab sends too, is in test_contract.py.
@pytest.mark.parametrize(('status', 'message', 'headers'), [
    (429, 'API rate limit exceeded for user ID 1.', {'x-ratelimit-remaining': '0', 'x-ratelimit-reset': _past()}),
    (403, 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
     {'Retry-After': '0'}),
    (403, 'API rate limit exceeded for user ID 1.', {'x-ratelimit-remaining': '0', 'x-ratelimit-reset': _past()}),
])
def test_create_is_retried_after_githubs_rate_limit_answers(github: Forge, github_server: FakeGitHub, status, message,
                                                            headers):
    github_server.fail('POST', '/pulls', status, message=message, headers=headers)
    assert github.create_pull('feature', 'main', '[Ops] Title', 'body').number == 1
    assert len(github_server.pulls) == 1


def _annotations(count: int) -> list[Annotation]:
    return [Annotation(f'fla/ops/op_{i}.py', i + 1, ('notice', 'warning', 'failure')[i % 3], f'finding {i}',
                       title=f'RULE{i:03d}' if i % 2 else '') for i in range(count)]


@pytest.mark.parametrize(('count', 'edits'), [(0, 0), (50, 0), (51, 1), (120, 2)])
def test_publish_check_sends_every_annotation_50_at_a_time(github: Forge, github_server: FakeGitHub, count, edits):
    url = github.publish_check(sha('feature'), 'mrbot', 'failure', '3 findings', 'the summary', _annotations(count))
    assert url == 'https://github.example/octo/kernels/runs/1'
    assert (github_server.count('POST', '/check-runs'), github_server.count('PATCH', '/check-runs/1')) == (1, edits)
    [run] = github_server.check_runs
    assert (run['name'], run['head_sha'], run['status'], run['conclusion']) == ('mrbot', sha('feature'), 'completed',
                                                                                'failure')
    assert run['output'] == {'title': '3 findings', 'summary': 'the summary'}
    assert [annotation['message'] for annotation in run['annotations']] == [f'finding {i}' for i in range(count)]


def test_publish_check_annotations_point_at_one_line(github: Forge, github_server: FakeGitHub):
    github.publish_check(sha('feature'), 'mrbot', 'neutral', 'title', 'summary', _annotations(2))
    assert github_server.check_runs[0]['annotations'] == [
        {'path': 'fla/ops/op_0.py', 'start_line': 1, 'end_line': 1, 'annotation_level': 'notice',
         'message': 'finding 0'},
        {'path': 'fla/ops/op_1.py', 'start_line': 2, 'end_line': 2, 'annotation_level': 'warning',
         'message': 'finding 1', 'title': 'RULE001'}]


def test_publish_check_cuts_a_long_summary_with_a_note(github: Forge, github_server: FakeGitHub):
    summary = ''.join(f'line {i}\n' for i in range(10_000))
    github.publish_check(sha('feature'), 'mrbot', 'success', 'title', summary)
    published = github_server.check_runs[0]['output']['summary']
    assert len(published) <= 65535 < len(summary)
    assert published.startswith('line 0\nline 1\n')
    assert published.endswith("\n\n_Cut to fit GitHub's 65535-character limit on a check run's summary._")


def test_publish_check_without_the_permission_names_it(github_server: FakeGitHub):
    forge = _connect(github_server, READ_ONLY_TOKEN)
    with pytest.raises(MrbotError, match=r"^GitHub: publishing the 'mrbot' check of [0-9a-f]{40} in octo/kernels: 403 "
                                         r'Resource not accessible by personal access token; the token given to mrbot '
                                         r'lacks a permission on octo/kernels: it needs `checks: write`'):
        forge.publish_check(sha('feature'), 'mrbot', 'success', 'title', 'summary')
    assert github_server.check_runs == []


def test_head_pushed_at_is_moved_neither_by_an_edit_nor_by_a_run_on_another_branch(github: Forge,
                                                                                   github_server: FakeGitHub):
    github_server.open_pull('feature')
    github_server.push(1, 'b' * 40, created_at(9))
    assert github.head_pushed_at(github.get_pull(1)) == created_at(9).replace(microsecond=0).isoformat()
    # an edit of the pull request starts a run of the same head, and is no push
    github_server.edit(1, created_at(20))
    assert github.head_pushed_at(github.get_pull(1)) == created_at(9).replace(microsecond=0).isoformat()
    # a run of the same commit on another branch says nothing about this pull request's head
    github_server.branches['copy'] = 'd' * 40
    github_server.open_pull('copy')
    github_server.push(2, 'c' * 40, created_at(3))
    github_server.push(1, 'c' * 40, created_at(12))
    github_server.runs.pop()
    assert github.head_pushed_at(github.get_pull(1)) is None
