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
from mrbot.bench.specs import load_specs
from mrbot.ci import event as ci_event
from mrbot.ci.answer import Request, answer, deliver
from mrbot.ci.artifacts import read_artifact
from mrbot.ci.event import Ended, Event
from mrbot.ci.job import run_job
from mrbot.ci.poster import bot_bodies, post, with_done
from mrbot.ci.report import check_report
from mrbot.forges import Note
from mrbot.records import MrbotError
from mrbot.workspace import Workspace


def command_request(notes: list[Note], number: int, environ: Mapping[str, str]) -> Request:
    """The command a GitLab job runs. A webhook receiver names the note (MRBOT_COMMAND_NOTE), which is read back
    through the API with its author and date; otherwise the command is MRBOT_COMMAND, asked by whoever ran the job
    (GitLab's own GITLAB_USER_LOGIN). Never a name from a variable: whoever runs a job sets those, and could post as
    anyone and leave their own cooldown behind. `notes` are the MR's, as read."""
    job_user = environ.get('GITLAB_USER_LOGIN', '')
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
                       job_user, environ['CI_COMMIT_SHA'])
    if not job_user:
        raise MrbotError('GITLAB_USER_LOGIN is not set: a command job runs in a GitLab pipeline, started by someone')
    # its starter runs the pipeline they see: no date to hold the head to
    return Request(number, environ.get('MRBOT_COMMAND', ''), job_user, None, None, None, job_user,
                   environ['CI_COMMIT_SHA'])


def act(root: Path, environ: Mapping[str, str], out: Path | None) -> int:
    """Act on this merge request pipeline: post the report, or answer and run a command."""
    missing = [v for v in ('CI_PROJECT_PATH', 'CI_COMMIT_SHA', 'CI_MERGE_REQUEST_IID', 'CI_MERGE_REQUEST_DIFF_BASE_SHA')
               if not environ.get(v)]
    if missing:
        raise Ended(f"{', '.join(missing)} not set: mrbot action --forge gitlab runs in a merge request pipeline")
    number, sha = int(environ['CI_MERGE_REQUEST_IID']), environ['CI_COMMIT_SHA']
    event = Event('merge_request', {}, environ['CI_PROJECT_PATH'], environ.get('CI_PIPELINE_ID', ''),
                  environ.get('CI_PIPELINE_URL', ''), None, None)
    forge = ci_event.open_forge('gitlab', event.repository, environ)
    base = environ['CI_MERGE_REQUEST_DIFF_BASE_SHA']
    config = git.config_at(root, base)
    if not environ.get('MRBOT_COMMAND') and not environ.get('MRBOT_COMMAND_NOTE'):
        report = check_report(Workspace(root, config), base, sha,
                              environ.get('CI_MERGE_REQUEST_TITLE'), environ.get('CI_MERGE_REQUEST_DESCRIPTION', ''))
        print(f"mrbot action: posted {post(forge, event, {'pr': number, 'sha': sha, 'purpose': 'report', **report})}")
        return 0
    runner = environ.get('MRBOT_RUNNER', '')
    if runner not in config.runners:
        raise MrbotError(f"a command needs MRBOT_RUNNER, this job's class: one of {', '.join(config.runners)}")
    notes = forge.comments(number)
    request = command_request(notes, number, environ)
    given = answer(forge, request, config, load_specs(root, config), bot_bodies(notes),
                   datetime.datetime.now(datetime.timezone.utc), event.run_id, event.run_url, runner)
    accepted = deliver(forge, number, request.note, given)
    if not given.runners:
        return 0
    command = given.command
    jobs = {**environ, 'MRBOT_ARGS': json.dumps(command.args), 'MRBOT_SHA': sha, 'MRBOT_PR': str(number),
            'MRBOT_COMMAND': command.kind, 'MRBOT_USER': request.asker, 'GITHUB_RUN_ID': event.run_id}
    folder = out or root / '.mrbot' / 'action'
    code = run_job(root, config, jobs, folder, event.run_url)
    post(forge, event, read_artifact(folder))
    # the job is done where it was queued, as the poster marks it on GitHub
    forge.edit_comment(number, accepted, with_done(given.reply, event.run_id))
    return code
