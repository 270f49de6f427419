# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot action`: the bot's one entry point in CI, on GitHub Actions and in GitLab pipelines.

GitHub events: `pull_request` checks the PR's diff and produces the report; `issue_comment` parses and authorizes a
command and answers it; `workflow_run` posts what an unprivileged run left as an artifact, after checking that the
artifact belongs to that run. `mrbot action run` is the GPU job after checkout: it runs an authorized command on
exactly the authorized commit and leaves its result as an artifact. With `--artifact DIR` the first two write what
they would post into DIR instead (a fork PR's token cannot write). Whatever is not for the bot ends with one line
and exit 0.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mrbot import commands, git
from mrbot.bench import command as bench_command
from mrbot.bench.specs import load_specs
from mrbot.check import evaluate
from mrbot.config import Config, load_config, parse_config
from mrbot.forges import ANNOTATION_LEVELS, CONCLUSIONS, Annotation, Note, connect, fit_body, sticky_room, utc_timestamp
from mrbot.output import format_report, summary
from mrbot.records import CheckReport, MrbotError, TestRun
from mrbot.render import render
from mrbot.rules import all_rules
from mrbot.selection import select_change
from mrbot.testing import device_label, execute, shell_command, test_targets
from mrbot.workspace import Workspace

ARTIFACT = 'mrbot-artifact.json'
PULL_REQUEST_ACTIONS = ('opened', 'synchronize', 'reopened', 'edited', 'ready_for_review')
CHECK_NAME = 'mrbot check'
# A finding's severity as a check-run annotation level.
SEVERITY_LEVELS = {'error': 'failure', 'warning': 'warning', 'note': 'notice'}
_SHA = re.compile(r'[0-9a-f]{40}')
_PURPOSE = re.compile(r'(report|(bench|test)-[a-z0-9]+(-[a-z0-9]+)*)')
# What each triggering event may leave: a report from `mrbot PR`, results and notes from `mrbot command`.
KINDS_BY_EVENT = {'pull_request': ('report',), 'issue_comment': ('result', 'accepted')}


class Ended(Exception):
    """Nothing for the bot to do with this event; the message says why."""


@dataclass(frozen=True)
class Event:
    """What CI says happened, and where to write outputs; `payload` is the webhook payload (GitHub) or {} (GitLab)."""

    name: str
    payload: dict
    repository: str
    run_id: str
    run_url: str
    output: Path | None
    step_summary: Path | None


def _github_event(environ: Mapping[str, str]) -> Event:
    missing = [v for v in ('GITHUB_EVENT_NAME', 'GITHUB_EVENT_PATH', 'GITHUB_REPOSITORY') if not environ.get(v)]
    if missing:
        raise MrbotError(f"{', '.join(missing)} not set: mrbot action runs inside GitHub Actions (or set them by hand)")
    path = Path(environ['GITHUB_EVENT_PATH'])
    try:
        text = path.read_text(encoding='utf-8')
    except OSError as error:
        raise MrbotError(f'GITHUB_EVENT_PATH {path}: cannot read the webhook payload ({error.strerror})') from None
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        raise Ended(f'GITHUB_EVENT_PATH {path}: the payload is not a JSON object')
    server = environ.get('GITHUB_SERVER_URL', 'https://github.com')
    run_id = environ.get('GITHUB_RUN_ID', '')
    return Event(environ['GITHUB_EVENT_NAME'], payload, environ['GITHUB_REPOSITORY'], run_id,
                 f"{server}/{environ['GITHUB_REPOSITORY']}/actions/runs/{run_id}",
                 Path(environ['GITHUB_OUTPUT']) if environ.get('GITHUB_OUTPUT') else None,
                 Path(environ['GITHUB_STEP_SUMMARY']) if environ.get('GITHUB_STEP_SUMMARY') else None)


def _write_outputs(event: Event, values: dict[str, str]) -> None:
    if event.output is None:
        return
    with event.output.open('a', encoding='utf-8') as out:
        for key, value in values.items():
            out.write(f'{key}={value}\n')


def _write_summary(event: Event, text: str) -> None:
    if event.step_summary is not None:
        with event.step_summary.open('a', encoding='utf-8') as out:
            out.write(text.rstrip('\n') + '\n')


def _connect(kind: str, project: str, environ: Mapping[str, str]):
    return connect(kind, project, environ=environ)


def check_report(workspace: Workspace, base: str, head: str, title: str | None, body: str | None) -> dict:
    """`mrbot check` on base..head as the artifact of a report: comment body, check run and job summary.

    It runs none of the pull request's code, so its kernels are not compiled here (`mrbot compile` runs their tests):
    that belongs with the tests, in a job whose result the pull request's code can decide (docs/ci.md).
    """
    root = workspace.root
    base = git.merge_base(root, base, head)
    change = git.changeset(root, base, head, title, body, 'forge', 'forge', max_bytes=workspace.config.max_file_bytes)
    rules = all_rules()
    report: CheckReport = evaluate(change, workspace, rules)
    markdown = format_report(report, 'markdown', rules)
    annotations = [{'path': f.path, 'line': f.line, 'level': SEVERITY_LEVELS[f.severity],
                    'message': f.message + (f' Fix: {f.hint}' if f.hint else ''), 'title': f.rule}
                   for f in report.findings if f.path and f.line]
    errors = sum(f.severity == 'error' for f in report.findings)
    return {'body': markdown, 'errors': errors, 'findings': len(report.findings),
            'check': {'conclusion': 'failure' if errors else 'success', 'title': summary(report),
                      'summary': markdown, 'annotations': annotations}}


def _base_config(root: Path, base: str) -> Config:
    """The settings of the base commit: a PR cannot switch a rule off for itself by editing pyproject.toml."""
    spec = f'{base}:pyproject.toml'
    settings = git.read_blobs(root, [spec])[spec]
    return parse_config(settings.decode('utf-8', 'replace'), f'{base[:12]}:pyproject.toml') if settings else Config()


def _pull_request(event: Event, root: Path) -> dict:
    payload = event.payload
    if payload.get('action') not in PULL_REQUEST_ACTIONS:
        raise Ended(f"pull_request {payload.get('action')}: only {', '.join(PULL_REQUEST_ACTIONS)} are checked")
    pull = payload.get('pull_request')
    if not isinstance(pull, dict):
        raise Ended('the pull_request payload has no pull_request object')
    try:
        number, base, head = int(pull['number']), pull['base']['sha'], pull['head']['sha']
    except (KeyError, TypeError, ValueError):
        raise Ended('the pull_request payload lacks number, base.sha or head.sha') from None
    for sha in (base, head):
        try:
            git.resolve(root, sha)
        except MrbotError:
            raise MrbotError(f'commit {sha} is not in this checkout: check out with fetch-depth: 0') from None
    config = _base_config(root, base)
    if pull.get('draft') and not config.check_drafts:
        raise Ended(f'#{number} is a draft ([tool.mrbot] check-drafts = true checks drafts too)')
    report = check_report(Workspace(root, config), base, head, pull.get('title'), pull.get('body') or '')
    return {'schema': 1, 'kind': 'report', 'pr': number, 'sha': head, 'purpose': 'report', **report}


def _usage(user: str, error: commands.UsageError) -> str:
    return f'@{user} {error}.\n\n```\n{commands.USAGE}\n```'


def _refusal(command: commands.Command, decision: commands.Decision) -> str:
    return f'Not running `{command.line()}`: {decision.reason}.'


def _acceptance(user: str, command: commands.Command, runners: tuple[str, ...], sha: str, event: Event,
                now: datetime.datetime, note: int | None = None) -> str:
    """The accepted reply: what runs, where and at which commit, with the marker the cooldown and queue count (and,
    for a command read from a GitLab note, the note, which is run once)."""
    hidden = commands.marker('accepted', run=event.run_id, user=user, at=now.isoformat(timespec='seconds'), sha=sha,
                             command=command.kind, runners=list(runners), **({'note': note} if note is not None else {}))
    return (f"Accepted from @{user}: {command.describe()}, on {' and '.join(runners)} at `{sha[:10]}`; results come "
            f'back here. [The run]({event.run_url}).\n{hidden}')


def _reply(forge, number: int, comment_id: int, text: str, reaction: str) -> None:
    forge.post_comment(number, text)
    _react(forge, number, comment_id, reaction)


def _react(forge, number: int, comment_id: int, reaction: str) -> None:
    # a reaction is a courtesy: failing to add one must not lose what the reply and outputs carry
    try:
        forge.add_reaction(number, comment_id, reaction)
    except MrbotError as error:
        print(f'mrbot action: warning: no reaction: {error}', file=sys.stderr)


def _bot_bodies(notes: list[Note]) -> list[str]:
    """The bodies of the bot's comments among a PR's `notes`, where its markers live (see `defuse` for why they can be
    trusted)."""
    return [note.body for note in notes if note.by_bot]


def defuse(text: str) -> str:
    """Text from a PR (titles, findings, results a PR's code wrote) with every HTML comment opener made inert, so that
    nothing the bot posts on anyone's behalf can carry a marker that `authorize` or the poster would read."""
    return text.replace('<!--', '&lt;!--')


def _comment(event: Event, root: Path, config: Config, environ: Mapping[str, str], kind: str,
             folder: Path | None) -> dict[str, str]:
    """Parse and authorize the command in an issue comment; reply; return the step outputs. With `folder`, an
    accepted command also leaves there, per runner class, the note the poster posts if that job leaves no result."""
    payload = event.payload
    if payload.get('action') != 'created':
        raise Ended(f"issue_comment {payload.get('action')}: only new comments are read as commands")
    issue, comment = payload.get('issue'), payload.get('comment')
    if not isinstance(issue, dict) or not isinstance(comment, dict):
        raise Ended('the issue_comment payload lacks issue or comment')
    if not issue.get('pull_request'):
        raise Ended(f"#{issue.get('number')} is an issue, not a pull request")
    text = comment.get('body')
    if not commands.is_command(text):
        raise Ended('the comment is not a command')
    user = comment.get('user') or {}
    if user.get('type') == 'Bot':
        raise Ended(f"@{user.get('login')} is a bot; bots do not give commands")
    try:
        number, comment_id, login = int(issue['number']), int(comment['id']), str(user['login'])
    except (KeyError, TypeError, ValueError):
        raise Ended('the issue_comment payload lacks issue.number, comment.id or comment.user.login') from None
    outputs = {'authorized': 'false', 'command': '', 'sha': '', 'runner': '', 'labels': '[]', 'args': '{}',
               'matrix': '[]', 'pr': str(number)}
    forge = _connect(kind, event.repository, environ)
    specs = load_specs(root, config)
    try:
        command = commands.parse(text, specs, config)
    except commands.UsageError as error:
        _reply(forge, number, comment_id, _usage(login, error), 'confused')
        return outputs
    if command.kind == 'help':
        _reply(forge, number, comment_id, f'```\n{commands.USAGE}\n```', '+1')
        return {**outputs, 'authorized': 'true', 'command': 'help'}
    now = datetime.datetime.now(datetime.timezone.utc)
    decision = commands.authorize(login, str(comment.get('author_association', 'NONE')), forge.permission(login),
                                  _bot_bodies(forge.comments(number)), now, config, len(command.runners))
    pull = forge.get_pull(number)
    if decision.allowed and pull.state != 'open':
        decision = commands.Decision(False, f'#{number} is {pull.state}')
    if decision.allowed:
        decision = commands.head_moved(command, pull.head_sha, f'#{number}')
    if decision.allowed and not command.args.get('sha'):
        # unpinned, it runs the head as it is now: only if that is the head the commenter saw
        decision = commands.pushed_after(_timestamp(comment.get('created_at')), forge.head_pushed_at(pull),
                                         pull.head_sha, f'#{number}')
    if not decision.allowed:
        _reply(forge, number, comment_id, _refusal(command, decision), '-1')
        return outputs
    if command.kind == 'bench' and not command.args['base']:
        command = dataclasses.replace(command, args={**command.args, 'base': pull.base_branch})
    args = command.args
    try:
        # what the GPU job will parse again: refuse here what it would refuse there
        for runner in command.runners:
            commands.from_json(command.kind, args, runner, specs, config)
    except commands.UsageError as error:
        _reply(forge, number, comment_id, _usage(login, error), 'confused')
        return outputs
    forge.post_comment(number, _acceptance(login, command, command.runners, pull.head_sha, event, now))
    if folder is not None:
        for runner in command.runners:
            note = (f'### mrbot {command.kind} on {runner}\n\n**The job ended without leaving a result** (cancelled, '
                    f'timed out, or its runner failed before writing one); [the run]({event.run_url}). Comment '
                    f'`{command.line()}` again to retry.\n')
            _write_artifact(folder / f'accepted-{runner}', {
                'schema': 1, 'kind': 'accepted', 'pr': number, 'sha': pull.head_sha, 'run': event.run_id,
                'purpose': f'{command.kind}-{runner}', 'body': note, 'check': None})
    _react(forge, number, comment_id, 'eyes')
    matrix = [{'runner': runner, 'labels': config.runners[runner]} for runner in command.runners]
    return {**outputs, 'authorized': 'true', 'command': command.kind, 'sha': pull.head_sha,
            'runner': command.runners[0], 'labels': json.dumps(config.runners[command.runners[0]]),
            'args': json.dumps(args, sort_keys=True), 'matrix': json.dumps(matrix), 'pr': str(number)}


def _capability() -> str:
    import torch

    if not torch.cuda.is_available():
        return ''
    major, minor = torch.cuda.get_device_capability()
    return f'sm_{major}{minor}'


def _bench_result(workspace: Workspace, args: dict, base: str) -> tuple[dict, str]:
    """The paired bench record of a `/bench` command, and the command line that reproduces it (rounds aside)."""
    argv = ['--op', *args['ops']] if args['ops'] else ['--from-diff']
    argv += ['--modes', *args['modes']] if args['modes'] else []
    argv += ['--shapes', *args['shapes']] if args['shapes'] else []
    record = bench_command.measure(bench_command.arguments([*argv, '--base', base, '--rounds', str(args['rounds'])]),
                                   workspace)
    return record, ' '.join(['mrbot bench', *argv, '--base', base[:12]])


def _test_result(root: Path, config: Config, args: dict, base: str) -> dict:
    if args['tests']:
        targets = list(args['tests'])
        selection = None
    else:
        workspace = Workspace(root, config)
        selection = select_change(workspace, git.changeset(root, base, 'HEAD', max_bytes=config.max_file_bytes))
        targets, _ = test_targets(selection, workspace)
    device = device_label()
    files = execute(targets, root, 1, 3600.0, 'off', interpret=False,
                    pytest_args=('-k', args['k']) if args['k'] else ())
    run = TestRun(device, tuple(files), selection, False)
    return {**run.to_json(), 'commands': {f.file: shell_command(f, device) for f in files}}


def run_job(root: Path, config: Config, environ: Mapping[str, str], out: Path, run_url: str | None = None) -> int:
    """Run the authorized command of MRBOT_* on this checkout and leave its result comment in `out`; `run_url` links
    the run (default: the GitHub Actions run of the environment)."""
    missing = [v for v in ('MRBOT_COMMAND', 'MRBOT_ARGS', 'MRBOT_SHA', 'MRBOT_RUNNER', 'MRBOT_PR') if not environ.get(v)]
    if missing:
        raise MrbotError(f"{', '.join(missing)} not set: mrbot action run takes the outputs of the authorize step")
    runner, sha = environ['MRBOT_RUNNER'], environ['MRBOT_SHA']
    if runner not in config.runners:
        raise MrbotError(f"MRBOT_RUNNER={runner}: unknown runner class; expected one of {', '.join(config.runners)}")
    try:
        command = commands.from_json(environ['MRBOT_COMMAND'], json.loads(environ['MRBOT_ARGS']), runner,
                                     load_specs(root, config), config)
        pr = int(environ['MRBOT_PR'])
    except (ValueError, commands.UsageError) as error:
        raise MrbotError(f'MRBOT_COMMAND/MRBOT_ARGS/MRBOT_PR: not an authorized command ({error})') from None
    server = environ.get('GITHUB_SERVER_URL', 'https://github.com')
    result = {'kind': command.kind, 'runner': runner, 'pr': pr, 'sha': sha, 'base': '', 'line': command.line(),
              'requested_by': environ.get('MRBOT_USER', 'a maintainer'), 'error': '', 'bench': None, 'tests': None,
              'bench_command': '',
              'run_url': run_url or f"{server}/{environ.get('GITHUB_REPOSITORY', '')}/actions/runs/"
                                    f"{environ.get('GITHUB_RUN_ID', '')}"}
    code = 0
    try:
        head = git.resolve(root, 'HEAD')
        if head != sha:
            raise MrbotError(f'the checkout is at {head[:12]}, but the command was authorized for {sha[:12]}')
        wanted = commands.capabilities(config.runners[runner])
        have = _capability()
        if wanted and have not in wanted:
            raise MrbotError(f"this runner has {have or 'no GPU'}, but class {runner} needs {' or '.join(sorted(wanted))}: "
                             "fix the runner's labels")
        base_ref = command.args.get('base')
        # the merge base with the first of these that the checkout has (fetch-depth: 0 gives it all)
        result['base'] = base = git.default_base(root, [f'origin/{base_ref}', base_ref] if base_ref
                                                 else config.target_branches)
        if command.kind == 'bench':
            result['bench'], result['bench_command'] = _bench_result(Workspace(root, config), command.args, base)
        else:
            result['tests'] = _test_result(root, config, command.args, base)
    except MrbotError as error:
        result['error'], code = str(error), 1
    body = render('command_result.md.j2', root / config.templates if config.templates else None, r=result)
    _write_artifact(out, {'schema': 1, 'kind': 'result', 'pr': pr, 'sha': sha, 'run': environ.get('GITHUB_RUN_ID', ''),
                          'purpose': f'{command.kind}-{runner}', 'body': body, 'check': None})
    print(body, end='')
    if result['error']:
        print(f"mrbot action run: error: {result['error']}", file=sys.stderr)
    return code


def _write_artifact(folder: Path, artifact: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ARTIFACT).write_text(json.dumps(artifact, indent=2) + '\n', encoding='utf-8')


def read_artifact(folder: Path) -> dict:
    """The artifact an unprivileged run left, checked for shape; a malformed one is an error, not a post."""
    path = folder / ARTIFACT
    try:
        artifact = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError) as error:
        raise MrbotError(f'{path}: expected the JSON artifact of an mrbot run ({error})') from None
    problems = []
    if not isinstance(artifact, dict) or artifact.get('schema') != 1:
        raise MrbotError(f'{path}: expected an mrbot artifact with schema 1')
    if artifact.get('kind') not in ('report', 'result', 'accepted'):
        problems.append('kind must be report, result or accepted')
    if not isinstance(artifact.get('pr'), int) or isinstance(artifact.get('pr'), bool) or artifact['pr'] <= 0:
        problems.append('pr must be a positive number')
    if not isinstance(artifact.get('sha'), str) or not _SHA.fullmatch(artifact['sha']):
        problems.append('sha must be 40 hexadecimal digits')
    if not isinstance(artifact.get('purpose'), str) or not _PURPOSE.fullmatch(artifact['purpose']):
        problems.append('purpose must be report, bench-CLASS or test-CLASS')
    if not isinstance(artifact.get('body'), str):
        problems.append('body must be text')
    if (artifact.get('kind') == 'report') != (artifact.get('purpose') == 'report'):
        problems.append('a report has purpose report, and only a report does')
    check = artifact.get('check')
    if check is not None and not _valid_check(check):
        problems.append(f"check must have a conclusion ({', '.join(CONCLUSIONS)}), title, summary and annotations "
                        f"each with path, line and a level of {', '.join(ANNOTATION_LEVELS)}")
    if problems:
        raise MrbotError(f"{path}: not a valid mrbot artifact: {'; '.join(problems)}")
    return artifact


def _valid_check(check: object) -> bool:
    if not isinstance(check, dict) or not all(isinstance(check.get(key), str) for key in ('title', 'summary')):
        return False
    annotations = check.get('annotations')
    return check.get('conclusion') in CONCLUSIONS and isinstance(annotations, list) and all(
        isinstance(a, dict) and isinstance(a.get('path'), str) and isinstance(a.get('line'), int)
        and a.get('level') in ANNOTATION_LEVELS and isinstance(a.get('message'), str) for a in annotations)


def post(forge, event: Event, artifact: dict) -> str:
    """Put an artifact on the forge: the sticky comment of its purpose (its body defused, cut at a line to fit the
    forge with a pointer to this run where it is longer), its check run, and the whole body in the job summary (on
    GitLab, which has none, in the job's log)."""
    body = defuse(artifact['body']).rstrip('\n') + '\n'
    fitted = fit_body(body, sticky_room(artifact['purpose'], forge.body_limit), event.run_url)
    comment = forge.upsert_comment(artifact['pr'], artifact['purpose'], fitted)
    check = artifact.get('check')
    if check:
        annotations = [Annotation(a['path'], int(a['line']), a['level'], a['message'], a.get('title', ''))
                       for a in check['annotations']]
        # the check's name is ours, whatever the artifact says: a name is what branch protection requires
        forge.publish_check(artifact['sha'], CHECK_NAME, check['conclusion'], check['title'], check['summary'],
                            annotations)
    _write_summary(event, body)
    if fitted != body and event.step_summary is None:
        print(body, end='')
    return comment.url


def _mark_done(forge, number: int, run: str, notes: list[Note]) -> None:
    """Add the `done` marker of `run` to the bot's accepted reply among `notes` that queued it: one record per job,
    which no later comment replaces (a result comment is sticky per command and runner class, so a marker there lasted
    only until the next result, and the jobs it had finished counted as queued again)."""
    for note in notes:
        accepted = commands.markers([note.body], 'accepted') if note.by_bot else []
        if any(str(m.get('run')) == run for m in accepted) and not commands.markers([note.body], 'done'):
            forge.edit_comment(number, note.id, _with_done(note.body, run))


def _with_done(body: str, run: str) -> str:
    return f"{body.rstrip(chr(10))}\n{commands.marker('done', run=run)}\n"


def _validate(forge, event: Event, artifact: dict, accepted_on: Callable[[int], list[dict]]) -> None:
    """Refuse an artifact that does not belong to the run that triggered this one (a forged PR number or sha);
    `accepted_on(pr)` gives the accepted markers of the bot's comments on a PR."""
    run = event.payload.get('workflow_run')
    if not isinstance(run, dict) or not run.get('id') or not run.get('head_sha'):
        raise Ended('the workflow_run payload lacks workflow_run.id or head_sha')
    pr, sha = artifact['pr'], artifact['sha']
    allowed = KINDS_BY_EVENT.get(run.get('event'), ())
    if artifact['kind'] not in allowed:
        raise MrbotError(f"artifact rejected: a {run.get('event')} run may not leave a {artifact['kind']}")
    if artifact['kind'] != 'report' and artifact.get('check'):
        raise MrbotError('artifact rejected: only the report of a pull_request run may publish a check run')
    if artifact['kind'] == 'report':
        listed = [p.get('number') for p in run.get('pull_requests') or [] if isinstance(p, dict)]
        if sha != run['head_sha'] or (listed and pr not in listed):
            raise MrbotError(f"artifact rejected: it is for #{pr} at {sha[:12]}, but the run checked {run['head_sha'][:12]}"
                             + (f" of #{', #'.join(map(str, listed))}" if listed else ''))
        pull = forge.get_pull(pr)
        if pull.head_sha != sha:
            raise MrbotError(f'artifact rejected: #{pr} has head {pull.head_sha[:12]}, not {sha[:12]}')
        head_repo = (run.get('head_repository') or {}).get('full_name')
        if (head_repo and head_repo != pull.head_repo) or (run.get('head_branch') and run['head_branch'] != pull.head_branch):
            raise MrbotError(f"artifact rejected: #{pr} comes from {pull.head_repo}:{pull.head_branch}, but the run checked "
                             f"{head_repo}:{run.get('head_branch')}")
        # a check run belongs to the commit, and shows on every pull request whose head it is
        others = [number for number in forge.pulls_with_head(sha) if number != pr]
        if others:
            raise MrbotError(f"artifact rejected: {sha[:12]} is also the head of #{', #'.join(map(str, others))}, where "
                             f"#{pr}'s report would show as theirs")
        return
    if str(artifact.get('run')) != str(run['id']):
        raise MrbotError(f"artifact rejected: it names run {artifact.get('run')}, but it came from run {run['id']}")
    kind, runner = artifact['purpose'].split('-', 1)
    if not any(str(m.get('run')) == str(run['id']) and m.get('sha') == sha and m.get('command') == kind
               and runner in m.get('runners', []) for m in accepted_on(pr)):
        raise MrbotError(f'artifact rejected: no command accepted on #{pr} for run {run["id"]}, {kind} on {runner} '
                         f'at {sha[:12]}')


def _workflow_run(event: Event, folder: Path | None, environ: Mapping[str, str], kind: str) -> list[str]:
    """Post each artifact in `folder` (itself, or in subfolders as download-artifact leaves several) that belongs to
    the triggering run, and for an accepted job that left no result, its note; an error names the ones refused, after
    the others are posted."""
    if folder is None:
        raise MrbotError("a workflow_run event posts an artifact: pass --artifact DIR with the triggering run's files")
    paths = [folder / ARTIFACT] if (folder / ARTIFACT).exists() else sorted(folder.rglob(ARTIFACT))
    if not paths:
        raise Ended(f'{folder} holds no {ARTIFACT}: the triggering run left nothing to post')
    forge = _connect(kind, event.repository, environ)

    # the results of one run share a PR: its comments are read once
    @functools.cache
    def notes_on(pr: int) -> list[Note]:
        return forge.comments(pr)

    def accepted_on(pr: int) -> list[dict]:
        return commands.markers(_bot_bodies(notes_on(pr)), 'accepted')

    valid, refused = [], []
    for path in paths:
        try:
            artifact = read_artifact(path.parent)
            _validate(forge, event, artifact, accepted_on)
        except MrbotError as error:
            refused.append(str(error))
            continue
        valid.append(artifact)
    # one artifact per kind and purpose: more would each cost a comment edit (and a report, a check run) on the token
    counts = collections.Counter((a['kind'], a['purpose']) for a in valid)
    refused += [f"artifact rejected: the run left {count} {kind} artifacts for '{purpose}', where one is expected"
                for (kind, purpose), count in counts.items() if count > 1]
    valid = [a for a in valid if counts[(a['kind'], a['purpose'])] == 1]
    for index, artifact in enumerate(valid):
        # the report comes from the PR's own workflow run, which runs the workflow files as the PR has them
        if artifact['check'] and any(path.startswith('.github/') for path in forge.changed_paths(artifact['pr'])):
            print(f"mrbot action: no check run for #{artifact['pr']}: it changes files under .github/, where the "
                  'workflow that wrote its report lives', file=sys.stderr)
            valid[index] = {**artifact, 'check': None}
    results = {a['purpose'] for a in valid if a['kind'] == 'result'}
    posted = [post(forge, event, artifact) for artifact in valid
              if not (artifact['kind'] == 'accepted' and artifact['purpose'] in results)]
    for pr in sorted({artifact['pr'] for artifact in valid if artifact['kind'] != 'report'}):
        # the accepted replies are as they were read for the checks above: posting results changes none of them
        _mark_done(forge, pr, str(event.payload['workflow_run']['id']), notes_on(pr))
    if refused:
        raise MrbotError('; '.join(refused) + (f" (posted: {', '.join(posted)})" if posted else ''))
    return posted


def _timestamp(value: object) -> str:
    """A payload's time as `utc_timestamp` writes it; one that is not a time reads as the earliest possible, so that
    any push counts as after it."""
    try:
        return utc_timestamp(value) if isinstance(value, str) else ''
    except ValueError:
        return ''


def _gitlab_command(notes: list[Note], number: int, environ: Mapping[str, str]) -> tuple[str, str, Note | None]:
    """The command a GitLab job runs, who asked for it, and the note it came from. A webhook receiver names the note
    (MRBOT_COMMAND_NOTE), which is read back through the API with its author; otherwise the command is MRBOT_COMMAND,
    asked by whoever ran the job (GitLab's own GITLAB_USER_LOGIN). Never a name from a variable: whoever runs a job
    sets those, and could post as anyone and leave their own cooldown behind. `notes` are the MR's, as read."""
    named = environ.get('MRBOT_COMMAND_NOTE', '')
    if named:
        if not named.isdigit() or len(named) > 20:
            raise MrbotError(f'MRBOT_COMMAND_NOTE {named[:40]!r}: expected the id of a note on !{number}')
        note = next((n for n in notes if n.id == int(named)), None)
        if note is None:
            raise MrbotError(f'MRBOT_COMMAND_NOTE {named}: !{number} has no such note')
        if note.by_bot:
            raise Ended(f'note {named} is the bot\'s own; it gives no commands')
        return note.body.split('\n', 1)[0].strip(), note.author, note
    user = environ.get('GITLAB_USER_LOGIN', '')
    if not user:
        raise MrbotError('GITLAB_USER_LOGIN is not set: a command job runs in a GitLab pipeline, started by someone')
    return environ.get('MRBOT_COMMAND', ''), user, None


def _gitlab(root: Path, environ: Mapping[str, str], out: Path | None) -> int:
    missing = [v for v in ('CI_PROJECT_PATH', 'CI_COMMIT_SHA', 'CI_MERGE_REQUEST_IID', 'CI_MERGE_REQUEST_DIFF_BASE_SHA')
               if not environ.get(v)]
    if missing:
        raise Ended(f"{', '.join(missing)} not set: mrbot action --forge gitlab runs in a merge request pipeline")
    number, sha = int(environ['CI_MERGE_REQUEST_IID']), environ['CI_COMMIT_SHA']
    event = Event('merge_request', {}, environ['CI_PROJECT_PATH'], environ.get('CI_PIPELINE_ID', ''),
                  environ.get('CI_PIPELINE_URL', ''), None, None)
    forge = _connect('gitlab', event.repository, environ)
    base = environ['CI_MERGE_REQUEST_DIFF_BASE_SHA']
    config = _base_config(root, base)
    if not environ.get('MRBOT_COMMAND') and not environ.get('MRBOT_COMMAND_NOTE'):
        report = check_report(Workspace(root, config), base, sha,
                              environ.get('CI_MERGE_REQUEST_TITLE'), environ.get('CI_MERGE_REQUEST_DESCRIPTION', ''))
        print(f"mrbot action: posted {post(forge, event, {'pr': number, 'sha': sha, 'purpose': 'report', **report})}")
        return 0
    runner = environ.get('MRBOT_RUNNER', '')
    if runner not in config.runners:
        raise MrbotError(f"a command needs MRBOT_RUNNER, this job's class: one of {', '.join(config.runners)}")
    notes = forge.comments(number)
    line, user, note = _gitlab_command(notes, number, environ)
    try:
        command = commands.parse(line, load_specs(root, config), config)
    except commands.UsageError as error:
        forge.post_comment(number, _usage(user, error))
        return 0
    if command.kind == 'help' or runner not in command.runners:
        raise Ended(f'this job runs on {runner}; the command is for {", ".join(command.runners) or "nobody"}')
    # whoever asked, and whoever ran the job (a person in the UI, or the account of a webhook receiver), must both be allowed
    now, bot_bodies = datetime.datetime.now(datetime.timezone.utc), _bot_bodies(notes)
    decision = commands.Decision(True)
    if note is not None and any(m.get('note') == note.id for m in commands.markers(bot_bodies, 'accepted')):
        decision = commands.Decision(False, f'note {note.id} has been run already; a new note asks again')
    for login in dict.fromkeys(filter(None, (user, environ.get('GITLAB_USER_LOGIN')))):
        if not decision.allowed:
            break
        permission = forge.permission(login)
        decision = commands.authorize(login, 'MEMBER' if permission != 'none' else 'NONE', permission, bot_bodies, now,
                                      config)
    if decision.allowed:
        decision = commands.head_moved(command, sha, f'!{number}')
    if decision.allowed and note is not None and not command.args.get('sha'):
        # a receiver plays the job in the pipeline it finds: its commit must be one the note's author could have seen
        pull = dataclasses.replace(forge.get_pull(number), head_sha=sha)
        decision = commands.pushed_after(note.created_at, forge.head_pushed_at(pull), sha, f'!{number}')
    if not decision.allowed:
        forge.post_comment(number, _refusal(command, decision))
        return 0
    # the same markers as on GitHub, so that the cooldown and the queue hold across pipelines
    acceptance = _acceptance(user, command, (runner,), sha, event, now, note.id if note else None)
    accepted = forge.post_comment(number, acceptance)
    jobs = {**environ, 'MRBOT_ARGS': json.dumps(command.args), 'MRBOT_SHA': sha, 'MRBOT_PR': str(number),
            'MRBOT_COMMAND': command.kind, 'MRBOT_USER': user, 'GITHUB_RUN_ID': event.run_id}
    folder = out or root / '.mrbot' / 'action'
    code = run_job(root, config, jobs, folder, event.run_url)
    post(forge, event, read_artifact(folder))
    # the job is done where it was queued, as the poster marks it on GitHub
    forge.edit_comment(number, accepted.id, _with_done(acceptance, event.run_id))
    return code


def run(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> int:
    root = git.repo_root(Path.cwd())
    folder = Path(args.artifact) if args.artifact else None
    try:
        if args.step == 'run':
            if not args.out:
                raise MrbotError('mrbot action run needs --out DIR, where it leaves the result for the poster')
            # the settings of the PR's merge base: a PR's own new settings are not this bot's to read yet
            return run_job(root, _base_config(root, git.default_base(root, Config().target_branches)), environ,
                           Path(args.out))
        if args.forge == 'gitlab':
            return _gitlab(root, environ, folder)
        event = _github_event(environ)
        if event.name == 'pull_request':
            artifact = _pull_request(event, root)
            _write_outputs(event, {'pr': str(artifact['pr']), 'errors': str(artifact['errors']),
                                   'findings': str(artifact['findings'])})
            if folder is not None:
                _write_artifact(folder, artifact)
                print(f"mrbot action: report for #{artifact['pr']} written to {folder / ARTIFACT}")
            else:
                forge = _connect('github', event.repository, environ)
                print(f'mrbot action: posted {post(forge, event, artifact)}')
        elif event.name == 'issue_comment':
            # the authorize job runs in a checkout of the default branch, whose settings are the repository's
            outputs = _comment(event, root, load_config(root), environ, 'github', folder)
            _write_outputs(event, outputs)
            print(f"mrbot action: command {outputs['command'] or 'refused'}"
                  f"{' authorized' if outputs['authorized'] == 'true' else ''} on #{outputs['pr']}")
        elif event.name == 'workflow_run':
            print(f"mrbot action: posted {', '.join(_workflow_run(event, folder, environ, 'github'))}")
        else:
            raise Ended(f'event {event.name}: mrbot action handles pull_request, issue_comment and workflow_run')
    except Ended as reason:
        print(f'mrbot action: nothing to do: {reason}')
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('step', nargs='?', choices=['run'],
                        help="'run': the GPU job after checkout, running the command the MRBOT_* variables describe")
    parser.add_argument('--forge', choices=['github', 'gitlab'], default='github',
                        help='where the pipeline runs (default: github; gitlab reads its predefined CI variables)')
    parser.add_argument('--artifact', metavar='DIR',
                        help='write what would be posted into DIR (fork PRs), or post what DIR holds (workflow_run)')
    parser.add_argument('--out', metavar='DIR', help='with run: where the result for the poster goes')
