# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot webhook`: GitLab's note events in, the GPU job of a merge request run for each /bench or /test note.

A delivery is checked (its secret, its size, its shape), kept only if it is a new command note on an open merge
request, written to the inbox as pending, and only then answered 202. A fixed number of workers take the notes from a
bounded queue: each reads the merge request, checks the author's role, and runs the manual `mrbot-bench-<class>`
jobs of the merge request pipeline of its head with MRBOT_COMMAND_NOTE set to the note. The job reads the note back
from GitLab and decides everything else (`ci/gitlab.py`); nothing is checked out or run here.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import math
import os
import random
import re
import socket
import sys
import time
import weakref
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mrbot.ci import grammar
from mrbot.ci.inbox import Inbox, NoteEvent, Pending
from mrbot.ci.inert import inert
from mrbot.forges import GITLAB_URL, MAX_BACKOFF, connect
from mrbot.forges.gitlab import GitLab, PipelineJob
from mrbot.records import MrbotError
from mrbot.records.reading import JsonObject
from mrbot.words import plural

# Where GitLab sends the deliveries: the path of the webhook's URL.
PATH = '/webhook'
# The X-Gitlab-Event of a comment's event; comments marked internal come as 'Confidential Note Hook', and no command
# is read from those.
NOTE_HOOK = b'Note Hook'
# The most bytes of one delivery that are read: a note event carries the note and the merge request's description.
MAX_BODY = 1 << 20
JOB_PREFIX = 'mrbot-bench-'
NOTE_VARIABLE = 'MRBOT_COMMAND_NOTE'
# What a refused delivery is told to wait: about what one note takes to play.
RETRY_AFTER_S = 30
# How long a note that could neither be played nor answered waits before the next try.
LATER_S = 300
# How long such a note is tried at all: a command run a day late is not what its author asked for.
GIVE_UP_S = 86_400
# How many times the jobs of a pipeline GitLab is still making are listed before the try gives up.
SETTLE_TRIES = 10
# The connections served at once; uvicorn answers 503 to more.
CONNECTIONS = 128
# How long an idle kept-alive connection holds one of those places after its last answer.
KEEP_ALIVE_S = 5
ENVIRONMENT = f'''\
environment:
  MRBOT_WEBHOOK_SECRET    the webhook's secret token, which GitLab sends as X-Gitlab-Token (required; 16 or more
                          visible ASCII characters)
  MRBOT_GITLAB_PROJECT    the project whose merge request notes are served, group/name (required)
  GITLAB_TOKEN            a token with the `api` scope whose user reads the merge requests and runs the jobs with
                          a variable: a role at or above the project's minimum role to use pipeline variables, and
                          Developer at least (required)
  MRBOT_GITLAB_URL        the GitLab server (default: {GITLAB_URL})
  MRBOT_WEBHOOK_STATE     the sqlite file of the accepted notes (default: mrbot-webhook.sqlite3)
  MRBOT_WEBHOOK_HOST      the address to listen on (default: 127.0.0.1)
  MRBOT_WEBHOOK_PORT      the port to listen on (default: 8080)
  MRBOT_WEBHOOK_WORKERS   how many notes are played at once (default: 4)
  MRBOT_WEBHOOK_QUEUE     how many accepted notes may wait; a delivery beyond is answered 429 (default: 64)

GitLab sends the deliveries to POST {PATH}.'''
_PROJECT = re.compile(r'[\w.-]+(?:/[\w.-]+)+')
# What GitLab's webhook form takes as a secret token, and what can be sent in a header: visible ASCII.
_SECRET = re.compile(r'[\x21-\x7e]{16,}')


@dataclass(frozen=True)
class Settings:
    """How the receiver runs; `read_settings` takes them from the environment. `attempts` tries of a note, paused
    `backoff_s` doubling (with jitter) between them; the jobs of a new pipeline are listed `settle_s` apart; pending
    notes whose turn has come are queued every `sweep_s`; a delivery's body not read within `body_s` is answered 408."""

    secret: bytes
    project: str
    gitlab_url: str
    token: str
    state: Path
    host: str = '127.0.0.1'
    port: int = 8080
    workers: int = 4
    queue: int = 64
    attempts: int = 5
    backoff_s: float = 2.0
    settle_s: float = 1.0
    sweep_s: float = 60.0
    body_s: float = 10.0


@dataclass(frozen=True)
class Reply:
    """What a delivery is answered: a status, one line of text, and any further headers. `unread` where the body was
    not read to its end: the connection is closed after the answer, rather than kept by reading the rest."""

    status: int
    text: str
    headers: tuple[tuple[bytes, bytes], ...] = ()
    unread: bool = False


@dataclass(frozen=True)
class Outcome:
    """What became of a note: played (its jobs run) or dropped (nothing to run, nothing to say), and how."""

    state: str
    text: str


class Unplayable(Exception):
    """A note whose jobs cannot run whatever GitLab's health: the reason is answered on the merge request."""


class _Missing(MrbotError):
    """GitLab says the note's merge request does not exist: nowhere to answer, so the note is dropped after its tries."""


class _Gone(Exception):
    """The sender hung up before the delivery was read."""


def read_settings(environ: Mapping[str, str]) -> Settings:
    """The receiver's settings from the environment (ENVIRONMENT lists them); one error naming a variable amiss."""
    secret = environ.get('MRBOT_WEBHOOK_SECRET', '')
    if not secret:
        raise MrbotError('MRBOT_WEBHOOK_SECRET is not set: the receiver answers only deliveries that carry it as '
                         "X-Gitlab-Token; set it to the webhook's secret token")
    if not _SECRET.fullmatch(secret):
        raise MrbotError('MRBOT_WEBHOOK_SECRET: expected 16 or more visible ASCII characters (no spaces), such as '
                         '`openssl rand -hex 32` prints')
    project = environ.get('MRBOT_GITLAB_PROJECT', '')
    if not _PROJECT.fullmatch(project):
        raise MrbotError(f'MRBOT_GITLAB_PROJECT {project[:60]!r}: expected the path of the GitLab project whose notes '
                         'are served, group/name')
    token = environ.get('GITLAB_TOKEN', '')
    if not token:
        raise MrbotError("GITLAB_TOKEN is not set: set it to a token with the `api` scope whose user may run the "
                         "project's jobs with variables (its minimum role to use pipeline variables, Developer at least)")
    url = environ.get('MRBOT_GITLAB_URL') or GITLAB_URL
    if not re.fullmatch(r'https?://[^\s/]+(/[^\s]*)?', url):
        raise MrbotError(f'MRBOT_GITLAB_URL {url[:60]!r}: expected the address of the GitLab server, https://HOST')
    return Settings(secret.encode(), project, url, token,
                    state=Path(environ.get('MRBOT_WEBHOOK_STATE') or 'mrbot-webhook.sqlite3'),
                    host=environ.get('MRBOT_WEBHOOK_HOST') or '127.0.0.1',
                    port=_whole(environ, 'MRBOT_WEBHOOK_PORT', 8080, 1, 65535),
                    workers=_whole(environ, 'MRBOT_WEBHOOK_WORKERS', 4, 1, 64),
                    queue=_whole(environ, 'MRBOT_WEBHOOK_QUEUE', 64, 1, 100_000))


def _whole(environ: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = environ.get(name) or str(default)
    if not (text.isascii() and text.isdigit() and len(text) <= 6 and low <= int(text) <= high):
        raise MrbotError(f'{name} {text[:20]!r}: expected a whole number from {low} to {high}')
    return int(text)


def note_event(body: bytes, project: str) -> NoteEvent | str:
    """The command note a Note Hook delivery of `project` brings, or the one word saying why it brings none to act on.

    Raises:
        MrbotError: `body` is not the JSON of a note event.
    """
    try:
        delivery = JsonObject.parse(body.decode('utf-8'), 'the delivery', 'a GitLab note event')
    except UnicodeDecodeError:
        raise MrbotError('the delivery: not UTF-8 text; expected a GitLab note event') from None
    attributes = delivery.object('object_attributes')
    note = attributes.integer('id')
    if not 0 < note < 2 ** 63:
        raise attributes.error(attributes.at('id'), 'the id of a note', note)
    if delivery.object('project').text('path_with_namespace').casefold() != project.casefold():
        return 'project'
    if attributes.text('noteable_type') != 'MergeRequest':
        return 'not-merge-request'
    # GitLab before 16.11 names no action, and sends no event for an edited note
    if attributes.optional_text('action') not in (None, 'create'):
        return 'edit'
    merge_request = delivery.object('merge_request')
    number = merge_request.integer('iid')
    if not 0 < number < 2 ** 63:
        raise merge_request.error(merge_request.at('iid'), 'the iid of a merge request', number)
    if merge_request.text('state') != 'opened':
        return 'not-open'
    user = delivery.object('user')
    author, author_id = user.text('username'), attributes.integer('author_id')
    if not 0 < author_id < 2 ** 63:
        raise attributes.error(attributes.at('author_id'), 'the id of a user', author_id)
    # GitLab's usernames are 255 characters at most; the inbox keeps the name
    if not 0 < len(author) <= 255:
        raise user.error(user.at('username'), 'a GitLab username of 1 to 255 characters', author[:40])
    # the line the GPU job reads back as the command (ci/gitlab.py)
    line = attributes.text('note').split('\n', 1)[0].strip()
    try:
        runners = grammar.requested_runners(line)
    except grammar.UsageError:
        return 'malformed'
    if runners is None:
        return 'not-command'
    return NoteEvent(note, number, author, author_id, runners)


def _one_line(text: str, limit: int = 300) -> str:
    """`text` as one line of printable characters, cut to `limit`: an error may quote what a stranger sent."""
    line = ''.join(char if char.isprintable() else ' ' for char in text)
    return line if len(line) <= limit else line[:limit - 1] + '…'


def _log(text: str) -> None:
    print(f'mrbot webhook: {_one_line(text, 1000)}', file=sys.stderr, flush=True)


def _internal(error: Exception) -> str:
    """An error no rule of the receiver expects, in one line: a bug, or an answer GitLab should not give."""
    return f'internal error: {type(error).__name__}: {error}'


def _ignored(reason: str) -> Reply:
    return Reply(200, f'ignored: {reason}')


def _runs(runners: tuple[str, ...], asked: Collection[str], jobs: Mapping[str, PipelineJob]
          ) -> list[tuple[str, PipelineJob]] | None:
    """The jobs of a pipeline (`jobs`, by runner class) that run a note for `runners` (none: every class), leaving out
    the classes `asked` holds, whose job was asked to run for it already; None where one of them does not wait to be
    run.

    Raises:
        Unplayable: the pipeline has no job for a class the note names, or none at all.
    """
    wanted = [runner for runner in runners or tuple(jobs) if runner not in asked]
    missing = [runner for runner in wanted if runner not in jobs]
    if not (runners or jobs) or missing:
        have = ', '.join(job.name for job in jobs.values()) or 'none'
        raise Unplayable(f"the merge request's pipeline has no job {JOB_PREFIX}{missing[0] if missing else '*'} (it "
                         f'has {have}): include templates/mrbot/template.yml with a job for each runner class')
    return None if any(jobs[runner].status != 'manual' for runner in wanted) else [(runner, jobs[runner])
                                                                                  for runner in wanted]


class Receiver:
    """The ASGI application of `mrbot webhook`: the deliveries at PATH, the queue and its workers, each with an
    adapter of its own from `open_forge`."""

    def __init__(self, settings: Settings, inbox: Inbox, open_forge: Callable[[], GitLab]) -> None:
        self._settings = settings
        self._inbox = inbox
        self._open_forge = open_forge
        self._queue: asyncio.Queue[int] = asyncio.Queue(settings.queue)
        # the notes in the queue or in a worker's hands, which the sweep leaves alone
        self._queued: set[int] = set()
        self._tasks: list[asyncio.Task] = []
        # one note of a merge request at a time: two would both take the same waiting job
        self._locks: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope['type'] == 'lifespan':
            await self._lifespan(receive, send)
        elif scope['type'] == 'http':
            try:
                reply = await self._answer(scope, receive)
            except _Gone:
                return
            body = f'{reply.text}\n'.encode()
            # uvicorn would read and drop the rest of a body to keep the connection; a stranger's is not worth it
            closing = [(b'connection', b'close')] if reply.unread else []
            await send({'type': 'http.response.start', 'status': reply.status,
                        'headers': [(b'content-type', b'text/plain; charset=utf-8'),
                                    (b'content-length', str(len(body)).encode()), *reply.headers, *closing]})
            await send({'type': 'http.response.body', 'body': body})

    async def _lifespan(self, receive: Callable, send: Callable) -> None:
        while True:
            message = await receive()
            if message['type'] == 'lifespan.startup':
                self._tasks = [asyncio.create_task(self._work(self._open_forge())) for _ in range(self._settings.workers)]
                self._tasks.append(asyncio.create_task(self._sweep()))
                await send({'type': 'lifespan.startup.complete'})
            elif message['type'] == 'lifespan.shutdown':
                # a note in a worker's hands stays pending in the inbox, and the next start takes it up again
                for task in self._tasks:
                    task.cancel()
                await asyncio.gather(*self._tasks, return_exceptions=True)
                await send({'type': 'lifespan.shutdown.complete'})
                return

    async def _answer(self, scope: dict[str, Any], receive: Callable) -> Reply:
        if scope['path'] != PATH:
            return Reply(404, f'not found: GitLab delivers to POST {PATH}', unread=True)
        if scope['method'] != 'POST':
            return Reply(405, f'method not allowed: GitLab delivers to POST {PATH}', ((b'allow', b'POST'),), True)
        headers = dict(scope['headers'])
        if not hmac.compare_digest(headers.get(b'x-gitlab-token', b''), self._settings.secret):
            return Reply(401, "unauthorized: X-Gitlab-Token is not this webhook's secret token", unread=True)
        if headers.get(b'x-gitlab-event') != NOTE_HOOK:
            return Reply(200, 'ignored: event', unread=True)
        declared = headers.get(b'content-length', b'0')
        try:
            # a sender trickling its body would hold the connection, and one of CONNECTIONS, for ever
            body = None if declared.isdigit() and int(declared) > MAX_BODY else await asyncio.wait_for(
                _read(receive), self._settings.body_s)
        except asyncio.TimeoutError:
            return Reply(408, f'timeout: the body was not sent within {self._settings.body_s:g} s', unread=True)
        if body is None:
            return Reply(413, f'too large: a delivery is read up to {MAX_BODY} bytes', unread=True)
        try:
            event = note_event(body, self._settings.project)
        except MrbotError as error:
            return Reply(400, f'malformed: {_one_line(str(error))}')
        if isinstance(event, str):
            return _ignored(event)
        if self._inbox.knows(event.note):
            return _ignored('duplicate')
        if self._queue.full():
            return Reply(429, f'busy: {plural(self._queue.qsize(), "note")} waiting already; deliver this one again '
                              f'in {RETRY_AFTER_S} s', ((b'retry-after', str(RETRY_AFTER_S).encode()),))
        # on disk before the 202: a note GitLab was told is taken survives a crash and a restart
        self._inbox.add(event)
        self._enqueue(event.note)
        return Reply(202, f'accepted: note {event.note}')

    def _enqueue(self, note: int) -> None:
        self._queue.put_nowait(note)
        self._queued.add(note)

    async def _sweep(self) -> None:
        """Queue the pending notes whose turn has come: at the start those a restart left, later those waiting to be
        tried again. Half the queue at most, so that deliveries arriving meanwhile still find room."""
        # a start is the next try of every note left pending, whenever its turn would have come
        now = math.inf
        while True:
            try:
                room = max((self._queue.maxsize + 1) // 2 - self._queue.qsize(), 0)
                for note in self._inbox.due(now, room + len(self._queued)):
                    if room and note not in self._queued:
                        self._enqueue(note)
                        room -= 1
            except Exception as error:  # noqa: BLE001 - a state file failing for a while must not end the sweeps
                _log(f'sweep: {_internal(error)}; sweeping again in '
                     f'{self._settings.sweep_s:g} s')
            await asyncio.sleep(self._settings.sweep_s)
            now = time.time()

    async def _work(self, forge: GitLab) -> None:
        while True:
            note = await self._queue.get()
            try:
                await self._serve(forge, note)
            except Exception as error:  # noqa: BLE001 - a bug met on one note must not stop the worker for the rest
                self._later(note, _internal(error))
                # a state file that refuses writes refuses the next note too: give it a moment
                await asyncio.sleep(self._settings.backoff_s)
            finally:
                self._queued.discard(note)

    def _later(self, note: int, reason: str) -> None:
        """Leave note `note` pending, to be tried again in LATER_S, or at the next sweep where the state file refuses
        even that."""
        try:
            self._inbox.later(note, time.time() + LATER_S, _one_line(reason))
        except Exception as error:  # noqa: BLE001 - the note is pending all the same, and the sweep finds it
            _log(f'note {note}: {reason}; the state file refused its delay too ({type(error).__name__}: {error}); '
                 'trying again at the next sweep')
            return
        _log(f'note {note}: {reason}; trying again in {LATER_S} s')

    async def _serve(self, forge: GitLab, note: int) -> None:
        """Play note `note`, trying again after a failing GitLab; answer on its merge request why it could not be
        played; and where even that fails, leave it pending for a later try."""
        reason, failure = '', None
        for attempt in range(self._settings.attempts):
            if attempt:
                await asyncio.sleep(self._pause(attempt - 1))
            # read again for each try: it holds the jobs the tries before asked for
            pending = self._inbox.pending(note)
            if pending is None:
                return
            try:
                async with self._lock(pending.event.merge_request):
                    outcome = await self._play(forge, pending)
            except Unplayable as why:
                reason = str(why)
                break
            except Exception as error:  # noqa: BLE001 - an answer GitLab should not give is a failed try like any
                failure = error
                reason = str(error) if isinstance(error, MrbotError) else _internal(error)
                _log(f'note {note}: try {attempt + 1} of {self._settings.attempts} failed: {reason}')
                continue
            self._inbox.settle(note, outcome.state, outcome.text)
            _log(f'note {note} on !{pending.event.merge_request}: {outcome.state}: {outcome.text}')
            return
        number = pending.event.merge_request
        if isinstance(failure, _Missing):
            self._inbox.settle(note, 'dropped', _one_line(reason))
            _log(f'note {note} on !{number}: dropped: {reason}')
            return
        asked = ', '.join(f'{JOB_PREFIX}{runner} (job {job})' for runner, job in pending.plays.items())
        opening = f'mrbot could not run the GPU jobs for note {note}: '
        try:
            # an answer GitLab made though its reply was lost is not posted twice, in this try or a later one
            notes = await asyncio.to_thread(forge.comments, number)
            if not any(n.by_bot and n.body.startswith(opening) for n in notes):
                await asyncio.to_thread(forge.post_comment, number, inert(
                    f'{opening}{reason}. '
                    + (f'It had asked GitLab to run {asked} before that. ' if asked else 'Nothing ran. ')
                    + 'Once that is resolved, give the command again in a new note.'), once=True)
        except MrbotError as error:
            if time.time() - pending.received > GIVE_UP_S:
                self._inbox.settle(note, 'dropped', _one_line(f'given up a day after it came: {reason}'))
                _log(f'note {note} on !{number}: given up a day after it came: {reason}')
                return
            self._later(note, f'on !{number}: could not be played ({reason}) nor answered ({error})')
            return
        self._inbox.settle(note, 'answered', _one_line(reason))
        _log(f'note {note} on !{number}: answered: {reason}')

    def _lock(self, merge_request: int) -> asyncio.Lock:
        lock = self._locks.get(merge_request)
        if lock is None:
            lock = self._locks[merge_request] = asyncio.Lock()
        return lock

    def _pause(self, attempt: int) -> float:
        # half of it at random: notes that failed together do not all try again at the same moment
        ceiling = min(MAX_BACKOFF, self._settings.backoff_s * 2 ** attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    async def _play(self, forge: GitLab, pending: Pending) -> Outcome:
        """Run the jobs of `pending`'s note on its merge request's head; a failing GitLab raises MrbotError."""
        event = pending.event
        number = event.merge_request
        pull = await asyncio.to_thread(forge.find_merge_request, number)
        # forged, or not yet readable (a replica behind a merge request just opened): tried as often as a failing GitLab
        if pull is None:
            raise _Missing(f'the project has no merge request !{number}')
        if pull.state != 'open':
            return Outcome('dropped', f'!{number} is {pull.state}')
        if event.author_id == await asyncio.to_thread(forge.bot_user_id):
            return Outcome('dropped', "the bot's own note")
        permission = await asyncio.to_thread(forge.permission, event.author)
        # the job checks the role again; this spares the GPU runners the notes of strangers
        if permission not in grammar.WRITE_PERMISSIONS:
            return Outcome('dropped', f'{event.author} has {permission} access, below Developer')
        # GitLab runs a fork's merge request pipeline in this project with its secrets and the fork's .gitlab-ci.yml
        if pull.head_repo != forge.project:
            raise Unplayable(f'!{number} comes from the fork {pull.head_repo or "(deleted)"}, whose pipeline would run '
                             "its own .gitlab-ci.yml with this project's variables: a maintainer reviews its changes "
                             "and runs its pipeline from GitLab's merge request page")
        # a class whose job was asked for this note keeps that job, in whatever pipeline: it ran, or it is run again
        again = [(runner, job) for runner, job in pending.plays.items()
                 if await asyncio.to_thread(forge.job_status, job) == 'manual']
        runs: list[tuple[str, PipelineJob]] | None = []
        # every job of a try is recorded before any is run, so the classes of a note naming none are those of its first
        if (not event.runners and not pending.plays) or any(runner not in pending.plays for runner in event.runners):
            head = await asyncio.to_thread(forge.head_pipeline, number, pull.head_sha)
            runs = None if head is None else _runs(event.runners, pending.plays, await self._jobs(forge, head.id))
        if runs is None:
            # a manual job runs once: GitLab refuses to run one that ran, and a retry would keep the variables of
            # its first run, so a new pipeline of the head brings jobs waiting to be run (docs/decisions.md)
            made = await asyncio.to_thread(forge.create_merge_request_pipeline, number)
            if (made.sha, made.ref) != (pull.head_sha, f'refs/merge-requests/{number}/head'):
                raise Unplayable(f'GitLab started pipeline {made.id} of {made.ref} at {made.sha[:10]}, not of the '
                                 f'head {pull.head_sha[:10]}: the GPU jobs run the head, in merge request pipelines, '
                                 'and this project makes merged-results pipelines')
            runs = _runs(event.runners, pending.plays, await self._jobs(forge, made.id))
            if runs is None:
                raise Unplayable(f'the jobs of the new pipeline {made.id} do not wait to be run')
        for runner, job in runs:
            self._inbox.playing(event.note, runner, job.id)
        for job in [job for _, job in again] + [job.id for _, job in runs]:
            await asyncio.to_thread(forge.play_job, job, {NOTE_VARIABLE: str(event.note)})
        played = [f'{JOB_PREFIX}{runner} (job {job})' for runner, job in again] + [f'{job.name} (job {job.id})'
                                                                                    for _, job in runs]
        return Outcome('played', ', '.join(played) or 'its jobs ran already')

    async def _jobs(self, forge: GitLab, pipeline: int) -> dict[str, PipelineJob]:
        """The `mrbot-bench-<class>` jobs of `pipeline` by class, once GitLab has made them; one asked to run for any
        note is 'asked', whatever GitLab says: a waiting job another note's earlier try asked for is that note's."""
        for _ in range(SETTLE_TRIES):
            listed = await asyncio.to_thread(forge.pipeline_jobs, pipeline)
            jobs = {job.name.removeprefix(JOB_PREFIX): job for job in listed if job.name.startswith(JOB_PREFIX)}
            if all(job.status != 'created' for job in jobs.values()):
                asked = self._inbox.asked(job.id for job in jobs.values())
                return {runner: replace(job, status='asked') if job.id in asked else job for runner, job in jobs.items()}
            await asyncio.sleep(self._settings.settle_s)
        raise MrbotError(f'GitLab: the jobs of pipeline {pipeline} are still being created')


async def _read(receive: Callable) -> bytes | None:
    """The body of a request, or None once it passes MAX_BODY: the rest is never read."""
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message['type'] == 'http.disconnect':
            raise _Gone
        chunk = message.get('body', b'')
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        more = message.get('more_body', False)
    return b''.join(chunks)


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port` for uvicorn to serve.

    Made with its protocol named, TCP: asyncio turns Nagle's algorithm off only on such sockets, and uvicorn writes a
    reply's head and body apart, so the body would wait for the sender's delayed acknowledgement, 40 ms a reply on a
    kept-alive connection.
    """
    family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                            proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE)[0]
    listener = socket.socket(family, kind, protocol)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(CONNECTIONS)
    except OSError:
        listener.close()
        raise
    return listener


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # the receiver takes its settings from the environment, as a service does: the help lists them
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = ENVIRONMENT


def run(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> int:
    settings = read_settings(environ)
    try:
        import uvicorn
    except ImportError:
        raise MrbotError("mrbot webhook needs uvicorn: pip install 'mrbot[webhook]'") from None
    inbox = Inbox(settings.state)
    try:
        try:
            listener = listen(settings.host, settings.port)
        except OSError as error:
            raise MrbotError(f'cannot listen on {settings.host}:{settings.port} ({error.strerror or error}); set '
                             'MRBOT_WEBHOOK_HOST and MRBOT_WEBHOOK_PORT') from None
        receiver = Receiver(settings, inbox, lambda: connect('gitlab', settings.project, url=settings.gitlab_url,
                                                             token=settings.token, environ={}, retries=2))
        server = uvicorn.Server(uvicorn.Config(receiver, lifespan='on', limit_concurrency=CONNECTIONS,
                                               timeout_keep_alive=KEEP_ALIVE_S, server_header=False, proxy_headers=False))
        _log(f'serving the notes of {settings.project} at http://{settings.host}:{settings.port}{PATH}')
        server.run(sockets=[listener])
    except KeyboardInterrupt:
        # uvicorn stops cleanly on SIGINT or SIGTERM, then raises the signal again for the caller: a service's stop
        _log('stopped')
    finally:
        inbox.close()
    return 0
