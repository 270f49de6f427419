# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The answer to a command on a pull or merge request, decided once for both forges.

A command is parsed, its asker (and on GitLab whoever ran the job) authorized, the request checked to be open and its
head to be the commit the asker could have seen, and the command checked again as the GPU job will read it. The
answer is a reply and a reaction; an accepted one carries the marker the cooldown and the queue count.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import sys
from dataclasses import dataclass, replace

from mrbot.ci import grammar
from mrbot.ci.event import Ended
from mrbot.config import Config
from mrbot.forges import Forge
from mrbot.records import MrbotError
from mrbot.repo.ops import OpSpec


@dataclass(frozen=True)
class Request:
    """A command as the forge gave it.

    `association` is GitHub's author_association of the comment, None where the forge has none (the asker's
    permission decides). `given_at` is when it was given (ISO 8601 in UTC), None where no asker's view dates it (a
    GitLab job its starter runs in the pipeline they see). `note` is a GitLab note that names the command, run once;
    `job_user` whoever ran a GitLab job, who must be allowed too. `head_sha` is the commit the job will run where the
    pipeline fixes it (GitLab), which must be the request's head; None for the request's head.
    """

    number: int
    text: str
    asker: str
    association: str | None
    given_at: str | None
    note: int | None = None
    job_user: str = ''
    head_sha: str | None = None


@dataclass(frozen=True)
class Answer:
    """What to say: the reply and a reaction to the command ('confused', '+1', '-1' or 'eyes'); for an accepted
    command (help included) the command, and for one that runs, the runner classes and the commit."""

    reply: str
    reaction: str
    command: grammar.Command | None = None
    runners: tuple[str, ...] = ()
    sha: str = ''


def reference(forge: Forge, number: int) -> str:
    """How the forge writes a request: #12 on GitHub, !12 on GitLab."""
    return f"{'!' if forge.name == 'gitlab' else '#'}{number}"


def _usage(user: str, error: grammar.UsageError) -> str:
    # the error quotes what was written: as code, so that no link or markup in it renders in the bot's name
    ticks = '`' * (max(map(len, re.findall('`+', str(error))), default=0) + 1)
    return f'@{user} {ticks} {error} {ticks}\n\n```\n{grammar.USAGE}\n```'


def _refusal(command: grammar.Command, decision: grammar.Decision) -> Answer:
    return Answer(f'Not running `{command.line()}`: {decision.reason}.', '-1')


def acceptance(user: str, command: grammar.Command, runners: tuple[str, ...], sha: str, run_id: str, run_url: str,
               now: datetime.datetime, note: int | None, seal: grammar.Seal | None) -> str:
    """The accepted reply: what runs, where and at which commit, with the marker the cooldown and queue count (and,
    for a command read from a GitLab note, the note, which is run once), signed with `seal`."""
    hidden = grammar.marker('accepted', seal, run=run_id, user=user, at=now.isoformat(timespec='seconds'), sha=sha,
                            command=command.kind, runners=list(runners), **({'note': note} if note is not None else {}))
    return (f"Accepted from @{user}: {command.describe()}, on {' and '.join(runners)} at `{sha[:10]}`; results come "
            f'back here. [The run]({run_url}).\n{hidden}')


def answer(forge: Forge, request: Request, config: Config, specs: list[OpSpec], bot_bodies: list[str],
           now: datetime.datetime, run_id: str, run_url: str, runner: str | None = None, *,
           seal: grammar.Seal | None) -> Answer:
    """Decide the answer to `request`. `bot_bodies` are the bot's comments on the request, where its markers (signed
    with `seal`, where there is one) live. `runner` is this job's runner class where one job runs per class (GitLab):
    a command for other classes, or help, is not this job's to answer (Ended)."""
    try:
        command = grammar.parse(request.text, specs, config)
    except grammar.UsageError as error:
        # what was written is quoted back to those who may give commands alone
        decision = _permission(forge, request, config)
        if not decision.allowed:
            return Answer(f'Not running that command: {decision.reason}.', '-1')
        return Answer(_usage(request.asker, error), 'confused')
    if runner is not None and (command.kind == 'help' or runner not in command.runners):
        raise Ended(f'this job runs on {runner}; the command is for {", ".join(command.runners) or "nobody"}')
    if command.kind == 'help':
        # an answer posted and a poster run started in the bot's name: for those who may give commands alone
        decision = _permission(forge, request, config)
        if not decision.allowed:
            return _refusal(command, decision)
        return Answer(f'```\n{grammar.USAGE}\n```', '+1', command)
    runners = command.runners if runner is None else (runner,)
    where = reference(forge, request.number)
    decision = _admission(forge, request, runners, bot_bodies, now, config, seal)
    if not decision.allowed:
        return _refusal(command, decision)
    pull = forge.get_pull(request.number)
    if pull.state != 'open':
        return _refusal(command, grammar.Decision(False, f'{where} is {pull.state}'))
    if request.head_sha is not None and request.head_sha != pull.head_sha:
        # a job of an older pipeline would run a commit the asker may never have seen
        return _refusal(command, grammar.Decision(False, f'this pipeline is of {request.head_sha[:10]}, but the head '
                                                         f'of {where} is {pull.head_sha[:10]}; run the job of its '
                                                         'newest pipeline'))
    sha = pull.head_sha
    decision = grammar.head_moved(command, sha, where)
    if decision.allowed and request.given_at is not None and not command.args.get('sha'):
        # unpinned, it runs the head as it is now: only if the forge's record proves that is the head the asker saw
        decision = grammar.pushed_after(request.given_at, forge.head_pushed_at(pull), sha, where)
        if decision.allowed and not forge.records_every_push:
            decision = grammar.changed_after(request.given_at, pull.updated_at, where)
        if not decision.allowed:
            return _unproven(command, decision, sha)
    if not decision.allowed:
        return _refusal(command, decision)
    if command.kind == 'bench' and not command.args['base']:
        command = dataclasses.replace(command, args={**command.args, 'base': pull.base_branch})
    try:
        # what the GPU job will parse again: refuse here what it would refuse there
        for each in runners:
            grammar.from_json(command.kind, command.args, each, specs, config)
    except grammar.UsageError as error:
        return Answer(_usage(request.asker, error), 'confused')
    return Answer(acceptance(request.asker, command, runners, sha, run_id, run_url, now, request.note, seal), 'eyes',
                  command, runners, sha)


def _unproven(command: grammar.Command, decision: grammar.Decision, sha: str) -> Answer:
    """The refusal of an unpinned command whose head the asker may not have seen, with the pinned command to copy."""
    pinned = dataclasses.replace(command, args={**command.args, 'sha': sha})
    return Answer(f'Not running `{command.line()}`: {decision.reason}. To run `{sha[:12]}` once you have looked at '
                  f'it, comment:\n\n```\n{pinned.line()}\n```\n', '-1')


def _admission(forge: Forge, request: Request, runners: tuple[str, ...], bot_bodies: list[str],
               now: datetime.datetime, config: Config, seal: grammar.Seal | None) -> grammar.Decision:
    """May the request start jobs on `runners`, given the bot's comments `bot_bodies`: a note not yet run on them, and
    its asker (and on GitLab whoever ran the job) allowed, within the cooldown and the queue."""
    if request.note is not None and any(m.get('note') == request.note and set(runners) & set(m.get('runners') or ())
                                        for m in grammar.markers(bot_bodies, 'accepted', seal)):
        return grammar.Decision(False, f'note {request.note} has been run already on {" and ".join(runners)}; a new '
                                       'note asks again')
    for login, association, permission in _askers(forge, request):
        decision = grammar.authorize(login, association, permission, bot_bodies, now, config, len(runners),
                                     request.note, seal=seal)
        if not decision.allowed:
            return decision
    return grammar.Decision(True)


def _permission(forge: Forge, request: Request, config: Config) -> grammar.Decision:
    """May the request's asker (and on GitLab whoever ran the job) give commands at all."""
    for login, association, permission in _askers(forge, request):
        decision = grammar.permitted(login, association, permission, config)
        if not decision.allowed:
            return decision
    return grammar.Decision(True)


def _askers(forge: Forge, request: Request) -> list[tuple[str, str, str]]:
    """Each one the request is asked by, with their author association and permission on the forge."""
    askers = []
    for login in dict.fromkeys(filter(None, (request.asker, request.job_user))):
        permission = forge.permission(login)
        association = (request.association if login == request.asker and request.association is not None
                       else 'MEMBER' if permission != 'none' else 'NONE')
        askers.append((login, association, permission))
    return askers


def settle(forge: Forge, request: Request, given: Answer, reply: int, config: Config, now: datetime.datetime,
           seal: grammar.Seal | None) -> Answer:
    """`given`, an answer posted as comment `reply`, held again to the bot's comments before it: two commands answered
    at once each counted without the other's acceptance, and the later reply yields, edited into a refusal. The
    refusal marks its own run done: the accepted marker it replaces stays in the comment's edit history, and a copy of
    it must not hold the queue."""
    if not given.runners:
        return given
    try:
        earlier = [note.body for note in forge.comments(request.number) if note.by_bot and note.id < reply]
        decision = _admission(forge, request, given.runners, earlier, now, config, seal)
    except MrbotError as error:
        # an accepted reply that nothing runs for would hold its queue slots until they expire
        print(f'mrbot action: settling the reply: {error}', file=sys.stderr)
        decision = grammar.Decision(False, 'its acceptance could not be checked against the replies before it; '
                                           'give the command again')
    if decision.allowed:
        return given
    refused = _refusal(given.command, decision)
    runs = [str(m.get('run')) for m in grammar.markers([given.reply], 'accepted', seal)]
    body = '\n'.join([refused.reply, *(grammar.marker('done', seal, run=run) for run in runs)]) + '\n'
    forge.edit_comment(request.number, reply, body)
    return replace(refused, reply=body)


def deliver(forge: Forge, number: int, comment_id: int | None, given: Answer) -> int:
    """Post the reply and react to the command's comment, where there is one; returns the reply's id."""
    reply = forge.post_comment(number, given.reply)
    if comment_id is not None:
        # a reaction is a courtesy: failing to add one must not lose what the reply and outputs carry
        try:
            forge.add_reaction(number, comment_id, given.reaction)
        except MrbotError as error:
            print(f'mrbot action: warning: no reaction: {error}', file=sys.stderr)
    return reply.id
