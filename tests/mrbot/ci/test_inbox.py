# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The receiver's inbox: a note kept once across restarts, and a file it cannot read refused in one line."""

from __future__ import annotations

import sqlite3

import pytest

from mrbot.ci.inbox import Inbox, NoteEvent
from mrbot.records import MrbotError

EVENT = NoteEvent(note=12, merge_request=3, author='alice', author_id=2, runners=('hopper',))


def test_a_note_is_kept_once_with_the_jobs_asked_for_it_until_it_is_settled(tmp_path):
    inbox = Inbox(tmp_path / 'notes.sqlite3')
    inbox.add(EVENT)
    inbox.playing(12, 'hopper', 5001)
    inbox.close()
    # a restart finds it, and the job asked for it
    inbox = Inbox(tmp_path / 'notes.sqlite3')
    pending = inbox.pending(12)
    assert (pending.event, dict(pending.plays)) == (EVENT, {'hopper': 5001})
    # due at once: the start's sweep queues it again
    assert inbox.knows(12) and inbox.due(0, 10) == [12]
    with pytest.raises(sqlite3.IntegrityError):
        inbox.add(EVENT)
    inbox.settle(12, 'played', 'mrbot-bench-hopper (job 5001)')
    assert inbox.pending(12) is None and inbox.knows(12)


def test_a_note_waiting_for_a_later_try_is_due_from_then_on(tmp_path):
    inbox = Inbox(tmp_path / 'notes.sqlite3')
    inbox.add(EVENT)
    inbox.later(12, 1000.0, 'GitLab: 503')
    assert inbox.due(999.0, 10) == [] and inbox.due(1000.0, 10) == [12]


def test_a_file_of_another_version_or_no_database_is_refused_in_one_line(tmp_path):
    newer = tmp_path / 'newer.sqlite3'
    with sqlite3.connect(newer) as db:
        db.execute('PRAGMA user_version = 2')
    with pytest.raises(MrbotError, match=r'newer.sqlite3: written by another version of mrbot \(schema 2, this one '
                                         r'reads 1\); move it away or name another file$'):
        Inbox(newer)
    text = tmp_path / 'notes.txt'
    text.write_text('not a database, though long enough to look like one\n' * 100)
    with pytest.raises(MrbotError, match=r'notes.txt: cannot keep the notes there \(file is not a database\); name a '
                                         'writable file$'):
        Inbox(text)


def test_a_class_keeps_the_first_job_asked_for_a_note(tmp_path):
    inbox = Inbox(tmp_path / 'notes.sqlite3')
    inbox.add(EVENT)
    inbox.playing(12, 'hopper', 5001)
    with pytest.raises(sqlite3.IntegrityError):
        inbox.playing(12, 'hopper', 5002)
    assert dict(inbox.pending(12).plays) == {'hopper': 5001} and inbox.asked([5001, 5002]) == {5001}
