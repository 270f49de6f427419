# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What an unprivileged run leaves for the poster, and the checks that it is well formed and belongs to its run."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from mrbot import git
from mrbot.forges import ANNOTATION_LEVELS, CONCLUSIONS, Forge, PullRequest
from mrbot.records import MrbotError
from mrbot.records.bench import BENCH_MODES

ARTIFACT = 'mrbot-artifact.json'
# What each triggering event may leave: a report from `mrbot PR`, results and notes from `mrbot command`.
KINDS_BY_EVENT = {'pull_request': ('report',), 'issue_comment': ('result', 'accepted')}
# Well above a body the largest forge limit lets through (GitLab's 1,000,000 characters) with its check's annotations.
MAX_ARTIFACT_BYTES = 8_000_000
# Artifacts one run may leave: a command leaves a result or an accepted note for each runner class it ran on.
MAX_ARTIFACTS = 16
# The base medians a bench result may carry into the poster's history: well above the rows of any one /bench.
MAX_TIMINGS = 500
_SHA = re.compile(git.COMMIT_ID)
_PURPOSE = re.compile(r'(report|(bench|test)-[a-z0-9]+(-[a-z0-9]+)*)')
_NAME = re.compile(r'[A-Za-z0-9_.-]{1,80}')
_RUN = re.compile(r'[0-9]{1,20}')


class Superseded(Exception):
    """An artifact that belongs to its run but is no longer current (a report on a commit its PR has moved on from):
    nothing to post, and nothing wrong."""


def write_artifact(folder: Path, artifact: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ARTIFACT).write_text(json.dumps(artifact, indent=2) + '\n', encoding='utf-8')


def read_artifact(folder: Path) -> dict:
    """The artifact an unprivileged run left, checked for shape; a malformed one is an error, not a post."""
    path = folder / ARTIFACT
    try:
        size = path.stat().st_size
        if size > MAX_ARTIFACT_BYTES:
            raise MrbotError(f'{path}: {size} bytes; expected the JSON artifact of an mrbot run, at most '
                             f'{MAX_ARTIFACT_BYTES} bytes')
        artifact = json.loads(path.read_text(encoding='utf-8'))
    # deep nesting exhausts the parser's recursion: the file is as malformed as any other
    except (OSError, ValueError, RecursionError) as error:
        raise MrbotError(f'{path}: expected the JSON artifact of an mrbot run ({type(error).__name__})') from None
    problems = []
    if not isinstance(artifact, dict) or artifact.get('schema') != 1:
        raise MrbotError(f'{path}: expected an mrbot artifact with schema 1')
    if artifact.get('kind') not in ('report', 'result', 'accepted'):
        problems.append('kind must be report, result or accepted')
    if not isinstance(artifact.get('pr'), int) or isinstance(artifact.get('pr'), bool) or artifact['pr'] <= 0:
        problems.append('pr must be a positive number')
    if not isinstance(artifact.get('sha'), str) or not _SHA.fullmatch(artifact['sha']):
        problems.append('sha must be a full commit id (40 or 64 hexadecimal digits)')
    if not isinstance(artifact.get('purpose'), str) or not _PURPOSE.fullmatch(artifact['purpose']):
        problems.append('purpose must be report, bench-CLASS or test-CLASS')
    if not isinstance(artifact.get('body'), str):
        problems.append('body must be text')
    if artifact.get('kind') != 'report' and not (isinstance(artifact.get('run'), str) and _RUN.fullmatch(artifact['run'])):
        problems.append('run must be the id of the run that left it')
    if (artifact.get('kind') == 'report') != (artifact.get('purpose') == 'report'):
        problems.append('a report has purpose report, and only a report does')
    graded = artifact.get('graded')
    if (artifact.get('kind') == 'report') != (isinstance(graded, dict) and all(
            isinstance(graded.get(key), str) for key in ('title', 'body', 'base'))):
        problems.append('a report, and only a report, has graded: the title, body and base branch it was graded with')
    check = artifact.get('check')
    if check is not None and not _valid_check(check):
        problems.append(f"check must have a conclusion ({', '.join(CONCLUSIONS)}), title, summary and annotations "
                        f"each with path, line and a level of {', '.join(ANNOTATION_LEVELS)}")
    if 'timings' in artifact and (problem := _timings_problem(artifact)):
        problems.append(problem)
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


def _timings_problem(artifact: dict) -> str:
    """What is wrong with the base medians an artifact carries for the poster's history, or ''."""
    timings = artifact['timings']
    if not isinstance(timings, list) or len(timings) > MAX_TIMINGS:
        return f'timings must be a list of at most {MAX_TIMINGS} entries'
    for index, timing in enumerate(timings):
        problem = _timing_problem(f'timings[{index}]', timing)
        if problem:
            return problem
    # one run measures each series once, on one GPU: copies of a point would fill a trend on their own
    series = [(t['op'], t['mode'], t['shape']) for t in timings]
    if len(set(series)) < len(series):
        return 'timings name one op, mode and shape more than once'
    if len({t['gpu'] for t in timings}) > 1:
        return 'timings name more than one GPU'
    if not isinstance(artifact.get('base'), str) or not _SHA.fullmatch(artifact['base']):
        return 'base must be a full commit id (40 or 64 hexadecimal digits) where timings are'
    if artifact.get('kind') != 'result' or not str(artifact.get('purpose')).startswith('bench-'):
        return 'only the result of a bench carries timings'
    return ''


def _timing_problem(at: str, timing: object) -> str:
    """What is wrong with one base median, `at` the place it was found, or ''."""
    if not isinstance(timing, dict):
        return f'{at} must be an object'
    for key in ('op', 'shape'):
        if not isinstance(timing.get(key), str) or not _NAME.fullmatch(timing[key]):
            return f'{at}.{key} must be 1 to 80 letters, digits, _, . or -'
    if timing.get('mode') not in BENCH_MODES:
        return f"{at}.mode must be {' or '.join(BENCH_MODES)}"
    gpu = timing.get('gpu')
    if not isinstance(gpu, str) or not 0 < len(gpu) <= 100 or not gpu.isprintable():
        return f'{at}.gpu must be printable text of 1 to 100 characters'
    median = timing.get('median_ms')
    # NaN fails both comparisons; a bool is an int to Python, never a time
    if isinstance(median, bool) or not isinstance(median, (int, float)) or not 0 < median < 1e6:
        return f'{at}.median_ms must be a number of milliseconds above 0 and below 1e6'
    if not isinstance(timing.get('evidence'), bool):
        return f'{at}.evidence must be true or false'
    return ''


def regraded(pull: PullRequest, report: dict) -> list[str]:
    """What of `pull` (its title, body, base branch) differs from what `report` was graded with: a report of it now
    would grade something else."""
    graded = report['graded']
    return [name for name, now, then in (('title', pull.title, graded['title']), ('body', pull.body, graded['body']),
                                         ('base branch', pull.base_branch, graded['base'])) if now != then]


def validate_for_run(forge: Forge, run: dict, artifact: dict, accepted_on: Callable[[int], list[dict]]) -> None:
    """Refuse an artifact that does not belong to `run`, the payload of the workflow run that left it (a forged PR
    number or sha); `accepted_on(pr)` gives the accepted markers of the bot's comments on a PR."""
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
        head_repo, branch = (run.get('head_repository') or {}).get('full_name'), run.get('head_branch')
        if (head_repo and head_repo != pull.head_repo) or (branch and branch != pull.head_branch):
            raise MrbotError(f"artifact rejected: #{pr} comes from {pull.head_repo}:{pull.head_branch}, but the run "
                             f"checked {head_repo}:{branch}")
        if pull.head_sha != sha:
            if head_repo and branch:
                # the run's own PR, pushed to since: a newer run reports on the new head
                raise Superseded(f'the report on #{pr} is of {sha[:12]}, and its head has moved on to '
                                 f'{pull.head_sha[:12]}')
            raise MrbotError(f'artifact rejected: #{pr} has head {pull.head_sha[:12]}, not {sha[:12]}')
        changed = regraded(pull, artifact)
        if changed:
            # an edit since: the run of that edit grades the PR as it is, and must not be overtaken by this one
            raise Superseded(f"the report on #{pr} was graded with another {' and '.join(changed)} than the PR has now")
        return
    if str(artifact.get('run')) != str(run['id']):
        raise MrbotError(f"artifact rejected: it names run {artifact.get('run')}, but it came from run {run['id']}")
    kind, runner = artifact['purpose'].split('-', 1)
    if not any(str(m.get('run')) == str(run['id']) and m.get('sha') == sha and m.get('command') == kind
               and runner in m.get('runners', []) for m in accepted_on(pr)):
        raise MrbotError(f'artifact rejected: no command accepted on #{pr} for run {run["id"]}, {kind} on {runner} '
                         f'at {sha[:12]}')
