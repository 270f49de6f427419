# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The GitHub adapter, on PyGithub: pull requests, issue comments, reactions, collaborator roles and check runs.

Retrying is PyGithub's own: it hands a urllib3 Retry to its HTTP session, and its GithubRetry tells GitHub's rate
limit 403s (retried, waiting for Retry-After or the quota's reset) from the others (raised at once). What it leaves
out is added here: edits (PATCH) are retried too, a 429 is retried without a Retry-After header, a 429 that spent the
quota waits for x-ratelimit-reset, and the first retry waits as well.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from urllib.parse import quote

import requests
from github import Auth, Github, GithubException, GithubRetry
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest as GitHubPullRequest
from urllib3 import Retry
from urllib3.response import BaseHTTPResponse

from mrbot import git
from mrbot.forges import (
    PERMISSIONS,
    REACTIONS,
    Annotation,
    Comment,
    ForgeRetry,
    Note,
    PullRequest,
    WorkflowRun,
    carries_marker,
    fit_markdown,
    forge_error,
    found,
    network_error,
    open_or_update,
    require_check,
    require_fit,
    retry_policy,
    sticky_text,
    token_advice,
    utc_timestamp,
)
from mrbot.records import MrbotError

# GitHub refuses a longer PR body or comment with "body is too long (maximum is 65536 characters)"; its REST
# reference does not state the number.
BODY_LIMIT = 65536
# GitHub's limit on the characters of a check run's output.summary.
SUMMARY_LIMIT = 65535
# The files a comparison of two commits lists, at most; a longer list is cut there.
COMPARE_FILES = 300
# The bot's record of pull request heads: a pull_request_target workflow, which GitHub starts from the base branch's
# file on every push of an open PR (a push back to an earlier commit included), whatever the PR's own workflows, a
# merge conflict or [skip ci] say; its run-name says which PR and head each run saw.
HEAD_RECORD = 'mrbot-head.yml'
RECORDED_HEAD = re.compile(rf'mrbot head of #(\d+) at ({git.COMMIT_ID})')
# GitHub lists at most 1,000 runs for a filtered query.
RUNS_LISTED = 1000
# The open pull requests read to find those a commit heads: ten pages.
OPEN_PULLS_READ = 1000
# What a fine-grained token or a workflow's `permissions:` must grant for each call; a classic token needs `repo`.
_WRITE_PULLS = '`pull-requests: write` (a classic token: the `repo` scope)'
_WRITE_ISSUES = '`issues: write` (a classic token: the `repo` scope)'
_READ_PULLS = '`pull-requests: read` (a classic token: the `repo` scope)'
_READ_ACTIONS = '`actions: read` (a classic token: the `repo` scope)'
_READ_ISSUES = '`issues: read` (a classic token: the `repo` scope)'
_READ_CONTENTS = '`contents: read` (a classic token: the `repo` scope)'
_READ_METADATA = '`metadata: read` (a classic token: the `repo` scope)'
_WRITE_CHECKS = "`checks: write` (only a GitHub App or a workflow's GITHUB_TOKEN can hold it)"


class _Retry(ForgeRetry, GithubRetry):
    """GithubRetry with mrbot's waits, which also waits for x-ratelimit-reset after a 429 that spent the quota."""

    def get_retry_after(self, response: BaseHTTPResponse) -> float | None:
        retry_after = super().get_retry_after(response)
        reset = response.headers.get('x-ratelimit-reset', '')
        if retry_after is None and response.headers.get('x-ratelimit-remaining') == '0' and reset.isdigit():
            return max(0.0, int(reset) - time.time())
        return retry_after


def _status(error: Exception) -> int | None:
    return error.status if isinstance(error, GithubException) else None


def _message(error: GithubException) -> str:
    """GitHub's message of a refused request, with the details of a validation failure, on one line."""
    data = error.data if isinstance(error.data, dict) else {}
    parts = [str(data.get('message') or error.message or '')]
    for detail in data.get('errors') or ():
        if isinstance(detail, dict):
            parts.append(str(detail.get('message') or ' '.join(str(detail[key]) for key in ('field', 'code')
                                                                 if key in detail)))
        else:
            parts.append(str(detail))
    return ' '.join(': '.join(part for part in parts if part).split()) or 'no message'


def _annotation(annotation: Annotation) -> dict[str, str | int]:
    found = {'path': annotation.path, 'start_line': annotation.line, 'end_line': annotation.line,
             'annotation_level': annotation.level, 'message': annotation.message}
    return {**found, 'title': annotation.title} if annotation.title else found


class GitHub:
    """One GitHub repository ('owner/name') through PyGithub, with the token and API URL `connect` found."""

    name = 'github'
    body_limit = BODY_LIMIT
    # GitHub starts no workflow for a push made with a workflow's own token ("Triggering a workflow from a workflow"),
    # a fork's included: the head record misses such a push
    records_every_push = False

    def __init__(self, project: str, api_url: str, token: str, token_source: str, retries: int, backoff: float,
                 actions_login: str) -> None:
        self.project = project
        self._actions_login = actions_login
        self._owner = project.split('/')[0]
        self._token_source = token_source
        self._retries = retries
        # Edits are PATCH requests, which GithubRetry leaves out (it adds only GET and POST); a repeated edit is harmless.
        retry = retry_policy(_Retry, retries, backoff, allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {'POST', 'PATCH'})
        # PyGithub spaces requests (0.25 s, 1 s between writes) to stay clear of secondary rate limits; the spacing
        # scales with backoff, so that at the default backoff it is PyGithub's own.
        self._github = Github(auth=Auth.Token(token), base_url=api_url.rstrip('/'), retry=retry, per_page=100, lazy=True,
                              seconds_between_requests=backoff / 4, seconds_between_writes=backoff)
        self._repo = self._github.get_repo(project)

    @contextmanager
    def _doing(self, doing: str, needs: str) -> Iterator[None]:
        """Turn what PyGithub and requests raise in the block into one MrbotError line about `doing`."""
        try:
            yield
        except GithubException as error:
            raise forge_error('GitHub', doing, error.status, _message(error),
                              token_advice('GitHub', self.project, 'repository', self._token_source, error.status,
                                           needs)) from None
        except requests.RequestException as error:
            raise network_error('GitHub', doing, error, self._retries) from None

    def _check_visible(self) -> None:
        """Read the repository itself, so that a 404 from inside it can be told from one for the repository."""
        self._repo.complete()

    @cached_property
    def _bot_login(self) -> str | None:
        """The token's user, or None where GitHub will not say (GitHub Actions' GITHUB_TOKEN, a GitHub App)."""
        try:
            return self._github.get_user().login
        except GithubException as error:
            if error.status == 403:
                return None
            raise

    def _posted_by_bot(self, comment: IssueComment) -> bool:
        user = comment.user
        if user is None:
            return False
        # Without a login from GitHub, the token is an Actions or app token, whose comments carry the login of its Bot
        # account: another Bot account (an app anyone may install, dependabot) writes no marker the bot trusts.
        return user.login == (self._bot_login or self._actions_login)

    def _note(self, comment: IssueComment) -> Note:
        # A comment by a deleted account may come without its user.
        user = comment.user
        return Note(id=comment.id, author=user.login if user else '', by_bot=self._posted_by_bot(comment),
                    body=comment.body or '', created_at=utc_timestamp(comment.created_at))

    def _pull(self, pull: GitHubPullRequest) -> PullRequest:
        # merged_at is in list answers too, where `merged` would cost a request per pull request.
        state = 'merged' if pull.merged_at is not None else pull.state
        # GitHub leaves head.repo null once a fork is deleted.
        head_repo = pull.head.repo.full_name if pull.head.repo is not None else ''
        return PullRequest(number=pull.number, url=pull.html_url, title=pull.title, body=pull.body or '',
                           head_branch=pull.head.ref, head_sha=pull.head.sha, base_branch=pull.base.ref,
                           draft=bool(pull.draft), state=state, head_repo=head_repo,
                           updated_at=utc_timestamp(pull.updated_at))

    def find_pull(self, branch: str) -> PullRequest | None:
        with self._doing(f'looking for the open pull request of {branch} in {self.project}', _READ_PULLS):
            pulls = self._repo.get_pulls(state='open', head=f'{self._owner}:{branch}')
            return next((self._pull(pull) for pull in pulls), None)

    def create_pull(self, branch: str, base: str, title: str, body: str, draft: bool = True) -> PullRequest:
        require_fit(body, BODY_LIMIT, 'the pull request body')
        with self._doing(f'opening a pull request from {branch} into {base} in {self.project}', _WRITE_PULLS):
            return open_or_update(
                self, branch, title, body,
                lambda: self._pull(self._repo.create_pull(base=base, head=branch, title=title, body=body, draft=draft)),
                # GitHub refuses a second open PR for a branch with a 422.
                lambda error: isinstance(error, GithubException) and error.status == 422)

    def update_pull(self, number: int, title: str | None = None, body: str | None = None) -> PullRequest:
        if body is not None:
            require_fit(body, BODY_LIMIT, 'the pull request body')
        with self._doing(f'editing pull request #{number} of {self.project}', _WRITE_PULLS):
            pull = self._repo.get_pull(number)
            pull.edit(**{key: value for key, value in (('title', title), ('body', body)) if value is not None})
            return self._pull(pull)

    def branch_exists(self, branch: str) -> bool:
        with self._doing(f'looking for branch {branch} in {self.project}', _READ_CONTENTS):
            return found(lambda: self._repo.get_branch(branch), _status, self._check_visible)

    def upsert_comment(self, number: int, purpose: str, body: str) -> Comment:
        text = sticky_text(purpose, body, BODY_LIMIT)
        with self._doing(f"posting the '{purpose}' comment on pull request #{number} of {self.project}", _WRITE_ISSUES):
            issue = self._repo.get_issue(number)
            for comment in issue.get_comments():
                if carries_marker(comment.body, purpose) and self._posted_by_bot(comment):
                    comment.edit(text)
                    return Comment(comment.id, comment.html_url, created=False)
            created = issue.create_comment(text)
            return Comment(created.id, created.html_url, created=True)

    def add_reaction(self, number: int, comment_id: int, reaction: str) -> None:
        if reaction not in REACTIONS:
            raise ValueError(f"reaction '{reaction}': expected one of {', '.join(REACTIONS)}")
        doing = f'reacting {reaction} to comment {comment_id} on pull request #{number} of {self.project}'
        with self._doing(doing, _WRITE_ISSUES):
            # GitHub's reaction names are mrbot's; a reaction that is already there is answered with 200.
            self._repo.get_issue(number).get_comment(comment_id).create_reaction(reaction)

    def permission(self, user: str) -> str:
        with self._doing(f'reading the permission of {user} on {self.project}', _READ_METADATA):
            try:
                # Read directly: PyGithub's helpers take one field each, and role_name is missing on older servers.
                _, data = self._repo.requester.requestJsonAndCheck(
                    'GET', f'{self._repo.url}/collaborators/{quote(user, safe="")}/permission')
            except GithubException as error:
                if error.status != 404:
                    raise
                self._check_visible()
                return 'none'
        role, permission = data.get('role_name'), data.get('permission')
        # A custom role's name is its own; its base permission is one of the legacy admin, write, read or none.
        return role if role in PERMISSIONS else permission if permission in PERMISSIONS else 'none'

    def get_pull(self, number: int) -> PullRequest:
        with self._doing(f'reading pull request #{number} of {self.project}', _READ_PULLS):
            return self._pull(self._repo.get_pull(number))

    def compare_paths(self, base: str, head: str) -> list[str]:
        """The paths commit `head` changes against its merge base with `base` (a branch or commit), a renamed file's
        old path too; an error where GitHub may have cut the list (it lists 300 files at most), so that no caller
        takes a cut list for all of them."""
        with self._doing(f'comparing {head[:12]} with {base} in {self.project}', _READ_CONTENTS):
            _, data = self._repo.requester.requestJsonAndCheck(
                'GET', f'{self._repo.url}/compare/{quote(base, safe="")}...{quote(head, safe="")}')
        files = [f for f in data.get('files') or () if isinstance(f, dict)]
        if len(files) >= COMPARE_FILES:
            raise MrbotError(f'{head[:12]} changes {len(files)} or more files against {base}, and GitHub lists '
                             f'{COMPARE_FILES} at most')
        return [str(f.get('filename')) for f in files] + [str(f['previous_filename']) for f in files
                                                           if f.get('previous_filename')]

    def pulls_with_head(self, sha: str) -> list[PullRequest]:
        """The open PRs whose head is commit `sha`, from any repository, read from the list of open PRs: GitHub's
        pull requests of a commit leave out those whose head is in a fork. An error where there are more open PRs
        than GitHub lists at once (OPEN_PULLS_READ), so that no caller takes a part for all of them."""
        with self._doing(f'reading the open pull requests of {self.project}', _READ_PULLS):
            pulls = list(itertools.islice(self._repo.get_pulls(state='open'), OPEN_PULLS_READ + 1))
            if len(pulls) > OPEN_PULLS_READ:
                raise MrbotError(f'{self.project} has more than {OPEN_PULLS_READ} open pull requests; those whose head '
                                 f'is {sha[:12]} were not all read')
            return [self._pull(pull) for pull in pulls if pull.head.sha == sha]

    def post_comment(self, number: int, body: str) -> Comment:
        require_fit(body, BODY_LIMIT, 'the comment')
        with self._doing(f'commenting on pull request #{number} of {self.project}', _WRITE_ISSUES):
            created = self._repo.get_issue(number).create_comment(body)
            return Comment(created.id, created.html_url, created=True)

    def head_pushed_at(self, pull: PullRequest) -> str | None:
        """The start of the first of the newest runs of the bot's head record (HEAD_RECORD) for the PR that all saw
        its head commit: the first of the head's own unbroken series dates the push. None where the record has no
        run for the PR among the runs GitHub lists (no such workflow on the PR's base branch, or none yet)."""
        since = None
        for run in self.workflow_runs(HEAD_RECORD, 'pull_request_target'):
            recorded = RECORDED_HEAD.fullmatch(run.title)
            if recorded is None or int(recorded[1]) != pull.number:
                continue
            if recorded[2] != pull.head_sha:
                break
            since = run.created_at
        return since

    def workflow_runs(self, workflow: str, event: str, status: str | None = None) -> Iterator[WorkflowRun]:
        """The runs of workflow file `workflow` started by `event` (and ended in `status`), newest first, as many as
        GitHub lists; none where the repository has no such workflow."""
        doing = f'reading the {event} runs of {workflow} in {self.project}'
        with self._doing(doing, _READ_ACTIONS):
            try:
                runs = self._repo.get_workflow(workflow).get_runs(event=event, **({'status': status} if status else {}))
                for run in itertools.islice(runs, RUNS_LISTED):
                    yield WorkflowRun(run.id, utc_timestamp(run.created_at), run.display_title or '')
            except GithubException as error:
                if error.status != 404:
                    raise

    def artifact_names(self, run: int) -> list[str]:
        """The names of the artifacts of workflow run `run` that have not expired."""
        with self._doing(f'reading the artifacts of run {run} in {self.project}', _READ_ACTIONS):
            _, data = self._repo.requester.requestJsonAndCheck('GET', f'{self._repo.url}/actions/runs/{run}/artifacts',
                                                               parameters={'per_page': 100})
        return [str(a.get('name')) for a in data.get('artifacts') or () if isinstance(a, dict) and not a.get('expired')]

    def edit_comment(self, number: int, comment_id: int, body: str) -> None:
        require_fit(body, BODY_LIMIT, 'the comment')
        with self._doing(f'editing comment {comment_id} on pull request #{number} of {self.project}', _WRITE_ISSUES):
            # by id, without reading the comment first: its body is what the caller just read
            self._repo.requester.requestJsonAndCheck('PATCH', f'{self._repo.url}/issues/comments/{comment_id}',
                                                     input={'body': body})

    def comments(self, number: int) -> list[Note]:
        """The conversation's comments (GitHub's issue comments); review comments on lines of the diff are not read."""
        with self._doing(f'reading the comments on pull request #{number} of {self.project}', _READ_ISSUES):
            return [self._note(comment) for comment in self._repo.get_issue(number).get_comments()]

    def publish_check(self, sha: str, name: str, conclusion: str, title: str, summary: str,
                      annotations: Sequence[Annotation] = ()) -> str:
        """A completed check run, created with its annotations in one request.

        A summary over GitHub's 65535 characters is cut at a line, with a note saying so.
        """
        require_check(conclusion, annotations)
        note = f"_Cut to fit GitHub's {SUMMARY_LIMIT}-character limit on a check run's summary._"
        output = {'title': title, 'summary': fit_markdown(summary, SUMMARY_LIMIT, note),
                  'annotations': [_annotation(annotation) for annotation in annotations]}
        with self._doing(f"publishing the '{name}' check of {sha} in {self.project}", _WRITE_CHECKS):
            return self._repo.create_check_run(name=name, head_sha=sha, status='completed', conclusion=conclusion,
                                               output=output).html_url

