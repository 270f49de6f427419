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


@pytest.mark.parametrize('count', [0, 50])
def test_publish_check_is_one_request_with_its_annotations(github: Forge, github_server: FakeGitHub, count):
    url = github.publish_check(sha('feature'), 'mrbot', 'failure', '3 findings', 'the summary', _annotations(count))
    assert url == 'https://github.example/octo/kernels/runs/1'
    assert (github_server.count('POST', '/check-runs'), github_server.count('PATCH', '/check-runs/1')) == (1, 0)
    [run] = github_server.check_runs
    assert (run['name'], run['head_sha'], run['status'], run['conclusion']) == ('mrbot', sha('feature'), 'completed',
                                                                                'failure')
    assert run['output'] == {'title': '3 findings', 'summary': 'the summary'}
    assert [annotation['message'] for annotation in run['annotations']] == [f'finding {i}' for i in range(count)]


def test_publish_check_refuses_more_annotations_than_one_request_carries_before_any_request(
        github: Forge, github_server: FakeGitHub):
    with pytest.raises(ValueError, match='51 annotations: a check carries at most 50'):
        github.publish_check(sha('feature'), 'mrbot', 'failure', 'title', 'summary', _annotations(51))
    assert github_server.requests == []


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


def test_head_pushed_at_is_dated_by_the_bots_head_record_alone(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    github_server.push(1, 'b' * 40, created_at(9))
    assert github.head_pushed_at(github.get_pull(1)) == created_at(9).replace(microsecond=0).isoformat()
    # an edit of the pull request starts a pull_request run of the same head, and is no push
    github_server.edit(1, created_at(20))
    assert github.head_pushed_at(github.get_pull(1)) == created_at(9).replace(microsecond=0).isoformat()
    # a push GitHub starts no pull_request run for (a merge conflict, [skip ci]) is in the record all the same
    github_server.pulls[1]['conflict'] = True
    github_server.skip_ci.add('c' * 40)
    github_server.push(1, 'c' * 40, created_at(12))
    assert github.head_pushed_at(github.get_pull(1)) == created_at(12).replace(microsecond=0).isoformat()
    # another pull request's record of the same commit says nothing about this one's head
    github_server.branches['copy'] = 'd' * 40
    github_server.open_pull('copy')
    github_server.push(2, 'c' * 40, created_at(3))
    assert github.head_pushed_at(github.get_pull(1)) == created_at(12).replace(microsecond=0).isoformat()


def test_head_pushed_at_is_unknown_without_the_record_and_never_read_from_pull_request_runs(
        github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    github_server.workflows.discard('mrbot-head.yml')
    assert github.head_pushed_at(github.get_pull(1)) is None
    # a fork's pull request may rewrite the record's file for its own pull_request runs, and name them as it likes
    github_server.workflows.add('mrbot-head.yml')
    github_server.runs.clear()
    github_server.add_run('mrbot-head.yml', 'pull_request', 'success', created_at(1),
                          f"mrbot head of #1 at {sha('feature')}")
    assert github.head_pushed_at(github.get_pull(1)) is None


def test_compare_paths_are_the_commits_own_and_a_list_github_may_have_cut_is_an_error(github: Forge,
                                                                                      github_server: FakeGitHub):
    github_server.commit_files['e' * 40] = ['fla/a.py', '.github/workflows/ci.yml']
    assert github.compare_paths('main', 'e' * 40) == ['fla/a.py', '.github/workflows/ci.yml']
    github_server.commit_files['f' * 40] = [f'f{i}.py' for i in range(301)]
    with pytest.raises(MrbotError, match=r'f{12} changes 300 or more files against main, and GitHub lists 300 at most'):
        github.compare_paths('main', 'f' * 40)


def test_workflow_runs_are_newest_first_by_event_and_outcome_and_artifacts_by_run(github: Forge,
                                                                                 github_server: FakeGitHub):
    old = github_server.add_run('mrbot-post-result.yml', 'workflow_run', 'success', created_at(1),
                                artifacts=('mrbot-history',))
    failed = github_server.add_run('mrbot-post-result.yml', 'workflow_run', 'failure', created_at(2))
    github_server.add_run('mrbot-post-result.yml', 'pull_request', 'success', created_at(3))
    new = github_server.add_run('mrbot-post-result.yml', 'workflow_run', 'success', created_at(4))
    assert [run.id for run in github.workflow_runs('mrbot-post-result.yml', 'workflow_run', 'success')] == [new, old]
    assert [run.id for run in github.workflow_runs('mrbot-post-result.yml', 'workflow_run')] == [new, failed, old]
    assert list(github.workflow_runs('missing.yml', 'workflow_run')) == []
    assert (github.artifact_names(old), github.artifact_names(new)) == (['mrbot-history'], [])
