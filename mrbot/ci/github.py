# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""GitHub Actions: the webhook event a workflow runs for, read from its variables and payload, and acted on.

`pull_request` checks the PR's diff and produces the report; `issue_comment` answers a command; `workflow_run` posts
what an unprivileged run left as an artifact, after checking that the artifact belongs to that run. With an artifact
folder the first two write what they would post there instead (a fork PR's token cannot write).
"""

from __future__ import annotations

import datetime
import itertools
import json
from collections.abc import Mapping
from pathlib import Path

from mrbot import git
from mrbot.ci import event as ci_event
from mrbot.ci import grammar
from mrbot.ci.answer import Answer, Request, answer, deliver, settle
from mrbot.ci.artifacts import ARTIFACT, write_artifact
from mrbot.ci.event import Ended, Event, payload_time, writable, write_outputs
from mrbot.ci.poster import bot_bodies, post, post_run
from mrbot.config import Config, load_config
from mrbot.records import MrbotError
from mrbot.records.reading import JsonObject
from mrbot.repo.ops import load_specs
from mrbot.repo.workspace import Workspace

PULL_REQUEST_ACTIONS = ('opened', 'synchronize', 'reopened', 'edited', 'ready_for_review')
# The repository secret that signs the bot's markers: every workflow's token comments as github-actions[bot], so the
# account alone does not tell the bot's comments from those of a workflow that echoes PR text.
SIGNING_KEY = 'MRBOT_SIGNING_KEY'
HISTORY_ARTIFACT = 'mrbot-history'
# The poster's finished runs looked through for the history: every one carries it on, so the newest holds it unless
# uploads failed in between.
HISTORY_RUNS = 20


def github_event(environ: Mapping[str, str]) -> Event:
    missing = [v for v in ('GITHUB_EVENT_NAME', 'GITHUB_EVENT_PATH', 'GITHUB_REPOSITORY') if not environ.get(v)]
    if missing:
        raise MrbotError(f"{', '.join(missing)} not set: mrbot action runs inside GitHub Actions (or set them by hand)")
    path = Path(environ['GITHUB_EVENT_PATH'])
    try:
        text = path.read_text(encoding='utf-8')
    except OSError as error:
        raise MrbotError(f'GITHUB_EVENT_PATH {path}: cannot read the webhook payload ({error.strerror})') from None
    payload = JsonObject.parse(text, f'GITHUB_EVENT_PATH {path}', 'a webhook payload').data
    server = environ.get('GITHUB_SERVER_URL', 'https://github.com')
    run_id = environ.get('GITHUB_RUN_ID', '')
    key = environ.get(SIGNING_KEY, '')
    return Event(environ['GITHUB_EVENT_NAME'], payload, environ['GITHUB_REPOSITORY'], run_id,
                 f"{server}/{environ['GITHUB_REPOSITORY']}/actions/runs/{run_id}",
                 writable('GITHUB_OUTPUT', environ.get('GITHUB_OUTPUT')),
                 writable('GITHUB_STEP_SUMMARY', environ.get('GITHUB_STEP_SUMMARY')), key.encode() or None)


def pull_request_report(event: Event, root: Path) -> dict:
    payload = event.payload
    if payload.get('action') not in PULL_REQUEST_ACTIONS:
        raise Ended(f"pull_request {payload.get('action')}: only {', '.join(PULL_REQUEST_ACTIONS)} are checked")
    pull = event.fields().object('pull_request')
    number, title, body = pull.integer('number'), pull.text('title'), pull.optional_text('body') or ''
    base, head = pull.object('base').text('sha'), pull.object('head').text('sha')
    base_branch = pull.object('base').text('ref')
    for sha in (base, head):
        try:
            git.resolve(root, sha)
        except MrbotError:
            raise MrbotError(f'commit {sha} is not in this checkout: check out with fetch-depth: 0') from None
    config = git.config_at(root, base)
    if pull.flag('draft', False) and not config.check_drafts:
        raise Ended(f'#{number} is a draft ([tool.mrbot] check-drafts = true checks drafts too)')
    # the checker and its renderer load only here: the jobs holding a token install .ci/token-jobs.txt alone
    from mrbot.ci.report import check_report

    report = check_report(Workspace(root, config), base, head, title, body)
    # what the report was graded with besides the commit: a later event's run grades the PR as it is by then
    graded = {'title': title, 'body': body, 'base': base_branch}
    return {'schema': 1, 'kind': 'report', 'pr': number, 'sha': head, 'purpose': 'report', 'graded': graded, **report}


def comment_command(event: Event, root: Path, config: Config, environ: Mapping[str, str],
                    folder: Path | None) -> dict[str, str]:
    """Answer the command in an issue comment; return the step outputs. With `folder`, an accepted command also leaves
    there, per runner class, the note the poster posts if that job leaves no result."""
    payload = event.payload
    if payload.get('action') != 'created':
        raise Ended(f"issue_comment {payload.get('action')}: only new comments are read as commands")
    issue, comment = event.fields().object('issue'), event.fields().object('comment')
    number = issue.integer('number')
    if not issue.optional_mapping('pull_request'):
        raise Ended(f'#{number} is an issue, not a pull request')
    text = comment.optional_text('body')
    if not grammar.is_command(text):
        raise Ended('the comment is not a command')
    user = comment.object('user')
    login, comment_id = user.text('login'), comment.integer('id')
    if user.data.get('type') == 'Bot':
        raise Ended(f'@{login} is a bot; bots do not give commands')
    # a re-run keeps the run id that the first attempt's done marker names: its jobs would count in no queue
    if environ.get('GITHUB_RUN_ATTEMPT', '1') != '1':
        raise Ended(f"attempt {environ['GITHUB_RUN_ATTEMPT'][:12]!r} of a command's run: a re-run runs nothing, a new "
                    'comment asks again')
    outputs = {'authorized': 'false', 'command': '', 'sha': '', 'runner': '', 'labels': '[]', 'args': '{}',
               'matrix': '[]', 'pr': str(number)}
    forge = ci_event.open_forge('github', event.repository, environ)
    seal = event.seal(forge.name, number)
    if seal is None:
        deliver(forge, number, comment_id, Answer(f'Not running commands here yet: the repository secret {SIGNING_KEY} '
                                                  'that signs what mrbot keeps in its replies is not set (docs/ci.md, '
                                                  '"The signing key").', '-1'))
        return outputs
    request = Request(number, text, login, str(comment.data.get('author_association', 'NONE')),
                      payload_time(comment.data.get('created_at')))
    now = datetime.datetime.now(datetime.timezone.utc)
    given = answer(forge, request, config, load_specs(root, config), bot_bodies(forge.comments(number)), now,
                   event.run_id, event.run_url, seal=seal)
    given = settle(forge, request, given, deliver(forge, number, comment_id, given), config, now, seal)
    command = given.command
    if command is None:
        return outputs
    if not given.runners:
        return {**outputs, 'authorized': 'true', 'command': command.kind}
    if folder is not None:
        for runner in given.runners:
            note = (f'### mrbot {command.kind} on {runner}\n\n**The job ended without leaving a result** (cancelled, '
                    f'timed out, or its runner failed before writing one); [the run]({event.run_url}). Comment '
                    f'`{command.line()}` again to retry.\n')
            write_artifact(folder / f'accepted-{runner}', {
                'schema': 1, 'kind': 'accepted', 'pr': number, 'sha': given.sha, 'run': event.run_id,
                'purpose': f'{command.kind}-{runner}', 'body': note, 'check': None})
    matrix = [{'runner': runner, 'labels': config.runners[runner]} for runner in given.runners]
    return {**outputs, 'authorized': 'true', 'command': command.kind, 'sha': given.sha,
            'runner': given.runners[0], 'labels': json.dumps(config.runners[given.runners[0]]),
            'args': json.dumps(command.args, sort_keys=True), 'matrix': json.dumps(matrix), 'pr': str(number)}


def find_history(environ: Mapping[str, str]) -> None:
    """Write the step output `run`: the poster's own finished run holding the newest benchmark history, or '' where
    none of the last HISTORY_RUNS holds one (the history then starts over).

    The runs are this workflow's own (GITHUB_WORKFLOW_REF names its file) started by workflow_run, which only the
    default branch's file is, and finished in success or failure, which only a command's own run leads to: no pull
    request can start such a run, nor upload into one. Each carries the history on, so the newest holds it.
    """
    event = github_event(environ)
    reference = environ.get('GITHUB_WORKFLOW_REF', '')
    workflow = reference.split('@', 1)[0].rpartition('/.github/workflows/')[2]
    if not workflow or '/' in workflow:
        raise MrbotError(f'GITHUB_WORKFLOW_REF {reference[:80]!r}: expected OWNER/NAME/.github/workflows/FILE@REF, '
                         'which GitHub sets for the running workflow')
    forge = ci_event.open_forge('github', event.repository, environ)
    finished = sorted([*itertools.islice(forge.workflow_runs(workflow, 'workflow_run', 'success'), HISTORY_RUNS),
                       *itertools.islice(forge.workflow_runs(workflow, 'workflow_run', 'failure'), HISTORY_RUNS)],
                      key=lambda run: run.created_at, reverse=True)[:HISTORY_RUNS]
    holder = next((run.id for run in finished if HISTORY_ARTIFACT in forge.artifact_names(run.id)), None)
    write_outputs(event, {'run': str(holder or '')})
    print(f'mrbot action: benchmark history in run {holder}' if holder else
          f'mrbot action: no benchmark history in the last {len(finished)} finished runs of {workflow}: it starts over')


def act(root: Path, environ: Mapping[str, str], folder: Path | None) -> None:
    """Act on the event of this GitHub Actions run."""
    event = github_event(environ)
    if event.name == 'pull_request':
        artifact = pull_request_report(event, root)
        write_outputs(event, {'pr': str(artifact['pr']), 'errors': str(artifact['errors']),
                              'findings': str(artifact['findings'])})
        if folder is not None:
            write_artifact(folder, artifact)
            print(f"mrbot action: report for #{artifact['pr']} written to {folder / ARTIFACT}")
        else:
            forge = ci_event.open_forge('github', event.repository, environ)
            print(f'mrbot action: posted {post(forge, event, artifact)}')
    elif event.name == 'issue_comment':
        # the authorize job runs in a checkout of the default branch, whose settings are the repository's
        outputs = comment_command(event, root, load_config(root), environ, folder)
        write_outputs(event, outputs)
        print(f"mrbot action: command {outputs['command'] or 'refused'}"
              f"{' authorized' if outputs['authorized'] == 'true' else ''} on #{outputs['pr']}")
    elif event.name == 'workflow_run':
        posted = post_run(lambda: ci_event.open_forge('github', event.repository, environ), event, folder)
        print(f"mrbot action: posted {', '.join(posted)}")
    else:
        raise Ended(f'event {event.name}: mrbot action handles pull_request, issue_comment and workflow_run')
