# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The GitLab adapter, on python-gitlab: merge requests, notes, award emoji, member roles, commit statuses, and the
pipelines and manual jobs of a merge request.

python-gitlab's own retrying (`retry_transient_errors`, and 429s always) waits a fixed 0.1 s * 2**n and tries up to
ten times per request, and neither number can be set for the client. So the retrying is done one layer down, by a
urllib3 Retry on python-gitlab's requests session that counts and waits as `connect` asks, honours Retry-After, and
raises when it gives up, before python-gitlab sees the last answer and starts retrying it again.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

import gitlab
import requests
from gitlab.base import RESTObject
from gitlab.exceptions import GitlabCreateError, GitlabError, GitlabGetError
from gitlab.v4.objects import ProjectMergeRequest, ProjectMergeRequestNote
from requests.adapters import HTTPAdapter

from mrbot.forges import (
    REACTIONS,
    Annotation,
    Comment,
    ForgeRetry,
    Note,
    PullRequest,
    carries_marker,
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

# GitLab caps MR descriptions and notes at 1,000,000 characters (Gitlab::Database::MAX_TEXT_SIZE_LIMIT, validated
# on both; see the gitlab-foss commit "Limit the size of issuable description and comments").
BODY_LIMIT = 1_000_000
# The characters a commit status's description holds.
DESCRIPTION_LIMIT = 255
# Seconds a request waits for GitLab to connect, and then between bytes of its answer: one that never answers
# must not hold its caller (a receiver's worker) for good.
REQUEST_TIMEOUT_S = 30.0
# Access levels from the top: Owner 50, Maintainer 40, Developer 30, Reporter 20, Planner 15 and Guest 10 read;
# Minimal Access (5) cannot see the code, like a non-member.
_ROLES = ((50, 'admin'), (40, 'maintain'), (30, 'write'), (10, 'read'))
_AWARDS = {'eyes': 'eyes', '+1': 'thumbsup', '-1': 'thumbsdown', 'rocket': 'rocket', 'confused': 'confused',
           'hooray': 'tada', 'heart': 'heart', 'laugh': 'laughing'}
# The title prefixes GitLab reads as "this MR is a draft".
_DRAFT_PREFIX = re.compile(r'\s*(?:\[draft\]|\(draft\)|draft:)\s*', re.IGNORECASE)
# GitLab's MR states as mrbot's; 'locked' is an MR in the middle of being merged.
_STATES = {'opened': 'open', 'locked': 'open', 'closed': 'closed', 'merged': 'merged'}
# A commit status has no neutral: a check that found nothing to judge passes.
_STATUS_STATES = {'success': 'success', 'neutral': 'success', 'failure': 'failed'}
_WRITE = 'the `api` scope and at least the Developer role'
_READ = 'the `read_api` scope and at least the Guest role'
# GitLab holds a manual job's variables to the project's rule for pipeline variables.
_RUN_WITH_VARIABLES = ("the `api` scope and a role at or above the project's minimum role to use pipeline variables "
                       '(Settings, CI/CD, Variables)')


@dataclass(frozen=True)
class RunningJob:
    """A GitLab CI job as GitLab tells it: who ran it, its commit, the merge request its pipeline is for (None for
    a pipeline of a branch or a tag), and its own id and page, which no variable of the job can change."""

    user: str
    sha: str
    merge_request: int | None
    id: int
    url: str


@dataclass(frozen=True)
class Pipeline:
    """A pipeline as GitLab lists it: its id, the commit it runs, and its ref (refs/merge-requests/IID/head for a
    merge request pipeline of the head, /merge for a merged-results one, or a branch)."""

    id: int
    sha: str
    ref: str


@dataclass(frozen=True)
class PipelineJob:
    """A job of a pipeline in its latest try: its id, name and status ('manual' while a manual job waits to be run,
    'created' while GitLab is still making its pipeline)."""

    id: int
    name: str
    status: str


def _status(error: Exception) -> int | None:
    return error.response_code if isinstance(error, GitlabError) else None


def _session(retry: ForgeRetry) -> requests.Session:
    """An HTTP session that retries as `retry` says, over https and http alike."""
    adapter = HTTPAdapter(max_retries=retry)
    session = requests.Session()
    session.mount('https://', adapter)
    session.mount('http://', adapter)
    return session


def _pipeline(pipeline: RESTObject) -> Pipeline:
    return Pipeline(int(pipeline.id), str(pipeline.sha or ''), str(pipeline.ref or ''))


def _message(error: GitlabError) -> str:
    """GitLab's message of a refused request on one line; validation failures come as lists or field maps."""
    message = error.error_message
    if isinstance(message, bytes):
        message = message.decode(errors='replace')
    if isinstance(message, dict):
        message = '; '.join(f'{field} {" ".join(map(str, problems)) if isinstance(problems, list) else problems}'
                            for field, problems in message.items())
    elif isinstance(message, list):
        message = '; '.join(map(str, message))
    return ' '.join(str(message).split()) or 'no message'


def _draft_title(title: str) -> str:
    return title if _DRAFT_PREFIX.match(title) else f'Draft: {title}'


def _is_draft(merge_request: ProjectMergeRequest) -> bool:
    # GitLab before 14.0 named the flag work_in_progress.
    return bool(merge_request.attributes.get('draft', merge_request.attributes.get('work_in_progress', False)))


def _shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, its end marked with an ellipsis where something was cut."""
    return text if len(text) <= limit else text[:limit - 1] + '…'


class GitLab:
    """One GitLab project ('group/subgroup/name') through python-gitlab, with the token and server `connect` found."""

    name = 'gitlab'
    body_limit = BODY_LIMIT
    # a merge request gets a diff version on every push to its source branch, whoever pushed
    records_every_push = True

    def __init__(self, project: str, server_url: str, token: str, token_source: str, retries: int,
                 backoff: float) -> None:
        self.project = project
        self._server_url = server_url.rstrip('/')
        self._token_source = token_source
        self._retries = retries
        # Every method is retried, POST included as in PyGithub; a repeated MR or award create is refused as a duplicate.
        retry = retry_policy(ForgeRetry, retries, backoff, allowed_methods=None)
        self._session = _session(retry)
        self._gitlab = gitlab.Gitlab(self._server_url, private_token=token, session=self._session, per_page=100,
                                     timeout=REQUEST_TIMEOUT_S)
        self._project = self._gitlab.projects.get(project, lazy=True)
        # a POST that makes something may have made it whatever came back: sent again only after a 429, or where it
        # never left
        self._project_once = gitlab.Gitlab(self._server_url, private_token=token,
                                           session=_session(retry.new(status_forcelist=[429], read=0)),
                                           timeout=REQUEST_TIMEOUT_S).projects.get(project, lazy=True)

    @contextmanager
    def _doing(self, doing: str, needs: str) -> Iterator[None]:
        """Turn what python-gitlab and requests raise in the block into one MrbotError line about `doing`."""
        try:
            yield
        except GitlabError as error:
            status = error.response_code
            advice = token_advice('GitLab', self.project, 'project', self._token_source, status, needs)
            raise forge_error('GitLab', doing, status, _message(error), advice) from None
        except requests.RequestException as error:
            raise network_error('GitLab', doing, error, self._retries) from None

    def _check_visible(self) -> None:
        """Read the project itself, so that a 404 from inside it can be told from one for the project."""
        self._gitlab.projects.get(self.project)

    @cached_property
    def _bot_id(self) -> int:
        """The id of the token's user, the author of the notes the bot may edit."""
        self._gitlab.auth()
        return self._gitlab.user.id

    def bot_user_id(self) -> int:
        """The id of the token's own user: the bot's notes are that user's, and so is every job it runs."""
        with self._doing(f'reading the user of the token for {self.project}', _READ):
            return self._bot_id

    def _note(self, note: ProjectMergeRequestNote) -> Note:
        # a note's author is a UserBasic, which has no bot flag: the bot's notes are those of the token's own user
        return Note(id=note.id, author=note.author['username'], by_bot=note.author['id'] == self._bot_id,
                    body=note.body, created_at=utc_timestamp(note.created_at))

    def _source_project(self, merge_request: ProjectMergeRequest) -> str:
        """The path of the project the MR's branch lives in: this one, a fork, or '' for a fork GitLab no longer has."""
        source = merge_request.source_project_id
        if source == merge_request.target_project_id:
            return self.project
        if source is None:
            return ''
        try:
            return self._gitlab.projects.get(source).path_with_namespace
        except GitlabGetError as error:
            # A private fork the token may not read is still a fork.
            if error.response_code != 404:
                raise
            return ''

    def _pull(self, merge_request: ProjectMergeRequest) -> PullRequest:
        draft = _is_draft(merge_request)
        prefix = _DRAFT_PREFIX.match(merge_request.title) if draft else None
        title = merge_request.title[prefix.end():] if prefix else merge_request.title
        return PullRequest(number=merge_request.iid, url=merge_request.web_url, title=title,
                           body=merge_request.description or '', head_branch=merge_request.source_branch,
                           head_sha=merge_request.sha or '', base_branch=merge_request.target_branch, draft=draft,
                           state=_STATES[merge_request.state], head_repo=self._source_project(merge_request),
                           updated_at=utc_timestamp(merge_request.updated_at))

    def running_job(self, job_token: str) -> RunningJob:
        """The CI job `job_token` (its CI_JOB_TOKEN) belongs to, as GitLab records it: whoever runs a job may set its
        variables, GITLAB_USER_LOGIN and CI_MERGE_REQUEST_IID included, but not what GitLab answers about it."""
        doing = f'reading the running job of {self.project} with CI_JOB_TOKEN'
        client = gitlab.Gitlab(self._server_url, job_token=job_token, session=self._session, timeout=REQUEST_TIMEOUT_S)
        try:
            job = client.http_get('/job')
        except GitlabError as error:
            raise forge_error('GitLab', doing, error.response_code, _message(error),
                              'CI_JOB_TOKEN is the token of this running job, which GitLab sets') from None
        except requests.RequestException as error:
            raise network_error('GitLab', doing, error, self._retries) from None
        pipeline, commit, user = (job.get(key) if isinstance(job.get(key), dict) else {}
                                  for key in ('pipeline', 'commit', 'user'))
        # a merge request pipeline runs on refs/merge-requests/IID/head (or /merge for merged results)
        found = re.fullmatch(r'refs/merge-requests/(\d+)/\w+', str(pipeline.get('ref') or job.get('ref') or ''))
        # the page goes into a link of the bot's reply: a plain web address, nothing markup could read on from, and
        # the page of a job of this project (a token of another project's job would be another project's run)
        page = str(job.get('web_url'))
        prefix = urllib.parse.urlsplit(self._server_url).path.rstrip('/')
        if (not isinstance(job.get('id'), int) or not re.fullmatch(r'https?://[^\s()\[\]<>`?#]+', page)
                or urllib.parse.urlsplit(page).path != f"{prefix}/{self.project}/-/jobs/{job['id']}"):
            raise forge_error('GitLab', doing, None, f'the job is not one of {self.project} with a plain web address')
        return RunningJob(str(user.get('username') or ''), str(commit.get('id') or pipeline.get('sha') or ''),
                          int(found[1]) if found else None, job['id'], str(job['web_url']))

    def merge_request_target(self, number: int, sha: str) -> str:
        """The tip of the branch merge request `number` targets when its head became commit `sha` (the start of the
        newest diff version with that head, as GitLab records it): what a change at `sha` is checked against, whatever
        the merge request became since."""
        doing = f'reading the versions of merge request !{number} of {self.project}'
        with self._doing(doing, _READ):
            # newest first
            versions = self._project.mergerequests.get(number, lazy=True).diffs.list(get_all=True)
        starts = [str(v.start_commit_sha) for v in versions if v.head_commit_sha == sha and v.start_commit_sha]
        if not starts:
            raise forge_error('GitLab', doing, None, f'no version has head {sha[:12]}',
                              'expected the commit of one of its pushes')
        return starts[0]

    def head_pipeline(self, number: int, sha: str) -> Pipeline | None:
        """The newest of the 100 newest pipelines of merge request `number` that runs its head as commit `sha` (a
        merge request pipeline, ref refs/merge-requests/NUMBER/head), or None."""
        ref = f'refs/merge-requests/{number}/head'
        with self._doing(f'reading the pipelines of merge request !{number} of {self.project}', _READ):
            # newest first
            pipelines = self._project.mergerequests.get(number, lazy=True).pipelines.list(get_all=False)
            return next((_pipeline(p) for p in pipelines if p.sha == sha and p.ref == ref), None)

    def create_merge_request_pipeline(self, number: int) -> Pipeline:
        """A new pipeline of merge request `number`: of its head, or of its merged result where the project runs
        merged-results pipelines. The request is not sent again after an answer: a 502 may come after GitLab made it."""
        with self._doing(f'starting a pipeline of merge request !{number} of {self.project}', _WRITE):
            return _pipeline(self._project_once.mergerequests.get(number, lazy=True).pipelines.create())

    def pipeline_jobs(self, pipeline: int) -> list[PipelineJob]:
        """The jobs of pipeline `pipeline`, each in its latest try."""
        with self._doing(f'reading the jobs of pipeline {pipeline} of {self.project}', _READ):
            jobs = self._project.pipelines.get(pipeline, lazy=True).jobs.list(get_all=True)
            return [PipelineJob(int(job.id), str(job.name), str(job.status)) for job in jobs]

    def job_status(self, job: int) -> str:
        """The status of job `job` in its latest try: 'manual' while it waits to be run."""
        with self._doing(f'reading job {job} of {self.project}', _READ):
            return str(self._project.jobs.get(job).status)

    def play_job(self, job: int, variables: Mapping[str, str]) -> None:
        """Run the manual job `job` with `variables` set. GitLab runs a job only while it waits to be run: one that
        ran already, or is still being created, is refused with '400 Bad request - Unplayable Job'."""
        attributes = [{'key': key, 'value': value} for key, value in variables.items()]
        with self._doing(f'running job {job} of {self.project}', _RUN_WITH_VARIABLES):
            self._project.jobs.get(job, lazy=True).play(post_data={'job_variables_attributes': attributes})

    def _note_url(self, number: int, note_id: int) -> str:
        return f'{self._server_url}/{self.project}/-/merge_requests/{number}#note_{note_id}'

    def find_pull(self, branch: str) -> PullRequest | None:
        with self._doing(f'looking for the open merge request of {branch} in {self.project}', _READ):
            merge_requests = self._project.mergerequests.list(source_branch=branch, state='opened', iterator=True)
            # The source_branch filter also matches a fork's branch of the same name.
            return next((self._pull(merge_request) for merge_request in merge_requests
                         if merge_request.source_project_id == merge_request.target_project_id), None)

    def create_pull(self, branch: str, base: str, title: str, body: str, draft: bool = True) -> PullRequest:
        require_fit(body, BODY_LIMIT, 'the merge request description')
        with self._doing(f'opening a merge request from {branch} into {base} in {self.project}', _WRITE):
            return open_or_update(self, branch, title, body, lambda: self._pull(self._project.mergerequests.create({
                'source_branch': branch, 'target_branch': base, 'description': body,
                'title': _draft_title(title) if draft else title})),
                # GitLab refuses a second open MR for a branch with a 409.
                lambda error: isinstance(error, GitlabCreateError) and error.response_code == 409)

    def update_pull(self, number: int, title: str | None = None, body: str | None = None) -> PullRequest:
        if body is not None:
            require_fit(body, BODY_LIMIT, 'the merge request description')
        with self._doing(f'editing merge request !{number} of {self.project}', _WRITE):
            merge_request = self._project.mergerequests.get(number)
            if title is not None:
                # A draft stays a draft: on GitLab that is the title's prefix.
                merge_request.title = _draft_title(title) if _is_draft(merge_request) else title
            if body is not None:
                merge_request.description = body
            merge_request.save()
            return self._pull(merge_request)

    def branch_exists(self, branch: str) -> bool:
        with self._doing(f'looking for branch {branch} in {self.project}', _READ):
            return found(lambda: self._project.branches.get(branch), _status, self._check_visible)

    def upsert_comment(self, number: int, purpose: str, body: str) -> Comment:
        text = sticky_text(purpose, body, BODY_LIMIT)
        with self._doing(f"posting the '{purpose}' note on merge request !{number} of {self.project}", _WRITE):
            notes = self._project.mergerequests.get(number, lazy=True).notes
            for note in notes.list(iterator=True, sort='asc', order_by='created_at'):
                if not note.system and note.author['id'] == self._bot_id and carries_marker(note.body, purpose):
                    note.body = text
                    note.save()
                    return Comment(note.id, self._note_url(number, note.id), created=False)
            created = notes.create({'body': text})
            return Comment(created.id, self._note_url(number, created.id), created=True)

    def add_reaction(self, number: int, comment_id: int, reaction: str) -> None:
        if reaction not in _AWARDS:
            raise ValueError(f"reaction '{reaction}': expected one of {', '.join(REACTIONS)}")
        doing = f'reacting {reaction} to note {comment_id} on merge request !{number} of {self.project}'
        with self._doing(doing, _WRITE):
            note = self._project.mergerequests.get(number, lazy=True).notes.get(comment_id, lazy=True)
            try:
                note.awardemojis.create({'name': _AWARDS[reaction]})
            except GitlabCreateError as error:
                # GitLab refuses a user's second award of the same emoji with a 404 that says so.
                if error.response_code != 404 or 'already been taken' not in _message(error):
                    raise

    def permission(self, user: str) -> str:
        with self._doing(f'reading the role of {user} in {self.project}', _READ):
            # members/all includes those who inherit their role from a parent group.
            members = self._project.members_all.list(query=user, iterator=True)
            level = max((member.access_level for member in members if member.username.lower() == user.lower()),
                        default=0)
        return next((role for floor, role in _ROLES if level >= floor), 'none')

    def get_pull(self, number: int) -> PullRequest:
        with self._doing(f'reading merge request !{number} of {self.project}', _READ):
            return self._pull(self._project.mergerequests.get(number))

    def find_merge_request(self, number: int) -> PullRequest | None:
        """Merge request !`number`, or None where the project has none of that number."""
        read: list[ProjectMergeRequest] = []
        with self._doing(f'reading merge request !{number} of {self.project}', _READ):
            if not found(lambda: read.append(self._project.mergerequests.get(number)), _status, self._check_visible):
                return None
            return self._pull(read[0])

    def post_comment(self, number: int, body: str, once: bool = False) -> Comment:
        """Post a note on merge request `number`; `once`: not sent again after an answer (a 502 may come after GitLab
        made it), for a caller that looks for its note before posting again."""
        require_fit(body, BODY_LIMIT, 'the note')
        project = self._project_once if once else self._project
        with self._doing(f'commenting on merge request !{number} of {self.project}', _WRITE):
            created = project.mergerequests.get(number, lazy=True).notes.create({'body': body})
            return Comment(created.id, self._note_url(number, created.id), created=True)

    def head_pushed_at(self, pull: PullRequest) -> str | None:
        """The creation of the MR's latest diff version whose head is the head commit: GitLab makes a version on every
        push to the source branch, a push back to an earlier commit included."""
        with self._doing(f'reading the versions of merge request !{pull.number} of {self.project}', _READ):
            versions = self._project.mergerequests.get(pull.number, lazy=True).diffs.list(get_all=True)
            starts = [utc_timestamp(v.created_at) for v in versions if v.head_commit_sha == pull.head_sha]
        return max(starts) if starts else None

    def edit_comment(self, number: int, comment_id: int, body: str) -> None:
        require_fit(body, BODY_LIMIT, 'the note')
        with self._doing(f'editing note {comment_id} on merge request !{number} of {self.project}', _WRITE):
            self._project.mergerequests.get(number, lazy=True).notes.update(comment_id, {'body': body})

    def comments(self, number: int) -> list[Note]:
        with self._doing(f'reading the notes on merge request !{number} of {self.project}', _READ):
            notes = self._project.mergerequests.get(number, lazy=True).notes
            return [self._note(note) for note in notes.list(iterator=True, sort='asc', order_by='created_at')
                    if not note.system]

    def publish_check(self, sha: str, name: str, conclusion: str, title: str, summary: str,
                      annotations: Sequence[Annotation] = ()) -> str:
        """A commit status named `name`: 'success' for a success or a neutral result, 'failed' for a failure.

        A commit status holds a one-line description and no more: `title` is cut to its 255 characters, and the
        summary and the annotations are not sent. Returns the status's target_url, else the commit's page.
        """
        require_check(conclusion, annotations)
        with self._doing(f"publishing the '{name}' status of {sha} in {self.project}", _WRITE):
            status = self._project.commits.get(sha, lazy=True).statuses.create({
                'state': _STATUS_STATES[conclusion], 'name': name, 'description': _shorten(title, DESCRIPTION_LIMIT)})
        return status.attributes.get('target_url') or f'{self._server_url}/{self.project}/-/commit/{sha}'
