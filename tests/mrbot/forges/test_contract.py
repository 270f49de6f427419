# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The Forge contract: what both adapters do alike, each test run against the fake GitHub and the fake GitLab.

What only one forge does (check runs, commit statuses, roles, a token's own rules) is tested in test_github.py and
test_gitlab.py.
"""

from __future__ import annotations

import dataclasses
import re
import socket
from typing import Any

import pytest

from mrbot.forges import REACTIONS, Forge, Note, connect, marker
from mrbot.records import MrbotError
from tests.mrbot.forges.fakeforge import (
    BACKOFF,
    BOT_TOKEN,
    GITHUB_WEB,
    GITLAB_WEB,
    OPENED,
    READ_ONLY_TOKEN,
    RESET,
    FakeGitHub,
    FakeGitLab,
    created_at,
    sha,
)

REPORT = marker('report')
FORK = 'contributor/kernels'


class _Fake:
    """How a test sets up and reads one forge's fake, in mrbot's words: a pull request, a comment, a state.

    The `*_request` pairs are the (method, path ending) of a request, for the fake's `fail` and `count`.
    """

    kind: str
    name: str
    pull_kind: str
    comment_kind: str
    project_kind: str
    body_limit: int
    reaction_names: tuple[str, ...]
    other_bot: str
    token_variable: str
    url_variable: str
    needs_to_open: str
    needs_to_comment: str
    create_request: tuple[str, str]
    edit_request: tuple[str, str]
    comment_request: tuple[str, str]
    edit_comment_request: tuple[str, str]
    list_comments_request: tuple[str, str]

    def __init__(self, server: Any) -> None:
        self.server = server
        self.project: str = server.project

    def connect(self, token: str = BOT_TOKEN, project: str | None = None, url: str | None = None,
                retries: int = 4) -> Forge:
        return connect(self.kind, project or self.project, url=url or self.server.url, token=token, environ={},
                       retries=retries, backoff=BACKOFF)


class _GitHub(_Fake):
    kind, name = 'github', 'GitHub'
    pull_kind, comment_kind, project_kind = 'pull request', 'comment', 'repository'
    body_limit = 65536
    reaction_names = REACTIONS
    other_bot = 'dependabot[bot]'
    token_variable, url_variable = 'GH_TOKEN', 'GITHUB_API_URL'
    needs_to_open = '`pull-requests: write` (a classic token: the `repo` scope)'
    needs_to_comment = '`issues: write` (a classic token: the `repo` scope)'
    create_request = ('POST', '/pulls')
    edit_request = ('PATCH', '/pulls/1')
    comment_request = ('POST', '/issues/1/comments')
    edit_comment_request = ('PATCH', '/issues/comments/1')
    list_comments_request = ('GET', '/issues/1/comments')
    server: FakeGitHub

    @property
    def pulls(self) -> dict[int, dict[str, Any]]:
        return self.server.pulls

    def pull_ref(self, number: int) -> str:
        return f'pull request #{number}'

    def pull_url(self, number: int) -> str:
        return f'{GITHUB_WEB}/{self.project}/pull/{number}'

    def comment_url(self, number: int, comment_id: int) -> str:
        return f'{self.pull_url(number)}#issuecomment-{comment_id}'

    def open(self, branch: str, title: str = '[Ops] Something', body: str = '', draft: bool = False,
             state: str = 'open', fork: str | None = None) -> int:
        return self.server.open_pull(branch, title, body, draft, state, merged=state == 'merged', head_repo=fork)

    def add_comment(self, number: int, body: str, author: str = 'alice') -> int:
        return self.server.add_comment(number, body, login=author, type='Bot' if author.endswith('[bot]') else 'User')

    def comments_on(self, number: int) -> list[tuple[str, str]]:
        return self.server.comments_on(number)

    def given_reactions(self) -> list[tuple[int, str, str]]:
        return self.server.reactions


class _GitLab(_Fake):
    kind, name = 'gitlab', 'GitLab'
    pull_kind, comment_kind, project_kind = 'merge request', 'note', 'project'
    body_limit = 1_000_000
    reaction_names = ('eyes', 'thumbsup', 'thumbsdown', 'rocket', 'confused', 'tada', 'heart', 'laughing')
    # A project access token's user: a bot account, but not the one the bot's token acts as.
    other_bot = 'project_7_bot'
    token_variable, url_variable = 'GITLAB_TOKEN', 'CI_SERVER_URL'
    needs_to_open = needs_to_comment = 'the `api` scope and at least the Developer role'
    create_request = ('POST', '/merge_requests')
    edit_request = ('PUT', '/merge_requests/1')
    comment_request = ('POST', '/merge_requests/1/notes')
    edit_comment_request = ('PUT', '/notes/1')
    list_comments_request = ('GET', '/merge_requests/1/notes')
    server: FakeGitLab

    @property
    def pulls(self) -> dict[int, dict[str, Any]]:
        return self.server.merge_requests

    def pull_ref(self, number: int) -> str:
        return f'merge request !{number}'

    def pull_url(self, number: int) -> str:
        return f'{GITLAB_WEB}/{self.project}/-/merge_requests/{number}'

    def comment_url(self, number: int, comment_id: int) -> str:
        # The adapter builds a note's URL from the server URL it was given, which the fake serves on loopback.
        return f'{self.server.url}/{self.project}/-/merge_requests/{number}#note_{comment_id}'

    def open(self, branch: str, title: str = '[Ops] Something', body: str = '', draft: bool = False,
             state: str = 'open', fork: str | None = None) -> int:
        return self.server.open_merge_request(branch, f'Draft: {title}' if draft else title, body,
                                              'opened' if state == 'open' else state, source_project=fork)

    def add_comment(self, number: int, body: str, author: str = 'alice') -> int:
        return self.server.add_note(number, body, author=author)

    def comments_on(self, number: int) -> list[tuple[str, str]]:
        return self.server.notes_on(number)

    def given_reactions(self) -> list[tuple[int, str, str]]:
        return self.server.awards


@pytest.fixture(params=[_GitHub, _GitLab], ids=['github', 'gitlab'])
def fake(request: pytest.FixtureRequest) -> _Fake:
    return request.param(request.getfixturevalue(f'{request.param.kind}_server'))


@pytest.fixture
def forge(fake: _Fake) -> Forge:
    return fake.connect()


def test_create_opens_a_draft(forge: Forge, fake: _Fake):
    pull = forge.create_pull('feature', 'main', '[Ops] Fuse the state update', 'the body')
    assert (pull.number, pull.title, pull.body, pull.draft) == (1, '[Ops] Fuse the state update', 'the body', True)
    assert (pull.head_branch, pull.head_sha, pull.base_branch) == ('feature', sha('feature'), 'main')
    assert (pull.state, pull.head_repo) == ('open', fake.project)
    assert pull.url == fake.pull_url(1)
    assert forge.get_pull(1).draft is True


def test_create_opens_a_ready_one_when_asked(forge: Forge):
    assert forge.create_pull('feature', 'main', '[Ops] Ready', 'body', draft=False).draft is False
    assert forge.get_pull(1).draft is False


def test_create_for_a_branch_with_an_open_one_updates_that_one(forge: Forge, fake: _Fake):
    fake.open('feature', title='[Ops] Old', body='old body')
    pull = forge.create_pull('feature', 'main', '[Ops] New', 'new body')
    assert (pull.number, pull.title, pull.body, pull.draft) == (1, '[Ops] New', 'new body', False)
    assert len(fake.pulls) == 1


def test_find_pull_finds_the_open_one_of_a_branch(forge: Forge, fake: _Fake):
    assert forge.find_pull('feature') is None
    fake.open('feature', state='closed')
    fake.open('feature', state='merged')
    fake.open('fix/overflow')
    assert forge.find_pull('feature') is None
    number = fake.open('feature', title='[Ops] Open', body='text', draft=True)
    found = forge.find_pull('feature')
    assert (found.number, found.title, found.body, found.draft, found.head_branch) == (number, '[Ops] Open', 'text',
                                                                                       True, 'feature')


def test_update_changes_only_what_it_is_given_and_keeps_a_draft_a_draft(forge: Forge, fake: _Fake):
    fake.open('feature', title='[Ops] Title', body='first', draft=True)
    pull = forge.update_pull(1, body='second')
    assert (pull.title, pull.body, pull.draft) == ('[Ops] Title', 'second', True)
    pull = forge.update_pull(1, title='[Ops] Renamed')
    assert (pull.title, pull.body, pull.draft) == ('[Ops] Renamed', 'second', True)
    stored = forge.get_pull(1)
    assert (stored.title, stored.body, stored.draft) == ('[Ops] Renamed', 'second', True)


def test_bodies_over_the_limit_are_refused_before_any_request(forge: Forge, fake: _Fake):
    with pytest.raises(ValueError, match='fit_body'):
        forge.create_pull('feature', 'main', '[Ops] Long', 'x' * (forge.body_limit + 1))
    with pytest.raises(ValueError, match='marker line'):
        forge.upsert_comment(1, 'report', 'x' * (forge.body_limit - len(REPORT)))
    assert fake.server.requests == []
    assert forge.create_pull('feature', 'main', '[Ops] Long', 'x' * forge.body_limit).number == 1
    forge.upsert_comment(1, 'report', 'x' * (forge.body_limit - len(REPORT) - 1))
    [(_, posted)] = fake.comments_on(1)
    assert len(posted) == forge.body_limit == fake.body_limit


def test_branch_exists(forge: Forge):
    assert forge.branch_exists('main')
    assert forge.branch_exists('fix/overflow')
    assert not forge.branch_exists('missing')


def test_sticky_comment_is_edited_in_place_on_a_rerun(forge: Forge, fake: _Fake):
    fake.open('feature')
    first = forge.upsert_comment(1, 'report', 'first run')
    second = forge.upsert_comment(1, 'report', 'second run')
    assert (first.created, second.created, second.id) == (True, False, first.id)
    assert second.url == fake.comment_url(1, first.id)
    assert fake.comments_on(1) == [('mrbot-dev', f'{REPORT}\nsecond run')]


def test_each_purpose_has_its_own_sticky_comment(forge: Forge, fake: _Fake):
    fake.open('feature')
    forge.upsert_comment(1, 'report', 'report')
    forge.upsert_comment(1, 'bench-hopper', 'bench')
    forge.upsert_comment(1, 'report', 'report again')
    assert fake.comments_on(1) == [('mrbot-dev', f'{REPORT}\nreport again'),
                                   ('mrbot-dev', '<!-- mrbot:bench-hopper -->\nbench')]


def test_a_human_comment_holding_the_marker_is_left_alone(forge: Forge, fake: _Fake):
    fake.open('feature')
    fake.add_comment(1, f'{REPORT}\nquoting the bot')
    forge.upsert_comment(1, 'report', 'first run')
    forge.upsert_comment(1, 'report', 'second run')
    assert fake.comments_on(1) == [('alice', f'{REPORT}\nquoting the bot'), ('mrbot-dev', f'{REPORT}\nsecond run')]


def test_the_oldest_sticky_comment_is_found_on_a_later_page(forge: Forge, fake: _Fake):
    fake.open('feature')
    for i in range(150):
        fake.add_comment(1, f'comment {i}')
    fake.add_comment(1, f'{REPORT}\nearlier run', author='mrbot-dev')
    fake.add_comment(1, f'{REPORT}\na run that raced it', author='mrbot-dev')
    assert forge.upsert_comment(1, 'report', 'this run').id == 151
    assert fake.comments_on(1)[150:] == [('mrbot-dev', f'{REPORT}\nthis run'),
                                         ('mrbot-dev', f'{REPORT}\na run that raced it')]


def test_every_reaction_is_given_once_and_an_unknown_one_is_refused(forge: Forge, fake: _Fake):
    fake.open('feature')
    comment = fake.add_comment(1, '/bench chunk_simple_gla')
    for reaction in (*REACTIONS, 'eyes', '+1'):
        forge.add_reaction(1, comment, reaction)
    assert fake.given_reactions() == [(comment, name, 'mrbot-dev') for name in fake.reaction_names]
    with pytest.raises(ValueError, match="reaction 'thumbsup'"):
        forge.add_reaction(1, comment, 'thumbsup')


def test_permission_of_someone_the_project_does_not_know_is_none(forge: Forge):
    assert forge.permission('stranger') == 'none'


def test_create_is_retried_after_a_502_and_happens_once(forge: Forge, fake: _Fake):
    fake.server.fail(*fake.create_request, 502)
    assert forge.create_pull('feature', 'main', '[Ops] Title', 'body').number == 1
    assert len(fake.pulls) == 1
    assert fake.server.count(*fake.create_request) == 2


@pytest.mark.parametrize('status', [500, 502, 503, 504])
def test_edits_and_comments_are_retried_after_a_server_error(forge: Forge, fake: _Fake, status):
    fake.open('feature')
    fake.server.fail(*fake.edit_request, status)
    fake.server.fail(*fake.comment_request, status)
    forge.update_pull(1, body='edited')
    forge.upsert_comment(1, 'report', 'posted')
    fake.server.fail(*fake.edit_comment_request, status)
    forge.upsert_comment(1, 'report', 'edited')
    assert forge.get_pull(1).body == 'edited'
    assert fake.comments_on(1) == [('mrbot-dev', f'{REPORT}\nedited')]
    requests = (fake.edit_request, fake.comment_request, fake.edit_comment_request)
    assert [fake.server.count(*request) for request in requests] == [2, 2, 2]


def test_create_is_retried_after_a_429_that_says_when(forge: Forge, fake: _Fake):
    fake.server.fail(*fake.create_request, 429, message='Too many requests', headers={'Retry-After': '0'})
    assert forge.create_pull('feature', 'main', '[Ops] Title', 'body').number == 1
    assert len(fake.pulls) == 1


def test_create_is_retried_after_a_connection_reset(forge: Forge, fake: _Fake):
    fake.server.fail(*fake.create_request, RESET)
    assert forge.create_pull('feature', 'main', '[Ops] Title', 'body').number == 1
    assert len(fake.pulls) == 1


@pytest.mark.parametrize(('status', 'retries'), [(502, 2), (429, 3)])
def test_after_the_last_retry_the_error_says_what_failed(fake: _Fake, status, retries):
    fake.server.fail(*fake.create_request, status, times=retries + 1, headers={'Retry-After': '0'})
    with pytest.raises(MrbotError) as error:
        fake.connect(retries=retries).create_pull('feature', 'main', '[Ops] Title', 'body')
    assert str(error.value) == (f'{fake.name}: opening a {fake.pull_kind} from feature into main in {fake.project}: '
                                f'still failing after {retries} retries (too many {status} error responses); try again '
                                'later')
    assert fake.server.count(*fake.create_request) == retries + 1
    assert fake.pulls == {}


def test_an_unreachable_server_is_one_line(fake: _Fake):
    # A bound socket that does not listen refuses every connection for as long as it is held.
    with socket.socket() as refusing:
        refusing.bind(('127.0.0.1', 0))
        forge = fake.connect(url=f'http://127.0.0.1:{refusing.getsockname()[1]}', retries=1)
        with pytest.raises(MrbotError, match=rf'^{fake.name}: looking for branch main in {fake.project}: no answer after '
                                             rf'1 retry \(.*refused.*\); check the network and the {fake.name} URL$'
                           ) as error:
            forge.branch_exists('main')
    assert '\n' not in str(error.value)


def test_a_refused_token_names_the_variable_it_came_from(fake: _Fake):
    environ = {fake.url_variable: fake.server.url, fake.token_variable: 'revoked-token'}
    with pytest.raises(MrbotError) as error:
        connect(fake.kind, fake.project, environ=environ, backoff=BACKOFF).find_pull('feature')
    message = str(error.value)
    assert message.startswith(f'{fake.name}: looking for the open {fake.pull_kind} of feature in {fake.project}: 401 ')
    assert message.endswith(f'; {fake.name} refused the token from {fake.token_variable}: it is mistyped, expired or '
                            'revoked')


def test_a_project_the_token_cannot_see_is_named(fake: _Fake):
    hidden = f"{fake.project.split('/')[0]}/private"
    forge = fake.connect(project=hidden)
    with pytest.raises(MrbotError) as error:
        forge.create_pull('feature', 'main', '[Ops] Title', 'body')
    assert str(error.value).startswith(f'{fake.name}: opening a {fake.pull_kind} from feature into main in {hidden}: 404 ')
    assert f'; it does not exist, or the token given to mrbot cannot see {hidden} ' in str(error.value)
    for call in (lambda: forge.branch_exists('main'), lambda: forge.permission('bob')):
        with pytest.raises(MrbotError, match=f'cannot see {hidden}'):
            call()


def test_a_missing_pull_request_is_named(forge: Forge, fake: _Fake):
    with pytest.raises(MrbotError) as error:
        forge.update_pull(7, body='text')
    assert str(error.value).startswith(f'{fake.name}: editing {fake.pull_ref(7)} of {fake.project}: 404 ')
    assert '; it does not exist' in str(error.value)


def test_a_missing_permission_is_named_and_not_retried(fake: _Fake):
    fake.open('feature')
    forge = fake.connect(token=READ_ONLY_TOKEN)
    with pytest.raises(MrbotError) as opening:
        forge.create_pull('fix/overflow', 'main', '[Ops] Title', 'body')
    with pytest.raises(MrbotError) as commenting:
        forge.upsert_comment(1, 'report', 'text')
    lacks = f'; the token given to mrbot lacks a permission on {fake.project}: it needs '
    assert str(opening.value).startswith(f'{fake.name}: opening a {fake.pull_kind} from fix/overflow into main in '
                                         f'{fake.project}: 403 ')
    assert str(opening.value).endswith(lacks + fake.needs_to_open)
    assert str(commenting.value).startswith(f"{fake.name}: posting the 'report' {fake.comment_kind} on "
                                            f'{fake.pull_ref(1)} of {fake.project}: 403 ')
    assert str(commenting.value).endswith(lacks + fake.needs_to_comment)
    assert (fake.server.count(*fake.create_request), fake.server.count(*fake.comment_request)) == (1, 1)
    assert (len(fake.pulls), fake.comments_on(1)) == (1, [])


def test_get_pull_reads_a_pull_request_in_any_state(forge: Forge, fake: _Fake):
    fake.open('feature', title='[Ops] Open', body='text', draft=True)
    fake.open('fix/overflow', state='merged')
    fake.open('main', state='closed')
    pull = forge.get_pull(1)
    assert (pull.number, pull.title, pull.body, pull.draft) == (1, '[Ops] Open', 'text', True)
    assert (pull.head_branch, pull.head_sha, pull.head_repo, pull.state) == ('feature', sha('feature'), fake.project,
                                                                             'open')
    assert (forge.get_pull(2).state, forge.get_pull(3).state) == ('merged', 'closed')


def test_a_fork_pull_request_names_the_fork_and_is_not_the_branch_of_the_project(forge: Forge, fake: _Fake):
    fake.open('feature', fork=FORK)
    pull = forge.get_pull(1)
    assert (pull.head_branch, pull.head_repo, pull.head_sha) == ('feature', FORK, sha(f'{FORK}:feature'))
    assert forge.find_pull('feature') is None
    number = fake.open('feature')
    assert forge.find_pull('feature').number == number


def test_get_pull_of_a_missing_number_is_one_line(forge: Forge, fake: _Fake):
    with pytest.raises(MrbotError) as error:
        forge.get_pull(7)
    message = str(error.value)
    assert message.startswith(f'{fake.name}: reading {fake.pull_ref(7)} of {fake.project}: 404 ')
    assert message.endswith(f'; it does not exist, or the token given to mrbot cannot see {fake.project} ({fake.name} '
                            f'answers 404 for a private {fake.project_kind} the token may not read)')
    assert '\n' not in message


def test_post_comment_posts_a_new_comment_every_time(forge: Forge, fake: _Fake):
    fake.open('feature')
    first = forge.post_comment(1, 'running the benchmark')
    second = forge.post_comment(1, 'running the benchmark')
    assert (first.created, second.created) == (True, True)
    assert first.id != second.id
    assert second.url == fake.comment_url(1, second.id)
    assert fake.comments_on(1) == [('mrbot-dev', 'running the benchmark')] * 2


def test_post_comment_over_the_limit_is_refused_before_any_request(forge: Forge, fake: _Fake):
    with pytest.raises(ValueError, match=f'over the limit of {fake.body_limit}'):
        forge.post_comment(1, 'x' * (forge.body_limit + 1))
    assert fake.server.requests == []


def test_edit_comment_replaces_the_bots_own_comment_and_nobody_elses(forge: Forge, fake: _Fake):
    fake.open('feature')
    mine = forge.post_comment(1, 'Accepted.')
    theirs = fake.add_comment(1, 'a comment of alice')
    forge.edit_comment(1, mine.id, 'Accepted.\ndone')
    assert fake.comments_on(1) == [('mrbot-dev', 'Accepted.\ndone'), ('alice', 'a comment of alice')]
    editing = f'editing {fake.comment_kind} {theirs} on {fake.pull_ref(1)} of {fake.project}'
    with pytest.raises(MrbotError, match=re.escape(editing)):
        forge.edit_comment(1, theirs, 'hijacked')


def test_comments_reads_every_page_oldest_first(forge: Forge, fake: _Fake):
    fake.open('feature')
    fake.open('fix/overflow')
    fake.add_comment(2, 'on another pull request')
    for i in range(130):
        fake.add_comment(1, f'comment {i}')
    fake.add_comment(1, 'benchmark done', author='mrbot-dev')
    fake.add_comment(1, 'a marker from another bot', author=fake.other_bot)
    notes = forge.comments(1)
    assert [note.body for note in notes] == [f'comment {i}' for i in range(130)] + ['benchmark done',
                                                                                    'a marker from another bot']
    assert notes[0] == Note(id=2, author='alice', by_bot=False, body='comment 0',
                            created_at='2026-12-03T04:01:00+00:00')
    assert notes[-2] == Note(id=132, author='mrbot-dev', by_bot=True, body='benchmark done',
                             created_at=created_at(132).replace(microsecond=0).isoformat())
    # the bot's own comments are those of the token's user, not those of any other bot account
    assert (notes[-1].author, notes[-1].by_bot) == (fake.other_bot, False)
    assert fake.server.count(*fake.list_comments_request) == 2


def test_publish_check_refuses_an_unknown_conclusion_before_any_request(forge: Forge, fake: _Fake):
    with pytest.raises(ValueError, match="check conclusion 'failed': expected one of success, failure, neutral"):
        forge.publish_check(sha('feature'), 'mrbot', 'failed', 'title', 'summary')
    assert fake.server.requests == []


def test_head_pushed_at_is_the_last_push_that_made_the_commit_the_head(forge: Forge, fake: _Fake):
    fake.open('feature')
    first = forge.get_pull(1).head_sha
    assert forge.head_pushed_at(forge.get_pull(1)) == OPENED.replace(microsecond=0).isoformat()
    fake.server.push(1, 'b' * 40, created_at(5))
    fake.server.push(1, first, created_at(9))
    assert forge.head_pushed_at(forge.get_pull(1)) == created_at(9).replace(microsecond=0).isoformat()
    never_pushed = dataclasses.replace(forge.get_pull(1), head_sha='c' * 40)
    assert forge.head_pushed_at(never_pushed) is None
