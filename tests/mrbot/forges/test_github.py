# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The GitHub adapter with the real PyGithub against a fake GitHub on loopback."""

from __future__ import annotations

import socket
import time

import pytest

from mrbot.forges import REACTIONS, Annotation, Forge, Note, connect, marker
from mrbot.records import MrbotError
from tests.mrbot.forges.fakeforge import (
    ACTIONS_TOKEN,
    BACKOFF,
    BOT_TOKEN,
    OPENED,
    READ_ONLY_TOKEN,
    RESET,
    FakeGitHub,
    created_at,
    sha,
)

REPORT = marker('report')


def _connect(server: FakeGitHub, project: str | None = None, token: str = BOT_TOKEN, retries: int = 4) -> Forge:
    return connect('github', project or server.project, url=server.url, token=token, environ={}, retries=retries,
                   backoff=BACKOFF)


def test_create_opens_a_draft_pull_request(github: Forge, github_server: FakeGitHub):
    pull = github.create_pull('feature', 'main', '[Ops] Fuse the state update', 'the body')
    assert (pull.number, pull.title, pull.body, pull.draft) == (1, '[Ops] Fuse the state update', 'the body', True)
    assert (pull.head_branch, pull.head_sha, pull.base_branch) == ('feature', sha('feature'), 'main')
    assert (pull.state, pull.head_repo) == ('open', 'octo/kernels')
    assert pull.url == 'https://github.example/octo/kernels/pull/1'
    assert github_server.pulls[1]['draft'] is True


def test_create_opens_a_ready_pull_request_when_asked(github: Forge, github_server: FakeGitHub):
    assert github.create_pull('feature', 'main', '[Ops] Ready', 'body', draft=False).draft is False
    assert github_server.pulls[1]['draft'] is False


def test_create_for_a_branch_with_an_open_pull_request_updates_that_one(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature', title='[Ops] Old', body='old body')
    pull = github.create_pull('feature', 'main', '[Ops] New', 'new body')
    assert (pull.number, pull.title, pull.body) == (1, '[Ops] New', 'new body')
    assert len(github_server.pulls) == 1


def test_find_pull_finds_the_open_pull_request_of_a_branch(github: Forge, github_server: FakeGitHub):
    assert github.find_pull('feature') is None
    github_server.open_pull('feature', state='closed')
    github_server.open_pull('fix/overflow')
    assert github.find_pull('feature') is None
    number = github_server.open_pull('feature', title='[Ops] Open', body='text')
    found = github.find_pull('feature')
    assert (found.number, found.title, found.body, found.head_branch) == (number, '[Ops] Open', 'text', 'feature')


def test_update_changes_only_what_it_is_given(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature', title='[Ops] Title', body='first', draft=True)
    pull = github.update_pull(1, body='second')
    assert (pull.title, pull.body, pull.draft) == ('[Ops] Title', 'second', True)
    github.update_pull(1, title='[Ops] Renamed')
    assert (github_server.pulls[1]['title'], github_server.pulls[1]['body']) == ('[Ops] Renamed', 'second')


def test_bodies_over_the_limit_are_refused_before_any_request(github: Forge, github_server: FakeGitHub):
    with pytest.raises(ValueError, match='fit_body'):
        github.create_pull('feature', 'main', '[Ops] Long', 'x' * (github.body_limit + 1))
    with pytest.raises(ValueError, match='marker line'):
        github.upsert_comment(1, 'report', 'x' * (github.body_limit - len(REPORT)))
    assert github_server.requests == []
    assert github.create_pull('feature', 'main', '[Ops] Long', 'x' * github.body_limit).number == 1
    github.upsert_comment(1, 'report', 'x' * (github.body_limit - len(REPORT) - 1))
    assert len(github_server.comments[1]['body']) == github.body_limit == 65536


def test_branch_exists(github: Forge):
    assert github.branch_exists('main')
    assert github.branch_exists('fix/overflow')
    assert not github.branch_exists('missing')


def test_sticky_comment_is_edited_in_place_on_a_rerun(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    first = github.upsert_comment(1, 'report', 'first run')
    second = github.upsert_comment(1, 'report', 'second run')
    assert (first.created, second.created, second.id) == (True, False, first.id)
    assert second.url == f'https://github.example/octo/kernels/pull/1#issuecomment-{first.id}'
    assert github_server.comments_on(1) == [('mrbot-dev', f'{REPORT}\nsecond run')]


def test_each_purpose_has_its_own_sticky_comment(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    github.upsert_comment(1, 'report', 'report')
    github.upsert_comment(1, 'bench-hopper', 'bench')
    github.upsert_comment(1, 'report', 'report again')
    assert github_server.comments_on(1) == [('mrbot-dev', f'{REPORT}\nreport again'),
                                            ('mrbot-dev', '<!-- mrbot:bench-hopper -->\nbench')]


def test_a_human_comment_holding_the_marker_is_left_alone(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    github_server.add_comment(1, f'{REPORT}\nquoting the bot', login='alice')
    github.upsert_comment(1, 'report', 'first run')
    github.upsert_comment(1, 'report', 'second run')
    assert github_server.comments_on(1) == [('alice', f'{REPORT}\nquoting the bot'),
                                            ('mrbot-dev', f'{REPORT}\nsecond run')]


def test_a_token_that_cannot_read_its_user_edits_only_bot_comments(github_server: FakeGitHub):
    github_server.open_pull('feature')
    github_server.add_comment(1, f'{REPORT}\nquoting the bot', login='alice')
    github_server.add_comment(1, f'{REPORT}\nearlier run', login='github-actions[bot]', type='Bot')
    comment = _connect(github_server, token=ACTIONS_TOKEN).upsert_comment(1, 'report', 'this run')
    assert (comment.id, comment.created) == (2, False)
    assert github_server.comments_on(1) == [('alice', f'{REPORT}\nquoting the bot'),
                                            ('github-actions[bot]', f'{REPORT}\nthis run')]


def test_without_its_user_the_bot_trusts_only_the_actions_account_or_the_app_it_is_told(github_server: FakeGitHub):
    github_server.open_pull('feature')
    github_server.add_comment(1, 'from Actions', login='github-actions[bot]', type='Bot')
    github_server.add_comment(1, 'from an app anyone may install', login='helpful-app[bot]', type='Bot')
    notes = _connect(github_server, token=ACTIONS_TOKEN).comments(1)
    assert [(note.author, note.by_bot) for note in notes] == [('github-actions[bot]', True), ('helpful-app[bot]', False)]
    app = connect('github', github_server.project, url=github_server.url, token=ACTIONS_TOKEN,
                  environ={'MRBOT_BOT_LOGIN': 'helpful-app[bot]'}, backoff=BACKOFF)
    assert [note.by_bot for note in app.comments(1)] == [False, True]


def test_the_sticky_comment_is_found_on_a_later_page(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    for i in range(150):
        github_server.add_comment(1, f'comment {i}')
    github_server.add_comment(1, f'{REPORT}\nearlier run', login='mrbot-dev')
    assert github.upsert_comment(1, 'report', 'this run').id == 151
    assert len(github_server.comments) == 151
    assert github_server.comments[151]['body'] == f'{REPORT}\nthis run'


def test_reactions_on_a_comment(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    comment = github_server.add_comment(1, '/bench chunk_simple_gla')
    for reaction in REACTIONS:
        github.add_reaction(1, comment, reaction)
    github.add_reaction(1, comment, 'eyes')
    assert github_server.reactions == [(comment, reaction, 'mrbot-dev') for reaction in REACTIONS]
    with pytest.raises(ValueError, match="reaction 'thumbsup'"):
        github.add_reaction(1, comment, 'thumbsup')


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


def test_permission_of_someone_github_does_not_know_is_none(github: Forge):
    assert github.permission('stranger') == 'none'


def test_create_is_retried_after_a_502_and_happens_once(github: Forge, github_server: FakeGitHub):
    github_server.fail('POST', '/pulls', 502)
    assert github.create_pull('feature', 'main', '[Ops] Title', 'body').number == 1
    assert len(github_server.pulls) == 1
    assert github_server.count('POST', '/pulls') == 2


def test_edits_and_comments_are_retried_after_a_502(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    github_server.fail('PATCH', '/pulls/1', 502)
    github_server.fail('POST', '/issues/1/comments', 503)
    github.update_pull(1, body='edited')
    github.upsert_comment(1, 'report', 'posted')
    github_server.fail('PATCH', '/issues/comments/1', 504)
    github.upsert_comment(1, 'report', 'edited')
    assert github_server.pulls[1]['body'] == 'edited'
    assert github_server.comments_on(1) == [('mrbot-dev', f'{REPORT}\nedited')]


def _past() -> str:
    return str(int(time.time()) - 60)


@pytest.mark.parametrize(('status', 'message', 'headers'), [
    (429, 'Too many requests', {'Retry-After': '0'}),
    (429, 'API rate limit exceeded for user ID 1.', {'x-ratelimit-remaining': '0', 'x-ratelimit-reset': _past()}),
    (403, 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
     {'Retry-After': '0'}),
    (403, 'API rate limit exceeded for user ID 1.', {'x-ratelimit-remaining': '0', 'x-ratelimit-reset': _past()}),
])
def test_create_is_retried_after_a_rate_limit(github: Forge, github_server: FakeGitHub, status, message, headers):
    github_server.fail('POST', '/pulls', status, message=message, headers=headers)
    assert github.create_pull('feature', 'main', '[Ops] Title', 'body').number == 1
    assert len(github_server.pulls) == 1


def test_create_is_retried_after_a_connection_reset(github: Forge, github_server: FakeGitHub):
    github_server.fail('POST', '/pulls', RESET)
    assert github.create_pull('feature', 'main', '[Ops] Title', 'body').number == 1
    assert len(github_server.pulls) == 1


def test_after_the_last_retry_the_error_says_what_failed(github_server: FakeGitHub):
    github_server.fail('POST', '/pulls', 502, times=3)
    with pytest.raises(MrbotError) as error:
        _connect(github_server, retries=2).create_pull('feature', 'main', '[Ops] Title', 'body')
    assert str(error.value) == ('GitHub: opening a pull request from feature into main in octo/kernels: still failing '
                                'after 2 retries (too many 502 error responses); try again later')
    assert github_server.count('POST', '/pulls') == 3
    assert github_server.pulls == {}


def test_an_unreachable_server_is_one_line():
    # A bound socket that does not listen refuses every connection for as long as it is held.
    with socket.socket() as refusing:
        refusing.bind(('127.0.0.1', 0))
        url = f'http://127.0.0.1:{refusing.getsockname()[1]}'
        forge = connect('github', 'octo/kernels', url=url, token=BOT_TOKEN, environ={}, retries=1, backoff=BACKOFF)
        with pytest.raises(MrbotError, match=r'^GitHub: looking for branch main in octo/kernels: no answer after 1 '
                                             r'retry \(.*refused.*\); check the network and the GitHub URL$') as error:
            forge.branch_exists('main')
    assert '\n' not in str(error.value)


def test_a_refused_token_names_the_variable_it_came_from(github_server: FakeGitHub):
    environ = {'GITHUB_API_URL': github_server.url, 'GH_TOKEN': 'revoked-token'}
    with pytest.raises(MrbotError) as error:
        connect('github', github_server.project, environ=environ, backoff=BACKOFF).find_pull('feature')
    assert str(error.value) == ('GitHub: looking for the open pull request of feature in octo/kernels: 401 Bad '
                                'credentials; GitHub refused the token from GH_TOKEN: it is mistyped, expired or revoked')


def test_a_project_the_token_cannot_see_is_named(github_server: FakeGitHub):
    forge = _connect(github_server, project='octo/private')
    with pytest.raises(MrbotError) as error:
        forge.create_pull('feature', 'main', '[Ops] Title', 'body')
    assert str(error.value).startswith('GitHub: opening a pull request from feature into main in octo/private: '
                                       '404 Not Found; it does not exist, or the token given to mrbot cannot see '
                                       'octo/private')
    for call in (lambda: forge.branch_exists('main'), lambda: forge.permission('bob')):
        with pytest.raises(MrbotError, match='cannot see octo/private'):
            call()


def test_a_missing_pull_request_is_named(github: Forge):
    with pytest.raises(MrbotError, match=r'^GitHub: editing pull request #7 of octo/kernels: 404 Not Found; it does'):
        github.update_pull(7, body='text')


def test_a_missing_permission_names_it_and_is_not_retried(github_server: FakeGitHub):
    github_server.open_pull('feature')
    forge = _connect(github_server, token=READ_ONLY_TOKEN)
    with pytest.raises(MrbotError, match=r'403 Resource not accessible by personal access token; the token given to '
                                         r'mrbot lacks a permission on octo/kernels: it needs `pull-requests: write`'):
        forge.create_pull('fix/overflow', 'main', '[Ops] Title', 'body')
    with pytest.raises(MrbotError, match='it needs `issues: write`'):
        forge.upsert_comment(1, 'report', 'text')
    assert github_server.count('POST', '/pulls') == 1


def test_get_pull_reads_a_pull_request_in_any_state(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature', title='[Ops] Open', body='text', draft=True)
    github_server.open_pull('fix/overflow', merged=True)
    github_server.open_pull('main', state='closed')
    pull = github.get_pull(1)
    assert (pull.number, pull.title, pull.body, pull.draft) == (1, '[Ops] Open', 'text', True)
    assert (pull.head_branch, pull.head_sha, pull.head_repo, pull.state) == ('feature', sha('feature'), 'octo/kernels',
                                                                             'open')
    assert (github.get_pull(2).state, github.get_pull(3).state) == ('merged', 'closed')


def test_a_fork_pull_request_names_the_fork_and_is_not_the_branch_of_the_project(github: Forge,
                                                                               github_server: FakeGitHub):
    github_server.open_pull('feature', head_repo='contributor/kernels')
    pull = github.get_pull(1)
    assert (pull.head_branch, pull.head_repo) == ('feature', 'contributor/kernels')
    assert pull.head_sha == sha('contributor/kernels:feature')
    assert github.find_pull('feature') is None


def test_get_pull_of_a_missing_number_is_one_line(github: Forge):
    with pytest.raises(MrbotError) as error:
        github.get_pull(7)
    assert str(error.value) == ('GitHub: reading pull request #7 of octo/kernels: 404 Not Found; it does not exist, or '
                                'the token given to mrbot cannot see octo/kernels (GitHub answers 404 for a private '
                                'repository the token may not read)')


def test_post_comment_posts_a_new_comment_every_time(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    first = github.post_comment(1, 'running the benchmark')
    second = github.post_comment(1, 'running the benchmark')
    assert (first.created, second.created) == (True, True)
    assert first.id != second.id
    assert second.url == f'https://github.example/octo/kernels/pull/1#issuecomment-{second.id}'
    assert github_server.comments_on(1) == [('mrbot-dev', 'running the benchmark')] * 2


def test_post_comment_over_the_limit_is_refused_before_any_request(github: Forge, github_server: FakeGitHub):
    with pytest.raises(ValueError, match='over the limit of 65536'):
        github.post_comment(1, 'x' * (github.body_limit + 1))
    assert github_server.requests == []


def test_edit_comment_replaces_the_bots_own_comment_and_nobody_elses(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    mine = github.post_comment(1, 'Accepted.')
    theirs = github_server.add_comment(1, 'a comment of alice')
    github.edit_comment(1, mine.id, 'Accepted.\ndone')
    assert github_server.comments_on(1) == [('mrbot-dev', 'Accepted.\ndone'), ('alice', 'a comment of alice')]
    with pytest.raises(MrbotError, match=f'editing comment {theirs} on pull request #1 of octo/kernels'):
        github.edit_comment(1, theirs, 'hijacked')


def test_comments_reads_every_page_oldest_first(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    github_server.open_pull('fix/overflow')
    github_server.add_comment(2, 'on another pull request')
    for i in range(130):
        github_server.add_comment(1, f'comment {i}')
    github_server.add_comment(1, 'benchmark done', login='mrbot-dev')
    github_server.add_comment(1, 'a marker from another bot', login='dependabot[bot]', type='Bot')
    notes = github.comments(1)
    assert [note.body for note in notes] == [f'comment {i}' for i in range(130)] + ['benchmark done',
                                                                                    'a marker from another bot']
    assert notes[0] == Note(id=2, author='alice', by_bot=False, body='comment 0',
                            created_at='2026-12-03T04:01:00+00:00')
    assert notes[-2] == Note(id=132, author='mrbot-dev', by_bot=True, body='benchmark done',
                             created_at=created_at(132).replace(microsecond=0).isoformat())
    # where the token's user is known, another Bot account's comments are not the bot's
    assert (notes[-1].author, notes[-1].by_bot) == ('dependabot[bot]', False)
    assert github_server.count('GET', '/issues/1/comments') == 2


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


def test_publish_check_refuses_an_unknown_conclusion_before_any_request(github: Forge, github_server: FakeGitHub):
    with pytest.raises(ValueError, match="check conclusion 'failed': expected one of success, failure, neutral"):
        github.publish_check(sha('feature'), 'mrbot', 'failed', 'title', 'summary')
    assert github_server.requests == []


def test_publish_check_without_the_permission_names_it(github_server: FakeGitHub):
    forge = _connect(github_server, token=READ_ONLY_TOKEN)
    with pytest.raises(MrbotError, match=r"^GitHub: publishing the 'mrbot' check of [0-9a-f]{40} in octo/kernels: 403 "
                                         r'Resource not accessible by personal access token; the token given to mrbot '
                                         r'lacks a permission on octo/kernels: it needs `checks: write`'):
        forge.publish_check(sha('feature'), 'mrbot', 'success', 'title', 'summary')
    assert github_server.check_runs == []


def test_head_pushed_at_is_the_last_push_that_made_the_commit_the_head(github: Forge, github_server: FakeGitHub):
    github_server.open_pull('feature')
    first = github.get_pull(1).head_sha
    assert github.head_pushed_at(github.get_pull(1)) == OPENED.replace(microsecond=0).isoformat()
    github_server.push(1, 'b' * 40, created_at(5))
    github_server.push(1, first, created_at(9))
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
