# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""GitLab's merge request pipelines, through `mrbot action --forge gitlab` against the fake GitLab: the report note
and commit status, and the command jobs, which take who asked, the merge request and its head from GitLab and never
from the job's variables."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest

from mrbot.ci import gitlab as ci_gitlab
from mrbot.ci import grammar
from mrbot.ci.artifacts import ARTIFACT, write_artifact
from mrbot.cli import main
from mrbot.config import Config
from mrbot.records import MrbotError
from tests.mrbot.ci.fakerunner import HEADER, _job_run_by
from tests.mrbot.forges.fakeforge import created_at


@pytest.mark.parametrize(('unset', 'changes', 'code', 'message'), [
    (['CI_PROJECT_PATH'], {}, 2, 'CI_PROJECT_PATH is not set: mrbot action --forge gitlab runs in a GitLab CI job'),
    (['CI_JOB_TOKEN', 'CI_COMMIT_SHA'], {}, 2, 'CI_COMMIT_SHA, CI_JOB_TOKEN not set'),
    ([], {'CI_MERGE_REQUEST_IID': 'abc'}, 2, "CI_MERGE_REQUEST_IID 'abc': expected the number of a merge request"),
    (['CI_MERGE_REQUEST_IID'], {}, 0, 'mrbot acts in merge request pipelines only'),
])
def test_a_gitlab_job_without_its_variables_says_which(lab, monkeypatch, capsys, unset, changes, code, message):
    server, iid, _ = lab
    for name in unset:
        monkeypatch.delenv(name)
    for name, value in changes.items():
        monkeypatch.setenv(name, value)
    assert main(['action', '--forge', 'gitlab']) == code
    captured = capsys.readouterr()
    assert message in (captured.err if code else captured.out) and server.notes_on(iid) == []


def test_gitlab_pipeline_posts_the_report_note_and_a_commit_status(lab):
    server, iid, head = lab
    assert main(['action', '--forge', 'gitlab']) == 0
    assert main(['action', '--forge', 'gitlab']) == 0
    [(_, note)] = server.notes_on(iid)
    assert 'HDR001' in note
    assert [(s['sha'], s['status'], s['name']) for s in server.statuses] == [(head, 'failed', 'mrbot check')] * 2


def test_gitlab_a_report_grades_the_title_gitlab_has_not_one_the_runner_of_a_job_sets(lab, monkeypatch, repo):
    # a Developer may play a job with variables of their choosing: a title that passes, on an MR whose title fails
    server, iid, _ = lab
    server.merge_requests[iid]['title'] = 'add shift'
    monkeypatch.setenv('CI_MERGE_REQUEST_TITLE', '[Ops] Add shift')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    [(_, note)] = server.notes_on(iid)
    assert 'MR-TITLE' in note and server.statuses[-1]['status'] == 'failed'


def _a_good_head_then_a_bad_one(lab, repo) -> tuple[str, str, Callable[[], None]]:
    """A clean commit pushed to the merge request, and a failing one after it with what pushes it (not yet called)."""
    server, iid, _ = lab
    at = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
    good = repo.commit({'pkg/shift.py': HEADER + 'def shift(x):\n    return x + 1\n'}, '[Ops] Add shift')
    server.push(iid, good, at)
    server.branches['keep'] = good
    bad = repo.commit({'pkg/bad.py': 'x = 1\n'}, '[Ops] Add bad')
    return good, bad, lambda: server.push(iid, bad, at + datetime.timedelta(minutes=5))


def test_gitlab_a_report_on_a_head_the_mr_has_moved_on_from_is_not_posted(lab, monkeypatch, repo):
    # a retried mrbot-check of an older pipeline, or a slow one, would put the older commit's report in the note
    server, iid, _ = lab
    good, bad, push_bad = _a_good_head_then_a_bad_one(lab, repo)
    push_bad()
    monkeypatch.setenv('CI_COMMIT_SHA', bad)
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    current = server.notes_on(iid)[-1][1]
    monkeypatch.setenv('CI_COMMIT_SHA', good)
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert 'HDR001' in current and server.notes_on(iid)[-1][1] == current


def test_gitlab_a_report_whose_head_moved_while_it_was_checked_is_not_posted(lab, monkeypatch, repo, capsys):
    # the ninth review: a push while the check runs, and the new head's own pipeline posts first
    server, iid, _ = lab
    good, bad, push_bad = _a_good_head_then_a_bad_one(lab, repo)
    check = ci_gitlab.check_report

    def check_while_pushed(workspace, target, sha, title, body):
        report = check(workspace, target, sha, title, body)
        push_bad()
        return report

    monkeypatch.setattr(ci_gitlab, 'check_report', check_while_pushed)
    monkeypatch.setenv('CI_COMMIT_SHA', good)
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert f'!{iid} moved on from {good[:12]} to {bad[:12]} while it was checked' in capsys.readouterr().out
    assert server.notes_on(iid) == [] and server.statuses == []


def test_gitlab_command_is_authorized_by_access_level(lab, monkeypatch):
    server, iid, _ = lab
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    _job_run_by(server, monkeypatch, 'reader')
    server.members['reader'] = 20
    assert main(['action', '--forge', 'gitlab']) == 0
    assert server.notes_on(iid)[-1][1] == ('Not running `/test --on hopper`: @reader has read permission; commands need '
                                           'write access.')
    _job_run_by(server, monkeypatch, 'alice')
    # a Developer may; this runner has no GPU, so the job fails loudly and the note says why
    assert main(['action', '--forge', 'gitlab']) == 1
    accepted, result = server.notes_on(iid)[-2][1], server.notes_on(iid)[-1][1]
    assert accepted.startswith('Accepted from @alice: mrbot test on ') and grammar.markers([accepted], 'accepted', None)
    assert 'this runner has no GPU, but class hopper needs sm_90' in result
    # the run is the job as GitLab tells it: the pipeline's id and page are shared, and variables its runner may set
    assert '[the run](https://gitlab.example/lab/kernels/fla/-/jobs/9002)' in result
    assert grammar.markers([server.notes_on(iid)[-2][1]], 'done', None) == [{'run': '9002'}]
    # a second request within the cooldown is refused, as on GitHub
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert 'started a job' in server.notes_on(iid)[-1][1] and 'try again in' in server.notes_on(iid)[-1][1]


def test_a_gitlab_command_is_answered_as_on_github_closed_refused_note_reacted_bench_base_from_the_target(
        lab, monkeypatch):
    server, iid, _ = lab
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    _job_run_by(server, monkeypatch, 'alice')
    note = server.add_note(iid, '/bench --on hopper', author='alice')
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(note))
    server.merge_requests[iid]['state'] = 'closed'
    assert main(['action', '--forge', 'gitlab']) == 0
    assert server.notes_on(iid)[-1][1] == f'Not running `/bench --on hopper --rounds 10`: !{iid} is closed.'
    assert [(award[0], award[1]) for award in server.awards] == [(note, 'thumbsdown')]
    server.merge_requests[iid]['state'] = 'opened'
    # this runner has no GPU: the job fails after accepting, which is what this test needs
    assert main(['action', '--forge', 'gitlab']) == 1
    accepted = server.notes_on(iid)[-2][1]
    assert accepted.startswith('Accepted from @alice: mrbot bench ') and ', against main, ' in accepted
    assert [(award[0], award[1]) for award in server.awards][-1] == (note, 'eyes')


def test_a_gitlab_command_is_asked_by_a_note_or_by_whoever_ran_the_job_never_by_a_variable(lab, monkeypatch):
    server, iid, _ = lab
    server.members.update(alice=30, bob=30)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    _job_run_by(server, monkeypatch, 'alice')
    # a name in the job's variables is not who asked: alice cannot post as @all, nor leave her cooldown to bob
    monkeypatch.setenv('MRBOT_COMMAND', '/bench --on hopper')
    monkeypatch.setenv('MRBOT_COMMAND_AUTHOR', 'all')
    assert main(['action', '--forge', 'gitlab']) == 1
    assert server.notes_on(iid)[-2][1].startswith('Accepted from @alice: ')
    monkeypatch.setenv('MRBOT_COMMAND_AUTHOR', 'bob')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert '@alice started a job' in server.notes_on(iid)[-1][1]
    # a webhook receiver names the note; its author and its first line come from GitLab
    monkeypatch.delenv('MRBOT_COMMAND')
    _job_run_by(server, monkeypatch, 'receiver')
    server.members['receiver'] = 30
    note = server.add_note(iid, '/test --on hopper\nplease', author='bob')
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(note))
    assert main(['action', '--forge', 'gitlab']) == 1
    assert server.notes_on(iid)[-2][1].startswith('Accepted from @bob: mrbot test on ')
    # once
    _job_run_by(server, monkeypatch, 'receiver')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert server.notes_on(iid)[-1][1] == (f'Not running `/test --on hopper`: note {note} has been run already on '
                                           'hopper; a new note asks again.')
    # a note given before the pipeline's commit was pushed does not run it
    server.members['carol'] = 30
    later = server.add_note(iid, '/test --on hopper', author='carol')
    server.push(iid, server.branches['topic'], created_at(later) + datetime.timedelta(seconds=5))
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(later))
    _job_run_by(server, monkeypatch, 'receiver')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert f'the head of !{iid} became ' in server.notes_on(iid)[-1][1]
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', '1; rm -rf /')
    assert main(['action', '--forge', 'gitlab']) == 2


def test_a_gitlab_job_takes_who_ran_it_and_its_merge_request_from_gitlab_not_from_its_variables(lab, monkeypatch,
                                                                                               capsys):
    server, iid, _ = lab
    server.members.update(mallory=30, olivia=40)
    victim = server.open_merge_request('main', title='[Docs] Someone else')
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'mallory')
    # mallory runs the job and sets the variables GitLab's own would have
    monkeypatch.setenv('GITLAB_USER_LOGIN', 'olivia')
    monkeypatch.setenv('CI_MERGE_REQUEST_IID', str(victim))
    assert main(['action', '--forge', 'gitlab']) == 2
    assert f'this job runs for !{iid} at ' in capsys.readouterr().err and server.notes_on(victim) == []
    monkeypatch.setenv('CI_MERGE_REQUEST_IID', str(iid))
    assert main(['action', '--forge', 'gitlab']) == 1
    assert server.notes_on(iid)[-2][1].startswith('Accepted from @mallory: ')


@pytest.mark.parametrize('project', ['mallory/scratch', 'mallory/lab/kernels/fla'],
                         ids=['another', 'one-whose-path-ends-with-this-ones'])
def test_gitlab_a_job_of_another_project_is_not_this_ones(lab, monkeypatch, project):
    server, iid, _ = lab
    real = server._job

    def foreign(request):
        answer = real(request)
        answer.body['web_url'] = f"https://gitlab.example/{project}/-/jobs/{answer.body['id']}"
        return answer

    server.entities[foreign] = server.entities[real]
    monkeypatch.setattr(server, '_routes', [(m, p, foreign if a == real else a) for m, p, a in server._routes])
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 2
    assert server.notes_on(iid) == []


def test_a_gitlab_note_never_runs_a_commit_that_is_no_longer_the_head(lab, monkeypatch, repo):
    server, iid, old = lab
    server.members.update(olivia=40, mallory=30)
    new = repo.commit({'pkg/shift.py': HEADER + 'def shift(x):\n    return x + 2\n'}, '[Ops] Reviewed head')
    note = server.add_note(iid, '/test --on hopper', author='olivia')
    server.push(iid, new, created_at(note) - datetime.timedelta(seconds=30))
    # mallory runs the job of the pipeline of the old head, naming the note olivia wrote for the new one
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(note))
    _job_run_by(server, monkeypatch, 'mallory')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert server.notes_on(iid)[-1][1] == (f'Not running `/test --on hopper`: this pipeline is of {old[:10]}, but the '
                                           f'head of !{iid} is {new[:10]}; run the job of its newest pipeline.')


def test_a_gitlab_note_for_two_classes_runs_once_on_each(lab, monkeypatch):
    server, iid, _ = lab
    note = server.add_note(iid, '/test --on hopper blackwell', author='alice')
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(note))
    for runner in ('hopper', 'blackwell', 'hopper'):
        monkeypatch.setenv('MRBOT_RUNNER', runner)
        _job_run_by(server, monkeypatch, 'alice')
        main(['action', '--forge', 'gitlab'])
    replies = [body.splitlines()[0] for author, body in server.notes_on(iid) if author == 'project_7_bot'
               and not body.startswith('<!--')]
    assert [reply.split(':')[0] for reply in replies] == ['Accepted from @alice', 'Accepted from @alice',
                                                          'Not running `/test --on hopper blackwell`']


def _still_running(*args, **kwargs):
    # the GPU job is under way: nothing marks it done before it ends
    raise MrbotError('still running')


def test_gitlab_one_job_token_answers_one_command(lab, monkeypatch):
    # whoever runs a job may hand its token to other jobs: each would run under the one job's run, and one done marker
    # would free them all
    server, iid, _ = lab
    server.members.update(bob=30, carol=30, dave=30)
    monkeypatch.setattr(ci_gitlab, 'run_job', _still_running)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    _job_run_by(server, monkeypatch, 'bob')
    for author in ('carol', 'dave'):
        monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(server.add_note(iid, '/test --on hopper', author=author)))
        main(['action', '--forge', 'gitlab'])
    bodies = [body for author, body in server.notes_on(iid) if author == 'project_7_bot']
    assert len(grammar.markers(bodies, 'accepted', None)) == 1


def test_gitlab_a_refusal_marks_done_its_own_job_and_no_other_of_the_pipeline(lab, monkeypatch):
    # the jobs of one pipeline share its id: a done marker naming the pipeline freed every running job of it
    server, iid, _ = lab
    server.members.update(alice=30, bob=30, carol=30)
    monkeypatch.setattr(ci_gitlab, 'run_job', _still_running)
    # the GPU jobs are under way: none has got as far as marking itself done
    monkeypatch.setattr(ci_gitlab, 'with_done', lambda body, run, seal: body)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'bob')
    assert main(['action', '--forge', 'gitlab']) == 2
    # two of alice's jobs answered at once, each reading the notes before the other posted
    real = ci_gitlab.bot_bodies
    monkeypatch.setattr(ci_gitlab, 'bot_bodies', lambda notes: real(notes)[:1])
    _job_run_by(server, monkeypatch, 'alice')
    monkeypatch.setenv('MRBOT_RUNNER', 'blackwell')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on blackwell')
    assert main(['action', '--forge', 'gitlab']) == 2
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    bodies = [body for author, body in server.notes_on(iid) if author == 'project_7_bot']
    assert bodies[-1].startswith('Not running')
    # bob's job and alice's first are still running: the default limit of 2 leaves room for no third
    now = datetime.datetime.now(datetime.timezone.utc)
    assert not grammar.authorize('carol', 'MEMBER', 'write', bodies, now, Config(), seal=None).allowed


def test_gitlab_the_run_linked_is_the_job_as_gitlab_tells_it_not_the_variables_of_its_runner(lab, monkeypatch):
    # whoever runs a manual job sets its variables: a pipeline URL carrying a quick action and a marker of its own
    server, iid, _ = lab
    monkeypatch.setattr(ci_gitlab, 'run_job', _still_running)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    forged = grammar.marker('accepted', None, run='1', user='victim', at=datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec='seconds'), sha='0' * 40, command='test', runners=['hopper', 'x'])
    monkeypatch.setenv('CI_PIPELINE_URL', f'https://x)\n/approve\n{forged}\n[x](https://x')
    _job_run_by(server, monkeypatch, 'alice')
    main(['action', '--forge', 'gitlab'])
    [accepted] = [body for author, body in server.notes_on(iid) if author == 'project_7_bot']
    assert '/approve' not in accepted and '/-/jobs/' in accepted
    assert [m['user'] for m in grammar.markers([accepted], 'accepted', None)] == ['alice']


def test_gitlab_a_job_whose_result_cannot_be_posted_is_marked_done_all_the_same(lab, monkeypatch):
    # the merge request's code ran as the job's user and left the artifact as it liked: the job is over all the same
    server, iid, _ = lab

    def garbled(root, config, environ, folder, run_url):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ARTIFACT).write_text('{')
        return 0

    monkeypatch.setattr(ci_gitlab, 'run_job', garbled)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 2
    bodies = [body for author, body in server.notes_on(iid) if author == 'project_7_bot']
    assert [m['run'] for m in grammar.markers(bodies, 'done', None)] == [
        m['run'] for m in grammar.markers(bodies, 'accepted', None)]


def test_a_gitlab_command_job_posts_only_its_own_result(lab, monkeypatch):
    # the ninth review: the merge request's code writes the artifact, and may write another MR's report with a check
    server, iid, _ = lab
    other = server.open_merge_request('main', title='[Ops] Other', description='x')

    def forged(root, config, environ, folder, run_url):
        write_artifact(folder, {'schema': 1, 'kind': 'report', 'pr': other, 'sha': server.branches['main'],
                                'purpose': 'report', 'body': 'All clear.',
                                'graded': {'title': '[Ops] Other', 'body': 'x', 'base': 'main'},
                                'check': {'conclusion': 'success', 'title': 'ok', 'summary': 'ok', 'annotations': []}})
        return 0

    monkeypatch.setattr(ci_gitlab, 'run_job', forged)
    monkeypatch.setattr(ci_gitlab, 'require_kernel_stack', lambda why: None)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 2
    assert server.notes_on(other) == [] and server.statuses == []
