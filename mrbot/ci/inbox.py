# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The notes `mrbot webhook` accepted, in a small sqlite file: each note once, with what became of it.

A note is written as pending before its delivery is answered, so that a restart finds it and a second delivery of it
is known as one. The job asked to run for a note on each runner class is written before it is asked, so that an
answer lost on its way back does not make the receiver run a second job for the same note.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mrbot.records import MrbotError

# The layout below; a file of another version is refused rather than read as this one.
SCHEMA = 1
STATES = ('pending', 'played', 'dropped', 'answered')
_TABLES = '''
CREATE TABLE IF NOT EXISTS notes (
    note INTEGER PRIMARY KEY,
    merge_request INTEGER NOT NULL,
    author TEXT NOT NULL,
    author_id INTEGER NOT NULL,
    runners TEXT NOT NULL,
    state TEXT NOT NULL,
    outcome TEXT NOT NULL DEFAULT '',
    received REAL NOT NULL,
    due REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS pending_notes ON notes (state, due);
CREATE TABLE IF NOT EXISTS plays (
    note INTEGER NOT NULL,
    runner TEXT NOT NULL,
    job INTEGER NOT NULL,
    PRIMARY KEY (note, runner)
);
CREATE INDEX IF NOT EXISTS played_jobs ON plays (job);
'''


@dataclass(frozen=True)
class NoteEvent:
    """A command note as its delivery told it: its id, the merge request (iid) it is on, its author's username and
    user id, and the runner classes its `--on` names (none: every class whose job the pipeline has)."""

    note: int
    merge_request: int
    author: str
    author_id: int
    runners: tuple[str, ...]


@dataclass(frozen=True)
class Pending:
    """A note not yet played nor answered, when it was accepted (seconds since the epoch), and the job asked to run
    for it on each runner class so far."""

    event: NoteEvent
    received: float
    plays: Mapping[str, int]


class Inbox:
    """The sqlite file at `path`, made when missing. Every write is committed, and synced to disk, before it returns.

    Raises:
        MrbotError: the file cannot be opened, or another version of mrbot wrote it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            # the receiver's event loop is the one user, but a test may start it in another thread than this one
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            version = self._db.execute('PRAGMA user_version').fetchone()[0]
            if version not in (0, SCHEMA):
                raise MrbotError(f'{path}: written by another version of mrbot (schema {version}, this one reads '
                                 f'{SCHEMA}); move it away or name another file')
            self._db.execute('PRAGMA journal_mode = WAL')
            # a note answered 202 is on disk, not only in the operating system's cache
            self._db.execute('PRAGMA synchronous = FULL')
            self._db.executescript(_TABLES)
            self._db.execute(f'PRAGMA user_version = {SCHEMA}')
        except sqlite3.Error as error:
            raise MrbotError(f'{path}: cannot keep the notes there ({error}); name a writable file') from None

    def close(self) -> None:
        self._db.close()

    def knows(self, note: int) -> bool:
        """Whether note `note` was accepted before, whatever became of it."""
        return self._db.execute('SELECT 1 FROM notes WHERE note = ?', (note,)).fetchone() is not None

    def add(self, event: NoteEvent) -> None:
        """Keep `event` as pending; a note the inbox knows is refused (sqlite3.IntegrityError)."""
        self._db.execute('INSERT INTO notes (note, merge_request, author, author_id, runners, state, received) '
                         "VALUES (?, ?, ?, ?, ?, 'pending', ?)", (event.note, event.merge_request, event.author,
                                                                   event.author_id, ' '.join(event.runners), time.time()))

    def pending(self, note: int) -> Pending | None:
        """Note `note` while it is pending, with the jobs asked to run for it; None once it is settled."""
        row = self._db.execute("SELECT merge_request, author, author_id, runners, received FROM notes "
                               "WHERE note = ? AND state = 'pending'", (note,)).fetchone()
        if row is None:
            return None
        plays = dict(self._db.execute('SELECT runner, job FROM plays WHERE note = ? ORDER BY job', (note,)).fetchall())
        return Pending(NoteEvent(note, row[0], row[1], row[2], tuple(row[3].split())), row[4], plays)

    def due(self, now: float, limit: int) -> list[int]:
        """At most `limit` pending notes whose turn has come at `now` (seconds since the epoch), oldest first."""
        rows = self._db.execute("SELECT note FROM notes WHERE state = 'pending' AND due <= ? ORDER BY note LIMIT ?",
                                (now, limit))
        return [row[0] for row in rows]

    def playing(self, note: int, runner: str, job: int) -> None:
        """Record that job `job` is about to be asked to run for note `note` on `runner`: the one job of that class for
        the note, for good (a second is refused, sqlite3.IntegrityError)."""
        self._db.execute('INSERT INTO plays (note, runner, job) VALUES (?, ?, ?)', (note, runner, job))

    def asked(self, jobs: Iterable[int]) -> set[int]:
        """Those of `jobs` that were asked to run for some note."""
        wanted = list(jobs)
        marks = ', '.join('?' * len(wanted))
        return {row[0] for row in self._db.execute(f'SELECT job FROM plays WHERE job IN ({marks})', wanted)}

    def settle(self, note: int, state: str, outcome: str) -> None:
        """Note `note` is done with: `state` is played, dropped or answered, and `outcome` says how in one line."""
        if state not in STATES[1:]:
            raise ValueError(f"note state '{state}': expected one of {', '.join(STATES[1:])}")
        self._db.execute('UPDATE notes SET state = ?, outcome = ? WHERE note = ?', (state, outcome, note))

    def later(self, note: int, due: float, outcome: str) -> None:
        """Note `note` stays pending, to be tried again from `due` on; `outcome` says why it is not done."""
        self._db.execute('UPDATE notes SET due = ?, outcome = ? WHERE note = ?', (due, outcome, note))
