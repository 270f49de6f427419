# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""GitLab merge request pipelines: the pipeline's predefined variables read, and the report or a command acted on.

Without a command the job checks the merge request's diff and posts the report. A command job (one per runner
class) answers the command through the same path as GitHub's, then runs it here and posts its result: GitLab has no
split between the job that runs a merge request's code and the one that holds the token (docs/ci.md says what that
costs).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from pathlib import Path

from mrbot import git
from mrbot.ci import event as ci_event
from mrbot.ci import grammar
from mrbot.ci.answer import Request, answer, deliver, settle
from mrbot.ci.artifacts import read_artifact
from mrbot.ci.event import Ended, Event
from mrbot.ci.job import run_job
from mrbot.ci.poster import bot_bodies, post, with_done
from mrbot.ci.report import check_report
from mrbot.forges import Note
from mrbot.forges.gitlab import GitLab, RunningJob
from mrbot.records import MrbotError
from mrbot.repo.ops import load_specs
from mrbot.repo.workspace import Workspace
from mrbot.stack import require_kernel_stack


def command_request(notes: list[Note], number: int, job: RunningJob, environ: Mapping[str, str]) -> Request:
    """The command a GitLab job runs. A webhook receiver names the note (MRBOT_COMMAND_NOTE), which is read back
    through the API with its author and date; otherwise the command is MRBOT_COMMAND, asked by whoever ran the job.
    Who that is, and the commit, come from GitLab's record of the job, never from a variable: whoever runs a job sets
    those, and could post as anyone and leave their own cooldown behind. `notes` are the MR's, as read."""
    named = environ.get('MRBOT_COMMAND_NOTE', '')
    if named:
        if not named.isdigit() or len(named) > 20:
            raise MrbotError(f'MRBOT_COMMAND_NOTE {named[:40]!r}: expected the id of a note on !{number}')
        note = next((n for n in notes if n.id == int(named)), None)
        if note is None:
            raise MrbotError(f'MRBOT_COMMAND_NOTE {named}: !{number} has no such note')
        if note.by_bot:
            raise Ended(f'note {named} is the bot\'s own; it gives no commands')
        return Request(number, note.body.split('\n', 1)[0].strip(), note.author, None, note.created_at, note.id,
                       job.user, job.sha)
    # its starter runs the pipeline they see: no date to hold the head to
    return Request(number, environ.get('MRBOT_COMMAND', ''), job.user, None, None, None, job.user, job.sha)


def merge_request_job(forge: GitLab, environ: Mapping[str, str]) -> tuple[int, RunningJob]:
    """The merge request this pipeline is for and this job, as GitLab records them; an error where the pipeline's
    variables say otherwise, as they do when whoever ran the job set them."""
    missing = [v for v in ('CI_COMMIT_SHA', 'CI_JOB_TOKEN') if not environ.get(v)]
    if missing:
        raise MrbotError(f"{', '.join(missing)} not set: mrbot action --forge gitlab runs in a GitLab CI job")
    if not environ.get('CI_MERGE_REQUEST_IID'):
        raise Ended('CI_MERGE_REQUEST_IID is not set: mrbot acts in merge request pipelines only')
    text = environ['CI_MERGE_REQUEST_IID']
    if not text.isdigit() or len(text) > 12:
        raise MrbotError(f'CI_MERGE_REQUEST_IID {text[:40]!r}: expected the number of a merge request')
    job = forge.running_job(environ['CI_JOB_TOKEN'])
    if job.merge_request != int(text) or job.sha != environ['CI_COMMIT_SHA']:
        runs = f'!{job.merge_request}' if job.merge_request is not None else 'no merge request'
        raise MrbotError(f"this job runs for {runs} at {job.sha[:10]}, but CI_MERGE_REQUEST_IID and CI_COMMIT_SHA say "
                         f"!{text} at {environ['CI_COMMIT_SHA'][:10]}: variables set when the job was run are not "
                         'the pipeline\'s')
    return int(text), job


def act(root: Path, environ: Mapping[str, str], out: Path | None) -> int:
    """Act on this merge request pipeline: post the report, or answer and run a command."""
    if not environ.get('CI_PROJECT_PATH'):
        raise MrbotError('CI_PROJECT_PATH is not set: mrbot action --forge gitlab runs in a GitLab CI job')
    forge = ci_event.open_forge('gitlab', environ['CI_PROJECT_PATH'], environ)
    number, job = merge_request_job(forge, environ)
    # the run is this job, as GitLab tells it: a pipeline's id is shared by its jobs, and whoever runs a job sets its
    # variables, CI_PIPELINE_URL included
    event = Event('merge_request', {}, environ['CI_PROJECT_PATH'], str(job.id), job.url, None, None)
    sha = job.sha
    # the settings of the branch the merge request targeted when its head became this commit: its own new settings
    # are not this bot's to read yet, and one branched from an old commit escapes no rule added since
    target = forge.merge_request_target(number, sha)
    try:
        git.resolve(root, target)
    except MrbotError:
        raise MrbotError(f'commit {target} of the target branch is not in this checkout: fetch with GIT_DEPTH: "0"') \
            from None
    config = git.config_at(root, target)
    if not environ.get('MRBOT_COMMAND') and not environ.get('MRBOT_COMMAND_NOTE'):
        # the title and description as GitLab has them: whoever runs a job may set the variables that carry them
        pull = forge.get_pull(number)
        if pull.head_sha != sha:
            # a retried job of an older pipeline would put an older commit's report in the note
            raise Ended(f'!{number} has moved on from {sha[:12]} to {pull.head_sha[:12]}: its own pipeline reports it')
        report = check_report(Workspace(root, config), target, sha, pull.title, pull.body)
        # a push while the check ran: the new head's pipeline posts, and this older report must not overwrite it
        if (now := forge.get_pull(number)).head_sha != sha:
            raise Ended(f'!{number} moved on from {sha[:12]} to {now.head_sha[:12]} while it was checked: its own '
                        'pipeline reports it')
        print(f"mrbot action: posted {post(forge, event, {'pr': number, 'sha': sha, 'purpose': 'report', **report})}")
        return 0
    runner = environ.get('MRBOT_RUNNER', '')
    if runner not in config.runners:
        raise MrbotError(f"a command needs MRBOT_RUNNER, this job's class: one of {', '.join(config.runners)}")
    # before the command is accepted: an accepted command that cannot run would hold its queue slot for nothing
    require_kernel_stack('a GitLab command job')
    notes = forge.comments(number)
    # one job answers one command: a job token handed to other jobs would run them all under one run
    if any(str(m.get('run')) == event.run_id for m in grammar.markers(bot_bodies(notes), 'accepted', None)):
        raise MrbotError(f'job {job.id} has answered a command already; a new job runs the next')
    request = command_request(notes, number, job, environ)
    now = datetime.datetime.now(datetime.timezone.utc)
    # the token's own user, by id, is what makes a note the bot's here: GitLab has no other writer of that account
    given = answer(forge, request, config, load_specs(root, config), bot_bodies(notes), now, event.run_id,
                   event.run_url, runner, seal=None)
    accepted = deliver(forge, number, request.note, given)
    given = settle(forge, request, given, accepted, config, now, None)
    if not given.runners:
        return 0
    command = given.command
    jobs = {**environ, 'MRBOT_ARGS': json.dumps(command.args), 'MRBOT_SHA': sha, 'MRBOT_PR': str(number),
            'MRBOT_COMMAND': command.kind, 'MRBOT_USER': request.asker, 'GITHUB_RUN_ID': event.run_id}
    folder = out or root / '.mrbot' / 'action'
    try:
        code = run_job(root, config, jobs, folder, (target,), event.run_url)
        post(forge, event, _own_result(read_artifact(folder), number, sha, f'{command.kind}-{runner}'))
    finally:
        # the job is done where it was queued, as the poster marks it on GitHub, whatever became of its result
        forge.edit_comment(number, accepted, with_done(given.reply, event.run_id, None))
    return code


def _own_result(artifact: dict, number: int, sha: str, purpose: str) -> dict:
    """`artifact` where it is the result of this job's command, which the merge request's code wrote: anything else
    (another merge request's report, a check for another commit) is refused, not posted with the bot's token."""
    expected = {'kind': 'result', 'pr': number, 'sha': sha, 'purpose': purpose}
    wrong = [f'{key} {artifact.get(key)!r} (expected {value!r})' for key, value in expected.items()
             if artifact.get(key) != value]
    if artifact.get('check'):
        wrong.append('a check run, which only a report publishes')
    if wrong:
        raise MrbotError(f"artifact rejected: this job's result has {', '.join(wrong)}")
    return artifact
