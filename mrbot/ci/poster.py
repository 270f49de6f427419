# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The poster: puts what a run left on the forge, with the token the run itself did not hold."""

from __future__ import annotations

import collections
import functools
import re
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from mrbot import commands
from mrbot.ci.artifacts import ARTIFACT, read_artifact, validate_for_run
from mrbot.ci.event import Ended, Event, write_summary
from mrbot.forges import Annotation, Forge, Note, fit_body, sticky_room
from mrbot.history import DEFAULT_LAST, trends
from mrbot.records import MrbotError
from mrbot.store import Store, Timing, now

CHECK_NAME = 'mrbot check'
# A line that opens or closes a fenced code block, and a run of backticks that opens or closes an inline code span.
_FENCE = re.compile(r' {0,3}(`{3,}|~{3,})')
_TICKS = re.compile(r'`+')
_MENTION = re.compile(r'(?<![\w@])@(?=[\w-])')
_TAG = re.compile(r'<(?!/?(?:details|summary|sub)>)')


def defuse(text: str) -> str:
    """Text from a PR (titles, findings, results a PR's code wrote) made safe to post as the bot: every HTML comment
    opener inert, so that nothing it posts on anyone's behalf carries a marker `authorize` or the poster would read;
    and, outside code, no @-mention (a title's `@all`, a finding's `@triton.jit`) that would notify someone, and no
    HTML but the folding and small print the reports use."""
    return ''.join(piece if code else _MENTION.sub('@\u2060', _TAG.sub('&lt;', piece))
                   for piece, code in _pieces(text.replace('<!--', '&lt;!--')))


def _pieces(text: str) -> Iterator[tuple[str, bool]]:
    """`text` in order, each piece with whether Markdown shows it as code; in time linear in its length, whatever
    a PR puts in it."""
    fence = ''
    for line in text.splitlines(keepends=True):
        if fence:
            yield line, True
            closing = _FENCE.match(line)
            if closing and closing.group(1).startswith(fence) and not line[closing.end():].strip():
                fence = ''
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            yield line, True
            continue
        yield from _code_spans(line)


def _code_spans(line: str) -> Iterator[tuple[str, bool]]:
    """The pieces of one line: a run of backticks opens a code span that the next run of the same length closes."""
    runs = [match.span() for match in _TICKS.finditer(line)]
    # the next run of each run's length, found in one pass from the end
    closing: list[int | None] = [None] * len(runs)
    later: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        closing[index], later[length] = later.get(length), index
    done, index = 0, 0
    while index < len(runs):
        end = closing[index]
        if end is None:
            index += 1
            continue
        yield line[done:runs[index][0]], False
        yield line[runs[index][0]:runs[end][1]], True
        done, index = runs[end][1], end + 1
    yield line[done:], False


def bot_bodies(notes: list[Note]) -> list[str]:
    """The bodies of the bot's comments among a PR's `notes`, where its markers live (see `defuse` for why they can be
    trusted)."""
    return [note.body for note in notes if note.by_bot]


def post(forge: Forge, event: Event, artifact: dict) -> str:
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
    write_summary(event, body)
    if fitted != body and event.step_summary is None:
        print(body, end='')
    return comment.url


def _workflow_change(forge: Forge, pr: int) -> str:
    """Why the report of `pr` may not publish a check run, or '': the report comes from the PR's own workflow run,
    which runs the workflow files as the PR has them."""
    try:
        paths = forge.changed_paths(pr)
    except MrbotError as error:
        return f'its changed files cannot all be read ({error})'
    if any(path.startswith('.github/') for path in paths):
        return 'it changes files under .github/, where the workflow that wrote its report lives'
    return ''


def with_done(body: str, run: str) -> str:
    """The accepted reply `body` marked done by `run`: one record per job, which no later comment replaces (a result
    comment is sticky per command and runner class, so a marker there lasted only until the next result, and the jobs
    it had finished counted as queued again)."""
    return f"{body.rstrip(chr(10))}\n{commands.marker('done', run=run)}\n"


def _mark_done(forge: Forge, number: int, run: str, notes: list[Note]) -> None:
    """Mark done the bot's accepted reply among `notes` that queued `run`."""
    for note in notes:
        accepted = commands.markers([note.body], 'accepted') if note.by_bot else []
        if any(str(m.get('run')) == run for m in accepted) and not commands.markers([note.body], 'done'):
            forge.edit_comment(number, note.id, with_done(note.body, run))


def _evidence_timings(artifact: dict) -> list[Timing]:
    """The base medians a bench result carries, as the history records them; interpreter timings are a trend of
    nothing."""
    base = artifact.get('base', '')
    return [Timing(now(), 'bench', base[:12], base, t['op'], t['mode'], t['shape'], t['gpu'], True,
                   float(t['median_ms'])) for t in artifact.get('timings', ()) if t['evidence']]


def _trend(store: Store, timings: list[Timing]) -> str:
    """The section a result ends with: per GPU, the trend of each op of `timings` on the base branch."""
    lines = []
    for gpu in dict.fromkeys(t.gpu for t in timings):
        lines += ['', f'Trend on the base branch (base medians of /bench runs on {gpu}, oldest first, last '
                      f'{DEFAULT_LAST}):', '']
        for op in dict.fromkeys(t.op for t in timings if t.gpu == gpu):
            lines += [f'- {op} {series}: {trend}' for series, trend in trends(store, op, gpu).items()]
    return '\n'.join(lines) + '\n'


def _with_trends(artifacts: list[dict], history: Path) -> list[dict]:
    """`artifacts`, the evidence base medians of each bench result recorded in the store at `history` and its body
    ending with their trend; on a store error, as they were, with one line on stderr: a lost point must not lose
    the post."""
    timed = [(artifact, _evidence_timings(artifact)) for artifact in artifacts]
    if not any(timings for _, timings in timed):
        return artifacts
    try:
        history.parent.mkdir(parents=True, exist_ok=True)
        with Store.at(history) as store:
            store.add_timings([timing for _, timings in timed for timing in timings])
            return [{**artifact, 'body': artifact['body'].rstrip('\n') + '\n' + _trend(store, timings)}
                    if timings else artifact for artifact, timings in timed]
    except (MrbotError, sqlite3.Error, OSError) as error:
        print(f'mrbot action: no trend posted, the history store failed: {error}', file=sys.stderr)
        return artifacts


def post_run(open_forge: Callable[[], Forge], event: Event, folder: Path | None, history: Path | None = None
             ) -> list[str]:
    """Post each artifact in `folder` (itself, or in subfolders as download-artifact leaves several) that belongs to
    the triggering workflow run, and for an accepted job that left no result, its note; an error names the ones
    refused, after the others are posted. The forge is opened only once there is something to post. With `history`,
    the base medians of bench results go into the store in that file, and each result shows their trend."""
    if folder is None:
        raise MrbotError("a workflow_run event posts an artifact: pass --artifact DIR with the triggering run's files")
    fields = event.fields().object('workflow_run')
    # each field the checks below read must be as GitHub sends it
    fields.integer('id')
    fields.text('head_sha')
    fields.text('event')
    fields.optional_mapping('head_repository')
    fields.optional_text('head_branch')
    fields.sequence('pull_requests', [])
    run = fields.data
    paths = [folder / ARTIFACT] if (folder / ARTIFACT).exists() else sorted(folder.rglob(ARTIFACT))
    if not paths:
        raise Ended(f'{folder} holds no {ARTIFACT}: the triggering run left nothing to post')
    forge = open_forge()

    # the results of one run share a PR: its comments are read once
    @functools.cache
    def notes_on(pr: int) -> list[Note]:
        return forge.comments(pr)

    def accepted_on(pr: int) -> list[dict]:
        return commands.markers(bot_bodies(notes_on(pr)), 'accepted')

    valid, refused = [], []
    for path in paths:
        try:
            artifact = read_artifact(path.parent)
            validate_for_run(forge, run, artifact, accepted_on)
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
        withheld = artifact['check'] and _workflow_change(forge, artifact['pr'])
        if withheld:
            print(f"mrbot action: no check run for #{artifact['pr']}: {withheld}", file=sys.stderr)
            valid[index] = {**artifact, 'check': None}
    if history is not None:
        valid = _with_trends(valid, history)
    results = {a['purpose'] for a in valid if a['kind'] == 'result'}
    posted = []
    try:
        for artifact in valid:
            if artifact['kind'] == 'accepted' and artifact['purpose'] in results:
                continue
            # one artifact the forge refuses loses no other
            try:
                posted.append(post(forge, event, artifact))
            except MrbotError as error:
                refused.append(f"#{artifact['pr']} {artifact['purpose']}: {error}")
    finally:
        # a job whose result could not be posted is over all the same: it must not hold its queue slot
        for pr in sorted({artifact['pr'] for artifact in valid if artifact['kind'] != 'report'}):
            # the accepted replies are as they were read for the checks above: posting results changes none of them
            _mark_done(forge, pr, str(run['id']), notes_on(pr))
    if refused:
        raise MrbotError('; '.join(refused) + (f" (posted: {', '.join(posted)})" if posted else ''))
    return posted
