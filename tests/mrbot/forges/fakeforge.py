# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""A GitHub and a GitLab that live in memory: REST servers on loopback for the forge adapters' tests.

Each answers the endpoints the adapters use, shaped like the real services' answers in the fields the clients read,
and keeps its state in plain attributes that tests set up and inspect; the n-th comment or note was written at
`created_at(n)`. `fail` makes the next matching requests fail with a status and headers, or by resetting the
connection. Requests are served one at a time under a lock.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import struct
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from tests.mrbot.forges import gitlab_fields, openapi

# Short waits keep the retry tests fast; the rate limits the tests inject say Retry-After: 0.
BACKOFF = 0.01
# The status of an injected failure that resets the connection instead of answering.
RESET = 0
BOT_TOKEN = 'bot-token'
# GitHub Actions' GITHUB_TOKEN: it may write, but not read /user; its comments are by a Bot.
ACTIONS_TOKEN = 'actions-token'
READ_ONLY_TOKEN = 'read-only-token'
# A GitLab project access token: its notes are by the project's bot user.
PROJECT_TOKEN = 'project-token'
GITHUB_WEB = 'https://github.example'
GITLAB_WEB = 'https://gitlab.example'
_DRAFT = re.compile(r'\s*(?:\[draft\]|\(draft\)|draft:)', re.IGNORECASE)
# Milliseconds in it, which GitLab writes and GitHub leaves out.
_FIRST_CREATED = datetime(2026, 12, 3, 4, 0, 0, 123000, tzinfo=timezone.utc)
# GitHub's limits on a check run, which its adapter must keep to.
_CHECK_RUN_ANNOTATIONS = 50
_CHECK_RUN_SUMMARY = 65535
# The files a comparison of two commits lists, at most.
_COMPARED_FILES = 300
# The id GitLab gives the fake's own project.
_PROJECT_ID = 7
# The states GitLab takes for a commit status.
_STATUS_STATES = ('pending', 'running', 'success', 'failed', 'canceled', 'skipped')


def sha(branch: str) -> str:
    """The commit a fake branch points at; a fork's branch is named 'owner/name:branch'."""
    return hashlib.sha1(branch.encode()).hexdigest()


# When the fakes say the head of each pull or merge request they open was pushed: before any comment.
OPENED = _FIRST_CREATED - timedelta(hours=1)


def _z(moment: datetime) -> str:
    return moment.isoformat(timespec='seconds').replace('+00:00', 'Z')


def created_at(number: int) -> datetime:
    """When the fake says its `number`-th comment or note was written: a minute after the one before."""
    return _FIRST_CREATED + timedelta(minutes=number - 1)


@dataclass
class Account:
    """Who a token belongs to and what it may do."""

    login: str
    id: int
    type: str = 'User'
    reads_user: bool = True
    writes: bool = True


@dataclass
class Failure:
    """Fail the next `times` requests of `method` to a path ending with `path`: answer `status`, or RESET; where
    `done`, after the request has taken effect (an answer lost on its way back)."""

    method: str
    path: str
    status: int
    headers: dict[str, str]
    message: str
    times: int
    done: bool = False


@dataclass(frozen=True)
class Request:
    """A request as a route sees it: `path` decoded, `raw_path` as sent, `account` None for an unknown token."""

    method: str
    path: str
    raw_path: str
    query: dict[str, str]
    body: dict[str, Any]
    account: Account | None
    raw_body: bytes = b''
    token: str | None = None


@dataclass
class Answer:
    """What the server sends back; `body` goes out as JSON."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    # Headers and body go out in two writes; with Nagle's algorithm on, each kept-alive answer would wait 40 ms.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a test reads the fake's state, not its log."""

    def do_GET(self) -> None:
        self.server.fake.serve(self)  # type: ignore[attr-defined]

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET


class FakeForge(ABC):
    """The server both fakes share: routing, tokens, pagination, injected failures and the log of requests."""

    not_found: str
    per_page: int

    def __init__(self, project: str, accounts: dict[str, Account]) -> None:
        self.project = project
        self.accounts = accounts
        self.branches = {name: sha(name) for name in ('main', 'feature', 'fix/overflow')}
        self.failures: list[Failure] = []
        self.afterwards: list[tuple[str, str, Callable[[], None]]] = []
        # (method, decoded path) of every request that reached the server, failed ones included.
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self._routes: list[tuple[str, re.Pattern[str], Callable[..., Answer]]] = []
        self._server = ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self.url = f'http://127.0.0.1:{self._server.server_port}'
        # serve_forever notices a shutdown at its next poll; the default half second would be most of a test's time.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={'poll_interval': 0.01}, daemon=True)

    def __enter__(self) -> FakeForge:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def route(self, method: str, pattern: str, answer: Callable[..., Answer]) -> None:
        """Answer `method` requests whose raw path matches `pattern`; its groups are passed decoded, by name."""
        self._routes.append((method, re.compile(pattern), answer))

    def fail(self, method: str, path: str, status: int, *, times: int = 1, headers: dict[str, str] | None = None,
             message: str = 'Server Error', done: bool = False) -> None:
        """Fail the next `times` `method` requests whose decoded path ends with `path`; status RESET drops them. With
        `done`, each takes effect first and only its answer is lost."""
        with self.lock:
            self.failures.append(Failure(method, path, status, headers or {}, message, times, done))

    def count(self, method: str, path: str) -> int:
        """How many `method` requests to a decoded path ending with `path` reached the server."""
        return sum(1 for seen_method, seen_path in self.requests if seen_method == method and seen_path.endswith(path))

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get('Content-Length') or 0)
        raw = handler.rfile.read(length) if length else b''
        parts = urlsplit(handler.path)
        method, path = handler.command, unquote(parts.path)
        with self.lock:
            self.requests.append((method, path))
            token = self.token(handler)
            request = Request(method, path, parts.path, dict(parse_qsl(parts.query)), json.loads(raw) if raw else {},
                              self.accounts.get(token), raw, token)
            failure = self._take_failure(method, path)
            answer = self.as_sent(request, self._answer(request) if failure is None or failure.done else None)
            action = self._take_afterwards(method, path)
            if failure is not None and failure.status == RESET:
                # Closed at once with a zero linger time: no answer and no FIN, the peer sees a reset connection.
                handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
                handler.connection.close()
                handler.close_connection = True
                return
            if failure is not None:
                answer = Answer(failure.status, {'message': failure.message}, failure.headers)
        if action is not None:
            action()
        payload = json.dumps(answer.body).encode()
        handler.send_response(answer.status)
        for name, value in {**answer.headers, 'Content-Type': 'application/json'}.items():
            handler.send_header(name, value)
        handler.send_header('Content-Length', str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    @abstractmethod
    def as_sent(self, request: Request, answer: Answer | None) -> Answer | None:
        """`answer` as the forge would send it, looked at before it goes out; None for an injected failure."""

    @abstractmethod
    def token(self, handler: BaseHTTPRequestHandler) -> str | None:
        """The token a request carries, in the forge's header."""

    @abstractmethod
    def check(self, request: Request) -> Answer | None:
        """The refusal of a request before routing (bad token, no write access, another project), or None."""

    def after(self, method: str, path: str, action: Callable[[], None]) -> None:
        """Do `action` once, right after the first `method` request to a path ending with `path` is answered: a push
        that races the bot, say."""
        with self.lock:
            self.afterwards.append((method, path, action))

    def _take_afterwards(self, method: str, path: str) -> Callable[[], None] | None:
        for index, (wanted, suffix, action) in enumerate(self.afterwards):
            if wanted == method and path.endswith(suffix):
                del self.afterwards[index]
                return action
        return None

    def _take_failure(self, method: str, path: str) -> Failure | None:
        for failure in self.failures:
            if failure.method == method and path.endswith(failure.path) and failure.times > 0:
                failure.times -= 1
                return failure
        return None

    def _route(self, request: Request) -> tuple[Callable[..., Answer], re.Match[str]] | None:
        """The route that answers `request`, and the match of its path."""
        for method, pattern, answer in self._routes:
            match = pattern.fullmatch(request.raw_path)
            if method == request.method and match:
                return answer, match
        return None

    def _answer(self, request: Request) -> Answer:
        refusal = self.check(request)
        if refusal is not None:
            return refusal
        route = self._route(request)
        if route is None:
            return Answer(404, {'message': self.not_found})
        answer, match = route
        return answer(request, **{name: unquote(value) for name, value in match.groupdict().items()})

    def page(self, request: Request, items: list[Any]) -> Answer:
        """One page of a list, with a Link header to the next one as both forges send it."""
        per_page, number = int(request.query.get('per_page', self.per_page)), int(request.query.get('page', 1))
        headers = {}
        if number * per_page < len(items):
            query = urlencode({**request.query, 'page': number + 1, 'per_page': per_page})
            headers['Link'] = f'<{self.url}{request.raw_path}?{query}>; rel="next"'
        return Answer(200, items[(number - 1) * per_page:number * per_page], headers)


class FakeGitHub(FakeForge):
    """GitHub's REST API for one repository: pull requests, issue comments, reactions and collaborators."""

    not_found = 'Not Found'
    per_page = 30

    def __init__(self, project: str = 'octo/kernels') -> None:
        super().__init__(project, {
            BOT_TOKEN: Account('mrbot-dev', 1),
            ACTIONS_TOKEN: Account('github-actions[bot]', 2, type='Bot', reads_user=False),
            READ_ONLY_TOKEN: Account('reader', 3, writes=False),
        })
        self.owner = project.split('/')[0]
        self.pulls: dict[int, dict[str, Any]] = {}
        self.comments: dict[int, dict[str, Any]] = {}
        # (comment id, reaction, login) of each reaction.
        self.reactions: list[tuple[int, str, str]] = []
        # login: (legacy permission, role name or None where an older server leaves it out)
        self.collaborators: dict[str, tuple[str, str | None]] = {}
        # Each check run created, with its output and every annotation sent to it, in order.
        self.check_runs: list[dict[str, Any]] = []
        # The paths each commit changes against the base branch, where a test sets them.
        self.commit_files: dict[str, list[str]] = {}
        # The commits whose message says [skip ci], for which GitHub starts no pull_request run.
        self.skip_ci: set[str] = set()
        # Every commit a pull request's branch was pushed to: still in the repository after the next push.
        self.pushed: set[str] = set()
        # The workflow runs GitHub started: one of the bot's head record (HEAD_RECORD) per push of an open pull
        # request, and one of `mrbot PR` per push and edit where GitHub starts pull_request runs at all; and those a
        # test adds. Each with its workflow file, event, conclusion and name as shown.
        self.runs: list[dict[str, Any]] = []
        # The names of the artifacts each workflow run uploaded.
        self.artifacts: dict[int, list[str]] = {}
        # The workflow files of the repository's default branch.
        self.workflows = {'ci.yml', 'mrbot-pr.yml', 'mrbot-command.yml', 'mrbot-post.yml', 'mrbot-post-result.yml',
                          'mrbot-head.yml'}
        self.description = openapi.description()
        # What GitHub's REST description finds wrong in the traffic so far: any of it fails the test at exit.
        self.violations: list[str] = []
        repo = r'/repos/[^/]+/[^/]+'
        self.route('GET', r'/user', self._user)
        self.route('GET', repo, self._repository)
        self.route('GET', repo + r'/pulls', self._list_pulls)
        self.route('POST', repo + r'/pulls', self._create_pull)
        self.route('GET', repo + r'/pulls/(?P<number>\d+)', self._get_pull)
        self.route('PATCH', repo + r'/pulls/(?P<number>\d+)', self._edit_pull)
        self.route('GET', repo + r'/branches/(?P<branch>.+)', self._branch)
        self.route('GET', repo + r'/issues/(?P<number>\d+)/comments', self._list_comments)
        self.route('POST', repo + r'/issues/(?P<number>\d+)/comments', self._create_comment)
        self.route('PATCH', repo + r'/issues/comments/(?P<comment>\d+)', self._edit_comment)
        self.route('POST', repo + r'/issues/comments/(?P<comment>\d+)/reactions', self._react)
        self.route('GET', repo + r'/collaborators/(?P<user>[^/]+)/permission', self._permission)
        self.route('POST', repo + r'/check-runs', self._create_check_run)
        self.route('PATCH', repo + r'/check-runs/(?P<run>\d+)', self._edit_check_run)
        self.route('GET', repo + r'/actions/workflows/(?P<workflow>[^/]+)/runs', self._list_workflow_runs)
        self.route('GET', repo + r'/actions/runs/(?P<run>\d+)/artifacts', self._list_artifacts)
        self.route('GET', repo + r'/compare/(?P<base>[^/]+)\.\.\.(?P<head>[^/]+)', self._compare)

    def open_pull(self, head: str, title: str = '[Ops] Something', body: str = '', draft: bool = False,
                  state: str = 'open', merged: bool = False, head_repo: str | None = None) -> int:
        """Open a pull request from `head` of this repository, or of the fork `head_repo`; a merged one is closed."""
        with self.lock:
            number = len(self.pulls) + 1
            self.pulls[number] = {'number': number, 'head': head, 'base': 'main', 'title': title, 'body': body,
                                  'draft': draft, 'state': 'closed' if merged else state, 'merged': merged,
                                  'head_repo': head_repo or self.project, 'conflict': False, 'updated_at': OPENED}
            self._runs_for(self.pulls[number], OPENED, pushed=True)
            return number

    def push(self, number: int, sha: str, at: datetime, by_workflow: bool = False) -> None:
        """Move the head of pull request `number` to `sha` at `at`, as a push to its branch (in this repository or in
        its fork) does; `by_workflow`: made with a workflow's GITHUB_TOKEN, which starts no workflow run at all
        ("Triggering a workflow from a workflow"), though it changes the pull request like any push."""
        with self.lock:
            pull = self.pulls[number]
            self.pushed.add(self._head_sha(pull))
            if pull['head_repo'] == self.project:
                self.branches[pull['head']] = sha
            else:
                self.branches[f"{pull['head_repo']}:{pull['head']}"] = sha
            pull['updated_at'] = at
            if not by_workflow:
                self._runs_for(pull, at, pushed=True)

    def edit(self, number: int, at: datetime) -> None:
        """Edit the title of pull request `number` at `at`: a pull_request run of the same head, no push."""
        with self.lock:
            self.pulls[number]['updated_at'] = at
            self._runs_for(self.pulls[number], at, pushed=False)

    def add_run(self, workflow: str, event: str, conclusion: str, at: datetime, title: str = '',
                artifacts: tuple[str, ...] = ()) -> int:
        """A finished run of `workflow` started by `event`, with the artifacts it uploaded; its id."""
        with self.lock:
            return self._add_run(workflow, event, at, title, conclusion=conclusion, artifacts=artifacts)

    def _add_run(self, workflow: str, event: str, at: datetime, title: str, *, conclusion: str = 'success',
                 head_sha: str = '', head_branch: str = 'main', head_repo: str = '',
                 artifacts: tuple[str, ...] = ()) -> int:
        run = 500 + len(self.runs)
        self.runs.append({'id': run, 'path': f'.github/workflows/{workflow}', 'event': event, 'status': 'completed',
                          'conclusion': conclusion, 'display_title': title,
                          'head_sha': head_sha or self.branches['main'], 'head_branch': head_branch,
                          'head_repository': {'full_name': head_repo or self.project}, 'created_at': _z(at)})
        self.artifacts[run] = list(artifacts)
        return run

    def _runs_for(self, pull: dict[str, Any], at: datetime, pushed: bool) -> None:
        """The runs GitHub starts for a push to (or an edit of) a pull request. The bot's head record runs on
        pull_request_target, from the base branch's file and in its context (its head_sha is the base's), on every
        push; "Events that trigger workflows" says pull_request_target runs despite a merge conflict, and "Skipping
        workflow runs" that [skip ci] stops only push and pull_request runs. A pull_request run needs the merge
        commit, which a conflict prevents, and a head whose message does not say [skip ci]."""
        head = self._head_sha(pull)
        if pushed:
            self._add_run('mrbot-head.yml', 'pull_request_target', at, f"mrbot head of #{pull['number']} at {head}")
        if not pull['conflict'] and head not in self.skip_ci:
            self._add_run('mrbot-pr.yml', 'pull_request', at, pull['title'], head_sha=head, head_branch=pull['head'],
                          head_repo=pull['head_repo'])

    def add_comment(self, number: int, body: str, login: str = 'alice', type: str = 'User') -> int:
        with self.lock:
            return self._comment(number, body, login, type)

    def _comment(self, number: int, body: str, login: str, type: str) -> int:
        """A new comment on pull request `number`, which it updates."""
        comment = len(self.comments) + 1
        self.comments[comment] = {'id': comment, 'issue': number, 'body': body, 'login': login, 'type': type}
        if number in self.pulls:
            self.pulls[number]['updated_at'] = max(self.pulls[number]['updated_at'], created_at(comment))
        return comment

    def comments_on(self, number: int) -> list[tuple[str, str]]:
        """(author, body) of each comment on a PR, oldest first."""
        return [(c['login'], c['body']) for c in self.comments.values() if c['issue'] == number]

    def __exit__(self, *exc_info: object) -> None:
        super().__exit__(*exc_info)
        if self.violations:
            raise AssertionError(f"The GitHub fake's traffic breaks GitHub's REST description (@octokit/openapi "
                                 f"{self.description.version}):\n" + '\n'.join(dict.fromkeys(self.violations)))

    def as_sent(self, request: Request, answer: Answer | None) -> Answer | None:
        path = self._described_path(request)
        if answer is not None:
            answer = Answer(answer.status, self.description.complete(request.method, path, answer.status, answer.body),
                            answer.headers)
        # an injected failure stands for a proxy or the rate limiter, which few operations document: only its request
        # is GitHub's to check
        status, body = (answer.status, answer.body) if answer is not None else (None, None)
        exchange = openapi.Exchange(request.method, path, request.query, request.raw_body, status, body)
        self.violations += self.description.violations(exchange)
        return answer

    def _described_path(self, request: Request) -> str:
        """The path as the description templates it, each parameter one segment: GitHub also takes a branch's slashes
        unencoded, as the routes do."""
        route = self._route(request)
        if route is None:
            return request.raw_path
        match, path = route[1], request.raw_path
        for start, end in sorted((match.span(name) for name in match.groupdict()), reverse=True):
            path = path[:start] + quote(unquote(path[start:end]), safe='') + path[end:]
        return path

    def token(self, handler: BaseHTTPRequestHandler) -> str | None:
        scheme, _, token = (handler.headers.get('Authorization') or '').partition(' ')
        return token if scheme.lower() in ('token', 'bearer') else None

    def check(self, request: Request) -> Answer | None:
        if request.account is None:
            return Answer(401, {'message': 'Bad credentials'})
        if request.method != 'GET' and not request.account.writes:
            return Answer(403, {'message': 'Resource not accessible by personal access token'})
        match = re.match(r'/repos/([^/]+/[^/]+)', request.path)
        if match and match[1] != self.project:
            return Answer(404, {'message': 'Not Found'})
        return None

    def _head_sha(self, pull: dict[str, Any]) -> str:
        """The commit a pull request's head branch points at, in this repository or in its fork."""
        if pull['head_repo'] == self.project:
            return self.branches[pull['head']]
        # a fork's branch points where a test set `branches['owner/name:branch']`, else at a commit of its own
        fork_branch = f"{pull['head_repo']}:{pull['head']}"
        return self.branches.get(fork_branch, sha(fork_branch))

    def _head_label(self, pull: dict[str, Any]) -> str:
        return f"{pull['head_repo'].split('/')[0]}:{pull['head']}"

    def _repo_json(self, full_name: str) -> dict[str, Any]:
        return {'full_name': full_name, 'url': f'{self.url}/repos/{full_name}'}

    def _pull_json(self, pull: dict[str, Any]) -> dict[str, Any]:
        number = pull['number']
        merged_at = '2026-12-04T00:00:00Z' if pull['merged'] else None
        return {'url': f'{self.url}/repos/{self.project}/pulls/{number}', 'number': number,
                'changed_files': len(self.commit_files.get(self._head_sha(pull), [])),
                'html_url': f'{GITHUB_WEB}/{self.project}/pull/{number}', 'state': pull['state'],
                'merged': pull['merged'], 'merged_at': merged_at,
                'title': pull['title'], 'body': pull['body'] or None, 'draft': pull['draft'],
                'updated_at': _z(pull['updated_at']),
                'head': {'ref': pull['head'], 'sha': self._head_sha(pull), 'label': self._head_label(pull),
                         'repo': self._repo_json(pull['head_repo'])},
                'base': {'ref': pull['base'], 'sha': self.branches[pull['base']], 'label': f"{self.owner}:{pull['base']}",
                         'repo': self._repo_json(self.project)}}

    def _listed_pull_json(self, pull: dict[str, Any]) -> dict[str, Any]:
        # a list leaves out `merged` (merged_at tells a merged pull request there) and the counts
        return {key: value for key, value in self._pull_json(pull).items() if key not in ('merged', 'changed_files')}

    def _comment_json(self, comment: dict[str, Any]) -> dict[str, Any]:
        return {'id': comment['id'], 'url': f"{self.url}/repos/{self.project}/issues/comments/{comment['id']}",
                'html_url': f"{GITHUB_WEB}/{self.project}/pull/{comment['issue']}#issuecomment-{comment['id']}",
                'body': comment['body'], 'user': {'login': comment['login'], 'type': comment['type']},
                'created_at': created_at(comment['id']).strftime('%Y-%m-%dT%H:%M:%SZ')}

    def _check_run_json(self, run: dict[str, Any]) -> dict[str, Any]:
        return {'id': run['id'], 'url': f"{self.url}/repos/{self.project}/check-runs/{run['id']}",
                'html_url': f"{GITHUB_WEB}/{self.project}/runs/{run['id']}", 'name': run['name'],
                'head_sha': run['head_sha'], 'status': run['status'], 'conclusion': run['conclusion'],
                'output': {**run['output'], 'annotations_count': len(run['annotations'])}}

    def _user(self, request: Request) -> Answer:
        account = request.account
        if not account.reads_user:
            return Answer(403, {'message': 'Resource not accessible by integration'})
        return Answer(200, {'login': account.login, 'id': account.id, 'type': account.type, 'url': f'{self.url}/user'})

    def _repository(self, request: Request) -> Answer:
        return Answer(200, {'id': 1, 'full_name': self.project, 'url': f'{self.url}/repos/{self.project}'})

    def _list_pulls(self, request: Request) -> Answer:
        state, head = request.query.get('state', 'open'), request.query.get('head')
        pulls = [self._listed_pull_json(pull) for pull in self.pulls.values()
                 if state in ('all', pull['state']) and head in (None, self._head_label(pull))]
        return self.page(request, pulls)

    def _create_pull(self, request: Request) -> Answer:
        body = request.body
        if body['head'] not in self.branches or body['base'] not in self.branches:
            return Answer(422, {'message': 'Validation Failed',
                                'errors': [{'resource': 'PullRequest', 'field': 'head', 'code': 'invalid'}]})
        if any(pull['head'] == body['head'] and pull['state'] == 'open' for pull in self.pulls.values()):
            return Answer(422, {'message': 'Validation Failed', 'errors': [
                {'resource': 'PullRequest', 'code': 'custom',
                 'message': f"A pull request already exists for {self.owner}:{body['head']}."}]})
        if len(body.get('body') or '') > 65536:
            return Answer(422, {'message': 'Validation Failed', 'errors': [
                {'resource': 'Issue', 'code': 'custom', 'field': 'body',
                 'message': 'body is too long (maximum is 65536 characters)'}]})
        number = len(self.pulls) + 1
        self.pulls[number] = {'number': number, 'head': body['head'], 'base': body['base'], 'title': body['title'],
                              'body': body.get('body') or '', 'draft': bool(body.get('draft')), 'state': 'open',
                              'merged': False, 'head_repo': self.project, 'conflict': False, 'updated_at': OPENED}
        return Answer(201, self._pull_json(self.pulls[number]))

    def _get_pull(self, request: Request, number: str) -> Answer:
        pull = self.pulls.get(int(number))
        return Answer(200, self._pull_json(pull)) if pull else Answer(404, {'message': 'Not Found'})

    def _edit_pull(self, request: Request, number: str) -> Answer:
        pull = self.pulls.get(int(number))
        if pull is None:
            return Answer(404, {'message': 'Not Found'})
        pull.update({key: request.body[key] for key in ('title', 'body') if key in request.body})
        return Answer(200, self._pull_json(pull))

    def _branch(self, request: Request, branch: str) -> Answer:
        if branch not in self.branches:
            return Answer(404, {'message': 'Branch not found'})
        return Answer(200, {'name': branch, 'commit': {'sha': self.branches[branch]}})

    def _list_comments(self, request: Request, number: str) -> Answer:
        if int(number) not in self.pulls:
            return Answer(404, {'message': 'Not Found'})
        return self.page(request, [self._comment_json(c) for c in self.comments.values() if c['issue'] == int(number)])

    def _create_comment(self, request: Request, number: str) -> Answer:
        if int(number) not in self.pulls:
            return Answer(404, {'message': 'Not Found'})
        comment = self._comment(int(number), request.body['body'], request.account.login, request.account.type)
        return Answer(201, self._comment_json(self.comments[comment]))

    def _edit_comment(self, request: Request, comment: str) -> Answer:
        found = self.comments.get(int(comment))
        if found is None:
            return Answer(404, {'message': 'Not Found'})
        if found['login'] != request.account.login:
            return Answer(403, {'message': 'Resource not accessible by personal access token'})
        found['body'] = request.body['body']
        return Answer(200, self._comment_json(found))

    def _react(self, request: Request, comment: str) -> Answer:
        if int(comment) not in self.comments:
            return Answer(404, {'message': 'Not Found'})
        reaction = (int(comment), request.body['content'], request.account.login)
        known = reaction in self.reactions
        if not known:
            self.reactions.append(reaction)
        answer = {'id': self.reactions.index(reaction) + 1, 'content': reaction[1],
                  'user': {'login': reaction[2], 'type': request.account.type}}
        # GitHub answers 200 for a reaction the user already gave, 201 for a new one.
        return Answer(200 if known else 201, answer)

    def _permission(self, request: Request, user: str) -> Answer:
        if user not in self.collaborators:
            return Answer(404, {'message': 'Not Found'})
        permission, role = self.collaborators[user]
        answer = {'permission': permission, 'user': {'login': user, 'type': 'User'}}
        return Answer(200, answer if role is None else {**answer, 'role_name': role})

    def _refused_output(self, output: dict[str, Any] | None) -> Answer | None:
        """GitHub's refusal of a check run's output, or None: it needs a title and a summary, within its limits."""
        if output is None:
            return None
        missing = [key for key in ('title', 'summary') if key not in output]
        annotations = output.get('annotations') or []
        problems = [f'"{key}" wasn\'t supplied.' for key in missing]
        if len(output.get('summary') or '') > _CHECK_RUN_SUMMARY:
            problems.append(f'output.summary is too long (maximum is {_CHECK_RUN_SUMMARY} characters)')
        if len(annotations) > _CHECK_RUN_ANNOTATIONS:
            problems.append(f'output.annotations: at most {_CHECK_RUN_ANNOTATIONS} annotations per request')
        return Answer(422, {'message': 'Invalid request.', 'errors': problems}) if problems else None

    def _compare(self, request: Request, base: str, head: str) -> Answer:
        if base not in self.branches and base not in self.branches.values():
            return Answer(404, {'message': 'Not Found'})
        listed = self.commit_files.get(head, [])[:_COMPARED_FILES]
        return Answer(200, {'status': 'ahead', 'files': [{'filename': path, 'status': 'modified'} for path in listed]})

    def _list_workflow_runs(self, request: Request, workflow: str) -> Answer:
        status = request.query.get('status')
        if workflow not in self.workflows:
            return Answer(404, {'message': 'Not Found'})
        runs = [run for run in self.runs if run['path'] == f'.github/workflows/{workflow}'
                and request.query.get('event') in (None, run['event'])
                and status in (None, 'completed', run['conclusion'])]
        # newest first, as GitHub lists them
        answer = self.page(request, runs[::-1])
        return Answer(200, {'total_count': len(runs), 'workflow_runs': answer.body}, answer.headers)

    def _list_artifacts(self, request: Request, run: str) -> Answer:
        names = self.artifacts.get(int(run), [])
        return Answer(200, {'total_count': len(names), 'artifacts': [
            {'id': int(run) * 100 + index, 'name': name, 'expired': False} for index, name in enumerate(names)]})

    def _create_check_run(self, request: Request) -> Answer:
        body = request.body
        if body['head_sha'] not in {*self.branches.values(), *self.pushed}:
            return Answer(422, {'message': f"No commit found for SHA: {body['head_sha']}"})
        refusal = self._refused_output(body.get('output'))
        if refusal is not None:
            return refusal
        output = body.get('output') or {}
        self.check_runs.append({'id': len(self.check_runs) + 1, 'name': body['name'], 'head_sha': body['head_sha'],
                                'status': body.get('status', 'queued'), 'conclusion': body.get('conclusion'),
                                'output': {key: output.get(key) for key in ('title', 'summary')},
                                'annotations': list(output.get('annotations') or [])})
        return Answer(201, self._check_run_json(self.check_runs[-1]))

    def _edit_check_run(self, request: Request, run: str) -> Answer:
        found = next((check_run for check_run in self.check_runs if check_run['id'] == int(run)), None)
        if found is None:
            return Answer(404, {'message': 'Not Found'})
        output = request.body.get('output')
        refusal = self._refused_output(output)
        if refusal is not None:
            return refusal
        found.update({key: request.body[key] for key in ('name', 'status', 'conclusion') if key in request.body})
        if output is not None:
            found['output'] = {key: output[key] for key in ('title', 'summary')}
            # An edit's annotations are added to those the run has.
            found['annotations'].extend(output.get('annotations') or [])
        return Answer(200, self._check_run_json(found))


class FakeGitLab(FakeForge):
    """GitLab's REST API (v4) for one project: merge requests, notes, award emoji and members."""

    not_found = '404 Not Found'
    per_page = 20

    def __init__(self, project: str = 'lab/kernels/fla') -> None:
        super().__init__(project, {
            BOT_TOKEN: Account('mrbot-dev', 1),
            READ_ONLY_TOKEN: Account('reader', 3, writes=False),
            PROJECT_TOKEN: Account('project_7_bot', 4),
        })
        self.merge_requests: dict[int, dict[str, Any]] = {}
        # The fields of its answers that GitLab does not document: any of them fails the test at exit.
        self.violations: list[str] = []
        self.notes: dict[int, dict[str, Any]] = {}
        # (note id, emoji name, username) of each award.
        self.awards: list[tuple[int, str, str]] = []
        # username: access level, for members of the project itself and for those of its parent groups.
        self.members: dict[str, int] = {}
        self.inherited_members: dict[str, int] = {}
        self.user_ids = {'mrbot-dev': 1, 'alice': 2, 'reader': 3, 'project_7_bot': 4}
        # id: 'group/name' of each fork a merge request comes from.
        self.forks: dict[int, str] = {}
        # Each commit status posted, as GitLab stored it.
        self.statuses: list[dict[str, Any]] = []
        # CI_JOB_TOKEN of each running job: (who ran it, its commit, the ref of its pipeline).
        self.jobs: dict[str, tuple[str, str, str]] = {}
        # The manual GPU job of each runner class that a merge request pipeline of the project's .gitlab-ci.yml has.
        self.bench_classes = ('hopper', 'blackwell')
        # Whether a pipeline started for a merge request runs its merged result rather than its head.
        self.merged_results = False
        # id: the merge request, commit, ref and job ids of each pipeline, in the order they were made.
        self.pipelines: dict[int, dict[str, Any]] = {}
        # id: the name, status and pipeline of each job of those pipelines; a job GitLab is still creating lists as
        # 'created' `settling` more times before it waits to be run.
        self.pipeline_jobs: dict[int, dict[str, Any]] = {}
        # (job id, its variables, who ran it) of each job run through the API.
        self.plays: list[tuple[int, dict[str, str], str]] = []
        project_path = r'/api/v4/projects/[^/]+'
        merge_request = project_path + r'/merge_requests/(?P<iid>\d+)'
        self.entities: dict[Callable[..., Answer], gitlab_fields.Entity] = {}
        documented = self.documented_route
        documented('GET', r'/api/v4/user', self._user, gitlab_fields.CURRENT_USER)
        documented('GET', r'/api/v4/job', self._job, gitlab_fields.JOB)
        documented('GET', r'/api/v4/projects/(?P<project>[^/]+)', self._project, gitlab_fields.PROJECT)
        documented('GET', project_path + r'/merge_requests', self._list_merge_requests, gitlab_fields.MERGE_REQUEST)
        documented('POST', project_path + r'/merge_requests', self._create_merge_request, gitlab_fields.MERGE_REQUEST)
        documented('GET', merge_request, self._get_merge_request, gitlab_fields.MERGE_REQUEST)
        documented('PUT', merge_request, self._edit_merge_request, gitlab_fields.MERGE_REQUEST)
        documented('GET', project_path + r'/repository/branches/(?P<branch>[^/]+)', self._branch, gitlab_fields.BRANCH)
        documented('GET', merge_request + r'/notes', self._list_notes, gitlab_fields.NOTE)
        documented('POST', merge_request + r'/notes', self._create_note, gitlab_fields.NOTE)
        documented('PUT', merge_request + r'/notes/(?P<note>\d+)', self._edit_note, gitlab_fields.NOTE)
        documented('POST', merge_request + r'/notes/(?P<note>\d+)/award_emoji', self._award, gitlab_fields.AWARD_EMOJI)
        documented('GET', merge_request + r'/versions', self._versions, gitlab_fields.DIFF_VERSION)
        documented('GET', project_path + r'/members/all', self._all_members, gitlab_fields.MEMBER)
        documented('GET', project_path + r'/members', self._direct_members, gitlab_fields.MEMBER)
        documented('POST', project_path + r'/statuses/(?P<commit>[0-9a-f]+)', self._create_status, gitlab_fields.COMMIT_STATUS)
        documented('GET', merge_request + r'/pipelines', self._list_pipelines, gitlab_fields.PIPELINE_BASIC)
        documented('POST', merge_request + r'/pipelines', self._create_pipeline, gitlab_fields.PIPELINE)
        documented('GET', project_path + r'/pipelines/(?P<pipeline>\d+)/jobs', self._list_jobs, gitlab_fields.JOB)
        documented('POST', project_path + r'/jobs/(?P<job>\d+)/play', self._play, gitlab_fields.JOB)
        documented('GET', project_path + r'/jobs/(?P<job>\d+)', self._get_job, gitlab_fields.JOB)

    def open_merge_request(self, source: str, title: str = '[Ops] Something', description: str = '',
                           state: str = 'opened', source_project: str | None = None, base: str | None = None) -> int:
        """Open a merge request from `source` of this project, or of the fork `source_project`, which branched from
        commit `base` of the target (default: its tip)."""
        with self.lock:
            source_id = _PROJECT_ID
            if source_project is not None:
                source_id = next((fork_id for fork_id, path in self.forks.items() if path == source_project),
                                 _PROJECT_ID + 1 + len(self.forks))
                self.forks[source_id] = source_project
            iid = len(self.merge_requests) + 1
            self.merge_requests[iid] = {'iid': iid, 'source': source, 'target': 'main', 'title': title,
                                        'description': description, 'state': state, 'source_project_id': source_id,
                                        'versions': [], 'base': base or self.branches['main']}
            merge_request = self.merge_requests[iid]
            merge_request['versions'].append((self._merge_request_json(merge_request)['sha'], OPENED,
                                              self.branches['main']))
            return iid

    def push(self, iid: int, sha: str, at: datetime) -> None:
        """Move the source branch (of this project) of merge request `iid` to `sha` at `at`: a new diff version."""
        with self.lock:
            merge_request = self.merge_requests[iid]
            self.branches[merge_request['source']] = sha
            merge_request['versions'].append((sha, at, self.branches[merge_request['target']]))

    def start_pipeline(self, iid: int, settling: int = 0) -> int:
        """Make a merge request pipeline of `iid`'s head (of its merged result where `merged_results`), with a manual
        job for each of `bench_classes` that lists as 'created' `settling` times; its id."""
        with self.lock:
            return self._new_pipeline(iid, settling)

    def add_note(self, iid: int, body: str, author: str = 'alice', system: bool = False) -> int:
        with self.lock:
            note = len(self.notes) + 1
            self.user_ids.setdefault(author, len(self.user_ids) + 1)
            self.notes[note] = {'id': note, 'iid': iid, 'body': body, 'author': author, 'system': system}
            return note

    def notes_on(self, iid: int) -> list[tuple[str, str]]:
        """(author, body) of each note on an MR, oldest first."""
        return [(n['author'], n['body']) for n in self.notes.values() if n['iid'] == iid]

    def documented_route(self, method: str, pattern: str, answer: Callable[..., Answer], entity: gitlab_fields.Entity) -> None:
        """A route whose answers GitLab documents as `entity` (or a list of them)."""
        self.route(method, pattern, answer)
        self.entities[answer] = entity

    def __exit__(self, *exc_info: object) -> None:
        super().__exit__(*exc_info)
        if self.violations:
            raise AssertionError("The GitLab fake answers fields GitLab's API documentation lacks:\n"
                                 + '\n'.join(dict.fromkeys(self.violations)))

    def as_sent(self, request: Request, answer: Answer | None) -> Answer | None:
        route = self._route(request)
        if answer is not None and route is not None:
            entity = gitlab_fields.ERROR if answer.status >= 400 else self.entities[route[0]]
            self.violations += [f'{request.method} {request.path}: answer {answer.status}: {field}'
                                for field in gitlab_fields.undocumented(answer.body, entity)]
        return answer

    def start_job(self, user: str, sha: str, ref: str) -> str:
        """Start a CI job run by `user` at commit `sha` in a pipeline of `ref` (refs/merge-requests/IID/head for a merge
        request's); its CI_JOB_TOKEN."""
        with self.lock:
            token = f'job-token-{len(self.jobs) + 1}'
            self.user_ids.setdefault(user, len(self.user_ids) + 1)
            self.jobs[token] = (user, sha, ref)
            return token

    def token(self, handler: BaseHTTPRequestHandler) -> str | None:
        return handler.headers.get('PRIVATE-TOKEN') or handler.headers.get('JOB-TOKEN')

    def check(self, request: Request) -> Answer | None:
        if request.path == '/api/v4/job':
            # a job token reads its own job, and a personal or project token reads none
            return None if request.token in self.jobs else Answer(401, {'message': '401 Unauthorized'})
        if request.account is None:
            return Answer(401, {'message': '401 Unauthorized'})
        if request.method != 'GET' and not request.account.writes:
            return Answer(403, {'message': '403 Forbidden'})
        # A fork is read by its id, and nothing inside it.
        fork = request.method == 'GET' and request.path in {f'/api/v4/projects/{fork_id}' for fork_id in self.forks}
        if request.path.startswith('/api/v4/projects/') and not fork and not (request.path + '/').startswith(
                f'/api/v4/projects/{self.project}/'):
            return Answer(404, {'message': '404 Project Not Found'})
        return None

    def _merge_request_json(self, merge_request: dict[str, Any]) -> dict[str, Any]:
        iid, source_id = merge_request['iid'], merge_request['source_project_id']
        head_sha = (self.branches[merge_request['source']] if source_id == _PROJECT_ID
                    else sha(f"{self.forks[source_id]}:{merge_request['source']}"))
        return {'id': 1000 + iid, 'iid': iid, 'project_id': _PROJECT_ID, 'title': merge_request['title'],
                'description': merge_request['description'] or None, 'state': merge_request['state'],
                'source_branch': merge_request['source'], 'target_branch': merge_request['target'],
                'source_project_id': source_id, 'target_project_id': _PROJECT_ID,
                'sha': head_sha, 'draft': bool(_DRAFT.match(merge_request['title'])),
                'updated_at': (merge_request['versions'][-1][1] if merge_request['versions'] else OPENED).isoformat(
                    timespec='milliseconds').replace('+00:00', 'Z'),
                'diff_refs': {'base_sha': merge_request['base'], 'head_sha': head_sha,
                              'start_sha': merge_request['versions'][-1][2] if merge_request['versions']
                              else self.branches[merge_request['target']]},
                'web_url': f'{GITLAB_WEB}/{self.project}/-/merge_requests/{iid}'}

    def _user_basic(self, username: str) -> dict[str, Any]:
        """A user as GitLab documents a note's, an award's or a status's author: no bot flag, even for a project
        token's user."""
        return {'id': self.user_ids.setdefault(username, len(self.user_ids) + 1), 'username': username,
                'name': username, 'state': 'active', 'locked': False, 'avatar_url': None,
                'web_url': f'{GITLAB_WEB}/{username}'}

    def _note_json(self, note: dict[str, Any]) -> dict[str, Any]:
        return {'id': note['id'], 'body': note['body'], 'system': note['system'], 'noteable_iid': note['iid'],
                'author': self._user_basic(note['author']),
                'created_at': created_at(note['id']).isoformat(timespec='milliseconds').replace('+00:00', 'Z')}

    def _user(self, request: Request) -> Answer:
        return Answer(200, {'id': request.account.id, 'username': request.account.login})

    def _job(self, request: Request) -> Answer:
        user, commit, ref = self.jobs[request.token]
        job = 9000 + list(self.jobs).index(request.token)
        return Answer(200, {'id': job, 'web_url': f'{GITLAB_WEB}/{self.project}/-/jobs/{job}', 'status': 'running', 'ref': ref,
                            'user': self._user_basic(user), 'commit': {'id': commit},
                            'pipeline': {'id': 77, 'project_id': _PROJECT_ID, 'ref': ref, 'sha': commit}})

    def _project(self, request: Request, project: str) -> Answer:
        fork = self.forks.get(int(project)) if project.isdigit() else None
        if fork is not None:
            return Answer(200, {'id': int(project), 'path_with_namespace': fork})
        return Answer(200, {'id': _PROJECT_ID, 'path_with_namespace': self.project})

    def _list_merge_requests(self, request: Request) -> Answer:
        state, source = request.query.get('state', 'all'), request.query.get('source_branch')
        found = [self._merge_request_json(m) for m in self.merge_requests.values()
                 if state in ('all', m['state']) and source in (None, m['source'])]
        return self.page(request, found)

    def _create_merge_request(self, request: Request) -> Answer:
        body = request.body
        if body['source_branch'] not in self.branches or body['target_branch'] not in self.branches:
            return Answer(400, {'message': {'source_branch': ['is invalid']}})
        for existing in self.merge_requests.values():
            if (existing['source'] == body['source_branch'] and existing['state'] == 'opened'
                    and existing['source_project_id'] == _PROJECT_ID):
                return Answer(409, {'message': [
                    f"Another open merge request already exists for this source branch: !{existing['iid']}"]})
        iid = len(self.merge_requests) + 1
        self.merge_requests[iid] = {'iid': iid, 'source': body['source_branch'], 'target': body['target_branch'],
                                    'title': body['title'], 'description': body.get('description') or '',
                                    'state': 'opened', 'source_project_id': _PROJECT_ID,
                                    'base': self.branches[body['target_branch']], 'versions': []}
        merge_request = self.merge_requests[iid]
        merge_request['versions'].append((self.branches[body['source_branch']], OPENED,
                                          self.branches[body['target_branch']]))
        return Answer(201, self._merge_request_json(merge_request))

    def _get_merge_request(self, request: Request, iid: str) -> Answer:
        found = self.merge_requests.get(int(iid))
        return Answer(200, self._merge_request_json(found)) if found else Answer(404, {'message': '404 Not found'})

    def _edit_merge_request(self, request: Request, iid: str) -> Answer:
        found = self.merge_requests.get(int(iid))
        if found is None:
            return Answer(404, {'message': '404 Not found'})
        found.update({key: request.body[key] for key in ('title', 'description') if key in request.body})
        return Answer(200, self._merge_request_json(found))

    def _branch(self, request: Request, branch: str) -> Answer:
        if branch not in self.branches:
            return Answer(404, {'message': '404 Branch Not Found'})
        return Answer(200, {'name': branch, 'commit': {'id': self.branches[branch]}})

    def _list_notes(self, request: Request, iid: str) -> Answer:
        if int(iid) not in self.merge_requests:
            return Answer(404, {'message': '404 Not found'})
        notes = [self._note_json(n) for n in self.notes.values() if n['iid'] == int(iid)]
        # GitLab lists the newest note first unless asked otherwise.
        return self.page(request, notes if request.query.get('sort') == 'asc' else notes[::-1])

    def _create_note(self, request: Request, iid: str) -> Answer:
        if int(iid) not in self.merge_requests:
            return Answer(404, {'message': '404 Not found'})
        note = len(self.notes) + 1
        self.notes[note] = {'id': note, 'iid': int(iid), 'body': request.body['body'],
                            'author': request.account.login, 'system': False}
        return Answer(201, self._note_json(self.notes[note]))

    def _edit_note(self, request: Request, iid: str, note: str) -> Answer:
        found = self.notes.get(int(note))
        if found is None or found['iid'] != int(iid):
            return Answer(404, {'message': '404 Not found'})
        if found['author'] != request.account.login:
            return Answer(403, {'message': '403 Forbidden'})
        found['body'] = request.body['body']
        return Answer(200, self._note_json(found))

    def _versions(self, request: Request, iid: str) -> Answer:
        merge_request = self.merge_requests.get(int(iid))
        if merge_request is None:
            return Answer(404, {'message': '404 Not found'})
        # each version: the head pushed, the commit it branched from, and the target's tip at the push
        versions = [{'id': 900 + number, 'head_commit_sha': sha, 'base_commit_sha': merge_request['base'],
                     'start_commit_sha': start, 'created_at': at.isoformat(timespec='milliseconds').replace('+00:00', 'Z'),
                     'merge_request_id': 1000 + int(iid), 'state': 'collected', 'real_size': '1'}
                    for number, (sha, at, start) in enumerate(merge_request['versions'])]
        # newest first, as GitLab lists them
        return self.page(request, versions[::-1])

    def _award(self, request: Request, iid: str, note: str) -> Answer:
        found = self.notes.get(int(note))
        if found is None or found['iid'] != int(iid):
            return Answer(404, {'message': '404 Not found'})
        award = (int(note), request.body['name'], request.account.login)
        if award in self.awards:
            return Answer(404, {'message': '404 Award Emoji Name has already been taken Not Found'})
        self.awards.append(award)
        return Answer(201, {'id': len(self.awards), 'name': award[1], 'user': self._user_basic(award[2])})

    def _members(self, request: Request, levels: dict[str, int]) -> Answer:
        query = request.query.get('query', '').lower()
        return self.page(request, [{'id': self.user_ids.get(name, 100), 'username': name, 'access_level': level}
                                   for name, level in levels.items() if query in name.lower()])

    def _all_members(self, request: Request) -> Answer:
        levels = dict(self.inherited_members)
        for name, level in self.members.items():
            levels[name] = max(level, levels.get(name, 0))
        return self._members(request, levels)

    def _direct_members(self, request: Request) -> Answer:
        return self._members(request, self.members)

    def _new_pipeline(self, iid: int, settling: int) -> int:
        pipeline = 100 + len(self.pipelines)
        head = self._merge_request_json(self.merge_requests[iid])['sha']
        merged = self.merged_results
        jobs = []
        for runner in self.bench_classes:
            job = 5000 + len(self.pipeline_jobs)
            self.pipeline_jobs[job] = {'name': f'mrbot-bench-{runner}', 'pipeline': pipeline,
                                       'status': 'created' if settling else 'manual', 'settling': settling}
            jobs.append(job)
        self.pipelines[pipeline] = {'iid': iid, 'sha': sha(f'merge of {head}') if merged else head, 'jobs': jobs,
                                    'ref': f"refs/merge-requests/{iid}/{'merge' if merged else 'head'}"}
        return pipeline

    def _pipeline_json(self, pipeline: int) -> dict[str, Any]:
        found = self.pipelines[pipeline]
        return {'id': pipeline, 'iid': pipeline - 99, 'project_id': _PROJECT_ID, 'sha': found['sha'],
                'ref': found['ref'], 'status': 'manual', 'source': 'merge_request_event',
                'web_url': f'{GITLAB_WEB}/{self.project}/-/pipelines/{pipeline}'}

    def _job_json(self, job: int) -> dict[str, Any]:
        found = self.pipeline_jobs[job]
        pipeline = self._pipeline_json(found['pipeline'])
        return {'id': job, 'name': found['name'], 'status': found['status'], 'stage': 'test', 'ref': pipeline['ref'],
                'web_url': f'{GITLAB_WEB}/{self.project}/-/jobs/{job}', 'pipeline': pipeline}

    def _list_pipelines(self, request: Request, iid: str) -> Answer:
        if int(iid) not in self.merge_requests:
            return Answer(404, {'message': '404 Not found'})
        # newest first
        return self.page(request, [self._pipeline_json(pipeline) for pipeline in reversed(self.pipelines)
                                   if self.pipelines[pipeline]['iid'] == int(iid)])

    def _create_pipeline(self, request: Request, iid: str) -> Answer:
        if int(iid) not in self.merge_requests:
            return Answer(404, {'message': '404 Not found'})
        # GitLab makes the pipeline's jobs before it answers, and moves them on from 'created' a moment later
        return Answer(201, self._pipeline_json(self._new_pipeline(int(iid), settling=1)))

    def _list_jobs(self, request: Request, pipeline: str) -> Answer:
        if int(pipeline) not in self.pipelines:
            return Answer(404, {'message': '404 Not found'})
        listed = [self._job_json(job) for job in self.pipelines[int(pipeline)]['jobs']]
        for job in self.pipelines[int(pipeline)]['jobs']:
            found = self.pipeline_jobs[job]
            found['settling'] = max(found['settling'] - 1, 0)
            if found['status'] == 'created' and not found['settling']:
                found['status'] = 'manual'
        return self.page(request, listed)

    def _get_job(self, request: Request, job: str) -> Answer:
        if int(job) not in self.pipeline_jobs:
            return Answer(404, {'message': '404 Not found'})
        return Answer(200, self._job_json(int(job)))

    def _play(self, request: Request, job: str) -> Answer:
        found = self.pipeline_jobs.get(int(job))
        if found is None:
            return Answer(404, {'message': '404 Not found'})
        if found['status'] != 'manual':
            return Answer(400, {'message': '400 Bad request - Unplayable Job'})
        found['status'] = 'pending'
        variables = {v['key']: v['value'] for v in request.body.get('job_variables_attributes', [])}
        self.plays.append((int(job), variables, request.account.login))
        return Answer(200, self._job_json(int(job)))

    def _create_status(self, request: Request, commit: str) -> Answer:
        body = request.body
        if commit not in self.branches.values():
            return Answer(404, {'message': '404 Commit Not Found'})
        if body.get('state') not in _STATUS_STATES:
            return Answer(400, {'message': 'state does not have a valid value'})
        status = {'id': len(self.statuses) + 1, 'sha': commit, 'status': body['state'],
                  'name': body.get('name') or 'default', 'description': body.get('description'),
                  'target_url': body.get('target_url'), 'author': self._user_basic(request.account.login)}
        self.statuses.append(status)
        return Answer(201, status)
