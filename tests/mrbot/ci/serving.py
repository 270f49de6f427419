# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot webhook`'s receiver served by uvicorn on loopback against the fake GitLab, and deliveries as GitLab sends
them: what the receiver's tests and its load test drive."""

from __future__ import annotations

import http.client
import json
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from mrbot.ci.inbox import Inbox
from mrbot.ci.receiver import PATH, Receiver, Settings, listen
from mrbot.forges import connect
from tests.mrbot.forges.fakeforge import BACKOFF, GITLAB_WEB, PROJECT_TOKEN, FakeGitLab

uvicorn = pytest.importorskip('uvicorn')

SECRET = 'a-webhook-secret-of-some-length'
# The user ids the fake GitLab gives: alice (a Developer in the tests), and the project token's bot.
ALICE_ID = 2
BOT_ID = 4


@dataclass(frozen=True)
class Served:
    """A receiver listening on 127.0.0.1:`port`, keeping its notes in the sqlite file `state`."""

    port: int
    state: Path

    def note_state(self, note: int) -> tuple[str, str] | None:
        """What became of note `note` as the inbox holds it (state, outcome), read as an operator would."""
        with sqlite3.connect(f'file:{self.state}?mode=ro', uri=True) as db:
            return db.execute('SELECT state, outcome FROM notes WHERE note = ?', (note,)).fetchone()


def settings(gitlab: FakeGitLab, state: Path, **changes: Any) -> Settings:
    """The receiver's settings for `gitlab`, with short pauses: a test waits for outcomes, not for the clock."""
    return replace(Settings(SECRET.encode(), gitlab.project, gitlab.url, PROJECT_TOKEN, state, attempts=3,
                            backoff_s=0.01, settle_s=0.01, sweep_s=0.05), **changes)


@contextmanager
def serving(gitlab: FakeGitLab, chosen: Settings, log_level: str = 'warning') -> Iterator[Served]:
    """Serve the receiver with `chosen` settings on a socket bound to port 0, in a thread, until the block ends."""
    listener = listen('127.0.0.1', 0)
    inbox = Inbox(chosen.state)
    receiver = Receiver(chosen, inbox, lambda: connect('gitlab', gitlab.project, url=gitlab.url, token=PROJECT_TOKEN,
                                                       environ={}, retries=1, backoff=BACKOFF))
    server = uvicorn.Server(uvicorn.Config(receiver, lifespan='on', log_level=log_level))
    thread = threading.Thread(target=server.run, kwargs={'sockets': [listener]}, daemon=True)
    thread.start()
    try:
        eventually(lambda: server.started, 'the server to start')
        yield Served(listener.getsockname()[1], chosen.state)
    finally:
        server.should_exit = True
        thread.join()
        inbox.close()
        listener.close()


def eventually(condition: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    """Wait until `condition()` holds; a test that waits longer than `timeout` fails, naming `what` it waited for."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f'waited {timeout} s for {what}')
        time.sleep(0.01)


def note_event(note: int, text: str, *, iid: int = 1, author: str = 'alice', author_id: int = ALICE_ID,
               state: str = 'opened', action: str | None = 'create', noteable: str = 'MergeRequest',
               project: str = 'lab/kernels/fla') -> dict[str, Any]:
    """A Note Hook delivery of a comment on merge request `iid`, in the shape of GitLab's webhook documentation."""
    attributes = {'id': note, 'note': text, 'noteable_type': noteable, 'author_id': author_id,
                  'created_at': '2026-12-03 04:00:00 UTC', 'updated_at': '2026-12-03 04:00:00 UTC', 'project_id': 7,
                  'attachment': None, 'line_code': None, 'commit_id': '', 'noteable_id': 1000 + iid, 'system': False,
                  'st_diff': None, 'url': f'{GITLAB_WEB}/{project}/-/merge_requests/{iid}#note_{note}'}
    if action is not None:
        attributes['action'] = action
    return {'object_kind': 'note', 'event_type': 'note',
            'user': {'id': author_id, 'name': author, 'username': author, 'avatar_url': None, 'email': '[REDACTED]'},
            'project_id': 7, 'project': {'id': 7, 'name': project.rsplit('/', 1)[-1], 'path_with_namespace': project,
                                         'web_url': f'{GITLAB_WEB}/{project}', 'default_branch': 'main'},
            'object_attributes': attributes,
            'merge_request': {'id': 1000 + iid, 'iid': iid, 'state': state, 'source_branch': 'feature',
                              'target_branch': 'main', 'title': '[Ops] Something', 'description': 'text',
                              'last_commit': {'id': 'f' * 40}}}


@dataclass(frozen=True)
class Answer:
    """How the receiver answered a delivery."""

    status: int
    text: str
    retry_after: str | None


def deliver(port: int, payload: dict[str, Any] | bytes, *, token: str | None = SECRET, event: str = 'Note Hook',
            method: str = 'POST', path: str = PATH, connection: http.client.HTTPConnection | None = None) -> Answer:
    """Send one delivery as GitLab does (JSON, its two headers), on `connection` where one is kept open."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {'Content-Type': 'application/json', 'X-Gitlab-Event': event, 'User-Agent': 'GitLab/17.0.0'}
    if token is not None:
        headers['X-Gitlab-Token'] = token
    sender = connection or connect_to(port)
    try:
        sender.request(method, path, body=body, headers=headers)
        response = sender.getresponse()
        return Answer(response.status, response.read().decode(), response.getheader('Retry-After'))
    finally:
        if connection is None:
            sender.close()


class _Connection(http.client.HTTPConnection):
    """An HTTP connection whose every socket, the ones it opens again after the receiver closed one included, sends
    each write at once: http.client sends a request's head and body in two writes, and with Nagle's algorithm on the
    body would wait for the receiver's delayed acknowledgement of the head, 40 ms each time."""

    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def connect_to(port: int) -> http.client.HTTPConnection:
    """A connection to the receiver on `port`, kept open for several deliveries where the receiver keeps it."""
    return _Connection('127.0.0.1', port, timeout=60)


def raw_exchange(port: int, head: bytes, chunks: list[bytes]) -> bytes:
    """Send a request head and then `chunks` over a plain socket, and read the whole answer."""
    with socket.create_connection(('127.0.0.1', port), timeout=30) as connection:
        connection.sendall(head)
        for chunk in chunks:
            connection.sendall(chunk)
        answer = b''
        while piece := connection.recv(65536):
            answer += piece
    return answer
