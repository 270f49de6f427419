# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The GitLab adapter with the real python-gitlab against a fake GitLab on loopback."""

from __future__ import annotations

import pytest

from mrbot.forges import REACTIONS, Annotation, Forge, Note, connect, marker
from mrbot.records import MrbotError
from tests.mrbot.forges.fakeforge import (
    BACKOFF,
    BOT_TOKEN,
    OPENED,
    READ_ONLY_TOKEN,
    RESET,
    FakeGitLab,
    created_at,
    sha,
)

REPORT = marker('report')


def _connect(server: FakeGitLab, project: str | None = None, token: str = BOT_TOKEN, retries: int = 4) -> Forge:
    return connect('gitlab', project or server.project, url=server.url, token=token, environ={}, retries=retries,
                   backoff=BACKOFF)


def test_create_opens_a_draft_merge_request(gitlab: Forge, gitlab_server: FakeGitLab):
    pull = gitlab.create_pull('feature', 'main', '[Ops] Fuse the state update', 'the description')
    assert (pull.number, pull.title, pull.body, pull.draft) == (1, '[Ops] Fuse the state update', 'the description',
                                                                True)
    assert (pull.head_branch, pull.head_sha, pull.base_branch) == ('feature', sha('feature'), 'main')
    assert (pull.state, pull.head_repo) == ('open', 'lab/kernels/fla')
    assert pull.url == 'https://gitlab.example/lab/kernels/fla/-/merge_requests/1'
    assert gitlab_server.merge_requests[1]['title'] == 'Draft: [Ops] Fuse the state update'


def test_create_opens_a_ready_merge_request_when_asked(gitlab: Forge, gitlab_server: FakeGitLab):
    assert gitlab.create_pull('feature', 'main', '[Ops] Ready', 'text', draft=False).draft is False
    assert gitlab_server.merge_requests[1]['title'] == '[Ops] Ready'


def test_create_for_a_branch_with_an_open_merge_request_updates_that_one(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature', title='[Ops] Old', description='old')
    pull = gitlab.create_pull('feature', 'main', '[Ops] New', 'new')
    assert (pull.number, pull.title, pull.body, pull.draft) == (1, '[Ops] New', 'new', False)
    assert len(gitlab_server.merge_requests) == 1


def test_find_pull_finds_the_open_merge_request_of_a_branch(gitlab: Forge, gitlab_server: FakeGitLab):
    assert gitlab.find_pull('feature') is None
    gitlab_server.open_merge_request('feature', state='merged')
    gitlab_server.open_merge_request('fix/overflow')
    assert gitlab.find_pull('feature') is None
    iid = gitlab_server.open_merge_request('feature', title='Draft: [Ops] Open', description='text')
    found = gitlab.find_pull('feature')
    assert (found.number, found.title, found.body, found.draft) == (iid, '[Ops] Open', 'text', True)


def test_update_keeps_a_draft_a_draft(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature', title='Draft: [Ops] Title', description='first')
    gitlab_server.open_merge_request('fix/overflow', title='[Fix] Ready')
    pull = gitlab.update_pull(1, title='[Ops] Renamed')
    assert (pull.title, pull.body, pull.draft) == ('[Ops] Renamed', 'first', True)
    gitlab.update_pull(1, body='second')
    gitlab.update_pull(2, title='[Fix] Renamed')
    assert gitlab_server.merge_requests[1]['title'] == 'Draft: [Ops] Renamed'
    assert gitlab_server.merge_requests[1]['description'] == 'second'
    assert gitlab_server.merge_requests[2]['title'] == '[Fix] Renamed'


def test_descriptions_over_the_limit_are_refused_before_any_request(gitlab: Forge, gitlab_server: FakeGitLab):
    with pytest.raises(ValueError, match='fit_body'):
        gitlab.create_pull('feature', 'main', '[Ops] Long', 'x' * (gitlab.body_limit + 1))
    with pytest.raises(ValueError, match='marker line'):
        gitlab.upsert_comment(1, 'report', 'x' * (gitlab.body_limit - len(REPORT)))
    assert gitlab_server.requests == []
    assert gitlab.body_limit == 1_000_000


def test_branch_exists(gitlab: Forge):
    assert gitlab.branch_exists('main')
    assert gitlab.branch_exists('fix/overflow')
    assert not gitlab.branch_exists('missing')


def test_sticky_note_is_edited_in_place_on_a_rerun(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    first = gitlab.upsert_comment(1, 'report', 'first run')
    second = gitlab.upsert_comment(1, 'report', 'second run')
    assert (first.created, second.created, second.id) == (True, False, first.id)
    assert second.url == f'{gitlab_server.url}/lab/kernels/fla/-/merge_requests/1#note_{first.id}'
    assert gitlab_server.notes_on(1) == [('mrbot-dev', f'{REPORT}\nsecond run')]


def test_each_purpose_has_its_own_sticky_note(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    gitlab.upsert_comment(1, 'report', 'report')
    gitlab.upsert_comment(1, 'test', 'tests')
    gitlab.upsert_comment(1, 'report', 'report again')
    assert gitlab_server.notes_on(1) == [('mrbot-dev', f'{REPORT}\nreport again'),
                                         ('mrbot-dev', '<!-- mrbot:test -->\ntests')]


def test_a_human_note_holding_the_marker_is_left_alone(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    gitlab_server.add_note(1, f'{REPORT}\nquoting the bot', author='alice')
    gitlab.upsert_comment(1, 'report', 'first run')
    gitlab.upsert_comment(1, 'report', 'second run')
    assert gitlab_server.notes_on(1) == [('alice', f'{REPORT}\nquoting the bot'),
                                         ('mrbot-dev', f'{REPORT}\nsecond run')]


def test_the_oldest_sticky_note_is_found_on_a_later_page(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    for i in range(150):
        gitlab_server.add_note(1, f'note {i}')
    gitlab_server.add_note(1, f'{REPORT}\nearlier run', author='mrbot-dev')
    gitlab_server.add_note(1, f'{REPORT}\na run that raced it', author='mrbot-dev')
    assert gitlab.upsert_comment(1, 'report', 'this run').id == 151
    assert len(gitlab_server.notes) == 152
    assert gitlab_server.notes[151]['body'] == f'{REPORT}\nthis run'


def test_reactions_are_gitlab_award_emoji(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    note = gitlab_server.add_note(1, '/bench chunk_simple_gla')
    for reaction in REACTIONS:
        gitlab.add_reaction(1, note, reaction)
    gitlab.add_reaction(1, note, '+1')
    names = ['eyes', 'thumbsup', 'thumbsdown', 'rocket', 'confused', 'tada', 'heart', 'laughing']
    assert gitlab_server.awards == [(note, name, 'mrbot-dev') for name in names]
    with pytest.raises(ValueError, match="reaction 'thumbsup'"):
        gitlab.add_reaction(1, note, 'thumbsup')


@pytest.mark.parametrize(('level', 'expected'), [
    (50, 'admin'), (40, 'maintain'), (30, 'write'), (20, 'read'), (15, 'read'), (10, 'read'), (5, 'none'),
])
def test_permission_maps_access_levels(gitlab: Forge, gitlab_server: FakeGitLab, level, expected):
    gitlab_server.members['bob'] = level
    assert gitlab.permission('bob') == expected


def test_permission_counts_roles_inherited_from_a_parent_group(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.members['bob'] = 20
    gitlab_server.inherited_members['bob'] = 40
    gitlab_server.inherited_members['carol'] = 30
    assert (gitlab.permission('bob'), gitlab.permission('carol')) == ('maintain', 'write')


def test_permission_of_a_non_member_is_none(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.members['bobby'] = 40
    assert gitlab.permission('bob') == 'none'


def test_create_is_retried_after_a_502_and_happens_once(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.fail('POST', '/merge_requests', 502)
    assert gitlab.create_pull('feature', 'main', '[Ops] Title', 'text').number == 1
    assert len(gitlab_server.merge_requests) == 1
    assert gitlab_server.count('POST', '/merge_requests') == 2


def test_edits_and_notes_are_retried_after_a_5xx(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    gitlab_server.fail('PUT', '/merge_requests/1', 502)
    gitlab_server.fail('POST', '/merge_requests/1/notes', 503)
    gitlab.update_pull(1, body='edited')
    gitlab.upsert_comment(1, 'report', 'posted')
    gitlab_server.fail('PUT', '/notes/1', 500)
    gitlab.upsert_comment(1, 'report', 'edited')
    assert gitlab_server.merge_requests[1]['description'] == 'edited'
    assert gitlab_server.notes_on(1) == [('mrbot-dev', f'{REPORT}\nedited')]


@pytest.mark.parametrize('headers', [{'Retry-After': '0'}, {'RateLimit-Remaining': '0'}])
def test_create_is_retried_after_a_rate_limit(gitlab: Forge, gitlab_server: FakeGitLab, headers):
    gitlab_server.fail('POST', '/merge_requests', 429, message='Retry later', headers=headers)
    assert gitlab.create_pull('feature', 'main', '[Ops] Title', 'text').number == 1
    assert len(gitlab_server.merge_requests) == 1


def test_create_is_retried_after_a_connection_reset(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.fail('POST', '/merge_requests', RESET)
    assert gitlab.create_pull('feature', 'main', '[Ops] Title', 'text').number == 1
    assert len(gitlab_server.merge_requests) == 1


def test_after_the_last_retry_the_error_says_what_failed(gitlab_server: FakeGitLab):
    gitlab_server.fail('POST', '/merge_requests', 429, times=4, headers={'Retry-After': '0'})
    with pytest.raises(MrbotError) as error:
        _connect(gitlab_server, retries=3).create_pull('feature', 'main', '[Ops] Title', 'text')
    assert str(error.value) == ('GitLab: opening a merge request from feature into main in lab/kernels/fla: still '
                                'failing after 3 retries (too many 429 error responses); try again later')
    assert gitlab_server.count('POST', '/merge_requests') == 4
    assert gitlab_server.merge_requests == {}


def test_a_refused_token_names_the_variable_it_came_from(gitlab_server: FakeGitLab):
    environ = {'CI_SERVER_URL': gitlab_server.url, 'GITLAB_TOKEN': 'revoked-token'}
    with pytest.raises(MrbotError) as error:
        connect('gitlab', gitlab_server.project, environ=environ, backoff=BACKOFF).find_pull('feature')
    assert str(error.value) == ('GitLab: looking for the open merge request of feature in lab/kernels/fla: 401 '
                                'Unauthorized; GitLab refused the token from GITLAB_TOKEN: it is mistyped, expired or '
                                'revoked')


def test_a_project_the_token_cannot_see_is_named(gitlab_server: FakeGitLab):
    forge = _connect(gitlab_server, project='lab/private')
    with pytest.raises(MrbotError) as error:
        forge.create_pull('feature', 'main', '[Ops] Title', 'text')
    assert str(error.value).startswith('GitLab: opening a merge request from feature into main in lab/private: 404 '
                                       'Project Not Found; it does not exist, or the token given to mrbot cannot see '
                                       'lab/private')
    with pytest.raises(MrbotError, match='cannot see lab/private'):
        forge.branch_exists('main')


def test_a_missing_merge_request_is_named(gitlab: Forge):
    with pytest.raises(MrbotError, match=r'^GitLab: editing merge request !7 of lab/kernels/fla: 404 Not found; it'):
        gitlab.update_pull(7, body='text')


def test_a_missing_permission_names_the_scope_and_role(gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    forge = _connect(gitlab_server, token=READ_ONLY_TOKEN)
    with pytest.raises(MrbotError, match=r'^GitLab: posting the \'report\' note on merge request !1 of lab/kernels/fla: '
                                         r'403 Forbidden; the token given to mrbot lacks a permission on '
                                         r'lab/kernels/fla: it needs the `api` scope and at least the Developer role$'):
        forge.upsert_comment(1, 'report', 'text')
    assert gitlab_server.notes == {}


@pytest.mark.parametrize(('gitlab_state', 'state'), [
    ('opened', 'open'), ('locked', 'open'), ('closed', 'closed'), ('merged', 'merged'),
])
def test_get_pull_reads_a_merge_request_in_any_state(gitlab: Forge, gitlab_server: FakeGitLab, gitlab_state, state):
    gitlab_server.open_merge_request('feature', title='Draft: [Ops] Title', description='text', state=gitlab_state)
    pull = gitlab.get_pull(1)
    assert (pull.number, pull.title, pull.body, pull.draft, pull.state) == (1, '[Ops] Title', 'text', True, state)
    assert (pull.head_branch, pull.head_sha, pull.head_repo) == ('feature', sha('feature'), 'lab/kernels/fla')


def test_a_fork_merge_request_names_the_fork_and_is_not_the_branch_of_the_project(gitlab: Forge,
                                                                                 gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature', source_project='contributor/fla')
    pull = gitlab.get_pull(1)
    assert (pull.head_branch, pull.head_repo) == ('feature', 'contributor/fla')
    assert pull.head_sha == sha('contributor/fla:feature')
    assert gitlab.find_pull('feature') is None
    iid = gitlab_server.open_merge_request('feature')
    assert gitlab.find_pull('feature').number == iid


def test_get_pull_of_a_missing_number_is_one_line(gitlab: Forge):
    with pytest.raises(MrbotError) as error:
        gitlab.get_pull(7)
    assert str(error.value) == ('GitLab: reading merge request !7 of lab/kernels/fla: 404 Not found; it does not exist, '
                                'or the token given to mrbot cannot see lab/kernels/fla (GitLab answers 404 for a '
                                'private project the token may not read)')


def test_post_comment_posts_a_new_note_every_time(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    first = gitlab.post_comment(1, 'running the benchmark')
    second = gitlab.post_comment(1, 'running the benchmark')
    assert (first.created, second.created) == (True, True)
    assert first.id != second.id
    assert second.url == f'{gitlab_server.url}/lab/kernels/fla/-/merge_requests/1#note_{second.id}'
    assert gitlab_server.notes_on(1) == [('mrbot-dev', 'running the benchmark')] * 2


def test_post_comment_over_the_limit_is_refused_before_any_request(gitlab: Forge, gitlab_server: FakeGitLab):
    with pytest.raises(ValueError, match='over the limit of 1000000'):
        gitlab.post_comment(1, 'x' * (gitlab.body_limit + 1))
    assert gitlab_server.requests == []


def test_edit_comment_replaces_the_bots_own_note_and_nobody_elses(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    mine = gitlab.post_comment(1, 'Accepted.')
    theirs = gitlab_server.add_note(1, 'a note of alice')
    gitlab.edit_comment(1, mine.id, 'Accepted.\ndone')
    assert gitlab_server.notes_on(1) == [('mrbot-dev', 'Accepted.\ndone'), ('alice', 'a note of alice')]
    with pytest.raises(MrbotError, match=f'editing note {theirs} on merge request !1 of lab/kernels/fla'):
        gitlab.edit_comment(1, theirs, 'hijacked')


def test_comments_reads_every_page_oldest_first_without_system_notes(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    gitlab_server.open_merge_request('fix/overflow')
    gitlab_server.add_note(2, 'on another merge request')
    for i in range(130):
        gitlab_server.add_note(1, f'note {i}')
        if i % 40 == 0:
            gitlab_server.add_note(1, 'added 1 commit', author='mrbot-dev', system=True)
    gitlab_server.add_note(1, 'benchmark done', author='mrbot-dev')
    gitlab_server.add_note(1, 'a marker from another bot', author='project_7_bot')
    notes = gitlab.comments(1)
    assert [note.body for note in notes] == [f'note {i}' for i in range(130)] + ['benchmark done',
                                                                                 'a marker from another bot']
    assert notes[0] == Note(id=2, author='alice', by_bot=False, body='note 0', created_at='2026-12-03T04:01:00+00:00')
    # the bot's own notes are those of the token's user; GitLab's note authors carry no bot flag to go by
    assert [(note.author, note.by_bot) for note in notes[-2:]] == [('mrbot-dev', True), ('project_7_bot', False)]
    assert gitlab_server.count('GET', '/merge_requests/1/notes') == 2


@pytest.mark.parametrize(('conclusion', 'state'), [('success', 'success'), ('neutral', 'success'),
                                                   ('failure', 'failed')])
def test_publish_check_posts_a_commit_status(gitlab: Forge, gitlab_server: FakeGitLab, conclusion, state):
    annotations = [Annotation('fla/ops/op.py', 3, 'failure', 'finding')]
    url = gitlab.publish_check(sha('feature'), 'mrbot', conclusion, '1 finding', 'the summary', annotations)
    assert url == f'{gitlab_server.url}/lab/kernels/fla/-/commit/{sha("feature")}'
    assert [(status['sha'], status['name'], status['status'], status['description'])
            for status in gitlab_server.statuses] == [(sha('feature'), 'mrbot', state, '1 finding')]


def test_publish_check_cuts_the_title_to_a_status_description(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab.publish_check(sha('feature'), 'mrbot', 'failure', 'x' * 300, 'the summary')
    assert gitlab_server.statuses[0]['description'] == 'x' * 254 + '…'


def test_publish_check_refuses_an_unknown_conclusion_before_any_request(gitlab: Forge, gitlab_server: FakeGitLab):
    with pytest.raises(ValueError, match="check conclusion 'failed': expected one of success, failure, neutral"):
        gitlab.publish_check(sha('feature'), 'mrbot', 'failed', 'title', 'summary')
    assert gitlab_server.requests == []


def test_publish_check_without_the_permission_names_the_scope_and_role(gitlab_server: FakeGitLab):
    forge = _connect(gitlab_server, token=READ_ONLY_TOKEN)
    with pytest.raises(MrbotError, match=r"^GitLab: publishing the 'mrbot' status of [0-9a-f]{40} in lab/kernels/fla: "
                                         r'403 Forbidden; .* it needs the `api` scope and at least the Developer role$'):
        forge.publish_check(sha('feature'), 'mrbot', 'success', 'title', 'summary')
    assert gitlab_server.statuses == []


def test_head_pushed_at_is_the_last_version_with_the_commit_as_head(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.branches['feature'] = 'a' * 40
    gitlab_server.open_merge_request('feature')
    assert gitlab.head_pushed_at(gitlab.get_pull(1)) == OPENED.replace(microsecond=0).isoformat()
    gitlab_server.push(1, 'b' * 40, created_at(5))
    gitlab_server.push(1, 'a' * 40, created_at(9))
    assert gitlab.head_pushed_at(gitlab.get_pull(1)) == created_at(9).replace(microsecond=0).isoformat()
    merge_request = gitlab.get_pull(1)
    assert gitlab.head_pushed_at(type(merge_request)(**{**merge_request.__dict__, 'head_sha': 'c' * 40})) is None
