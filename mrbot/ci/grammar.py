# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The comment commands `/bench`, `/test` and `/mrbot help`: their grammar, and who may run them when.

A command is the first line of a comment and the comment's only line: further lines would be dropped silently or
be an injection attempt, so they are a usage error. Every token is checked against the repository's op specs, shape names and
runner classes, or against a small character set for paths and `-k` expressions; whatever does not fit is a usage
error, so nothing a commenter writes ever reaches a shell. The bot's replies carry a hidden JSON marker, from which
`authorize` reads the cooldown and the queue of a PR without any other state. Nothing here touches the network.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field

from mrbot import git
from mrbot.config import Config
from mrbot.records.bench import BENCH_MODES
from mrbot.repo.ops import OpSpec

USAGE = '''Commands (a comment of one line; members with write access):
  /bench [OP ...] [--modes fwd|fwdbwd ...] [--shapes NAME ...] [--on CLASS ...] [--rounds N] [--base REF] [--sha SHA]
      time the ops (default: the ones the PR touches) on base and head, interleaved, on a GPU runner
  /test [PATH_OR_NODEID ...] [-k EXPR] [--on CLASS ...] [--sha SHA]
      run tests compiled on a GPU runner (default: the tests the PR's change selects)
  --sha: run only if the PR head is still this commit (what you reviewed), by its whole 40-digit id
  /mrbot help
      this text'''
MAX_LINE = 300
MAX_ROUNDS = 50
ASSOCIATIONS = ('OWNER', 'MEMBER', 'COLLABORATOR')
WRITE_PERMISSIONS = ('admin', 'maintain', 'write')
# A line may hold only these: no quote but ", no shell metacharacter, no backslash.
_LINE = re.compile(r'[A-Za-z0-9_ .:/\[\]=,"()+-]*')
_REF = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_./-]{0,99}')
_TEST = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_./-]*(::[A-Za-z0-9_.\[\]=,+-]+)*')
_EXPRESSION = re.compile(r'[A-Za-z0-9_ ()\[\].-]{1,120}')
# A whole commit id (SHA-1 or SHA-256): a shorter prefix can be matched by a commit made after the comment.
_SHA = re.compile(git.COMMIT_ID)
# A marker, from its opener to the first ' -->' after it (which `markers` has cut off); one line of JSON.
_MARKER = re.compile(r'<!-- mrbot:(accepted|done) (\{[^\n]*\})')
_MARKER_OPENER = '<!-- mrbot:'
# The first word of a line addressed to mrbot: a command's name.
_ADDRESSED = re.compile(r'/(bench|test|mrbot)(\s|$)')
# Each command's options, as the argument name each one's values go to.
_BENCH_OPTIONS = {'--modes': 'modes', '--shapes': 'shapes', '--on': 'on', '--rounds': 'rounds', '--base': 'base',
                  '--sha': 'sha'}
_TEST_OPTIONS = {'-k': 'k', '--on': 'on', '--sha': 'sha'}


class UsageError(ValueError):
    """A command that does not parse; the message says what and the reply adds USAGE."""


@dataclass(frozen=True)
class Command:
    """A parsed command: `kind` is bench, test or help; `args` its normalized arguments; `runners` the classes to use."""

    kind: str
    args: dict = field(default_factory=dict)
    runners: tuple[str, ...] = ()

    def line(self) -> str:
        """The command as a comment line that parses back to this command."""
        a = self.args
        if self.kind == 'help':
            return '/mrbot help'
        if self.kind == 'bench':
            words = ['/bench', *a['ops'], *_flag('--modes', a['modes']), *_flag('--shapes', a['shapes'])]
            words += ['--on', *self.runners, '--rounds', str(a['rounds']), *_flag('--base', [a['base']] if a['base'] else [])]
        else:
            words = ['/test', *a['tests'], *_flag('-k', [f'"{a["k"]}"'] if a['k'] else []), '--on', *self.runners]
        return ' '.join([*words, *_flag('--sha', [a['sha']] if a['sha'] else [])])

    def describe(self) -> str:
        """What will run, in one line, for the accepted reply."""
        if self.kind == 'bench':
            ops = ' '.join(self.args['ops']) or 'the ops the PR touches'
            extra = ''.join(f" --{key} {' '.join(self.args[key])}" for key in ('modes', 'shapes') if self.args[key])
            return f"mrbot bench on {ops}{extra}, {self.args['rounds']} rounds, against {self.args['base'] or 'the PR base'}"
        tests = ' '.join(self.args['tests']) or "the tests the PR's change selects"
        return f"mrbot test on {tests}{' -k ' + repr(self.args['k']) if self.args['k'] else ''}, compiled"


@dataclass(frozen=True)
class Decision:
    """Whether a command may run, and the reason given to the commenter when not."""

    allowed: bool
    reason: str = ''


def _flag(flag: str, values: list[str]) -> list[str]:
    return [flag, *values] if values else []


def head_moved(command: Command, head_sha: str, where: str) -> Decision:
    """Refuse a command pinned with `--sha` once the head of `where` (a PR or MR) is another commit."""
    pinned = command.args.get('sha')
    if pinned and head_sha != pinned:
        return Decision(False, f'the head of {where} is now {head_sha[:12]}, not {pinned}')
    return Decision(True)


def pushed_after(asked_at: str, pushed_at: str | None, head_sha: str, where: str) -> Decision:
    """Refuse a command whose PR/MR head became `head_sha` at `pushed_at` or later, when it was asked at `asked_at` (both
    ISO 8601 in UTC to the second): what runs would be a commit pushed after the one asking looked. None: the forge has
    no record of the push, and only a command pinned with `--sha` runs."""
    if pushed_at is None:
        return Decision(False, f'there is no record of when {head_sha[:12]} became the head of {where}')
    if pushed_at >= asked_at:
        return Decision(False, f'the head of {where} became {head_sha[:12]} at {pushed_at}, after the command was given '
                               f'({asked_at})')
    return Decision(True)


def changed_after(asked_at: str, updated_at: str, where: str) -> Decision:
    """Refuse a command when `where` (a PR or MR) changed at `updated_at`, after it was asked at `asked_at` (both ISO
    8601 in UTC to the second), where the forge's record of pushes may miss one: anything later, a push among it, may
    have moved the head the asker saw."""
    if updated_at > asked_at:
        return Decision(False, f'{where} changed at {updated_at}, after the command was given ({asked_at}), and a push '
                               "made with a workflow's token leaves no record of its own")
    return Decision(True)


def is_command(text: str | None) -> bool:
    """Whether a comment is addressed to mrbot at all (everything else is left alone, silently)."""
    first = (text or '').lstrip().split('\n', 1)[0].strip()
    return _ADDRESSED.match(first) is not None


# as [tool.mrbot.runners] names a class (config.py)
_RUNNER_CLASS = re.compile(r'[a-z0-9]+(-[a-z0-9]+)*')


def requested_runners(line: str) -> tuple[str, ...] | None:
    """The runner classes the `--on` of the /bench or /test command `line` names, () for none (the command's default
    class, which only the settings know), or None where `line` is no /bench or /test command. Read with the grammar's
    words and options alone, for a receiver of notes that has no settings: the GPU job checks the ops, shapes and
    classes against them.

    Raises:
        UsageError: `line` is a /bench or /test command the grammar cannot read.
    """
    addressed = _ADDRESSED.match(line.strip())
    if addressed is None or addressed.group(1) == 'mrbot':
        return None
    tokens = _tokens(line)
    _, values = _options(tokens[1:], _BENCH_OPTIONS if tokens[0] == '/bench' else _TEST_OPTIONS)
    # a class names a job (mrbot-bench-CLASS) and is kept in the receiver's state between spaces
    named = [runner for runner in values['on'] if not _RUNNER_CLASS.fullmatch(runner)]
    if named:
        raise UsageError(f'--on {named[0][:40]!r}: expected the name of a runner class (lowercase letters and digits, '
                         'joined by single dashes)')
    return tuple(dict.fromkeys(values['on']))


def _options(tokens: list[str], flags: dict[str, str]) -> tuple[list[str], dict[str, list[str]]]:
    """Split tokens into positionals and the values of each flag (`flags` maps a flag to its argument name)."""
    positional, values, current, given = [], {name: [] for name in flags.values()}, None, []
    for token in tokens:
        if token.startswith('-'):
            if token not in flags:
                raise UsageError(f"unknown option {token!r}; expected one of {', '.join(sorted(flags))}")
            current = flags[token]
            given.append(token)
        elif current is None:
            positional.append(token)
        else:
            values[current].append(token)
    empty = [flag for flag in given if not values[flags[flag]]]
    if empty:
        raise UsageError(f'{empty[0]} needs a value')
    return positional, values


def _one(values: list[str], flag: str) -> str | None:
    if len(values) > 1:
        raise UsageError(f'{flag} takes one value, got {len(values)}')
    return values[0] if values else None


def _expected_sha(values: list[str]) -> str | None:
    sha = _one(values, '--sha')
    if sha is not None and not _SHA.fullmatch(sha):
        raise UsageError(f'--sha {sha}: expected the whole commit id, 40 lowercase hexadecimal digits')
    return sha


def _runners(values: list[str], config: Config) -> tuple[str, ...]:
    unknown = [v for v in values if v not in config.runners]
    if unknown:
        raise UsageError(f"--on {unknown[0]}: unknown runner class; expected one of {', '.join(config.runners)}")
    return tuple(dict.fromkeys(values)) or (next(iter(config.runners)),)


def _bench(tokens: list[str], specs: list[OpSpec], config: Config) -> Command:
    ops, values = _options(tokens, _BENCH_OPTIONS)
    by_name = {spec.name: spec for spec in specs}
    for op in ops:
        if op not in by_name:
            known = ', '.join(by_name) or 'none declared'
            raise UsageError(f'unknown op {op!r}; expected one of {known}')
    for mode in values['modes']:
        if mode not in BENCH_MODES:
            raise UsageError(f"--modes {mode}: expected {' or '.join(BENCH_MODES)}")
    shapes = {name for spec in ([by_name[op] for op in ops] or specs) for name in spec.shapes}
    for shape in values['shapes']:
        if shape not in shapes:
            raise UsageError(f"--shapes {shape}: unknown shape; expected one of {', '.join(sorted(shapes))}")
    rounds = _one(values['rounds'], '--rounds') or '10'
    if not rounds.isdigit() or not 3 <= int(rounds) <= MAX_ROUNDS:
        raise UsageError(f'--rounds {rounds}: expected a whole number from 3 to {MAX_ROUNDS}')
    base = _one(values['base'], '--base')
    if base is not None and (not _REF.fullmatch(base) or '..' in base):
        raise UsageError(f'--base {base}: expected a branch, tag or commit name')
    args = {'ops': list(dict.fromkeys(ops)), 'modes': list(dict.fromkeys(values['modes'])),
            'shapes': list(dict.fromkeys(values['shapes'])), 'rounds': int(rounds), 'base': base,
            'sha': _expected_sha(values['sha'])}
    return Command('bench', args, _runners(values['on'], config))


def _test(tokens: list[str], config: Config) -> Command:
    tests, values = _options(tokens, _TEST_OPTIONS)
    for test in tests:
        if not _TEST.fullmatch(test) or '..' in test.split('::')[0].split('/'):
            raise UsageError(f'{test!r}: expected a test file, folder or node id inside the repository')
    expression = ' '.join(values['k']) or None
    if expression is not None and not _EXPRESSION.fullmatch(expression):
        raise UsageError('-k: expected a pytest keyword expression of letters, digits, _, -, ., spaces and parentheses')
    return Command('test', {'tests': list(dict.fromkeys(tests)), 'k': expression, 'sha': _expected_sha(values['sha'])},
                   _runners(values['on'], config))


def _tokens(line: str) -> list[str]:
    """The words of the command `line`, split as a shell would once its characters are checked."""
    line = line.strip()
    if len(line) > MAX_LINE:
        raise UsageError(f'the command line is {len(line)} characters long; at most {MAX_LINE} are read')
    if not _LINE.fullmatch(line):
        bad = next(c for c in line if not _LINE.fullmatch(c))
        raise UsageError(f'the character {bad!r} is not allowed in a command')
    try:
        tokens = shlex.split(line)
    except ValueError as error:
        raise UsageError(f'cannot split the command: {error}') from None
    if not tokens:
        raise UsageError("an empty command; expected /bench, /test or /mrbot help")
    return tokens


def parse(text: str, specs: list[OpSpec], config: Config) -> Command:
    """The command on the first line of `text`; UsageError when it is malformed or names anything unknown."""
    line, _, rest = text.strip().partition('\n')
    if rest.strip():
        raise UsageError('a command is one line; the next lines would not run, so put notes in another comment')
    tokens = _tokens(line)
    name, rest = tokens[0], tokens[1:]
    if name == '/mrbot':
        if rest != ['help']:
            raise UsageError(f"unknown command {' '.join(tokens)!r}; expected '/mrbot help'")
        return Command('help')
    if name == '/bench':
        return _bench(rest, specs, config)
    if name == '/test':
        return _test(rest, config)
    raise UsageError(f"unknown command {name!r}; expected /bench, /test or /mrbot help")


def from_json(kind: str, args: object, runner: str, specs: list[OpSpec], config: Config) -> Command:
    """The command an authorize step handed on (its `command` and `args` outputs), checked again by the same grammar,
    for one runner class."""
    keys = {'bench': {'ops', 'modes', 'shapes', 'rounds', 'base', 'sha'}, 'test': {'tests', 'k', 'sha'}}.get(kind)
    if keys is None or not isinstance(args, dict) or set(args) != keys:
        raise UsageError(f'expected bench or test with the arguments {sorted(keys or [])}, got {kind!r} with {args!r}')
    try:
        line = Command(kind, args, (runner,)).line()
    except (TypeError, KeyError) as error:
        raise UsageError(f'malformed arguments {args!r} ({error})') from None
    command = parse(line, specs, config)
    if command.args != args:
        raise UsageError(f'the arguments {args!r} do not survive parsing (got {command.args!r})')
    return command


@dataclass(frozen=True)
class Seal:
    """What makes a marker the bot's own on one pull or merge request: an HMAC of its kind and fields under the
    repository's signing key, bound to `scope` (the forge, repository and request number). Every workflow's token
    comments as the same account on GitHub, so a workflow that echoes PR text could write a marker that account
    carries; without the key it can write none that counts, nor carry one to another request."""

    key: bytes
    scope: str

    @classmethod
    def of(cls, key: bytes | None, forge: str, project: str, number: int) -> Seal | None:
        """The seal of request `number`, or None without a key (where the token's own user is the proof: GitLab)."""
        return cls(key, f'{forge}:{project}#{number}') if key else None

    def sign(self, kind: str, fields: dict) -> str:
        message = f"{self.scope}\n{json.dumps({'kind': kind, **fields}, sort_keys=True)}".encode()
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()

    def holds(self, kind: str, fields: dict, signature: object) -> bool:
        return isinstance(signature, str) and hmac.compare_digest(signature, self.sign(kind, fields))


def marker(kind: str, seal: Seal | None, **fields: object) -> str:
    """The hidden line a reply carries: `accepted` when a job is queued, `done` when its result is posted; signed
    with `seal` where there is one."""
    signed = {**fields, 'sig': seal.sign(kind, fields)} if seal is not None else fields
    return f'<!-- mrbot:{kind} {json.dumps(signed, sort_keys=True)} -->'


def markers(bodies: Iterable[str], kind: str, seal: Seal | None) -> list[dict]:
    """The fields of every distinct `kind` marker in `bodies`, oldest first; with `seal`, only those it signed (a
    copy of one counts once)."""
    found: dict[str, dict] = {}
    for body in bodies:
        # cut at every ' -->' and read only the last opener of each piece: linear in the body, where searching from
        # every opener for its end took minutes on a 1M-character body of openers (GitLab allows notes that long)
        for piece in body.split(' -->')[:-1]:
            start = piece.rfind(_MARKER_OPENER)
            match = _MARKER.fullmatch(piece, start) if start >= 0 else None
            if match is None or match.group(1) != kind:
                continue
            try:
                fields = json.loads(match.group(2))
            except ValueError:
                continue
            if not isinstance(fields, dict):
                continue
            signature = fields.pop('sig', None)
            if seal is None or seal.holds(kind, fields, signature):
                found.setdefault(json.dumps(fields, sort_keys=True), fields)
    return list(found.values())


# How far after a job's start another job answering a command at the same time may date its marker: both authorize
# jobs run on the forge's own machines within minutes of each other.
_AHEAD_S = 900


def _age_s(at: str, now: datetime.datetime) -> float | None:
    """How long before `now` a marker was made: 0 for one made up to `_AHEAD_S` after `now`, None for one made later
    (not the bot's), infinity for one without a date."""
    try:
        age = (now - datetime.datetime.fromisoformat(at)).total_seconds()
    except (TypeError, ValueError):
        return float('inf')
    return None if age < -_AHEAD_S else max(age, 0.0)


def permitted(user: str, association: str, permission: str, config: Config) -> Decision:
    """May `user` (with this author association and repository permission) give commands here at all?"""
    if association not in ASSOCIATIONS:
        return Decision(False, f'@{user} is not a member or collaborator of this repository ({association.lower()})')
    if permission not in WRITE_PERMISSIONS:
        return Decision(False, f'@{user} has {permission} permission; commands need write access')
    if config.command_users and user not in config.command_users:
        return Decision(False, f'@{user} is not on the command allow-list of this repository ([tool.mrbot] command-users)')
    return Decision(True)


def authorize(user: str, association: str, permission: str, bot_bodies: list[str], now: datetime.datetime,
              config: Config, jobs: int = 1, note: int | None = None, *, seal: Seal | None) -> Decision:
    """May `user` (with this author association and repository permission) start `jobs` GPU jobs on this PR now?

    `bot_bodies` are the bodies of the bot's own comments on the PR; their markers (signed with `seal`, where there
    is one) give the user's last accepted job (cooldown) and the jobs accepted but not yet done (queue), one per
    runner class. A marker dated up to `_AHEAD_S` after `now` is another job's that started after this one and replied
    first, and counts as made now; one dated later is not the bot's, and is ignored. The jobs GitLab runs for `note`,
    one per runner class, are one command: one of them starts no cooldown for the others.
    """
    decision = permitted(user, association, permission, config)
    if not decision.allowed:
        return decision
    accepted = [(m, age) for m in markers(bot_bodies, 'accepted', seal) if (age := _age_s(m.get('at'), now)) is not None]
    done = {str(m.get('run')) for m in markers(bot_bodies, 'done', seal)}
    mine = [age for m, age in accepted if m.get('user') == user and (note is None or m.get('note') != note)]
    if mine and min(mine) < config.command_cooldown_s:
        wait = int(config.command_cooldown_s - min(mine)) + 1
        return Decision(False, f'@{user} started a job {int(min(mine))} s ago; try again in {wait} s')
    queued = sum(len(m.get('runners') or [None]) for m, age in accepted if str(m.get('run')) not in done
                 and age < config.command_job_hours * 3600)
    if queued + jobs > config.command_queue_limit:
        return Decision(False, f'this PR has {queued} GPU jobs queued and this asks for {jobs} more (the limit is '
                               f'{config.command_queue_limit}); wait for their results')
    return Decision(True)


def capabilities(labels: Iterable[str]) -> set[str]:
    """The compute capabilities a runner class's labels name: `sm90` -> `sm_90`."""
    return {f'sm_{m.group(1)}' for label in labels if (m := re.fullmatch(r'sm_?(\d+)', label))}
