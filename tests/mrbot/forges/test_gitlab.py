# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The GitLab adapter with the real python-gitlab against a fake GitLab on loopback."""

from __future__ import annotations

import pytest

from mrbot.forges import Annotation, Forge, connect, marker
from mrbot.records import MrbotError
from tests.mrbot.forges.fakeforge import (
    BACKOFF,
    BOT_TOKEN,
    READ_ONLY_TOKEN,
    FakeGitLab,
    sha,
)

REPORT = marker('report')


def _connect(server: FakeGitLab, project: str | None = None, token: str = BOT_TOKEN, retries: int = 4) -> Forge:
    return connect('gitlab', project or server.project, url=server.url, token=token, environ={}, retries=retries,
                   backoff=BACKOFF)


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


@pytest.mark.parametrize('headers', [{'Retry-After': '0'}, {'RateLimit-Remaining': '0'}])
def test_create_is_retried_after_a_rate_limit(gitlab: Forge, gitlab_server: FakeGitLab, headers):
    gitlab_server.fail('POST', '/merge_requests', 429, message='Retry later', headers=headers)
    assert gitlab.create_pull('feature', 'main', '[Ops] Title', 'text').number == 1
    assert len(gitlab_server.merge_requests) == 1


@pytest.mark.parametrize(('gitlab_state', 'state'), [
    ('opened', 'open'), ('locked', 'open'), ('closed', 'closed'), ('merged', 'merged'),
])
def test_get_pull_reads_a_merge_request_in_any_state(gitlab: Forge, gitlab_server: FakeGitLab, gitlab_state, state):
    gitlab_server.open_merge_request('feature', title='Draft: [Ops] Title', description='text', state=gitlab_state)
    pull = gitlab.get_pull(1)
    assert (pull.number, pull.title, pull.body, pull.draft, pull.state) == (1, '[Ops] Title', 'text', True, state)
    assert (pull.head_branch, pull.head_sha, pull.head_repo) == ('feature', sha('feature'), 'lab/kernels/fla')


def test_comments_leave_out_system_notes(gitlab: Forge, gitlab_server: FakeGitLab):
    gitlab_server.open_merge_request('feature')
    gitlab_server.add_note(1, 'first')
    # GitLab writes these itself, under the name of whoever pushed: the bot's token user here
    gitlab_server.add_note(1, 'added 1 commit', author='mrbot-dev', system=True)
    gitlab_server.add_note(1, 'second')
    assert [note.body for note in gitlab.comments(1)] == ['first', 'second']


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


def test_publish_check_without_the_permission_names_the_scope_and_role(gitlab_server: FakeGitLab):
    forge = _connect(gitlab_server, token=READ_ONLY_TOKEN)
    with pytest.raises(MrbotError, match=r"^GitLab: publishing the 'mrbot' status of [0-9a-f]{40} in lab/kernels/fla: "
                                         r'403 Forbidden; .* it needs the `api` scope and at least the Developer role$'):
        forge.publish_check(sha('feature'), 'mrbot', 'success', 'title', 'summary')
    assert gitlab_server.statuses == []

def test_the_head_pipeline_is_the_newest_merge_request_pipeline_of_the_head(gitlab: Forge, gitlab_server: FakeGitLab):
    iid = gitlab_server.open_merge_request('feature')
    older = gitlab_server.start_pipeline(iid)
    newest = gitlab_server.start_pipeline(iid)
    # a merged-results pipeline runs another commit than the head, and a pipeline of another head is not this one's
    gitlab_server.merged_results = True
    gitlab_server.start_pipeline(iid)
    assert gitlab.head_pipeline(iid, sha('feature')).id == newest != older
    assert gitlab.head_pipeline(iid, sha('main')) is None


def test_a_manual_job_runs_once_with_its_variables_as_the_tokens_user(gitlab: Forge, gitlab_server: FakeGitLab):
    iid = gitlab_server.open_merge_request('feature')
    pipeline = gitlab.create_merge_request_pipeline(iid)
    assert (pipeline.sha, pipeline.ref) == (sha('feature'), f'refs/merge-requests/{iid}/head')
    # GitLab makes a new pipeline's jobs first, and only then lets them be run
    assert {job.status for job in gitlab.pipeline_jobs(pipeline.id)} == {'created'}
    jobs = {job.name: job for job in gitlab.pipeline_jobs(pipeline.id)}
    assert {job.status for job in jobs.values()} == {'manual'}
    hopper = jobs['mrbot-bench-hopper'].id
    gitlab.play_job(hopper, {'MRBOT_COMMAND_NOTE': '12'})
    assert gitlab_server.plays == [(hopper, {'MRBOT_COMMAND_NOTE': '12'}, 'mrbot-dev')]
    assert gitlab.bot_user_id() == 1
    with pytest.raises(MrbotError, match=rf'^GitLab: running job {hopper} of lab/kernels/fla: 400 Bad request - '
                                         'Unplayable Job$'):
        gitlab.play_job(hopper, {'MRBOT_COMMAND_NOTE': '13'})
    assert len(gitlab_server.plays) == 1
