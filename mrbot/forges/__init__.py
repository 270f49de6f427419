# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Where mrbot meets GitHub and GitLab: the one interface both adapters implement, and the helpers they share.

A forge posts what it is given and knows no rules. Every failure it reports is one MrbotError line naming the forge,
what was being done and what to change; a caller's mistake (an over-long body, an unknown purpose) is a ValueError.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol
from urllib.parse import urlsplit

import requests
from urllib3 import Retry

from mrbot.records import MrbotError

REACTIONS = ('eyes', '+1', '-1', 'rocket', 'confused', 'hooray', 'heart', 'laugh')
PERMISSIONS = ('admin', 'maintain', 'write', 'triage', 'read', 'none')
CONCLUSIONS = ('success', 'failure', 'neutral')
# GitHub's annotation_level values; GitLab has no annotations.
ANNOTATION_LEVELS = ('notice', 'warning', 'failure')
# The annotations one check run carries: what GitHub takes in one request, so that a check is one write.
ANNOTATIONS_LIMIT = 50
# Answers worth another try: the server was busy or broken, or asked us to slow down.
RETRY_STATUSES = (429, 500, 502, 503, 504)
MAX_BACKOFF = 60.0
GITHUB_API = 'https://api.github.com'
# The account whose comments are the bot's when GitHub will not name the token's user (an Actions or app token):
# GitHub Actions' own, unless MRBOT_BOT_LOGIN names the app whose token the workflows pass, as `slug[bot]`.
ACTIONS_LOGIN = 'github-actions[bot]'
GITLAB_URL = 'https://gitlab.com'
GITHUB_TOKEN_VARIABLES = ('GITHUB_TOKEN', 'GH_TOKEN')
GITLAB_TOKEN_VARIABLES = ('GITLAB_TOKEN',)
_PURPOSE = re.compile(r'[a-z0-9]+(?:-[a-z0-9]+)*')
# The scp-like form git accepts for ssh remotes: [user@]host:path, where the path does not start with a slash.
_SCP_REMOTE = re.compile(r'(?:[^@/:]+@)?(?P<host>[^@/:]+):(?P<path>[^/].*)')
_REMOTE_FORMS = 'https://HOST/OWNER/NAME(.git), git@HOST:OWNER/NAME.git or ssh://git@HOST/OWNER/NAME'
# A fenced code block opens and closes with a run of three or more backticks or tildes, indented at most three spaces.
_FENCE = re.compile(r' {0,3}(`{3,}|~{3,})')


@dataclass(frozen=True)
class PullRequest:
    """A GitHub pull request or a GitLab merge request, as the forge reports it after the call.

    `number` is the PR number or the MR iid; `title` is without GitLab's draft prefix, which `draft` reports instead.
    `state` is 'open', 'closed' or 'merged'. `head_repo` is the 'owner/name' of the project `head_branch` lives in:
    another project than this one for a fork's PR/MR, and '' where the forge no longer knows it (a deleted fork).
    `updated_at` is when anything about it last changed (a push, an edit, a comment), ISO 8601 in UTC to the second.
    """

    number: int
    url: str
    title: str
    body: str
    head_branch: str
    head_sha: str
    base_branch: str
    draft: bool
    state: str
    head_repo: str
    updated_at: str


@dataclass(frozen=True)
class Comment:
    """A comment on a PR (a GitHub issue comment) or an MR (a GitLab note); `created` is False when one was edited."""

    id: int
    url: str
    created: bool


@dataclass(frozen=True)
class Note:
    """A comment on a PR/MR as read back; `created_at` is ISO 8601 in UTC to the second, '2026-12-03T04:00:00+00:00'.

    `by_bot` says the account the token acts as wrote it: the bot's own comments, the only ones whose markers count.
    """

    id: int
    author: str
    by_bot: bool
    body: str
    created_at: str


@dataclass(frozen=True)
class WorkflowRun:
    """A GitHub Actions run as GitHub lists it: its id, when it was created (ISO 8601 in UTC to the second) and the
    name it shows (`display_title`, which a workflow's `run-name` sets)."""

    id: int
    created_at: str
    title: str


@dataclass(frozen=True)
class Annotation:
    """A finding shown at a line of a file in a check run; `level` is one of ANNOTATION_LEVELS."""

    path: str
    line: int
    level: str
    message: str
    title: str = ''

    def __post_init__(self) -> None:
        if self.level not in ANNOTATION_LEVELS:
            raise ValueError(f"annotation level '{self.level}': expected one of {', '.join(ANNOTATION_LEVELS)}")


class Forge(Protocol):
    """What mrbot asks of a forge. `body_limit` is how many characters a PR/MR body or a comment may hold there.
    `records_every_push` says whether `head_pushed_at` sees every push, or only those the forge chose to record."""

    name: str
    body_limit: int
    records_every_push: bool

    def find_pull(self, branch: str) -> PullRequest | None:
        """The open PR/MR whose head is `branch` of this project, or None."""

    def create_pull(self, branch: str, base: str, title: str, body: str, draft: bool = True) -> PullRequest:
        """Open a PR/MR from `branch` into `base`; when one is already open for `branch`, update that one instead."""

    def update_pull(self, number: int, title: str | None = None, body: str | None = None) -> PullRequest:
        """Change the title and/or body of a PR/MR, keeping its draft state."""

    def branch_exists(self, branch: str) -> bool:
        """Whether the project has `branch`."""

    def upsert_comment(self, number: int, purpose: str, body: str) -> Comment:
        """Post `body` as the bot's comment for `purpose` on a PR/MR, editing the one a previous run posted."""

    def add_reaction(self, number: int, comment_id: int, reaction: str) -> None:
        """React to a comment on a PR/MR with one of REACTIONS; reacting twice is one reaction."""

    def permission(self, user: str) -> str:
        """The user's role in the project, one of PERMISSIONS."""

    def get_pull(self, number: int) -> PullRequest:
        """The PR/MR `number`, in whatever state it is."""

    def post_comment(self, number: int, body: str) -> Comment:
        """Post `body` as a new comment on a PR/MR, e.g. a reply to a command; nothing earlier is edited."""

    def head_pushed_at(self, pull: PullRequest) -> str | None:
        """When the PR/MR's head last became `pull.head_sha`, as the forge recorded it (ISO 8601 in UTC to the second,
        like `Note.created_at`), or None where it has no record."""

    def edit_comment(self, number: int, comment_id: int, body: str) -> None:
        """Replace the body of the bot's own comment `comment_id` on a PR/MR."""

    def comments(self, number: int) -> list[Note]:
        """Every comment on a PR/MR by a person or a bot, oldest first (GitLab's system notes left out)."""

    def publish_check(self, sha: str, name: str, conclusion: str, title: str, summary: str,
                      annotations: Sequence[Annotation] = ()) -> str:
        """Report a finished check on commit `sha` where the forge shows it next to the PR/MR; returns its URL.

        Args:
            sha (str):
                The commit checked.
            name (str):
                The check's name, e.g. 'mrbot'.
            conclusion (str):
                One of CONCLUSIONS.
            title (str):
                One line saying what was found.
            summary (str):
                Markdown with the details.
            annotations (Sequence[Annotation], Optional):
                Findings at lines of files, where the forge can show them; at most ANNOTATIONS_LIMIT.
                Default: `()`.

        Raises:
            ValueError: `conclusion` is not one of CONCLUSIONS, or there are more than ANNOTATIONS_LIMIT annotations.
        """


class ForgeRetry(Retry):
    """urllib3's Retry, waiting `backoff_factor * 2**attempt` seconds (at most `backoff_max`) from the first retry on.

    urllib3 retries the first time without waiting; a forge that just answered 502 or 429 deserves a pause. A
    Retry-After header still wins, as in urllib3, up to `backoff_max`.
    """

    def get_backoff_time(self) -> float:
        attempt = len(self.history) - 1
        return 0.0 if attempt < 0 else min(self.backoff_max, self.backoff_factor * 2 ** attempt)

    def get_retry_after(self, response: object) -> float | None:
        seconds = super().get_retry_after(response)
        # a Retry-After of a day would hold the request, and whoever waits on it, for that day
        return None if seconds is None else min(seconds, self.backoff_max)


def retry_policy(retry_class: type[ForgeRetry], retries: int, backoff: float, **settings: object) -> ForgeRetry:
    """The Retry both adapters give their HTTP sessions: `retries` retries of RETRY_STATUSES and dropped connections.

    An exhausted Retry raises, so that the client's own retrying (python-gitlab's) never sees the last answer.
    """
    return retry_class(total=retries, backoff_factor=backoff, backoff_max=MAX_BACKOFF,
                       status_forcelist=list(RETRY_STATUSES), raise_on_status=True, **settings)


def network_error(forge: str, doing: str, error: requests.RequestException, retries: int) -> MrbotError:
    """The one-line error for a request that never got a usable answer: the forge kept failing, or was unreachable."""
    reason = error.args[0] if error.args else error
    # requests wraps urllib3's MaxRetryError, whose reason says what went wrong last.
    reason = getattr(reason, 'reason', reason)
    detail = ' '.join(str(reason).split())
    tries = f'{retries} {"retry" if retries == 1 else "retries"}'
    if isinstance(error, requests.exceptions.RetryError):
        return MrbotError(f'{forge}: {doing}: still failing after {tries} ({detail}); try again later')
    return MrbotError(f'{forge}: {doing}: no answer after {tries} ({detail}); check the network and the {forge} URL')


def forge_error(forge: str, doing: str, status: int | None, message: str, advice: str = '') -> MrbotError:
    """The one-line error for a request the forge refused: what was being done, its answer, and what to change."""
    answer = message if status is None or message.startswith(str(status)) else f'{status} {message}'
    return MrbotError(f'{forge}: {doing}: {answer}' + (f'; {advice}' if advice else ''))


def token_advice(forge: str, project: str, kind: str, token_source: str, status: int | None, needs: str) -> str:
    """What to change after `forge` refused a request on `project` (a `kind`: repository or project) with `status`:
    the token, or its permission `needs`; '' where the status says nothing about the token."""
    if status == 401:
        return f'{forge} refused the token {token_source}: it is mistyped, expired or revoked'
    if status == 403:
        return f'the token {token_source} lacks a permission on {project}: it needs {needs}'
    if status == 404:
        return (f'it does not exist, or the token {token_source} cannot see {project} '
                f'({forge} answers 404 for a private {kind} the token may not read)')
    return ''


def found(read: Callable[[], object], status: Callable[[Exception], int | None],
          check_visible: Callable[[], None]) -> bool:
    """Whether `read()` finds what it reads: a 404 (`status` of what it raised) means absent once `check_visible()`
    has shown that the 404 is not for the whole project."""
    try:
        read()
    except Exception as error:
        if status(error) != 404:
            raise
        check_visible()
        return False
    return True


def open_or_update(forge: Forge, branch: str, title: str, body: str, open_pull: Callable[[], PullRequest],
                   refused_as_duplicate: Callable[[Exception], bool]) -> PullRequest:
    """`open_pull()`; where the forge refuses it because a PR/MR of `branch` is open (a retried create that went
    through), that one updated with `title` and `body`."""
    try:
        return open_pull()
    except Exception as error:
        existing = forge.find_pull(branch) if refused_as_duplicate(error) else None
        if existing is None:
            raise
        return forge.update_pull(existing.number, title, body)


def require_fit(text: str, limit: int, what: str) -> None:
    """Refuse text over the forge's limit: the caller fits it with `fit_body`, which knows where the full text is."""
    if len(text) > limit:
        raise ValueError(f'{what} is {len(text)} characters, over the limit of {limit}: fit it with fit_body first')


def require_check(conclusion: str, annotations: Sequence[Annotation]) -> None:
    """Refuse a check conclusion that is not one of CONCLUSIONS, or more annotations than one check carries, before
    anything is sent."""
    if conclusion not in CONCLUSIONS:
        raise ValueError(f"check conclusion '{conclusion}': expected one of {', '.join(CONCLUSIONS)}")
    if len(annotations) > ANNOTATIONS_LIMIT:
        raise ValueError(f'{len(annotations)} annotations: a check carries at most {ANNOTATIONS_LIMIT}; keep the most '
                         'severe and say where the rest are')


def utc_timestamp(moment: datetime | str) -> str:
    """A forge's timestamp as ISO 8601 in UTC to the second, e.g. '2026-12-03T04:00:00+00:00'.

    GitHub writes '...Z', GitLab '...000Z' with milliseconds; a time without a zone is taken to be UTC.
    """
    if isinstance(moment, str):
        # Python before 3.11 does not read a trailing Z.
        moment = datetime.fromisoformat(moment.removesuffix('Z') + ('+00:00' if moment.endswith('Z') else ''))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).replace(microsecond=0).isoformat()


def sticky_room(purpose: str, limit: int) -> int:
    """How many characters the body of the bot's comment for `purpose` may have on a forge of `limit`."""
    return limit - len(marker(purpose)) - 1


def sticky_text(purpose: str, body: str, limit: int) -> str:
    """What the bot's comment for `purpose` holds: the marker line, then `body`; together within `limit`."""
    text = f'{marker(purpose)}\n{body}'
    require_fit(text, limit, f"the '{purpose}' comment with its {len(marker(purpose)) + 1}-character marker line")
    return text


def carries_marker(body: str | None, purpose: str) -> bool:
    """Whether a comment's first line is the marker of `purpose` (who wrote it is for the adapter to check)."""
    return (body or '').split('\n', 1)[0].strip() == marker(purpose)


def _token(token: str | None, environ: Mapping[str, str], forge: str, variables: tuple[str, ...]) -> tuple[str, str]:
    """The token and where it came from ('given to mrbot', 'from GITHUB_TOKEN'), for messages about it."""
    if token:
        return token, 'given to mrbot'
    for variable in variables:
        if environ.get(variable):
            return environ[variable], f'from {variable}'
    raise MrbotError(f'no {forge} token: set {" or ".join(variables)} to a token that may write to the project')


def connect(kind: str, project: str, *, url: str | None = None, token: str | None = None,
            environ: Mapping[str, str] = os.environ, retries: int = 4, backoff: float = 1.0) -> Forge:
    """The adapter for one project on one forge, ready to call; nothing is requested until a method is.

    Args:
        kind (str):
            'github' or 'gitlab'.
        project (str):
            'owner/name' on GitHub, 'group/subgroup/name' on GitLab.
        url (str, Optional):
            GitHub's API URL or GitLab's server URL; `None` takes GITHUB_API_URL (else https://api.github.com) or
            CI_SERVER_URL (else https://gitlab.com) from `environ`.
            Default: `None`.
        token (str, Optional):
            The API token; `None` takes GITHUB_TOKEN, else GH_TOKEN, or GITLAB_TOKEN from `environ`.
            Default: `None`.
        environ (Mapping[str, str], Optional):
            Where the variables above are read.
            Default: `os.environ`.
        retries (int, Optional):
            Retries of a request that met a 429, a 5xx, a rate limit or a dropped connection.
            Default: `4`.
        backoff (float, Optional):
            Seconds before the first retry, doubling for each further one up to 60; a Retry-After header wins.
            Default: `1.0`.

    Raises:
        MrbotError: the forge is unknown or no token is set.
    """
    if kind == 'github':
        from mrbot.forges.github import GitHub

        secret, source = _token(token, environ, 'GitHub', GITHUB_TOKEN_VARIABLES)
        return GitHub(project, url or environ.get('GITHUB_API_URL') or GITHUB_API, secret, source, retries, backoff,
                      environ.get('MRBOT_BOT_LOGIN') or ACTIONS_LOGIN)
    if kind == 'gitlab':
        from mrbot.forges.gitlab import GitLab

        secret, source = _token(token, environ, 'GitLab', GITLAB_TOKEN_VARIABLES)
        return GitLab(project, url or environ.get('CI_SERVER_URL') or GITLAB_URL, secret, source, retries, backoff)
    raise MrbotError(f"unknown forge '{kind}': expected github or gitlab")


def _bad_remote(remote_url: str) -> MrbotError:
    # A remote may carry credentials (https://user:token@host/...); they stay out of the message.
    shown = re.sub(r'//[^/@]*@', '//', remote_url)
    return MrbotError(f"cannot tell the project from the remote URL '{shown}': expected {_REMOTE_FORMS} "
                      '(on GitLab, OWNER may be group/subgroup)')


def parse_remote(remote_url: str) -> tuple[str, str, str]:
    """The forge ('github' or 'gitlab'), the project and the web base URL of a git remote URL.

    https, http, ssh:// and scp-like (git@host:owner/name.git) remotes are read. A host whose name contains 'gitlab'
    is GitLab, any other GitHub (github.com or a GitHub Enterprise server). An ssh remote's web base is https on the
    same host.

    Raises:
        MrbotError: the URL is none of those forms, or its path does not name a project.
    """
    text = remote_url.strip()
    if '://' in text:
        parts = urlsplit(text)
        try:
            host, port = parts.hostname or '', parts.port
        except ValueError:
            raise _bad_remote(remote_url) from None
        if parts.scheme in ('http', 'https'):
            web = f'{parts.scheme}://{host}' + (f':{port}' if port else '')
        elif parts.scheme in ('ssh', 'git+ssh'):
            web = f'https://{host}'
        else:
            raise _bad_remote(remote_url)
        path = parts.path
    else:
        match = _SCP_REMOTE.fullmatch(text)
        if match is None:
            raise _bad_remote(remote_url)
        host, path = match['host'].lower(), match['path']
        web = f'https://{host}'
    path = path.strip('/')
    segments = path.removesuffix('.git').split('/')
    kind = 'gitlab' if 'gitlab' in host else 'github'
    fits = len(segments) == 2 if kind == 'github' else len(segments) >= 2
    if not host or not fits or not all(segments):
        raise _bad_remote(remote_url)
    return kind, '/'.join(segments), web


def marker(purpose: str) -> str:
    """The hidden first line that identifies the bot's comment for `purpose`, e.g. '<!-- mrbot:report -->'.

    Raises:
        ValueError: `purpose` is not lowercase letters and digits in dash-separated words.
    """
    if not _PURPOSE.fullmatch(purpose):
        raise ValueError(f"comment purpose '{purpose}': expected lowercase letters and digits in dash-separated words")
    return f'<!-- mrbot:{purpose} -->'


def _fence_after(line: str, open_fence: str | None) -> str | None:
    """The code fence open after `line`, given the one open before it (None: outside any fenced block)."""
    match = _FENCE.match(line)
    if match is None:
        return open_fence
    run = match[1]
    if open_fence is None:
        return run
    closes = run[0] == open_fence[0] and len(run) >= len(open_fence) and not line[match.end():].strip()
    return None if closes else open_fence


def fit_body(body: str, limit: int, full_text_url: str) -> str:
    """`body` when it fits in `limit` characters, else its first lines followed by a line saying where the rest is.

    The cut falls at a line boundary; a fenced code block left open by the cut is closed so that the note renders as
    text. The result, note included, is at most `limit` characters long.

    Args:
        body (str):
            The markdown to post.
        limit (int):
            The forge's `body_limit`, less whatever the caller adds around the body.
        full_text_url (str):
            Where the whole text can be read, e.g. the CI run's artifact.

    Raises:
        ValueError: `limit` is too small for the note alone.
    """
    return fit_markdown(body, limit, f"_Truncated to fit this forge's {limit}-character limit; the full text is at "
                                     f'{full_text_url}._')


def fit_markdown(text: str, limit: int, note: str) -> str:
    """`text` when it fits in `limit` characters, else its first lines and `note`, cut as `fit_body` cuts.

    Args:
        text (str):
            The markdown to post.
        limit (int):
            How many characters the forge takes.
        note (str):
            The paragraph that ends a cut text, saying that it was cut.

    Raises:
        ValueError: `limit` is too small for the note alone.
    """
    if len(text) <= limit:
        return text
    if len(note) > limit:
        raise ValueError(f'a limit of {limit} characters leaves no room for the {len(note)}-character truncation note')
    kept: list[str] = []
    size, fence = 0, None
    # Every line but the last ends with a newline; the last cannot be kept, as the whole text does not fit.
    for line in (f'{line_text}\n' for line_text in text.split('\n')[:-1]):
        fence_after = _fence_after(line, fence)
        closing = len(fence_after) + 1 if fence_after else 0
        # A blank line between the kept text and the note keeps the note a paragraph of its own.
        if size + len(line) + closing + 1 + len(note) > limit:
            break
        kept.append(line)
        size, fence = size + len(line), fence_after
    if not kept:
        return note
    closing_line = f'{fence}\n' if fence else ''
    return f"{''.join(kept)}{closing_line}\n{note}"
