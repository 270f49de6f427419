# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What an unprivileged run leaves for the poster, and the checks that it is well formed and belongs to its run."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from mrbot.forges import ANNOTATION_LEVELS, CONCLUSIONS, Forge
from mrbot.records import MrbotError

ARTIFACT = 'mrbot-artifact.json'
# What each triggering event may leave: a report from `mrbot PR`, results and notes from `mrbot command`.
KINDS_BY_EVENT = {'pull_request': ('report',), 'issue_comment': ('result', 'accepted')}
# Well above a body the largest forge limit lets through (GitLab's 1,000,000 characters) with its check's annotations.
MAX_ARTIFACT_BYTES = 8_000_000
_SHA = re.compile(r'[0-9a-f]{40}')
_PURPOSE = re.compile(r'(report|(bench|test)-[a-z0-9]+(-[a-z0-9]+)*)')


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
