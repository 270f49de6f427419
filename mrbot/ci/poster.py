# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The poster: puts what a run left on the forge, with the token the run itself did not hold."""

from __future__ import annotations

import collections
import functools
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mrbot.ci import grammar
from mrbot.ci.artifacts import ARTIFACT, MAX_ARTIFACTS, Superseded, read_artifact, regraded, validate_for_run
from mrbot.ci.event import Ended, Event, write_summary
from mrbot.ci.inert import inert
from mrbot.forges import ANNOTATIONS_LIMIT, Annotation, Forge, Note, fit_body, sticky_room
from mrbot.history import DEFAULT_LAST, trends
from mrbot.records import MrbotError
from mrbot.store import Store, Timing, now

CHECK_NAME = 'mrbot check'
# The levels of a check run's annotations, the most severe first: those are kept where the rest do not fit.
_LEVEL_ORDER = {'failure': 0, 'warning': 1, 'notice': 2}


def bot_bodies(notes: list[Note]) -> list[str]:
    """The bodies of the bot's comments among a PR's `notes`, where its markers live (the markers are proven by their
    seal where there is one, see `grammar.Seal`)."""
    return [note.body for note in notes if note.by_bot]


@dataclass(frozen=True)
class Withheld:
    """Why a report does not publish its own check run; `failing` where a failing one stands in for it, since its
    commit heads several open PRs and whatever check it carries shows on each of them."""

    reason: str
    failing: bool = False


def post(forge: Forge, event: Event, artifact: dict, withheld: Withheld | None = None) -> str:
    """Put an artifact on the forge: the sticky comment of its purpose (its body made inert, cut at a line to fit the
    forge with a pointer to this run where it is longer), its check run unless `withheld` says why not (the comment
    then says it too), and the whole body in the job summary (on GitLab, which has none, in the job's log)."""
    body = inert(artifact['body']).rstrip('\n') + '\n'
    check = artifact.get('check')
    if check and withheld:
        # first: an unclosed <details> in the body would fold away whatever comes after it
        body = f'_No check run of this report: {withheld.reason}._\n\n{body}'
    fitted = fit_body(body, sticky_room(artifact['purpose'], forge.body_limit), event.run_url)
    comment = forge.upsert_comment(artifact['pr'], artifact['purpose'], fitted)
    if check and not withheld:
        annotations, summary = _bounded(check)
        # the check's name is ours, whatever the artifact says: a name is what branch protection requires
        forge.publish_check(artifact['sha'], CHECK_NAME, check['conclusion'], inert(check['title']), summary,
                            annotations)
        if 'graded' in artifact:
            _recheck(forge, artifact)
    elif check and withheld.failing:
        forge.publish_check(artifact['sha'], CHECK_NAME, 'failure', 'Several open pull requests share this commit',
                            f'mrbot checks a commit for one pull request: {withheld.reason}. Each of them shows the '
                            'report of its own in its comment; the check passes again once one pull request alone has '
                            'this commit as its head and its report comes in.')
    write_summary(event, body)
    if fitted != body and event.step_summary is None:
        print(body, end='')
    return comment.url


def _recheck(forge: Forge, report: dict) -> None:
    """Take back the check just published where the PR changed while it was posted: an edit or a push after the
    report was checked against the PR made it grade something the PR no longer is, and the edit's own report may be
    long in coming (a run waiting for approval)."""
    pull = forge.get_pull(report['pr'])
    changed = regraded(pull, report) + (['head'] if pull.head_sha != report['sha'] else [])
    if changed:
        forge.publish_check(report['sha'], CHECK_NAME, 'failure', 'The pull request changed while it was checked',
                            f"Its {' and '.join(changed)} changed after this report was made; the report of the change "
                            'takes the place of this check.')


def _bounded(check: dict) -> tuple[list[Annotation], str]:
    """The annotations a check run shows, at most what one request carries, the most severe first, and its summary
    made inert, saying how many more the report holds: one report is one write, however many findings it has."""
    found = sorted((Annotation(a['path'], int(a['line']), a['level'], inert(a['message']), inert(a.get('title', '')))
                    for a in check['annotations']), key=lambda a: _LEVEL_ORDER[a.level])
    summary = inert(check['summary'])
    if len(found) > ANNOTATIONS_LIMIT:
        summary = (f'_{ANNOTATIONS_LIMIT} of {len(found)} findings are annotated on the diff, the most severe first; '
                   f'the comment on the pull request lists them all._\n\n{summary}')
    return found[:ANNOTATIONS_LIMIT], summary


def withheld_check(forge: Forge, artifact: dict) -> Withheld | None:
    """Why the report `artifact` may not publish its check run on its commit, or None. Decided from the commit itself:
    the open PRs it heads (a check run belongs to the commit and shows on each of them, graded for one PR's title,
    body, base and settings: where several share it, a failing check stands for all), and the files it changes
    against its merge base with the PR's base branch (a push after the report changes nothing here)."""
    pr, sha = artifact['pr'], artifact['sha']
    pull = forge.get_pull(pr)
    if pull.state != 'open':
        return Withheld(f'#{pr} is {pull.state}')
    try:
        sharing = [pull, *(other for other in forge.pulls_with_head(sha) if other.number != pr)]
    except MrbotError as error:
        return Withheld(f'the other pull requests it may head cannot all be read ({error})', failing=True)
    if len(sharing) > 1:
        return Withheld(f"{sha[:12]} is the head of #{' and #'.join(str(each.number) for each in sharing)}",
                        failing=True)
    try:
        paths = forge.compare_paths(pull.base_branch, sha)
    except MrbotError as error:
        return Withheld(f'the files it changes cannot all be read ({error})')
    if any(path.startswith('.github/') for path in paths):
        return Withheld('it changes files under .github/, where the workflow that wrote this report lives')
    return None


def with_done(body: str, run: str, seal: grammar.Seal | None) -> str:
    """The accepted reply `body` marked done by `run`, signed with `seal`: one record per job, which no later comment
    replaces (a result comment is sticky per command and runner class, so a marker there lasted only until the next
    result, and the jobs it had finished counted as queued again)."""
    return f"{body.rstrip(chr(10))}\n{grammar.marker('done', seal, run=run)}\n"


def _mark_done(forge: Forge, number: int, run: str, notes: list[Note], seal: grammar.Seal | None) -> None:
    """Mark done the bot's accepted reply among `notes` that queued `run`: the first that carries its marker, since a
    workflow echoing that reply may have copied the marker into more comments, each of which would cost an edit."""
    for note in notes:
        accepted = grammar.markers([note.body], 'accepted', seal) if note.by_bot else []
        if any(str(m.get('run')) == run for m in accepted):
            if not grammar.markers([note.body], 'done', seal):
                forge.edit_comment(number, note.id, with_done(note.body, run, seal))
            return


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
    if run['event'] != 'pull_request' and run.get('run_attempt', 1) != 1:
        # a re-run of a command's run runs nothing (authorize refuses it): what it holds was posted from the first
        raise Ended(f"attempt {str(run.get('run_attempt'))[:12]} of a command's run: its results were posted once")
    paths = [folder / ARTIFACT] if (folder / ARTIFACT).exists() else sorted(folder.rglob(ARTIFACT))
    if not paths:
        raise Ended(f'{folder} holds no {ARTIFACT}: the triggering run left nothing to post')
    # the run's code chose its files: each one costs reads on the repository's token, so their number is bounded first
    if run['event'] == 'pull_request' and paths != [folder / ARTIFACT]:
        raise MrbotError(f'artifact rejected: a pull_request run leaves one {ARTIFACT} at the top of its artifact, '
                         f'not {len(paths)} in subfolders')
    refused = []
    if len(paths) > MAX_ARTIFACTS:
        # the uploads' own files lie shallowest; what a job's code added beside them is what goes unread
        paths.sort(key=lambda path: (len(path.relative_to(folder).parts), str(path)))
        refused.append(f'artifact rejected: the run left {len(paths)} artifacts, where a command leaves at most '
                       f'{MAX_ARTIFACTS}: {len(paths) - MAX_ARTIFACTS} not read')
        paths = paths[:MAX_ARTIFACTS]
    if run['event'] != 'pull_request' and event.signing_key is None:
        # which command was accepted is only known from signed markers
        raise MrbotError(f"a {run['event']} run's results are posted only against the bot's signed replies: set the "
                         'repository secret MRBOT_SIGNING_KEY for this job (docs/ci.md, "The signing key")')
    forge = open_forge()

    # the results of one run share a PR: its comments are read once
    @functools.cache
    def notes_on(pr: int) -> list[Note]:
        return forge.comments(pr)

    def accepted_on(pr: int) -> list[dict]:
        return grammar.markers(bot_bodies(notes_on(pr)), 'accepted', event.seal(forge.name, pr))

    read = []
    for path in paths:
        try:
            read.append(read_artifact(path.parent))
        except MrbotError as error:
            refused.append(str(error))
    # one run answers one pull request, the one its accepted replies name (the job that writes them runs no PR code):
    # an artifact naming another would cost reads of that one, and is refused alone, so that the rest still post
    answered = {artifact['pr'] for artifact in read if artifact['kind'] == 'accepted'}
    if len(answered) > 1:
        raise MrbotError(f"artifact rejected: the run's accepted replies name "
                         f"{', '.join(f'#{pr}' for pr in sorted(answered))}, where one run answers one pull request")
    pr = next(iter(answered), read[0]['pr'] if read else None)
    refused += [f"artifact rejected: it names #{artifact['pr']}, but the run answers #{pr}"
                for artifact in read if artifact['pr'] != pr]
    valid = []
    for artifact in [artifact for artifact in read if artifact['pr'] == pr]:
        try:
            validate_for_run(forge, run, artifact, accepted_on)
        except Superseded as reason:
            print(f'mrbot action: not posted: {reason}', file=sys.stderr)
            continue
        except MrbotError as error:
            refused.append(str(error))
            continue
        valid.append(artifact)
    # one artifact per kind and purpose: more would each cost a comment edit (and a report, a check run) on the token
    counts = collections.Counter((a['kind'], a['purpose']) for a in valid)
    refused += [f"artifact rejected: the run left {count} {kind} artifacts for '{purpose}', where one is expected"
                for (kind, purpose), count in counts.items() if count > 1]
    valid = [a for a in valid if counts[(a['kind'], a['purpose'])] == 1]
    # kind and purpose name one artifact from here on
    withheld = {(a['kind'], a['purpose']): withheld_check(forge, a) for a in valid if a['check']}
    for artifact in valid:
        if held := withheld.get((artifact['kind'], artifact['purpose'])):
            print(f"mrbot action: no check run of the report on #{artifact['pr']}: {held.reason}", file=sys.stderr)
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
                posted.append(post(forge, event, artifact, withheld.get((artifact['kind'], artifact['purpose']))))
            except MrbotError as error:
                refused.append(f"#{artifact['pr']} {artifact['purpose']}: {error}")
    finally:
        # a job whose result could not be posted is over all the same: it must not hold its queue slot
        for pr in sorted({artifact['pr'] for artifact in valid if artifact['kind'] != 'report'}):
            # the accepted replies are as they were read for the checks above: posting results changes none of them
            _mark_done(forge, pr, str(run['id']), notes_on(pr), event.seal(forge.name, pr))
    if refused:
        raise MrbotError('; '.join(refused) + (f" (posted: {', '.join(posted)})" if posted else ''))
    return posted
