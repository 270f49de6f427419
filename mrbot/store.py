# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The history store: optimization loops, their tries, and every recorded timing, in one SQLite file under `.mrbot/`.

Each write is one transaction, so a process killed in the middle of one leaves the store as it was before it; the
file is in WAL mode with a busy timeout, so two writers (a loop and a `mrbot bench --record` beside it) take turns
instead of failing. The schema carries its version in `PRAGMA user_version`; a store of another version is refused
with what to do, never read half-understood.
"""

from __future__ import annotations

import datetime
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mrbot.config import state_dir
from mrbot.records import MrbotError
from mrbot.records.bench import BenchRun, Gate, Revision
from mrbot.records.loop_outcome import LoopOutcome, outcome_from_json
from mrbot.records.reading import JsonObject

SCHEMA = 2
FILE = 'history.sqlite3'
# How long a writer waits for another one before it gives up, in ms.
BUSY_TIMEOUT_MS = 30_000
LOOP_STATES = ('open', 'promoted', 'no-go')

_TABLES = """
CREATE TABLE loops (
    id INTEGER PRIMARY KEY,
    op TEXT NOT NULL,
    started TEXT NOT NULL,
    baseline_sha TEXT NOT NULL,
    contract TEXT NOT NULL,
    request TEXT NOT NULL,
    baseline TEXT,
    state TEXT NOT NULL,
    ended TEXT,
    outcome TEXT
);
CREATE TABLE tries (
    id INTEGER PRIMARY KEY,
    loop_id INTEGER NOT NULL REFERENCES loops(id),
    number INTEGER NOT NULL,
    created TEXT NOT NULL,
    candidate_sha TEXT NOT NULL,
    note TEXT NOT NULL,
    diff TEXT NOT NULL,
    verdict TEXT NOT NULL,
    reasons TEXT NOT NULL,
    run TEXT,
    -- the gate of a try stopped before its run was timed (a timed run holds its own)
    gate TEXT,
    UNIQUE (loop_id, number)
);
CREATE TABLE timings (
    id INTEGER PRIMARY KEY,
    recorded TEXT NOT NULL,
    source TEXT NOT NULL,
    label TEXT NOT NULL,
    sha TEXT NOT NULL,
    loop_id INTEGER REFERENCES loops(id),
    try_number INTEGER,
    op TEXT NOT NULL,
    mode TEXT NOT NULL,
    shape TEXT NOT NULL,
    gpu TEXT NOT NULL,
    evidence INTEGER NOT NULL,
    median_ms REAL NOT NULL
);
CREATE INDEX timings_by_op ON timings (op, mode, shape, id);
"""


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')


@dataclass(frozen=True)
class Timing:
    """One recorded median of one op x mode x shape: where it came from (`bench`, `loop`), its label (`try 3`, a
    short sha), the commit, the GPU and whether it is evidence (compiled on a GPU, not the interpreter)."""

    recorded: str
    source: str
    label: str
    sha: str
    op: str
    mode: str
    shape: str
    gpu: str
    evidence: bool
    median_ms: float

    @property
    def series(self) -> str:
        """What a plot draws as one line: the mode and the shape's name."""
        return f'{self.mode} {self.shape}'


@dataclass(frozen=True)
class LoopRow:
    """A loop as stored: its outcome read back into its record, its other JSON columns still plain data, read into
    records by `mrbot.loop`."""

    id: int
    op: str
    started: str
    baseline_sha: str
    contract: dict
    request: dict
    baseline: dict | None
    state: str
    ended: str | None
    outcome: LoopOutcome | None


@dataclass(frozen=True)
class TryRow:
    """One try of a loop as stored."""

    loop_id: int
    number: int
    created: str
    candidate_sha: str
    note: str
    diff: str
    verdict: str
    reasons: list
    run: dict | None
    gate: dict | None


def _timed_side(run: BenchRun) -> Revision:
    return run.head if run.paired else run.ref


def _timings_of(run: BenchRun, source: str, side: Revision, base: bool = False, label: str | None = None
                ) -> list[Timing]:
    """The medians of one side of `run` (the base's with `base`), labelled by `label` or else by the side's commit."""
    recorded, shown = now(), label or (side.sha or side.ref)[:12] + (' +dirty' if side.dirty else '')
    medians = [(row, row.base_median_ms if base else row.median_ms) for row in run.rows]
    return [Timing(recorded, source, shown, side.sha or '', row.op, row.mode, row.shape.name, run.machine.gpu,
                   row.evidence, median) for row, median in medians if median]


def _json(text: str | None) -> dict | list | None:
    return None if text is None else json.loads(text)


def _outcome(loop_id: int, text: str | None) -> LoopOutcome | None:
    """The stored outcome of loop `loop_id` as its record; None while the loop is open."""
    fields = JsonObject({'outcome': _json(text)}, FILE, f'loops[{loop_id}]').optional_object('outcome')
    return None if fields is None else outcome_from_json(fields)


class Store:
    """The open history of one repository; use as a context manager, or `Store.open(root)` and `close()`."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.connection = connection
        self.path = path

    @classmethod
    def open(cls, root: Path, create: bool = True) -> Store | None:
        """The store of the repository at `root`, under its `.mrbot/`, made on first use; None when `create` is False
        and there is none yet."""
        if not create and not (root / '.mrbot' / FILE).exists():
            return None
        return cls.at(state_dir(root) / FILE)

    @classmethod
    def at(cls, path: Path) -> Store:
        """The store in the file `path`, made on first use (the CI poster keeps one outside any checkout)."""
        try:
            connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            connection.execute(f'PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}')
            connection.execute('PRAGMA journal_mode = WAL')
            connection.execute('PRAGMA synchronous = FULL')
            connection.execute('PRAGMA foreign_keys = ON')
            store = cls(connection, path)
            store._migrate()
        except sqlite3.DatabaseError as error:
            raise MrbotError(f'{path}: not a readable history store ({error}); move it aside and mrbot starts a new '
                             'one') from None
        return store

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.connection.close()

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One transaction, taken before the first read so that two writers never both decide on stale data."""
        self.connection.execute('BEGIN IMMEDIATE')
        try:
            yield self.connection
        except BaseException:
            self.connection.execute('ROLLBACK')
            raise
        self.connection.execute('COMMIT')

    def _migrate(self) -> None:
        with self._writing() as db:
            version = db.execute('PRAGMA user_version').fetchone()[0]
            if version == 0:
                for statement in filter(str.strip, _TABLES.split(';')):
                    db.execute(statement)
                db.execute(f'PRAGMA user_version = {SCHEMA}')
            elif version == 1:
                # 2 keeps a try's gate also where nothing was timed (a try stopped after its gate)
                db.execute('ALTER TABLE tries ADD COLUMN gate TEXT')
                db.execute(f'PRAGMA user_version = {SCHEMA}')
            elif version != SCHEMA:
                raise MrbotError(f'{self.path}: history schema {version}, this mrbot reads {SCHEMA}; use the mrbot that '
                                 'wrote it, or move the file aside to start a new history')

    # loops

    def add_loop(self, op: str, baseline_sha: str, contract: dict, request: dict) -> int:
        """A new open loop of `op`; refused while another loop of the op is open."""
        with self._writing() as db:
            open_loop = db.execute("SELECT id FROM loops WHERE op = ? AND state = 'open'", (op,)).fetchone()
            if open_loop:
                raise MrbotError(f'loop {open_loop[0]} of {op} is still open: end it with `mrbot loop promote TRY` or '
                                 '`mrbot loop no-go --bound TEXT` before starting another')
            return db.execute('INSERT INTO loops (op, started, baseline_sha, contract, request, state) '
                              "VALUES (?, ?, ?, ?, ?, 'open')",
                              (op, now(), baseline_sha, json.dumps(contract), json.dumps(request))).lastrowid

    def set_baseline(self, loop_id: int, run: BenchRun, label: str = 'baseline') -> None:
        with self._writing() as db:
            db.execute('UPDATE loops SET baseline = ? WHERE id = ?', (json.dumps(run.to_json()), loop_id))
            self._insert(db, _timings_of(run, 'loop', run.ref, label=label), loop_id, 0)

    def end_loop(self, loop_id: int, state: str, outcome: LoopOutcome) -> None:
        with self._writing() as db:
            db.execute('UPDATE loops SET state = ?, ended = ?, outcome = ? WHERE id = ?',
                       (state, now(), json.dumps(outcome.to_json()), loop_id))

    def loops(self, op: str | None = None) -> list[LoopRow]:
        query = 'SELECT * FROM loops' + (' WHERE op = ?' if op else '') + ' ORDER BY id'
        return [LoopRow(r[0], r[1], r[2], r[3], _json(r[4]), _json(r[5]), _json(r[6]), r[7], r[8],
                        _outcome(r[0], r[9]))
                for r in self.connection.execute(query, (op,) if op else ())]

    # tries

    def add_try(self, loop_id: int, candidate_sha: str, note: str, diff: str, verdict: str, reasons: list,
                run: BenchRun | None, gate: Gate | None = None) -> int:
        """Store a try and, when it was timed, its run with the candidate's medians, else the `gate` it passed or failed
        before it stopped (a timed run holds its own); its number within the loop."""
        with self._writing() as db:
            number = db.execute('SELECT COALESCE(MAX(number), 0) + 1 FROM tries WHERE loop_id = ?',
                                (loop_id,)).fetchone()[0]
            gate = gate if run is None else None
            db.execute('INSERT INTO tries (loop_id, number, created, candidate_sha, note, diff, verdict, reasons, run, '
                       'gate) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
                       (loop_id, number, now(), candidate_sha, note, diff, verdict, json.dumps(reasons),
                        json.dumps(run.to_json()) if run else None, json.dumps(gate.to_json()) if gate else None))
            if run is not None:
                self._insert(db, _timings_of(run, 'loop', _timed_side(run), label=f'try {number}'), loop_id, number)
            return number

    def tries(self, loop_id: int) -> list[TryRow]:
        return [TryRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], _json(r[7]), _json(r[8]), _json(r[9]))
                for r in self.connection.execute('SELECT loop_id, number, created, candidate_sha, note, diff, verdict, '
                                                 'reasons, run, gate FROM tries WHERE loop_id = ? ORDER BY number',
                                                 (loop_id,))]

    # timings

    def add_bench(self, run: BenchRun) -> int:
        """Record a `mrbot bench --record` run: the timed side's medians, and the base's in a paired run; how many."""
        timings = _timings_of(run, 'bench', _timed_side(run))
        if run.paired:
            timings = _timings_of(run, 'bench', run.base, base=True) + timings
        return self.add_timings(timings)

    def add_timings(self, timings: Sequence[Timing], loop_id: int | None = None, try_number: int | None = None) -> int:
        """Record medians (of a loop's try when given); how many."""
        with self._writing() as db:
            return self._insert(db, timings, loop_id, try_number)

    @staticmethod
    def _insert(db: sqlite3.Connection, timings: Sequence[Timing], loop_id: int | None, try_number: int | None) -> int:
        db.executemany('INSERT INTO timings (recorded, source, label, sha, loop_id, try_number, op, mode, shape, gpu, '
                       'evidence, median_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
                       [(t.recorded, t.source, t.label, t.sha, loop_id, try_number, t.op, t.mode, t.shape, t.gpu,
                         int(t.evidence), t.median_ms) for t in timings])
        return len(timings)

    def timings(self, op: str | None = None, loop_id: int | None = None) -> list[Timing]:
        """Recorded medians in the order they were written, of one op and one loop when given."""
        where, values = [], []
        for column, value in (('op', op), ('loop_id', loop_id)):
            if value is not None:
                where.append(f'{column} = ?')
                values.append(value)
        query = ('SELECT recorded, source, label, sha, op, mode, shape, gpu, evidence, median_ms FROM timings'
                 + (f" WHERE {' AND '.join(where)}" if where else '') + ' ORDER BY id')
        return [Timing(*r[:8], bool(r[8]), r[9]) for r in self.connection.execute(query, values)]

    def integrity(self) -> str:
        """SQLite's own check of the file: 'ok' or what is wrong."""
        return self.connection.execute('PRAGMA integrity_check').fetchone()[0]
