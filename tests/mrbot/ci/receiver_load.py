# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""A bounded load on `mrbot webhook`: deliveries over HTTP from a few clients at once, a tenth of them hostile, against
the fake GitLab; what it was answered, how fast, what ran, and what the process's memory did.

`tests/mrbot/ci/test_receiver.py` asserts on it, `scripts/webhook_load.py` prints it (docs/performance.md).
"""

from __future__ import annotations

import collections
import json
import os
import socket
import statistics
import threading
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import mrbot.ci
import mrbot.forges
from mrbot.ci.receiver import MAX_BODY, PATH
from tests.mrbot.ci.serving import SECRET, Answer, connect_to, deliver, eventually, note_event, serving, settings
from tests.mrbot.forges.fakeforge import FakeGitLab

# Merge requests the notes are spread over, each with a pipeline of its head: a later note on one needs a new pipeline.
MERGE_REQUESTS = 100
CLIENTS = 4
WARM_UP = 100
# How long a client refused with 429 waits before delivering again: GitLab's Retry-After is for a person resending.
RESEND_S = 0.05


@dataclass(frozen=True)
class Figures:
    """What a load run measured: deliveries and how they were answered (by status); after the warm-up, the time the
    clients took to send the rest and their rate, the delivery round trips' median and 99th percentile, and the time
    until every note was settled; the notes and how often each was run; the process's resident memory after the
    warm-up and at the end, and where traced, what mrbot's own code still holds of what it allocated since."""

    deliveries: int
    answers: dict[int, int]
    sending_s: float
    per_second: float
    p50_ms: float
    p99_ms: float
    settled_s: float
    notes: int
    runs_per_note: dict[int, int]
    rss_warm_mb: float
    rss_end_mb: float
    # with `traced`: what the receiver's and the adapter's code allocated after the warm-up and still holds at the end
    held_kb: float | None


@dataclass(frozen=True)
class _Delivery:
    """One delivery of the plan: a note event (`note` None for a hostile one) and how it is sent."""

    note: int | None
    kind: str
    body: bytes


def _held_kb() -> float:
    """KB still held of what mrbot's CI and forge code allocated since tracing began; tracing stops."""
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, f'{Path(package.__file__).parent}/*')
                                                          for package in (mrbot.ci, mrbot.forges)])
    tracemalloc.stop()
    return sum(stat.size for stat in snapshot.statistics('filename')) / 1024


def _rss_mb() -> float:
    with open('/proc/self/statm') as statm:
        return int(statm.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2 ** 20


def _plan(count: int) -> list[_Delivery]:
    """`count` deliveries of notes spread over the merge requests, every other one a command and the rest what most
    comments are, no command; every tenth delivery a hostile one instead (a wrong secret, a body that is no JSON,
    one over the limit, or a copy of an earlier command), in turn."""
    plan: list[_Delivery] = []
    hostile = ('secret', 'malformed', 'oversized', 'duplicate')
    for index in range(count):
        note = index + 1
        if index % 10 == 9:
            kind = hostile[(index // 10) % len(hostile)]
            copied = plan[index - 5].note or 1
            body = json.dumps(note_event(copied, '/bench --on hopper', iid=copied % MERGE_REQUESTS + 1)).encode()
            plan.append(_Delivery(None, kind, b'{"object_attributes": [' if kind == 'malformed' else body))
        elif index % 2:
            body = json.dumps(note_event(note, 'Looks good to me.', iid=note % MERGE_REQUESTS + 1)).encode()
            plan.append(_Delivery(None, 'comment', body))
        else:
            text = '/bench chunk_kda --on hopper' if index % 4 else '/test tests/ops --on blackwell'
            body = json.dumps(note_event(note, text, iid=note % MERGE_REQUESTS + 1)).encode()
            plan.append(_Delivery(note, 'command', body))
    return plan


def _oversized(port: int) -> Answer:
    """A delivery that says it is over the limit; its body is never asked for."""
    with socket.create_connection(('127.0.0.1', port), timeout=30) as connection:
        connection.sendall(f'POST {PATH} HTTP/1.1\r\nHost: x\r\nX-Gitlab-Token: {SECRET}\r\nX-Gitlab-Event: Note Hook\r\n'
                           f'Content-Length: {MAX_BODY * 4}\r\nConnection: close\r\n\r\n'.encode())
        answer = b''
        while piece := connection.recv(65536):
            answer += piece
    return Answer(int(answer.split()[1]), answer.partition(b'\r\n\r\n')[2].decode(), None)


def _send(port: int, deliveries: list[_Delivery]) -> Iterator[tuple[_Delivery, Answer, float]]:
    """Each delivery sent on one kept-alive connection, again after a pause while it is refused as too many; each
    with its answer and round trip in seconds."""
    connection = connect_to(port)
    try:
        for delivery in deliveries:
            while True:
                start = time.perf_counter()
                if delivery.kind == 'oversized':
                    answer = _oversized(port)
                else:
                    answer = deliver(port, delivery.body, token=SECRET if delivery.kind != 'secret' else 'not-it',
                                     connection=connection)
                yield delivery, answer, time.perf_counter() - start
                if answer.status != 429:
                    break
                time.sleep(RESEND_S)
    finally:
        connection.close()


def _run_clients(port: int, deliveries: list[_Delivery]) -> list[tuple[_Delivery, Answer, float]]:
    """`deliveries` split among CLIENTS threads sending at once."""
    results: list[list[tuple[_Delivery, Answer, float]]] = [[] for _ in range(CLIENTS)]
    threads = [threading.Thread(target=lambda i=i: results[i].extend(_send(port, deliveries[i::CLIENTS])))
               for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [result for client in results for result in client]


def run_load(folder: Path, deliveries: int = 1000, traced: bool = False) -> Figures:
    """Serve the receiver against a fake GitLab of MERGE_REQUESTS merge requests and send it `deliveries`: WARM_UP
    first (which warm its caches and connections, and are left out of the timing), then the rest; wait until every
    note accepted is settled. `traced` follows the allocations of mrbot's code (slower: not for the timing)."""
    with FakeGitLab() as gitlab:
        for iid in range(1, MERGE_REQUESTS + 1):
            gitlab.open_merge_request('feature')
            gitlab.start_pipeline(iid)
        gitlab.members['alice'] = 30
        plan = _plan(deliveries)
        chosen = settings(gitlab, folder / 'load.sqlite3', attempts=5, workers=4, queue=64, sweep_s=0.5)
        with serving(gitlab, chosen) as served:
            warm = _run_clients(served.port, plan[:WARM_UP])
            eventually(lambda: len(gitlab.plays) == sum(1 for d in plan[:WARM_UP] if d.note), 'the warm-up to run')
            rss_warm = _rss_mb()
            if traced:
                tracemalloc.start()
            start = time.perf_counter()
            measured = _run_clients(served.port, plan[WARM_UP:])
            sending = time.perf_counter() - start
            notes = {delivery.note for delivery in plan if delivery.note}
            eventually(lambda: len(gitlab.plays) >= len(notes) and all(
                served.note_state(note)[0] != 'pending' for note in notes), 'every note to be settled', timeout=120)
            settled = time.perf_counter() - start
            rss_end = _rss_mb()
            held = _held_kb() if traced else None
        runs = collections.Counter(int(variables['MRBOT_COMMAND_NOTE']) for _, variables, _ in gitlab.plays)
    trips = sorted(trip for _, _, trip in measured)
    return Figures(deliveries=len(warm) + len(measured),
                   answers=dict(collections.Counter(answer.status for _, answer, _ in warm + measured)),
                   sending_s=sending, per_second=len(measured) / sending, p50_ms=statistics.median(trips) * 1000,
                   p99_ms=trips[int(len(trips) * 0.99)] * 1000, settled_s=settled, notes=len(notes),
                   runs_per_note={note: runs[note] for note in notes}, rss_warm_mb=rss_warm, rss_end_mb=rss_end,
                   held_kb=held)
