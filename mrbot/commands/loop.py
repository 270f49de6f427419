# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot loop`: the optimization loop of one op, recorded try by try.

    mrbot loop start --op OP [--shapes ...] [--modes ...] [--rounds N]   freeze the contract, time the baseline
    mrbot loop try [--note TEXT] [--commit REV]                         one candidate, gated, then timed
    mrbot loop status                                                   the tries as a leaderboard
    mrbot loop promote TRY                                              re-measure a win, write the claim
    mrbot loop no-go --bound TEXT                                       end without a win, write the no-go
    mrbot loop claim                                                    print how the last loop ended
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mrbot import git
from mrbot.bench.stage import DEFAULT_MIN_EFFECT, format_table
from mrbot.loop import protocol
from mrbot.loop.claim import markdown
from mrbot.loop.records import COUNTED, Loop, Plan, Try
from mrbot.records import MrbotError
from mrbot.records.bench import (
    BENCH_DISPATCH,
    BENCH_MODES,
    PAIRED_MIN_ROUNDS,
    check_min_effect,
    parse_environment,
)
from mrbot.records.testruns import check_workers
from mrbot.store import Store
from mrbot.testing import xdist_args
from mrbot.words import plural


def _per_shape(attempt: Try) -> str:
    if attempt.run is None:
        return '; '.join(map(str, attempt.reasons))
    return ', '.join(f'{row.mode} {row.shape.name} {row.verdict}' for row in attempt.run.rows)


def leaderboard(loop: Loop, tries: list[Try]) -> str:
    """The tries of `loop` whose numbers count first, fastest first; then the rest in order."""
    # a held try's speed-up is what is in doubt: it ranks with the refused and red ones, not above the wins
    ranked = sorted(tries, key=lambda t: (not (t.speedup and t.verdict in COUNTED), -(t.speedup or 0), t.number))
    lines = [f'loop {loop.id} of {loop.plan.op} ({loop.state}), baseline {loop.baseline_sha[:12]}, '
             f"{plural(len(tries), 'try', 'tries')}",
             f"{'try':>4} {'commit':<12} {'verdict':<8} {'speed-up':>9} {'gate':<8} note / per shape"]
    for attempt in ranked:
        speed = f'{attempt.speedup:.3f}x' if attempt.speedup is not None else '-'
        lines.append(f'{attempt.number:>4} {attempt.sha[:12]:<12} {attempt.verdict:<8} {speed:>9} {attempt.gate:<8} '
                     f"{attempt.note or '-'}: {_per_shape(attempt)}")
    return git.printable('\n'.join(lines)) + '\n'


def _plan(args: argparse.Namespace) -> Plan:
    if args.rounds < PAIRED_MIN_ROUNDS:
        raise MrbotError(f'--rounds must be at least {PAIRED_MIN_ROUNDS} (a confidence interval needs them), got '
                         f'{args.rounds}')
    check_min_effect(args.min_effect)
    check_workers(args.gate_workers, '--gate-workers')
    xdist_args(max(args.gate_workers, 1), '--gate-workers')
    return Plan(args.op, tuple(args.shapes or ()), tuple(args.modes), args.rounds, args.min_effect, args.gate_workers,
                args.dispatch, parse_environment(args.env))


def _ended(store: Store, op: str | None) -> Loop:
    ended = [Loop.from_row(row) for row in store.loops(op) if row.state != 'open']
    if not ended:
        raise MrbotError(f"no loop{f' of {op}' if op else ''} has ended yet: `mrbot loop promote TRY` or "
                         '`mrbot loop no-go --bound TEXT` ends one')
    return ended[-1]


def _shown(store: Store, op: str | None) -> Loop:
    """The open loop, or when none is open the loop that ended last: its leaderboard stays readable after the end."""
    loops = [Loop.from_row(row) for row in store.loops(op)]
    if not loops or any(loop.state == 'open' for loop in loops):
        return protocol.current_loop(store, op)
    return loops[-1]


def run(args: argparse.Namespace) -> int:
    root = git.repo_root(Path.cwd())
    command = ('mrbot', 'loop', *sys.argv[2:]) if sys.argv[1:2] == ['loop'] else ('mrbot', 'loop', args.action)
    with Store.open(root) as store:
        if args.action == 'start':
            loop, baseline = protocol.start(root, store, _plan(args), command, args.quiet)
            print(format_table(baseline), end='')
            print(f'loop {loop.id} of {loop.plan.op} started at {loop.baseline_sha[:12]}: '
                  f'{plural(len(loop.contract.files), "file")} and '
                  f'{plural(len(loop.contract.functions), "comparison function")} frozen '
                  f"({', '.join([*loop.contract.files, *loop.contract.functions])}); next: change the kernel, then "
                  '`mrbot loop try --note TEXT`')
            return 0
        if args.action == 'claim':
            print(markdown(_ended(store, args.op).outcome, None), end='')
            return 0
        if args.action == 'status':
            loop = _shown(store, args.op)
            tries = [Try.from_row(row) for row in store.tries(loop.id)]
            if args.format == 'json':
                print(json.dumps({'loop': loop.id, 'op': loop.plan.op, 'state': loop.state,
                                  'baseline_sha': loop.baseline_sha,
                                  'tries': [{'number': t.number, 'sha': t.sha, 'verdict': t.verdict,
                                             'speedup': t.speedup, 'gate': t.gate, 'note': t.note,
                                             'reasons': [r.to_json() for r in t.reasons]} for t in tries]}, indent=2))
            else:
                print(leaderboard(loop, tries), end='')
            return 0
        loop = protocol.current_loop(store, args.op)
        if args.action == 'try':
            attempt = protocol.attempt(root, store, loop, args.commit, args.note, command, args.quiet)
            if attempt.run is not None:
                print(format_table(attempt.run), end='')
            speed = f', {attempt.speedup:.3f}x geomean' if attempt.speedup is not None else ''
            print(git.printable(f'try {attempt.number} ({attempt.sha[:12]}): {attempt.verdict}{speed}'))
            for reason in attempt.reasons:
                print(git.printable(f'  {reason}'))
            return 0 if attempt.verdict not in ('refused', 'red', 'held') else 1
        if args.action == 'promote':
            _, outcome = protocol.promote(root, store, loop, args.number, command, args.quiet)
        else:
            outcome = protocol.give_up(store, loop, args.bound)
        print(markdown(outcome, None), end='')
        return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest='action', required=True, metavar='ACTION')
    start = actions.add_parser('start', help='freeze the contract of an op at HEAD and time the baseline')
    start.add_argument('--op', required=True, help='the op (`mrbot bench --list` lists them)')
    start.add_argument('--shapes', nargs='+', help="shape names (default: the op's default shapes)")
    start.add_argument('--modes', nargs='+', choices=BENCH_MODES, default=list(BENCH_MODES))
    start.add_argument('--rounds', type=int, default=10, help='interleaved rounds of every measurement (default: 10)')
    start.add_argument('--min-effect', type=float, default=DEFAULT_MIN_EFFECT,
                       help='smallest relative change a verdict may call faster or slower (default: 0.02)')
    start.add_argument('--gate-workers', type=int, default=0,
                       help='processes for the full gate of every try (pytest-xdist; they share the GPU before timing; '
                            'default: sized at each measurement from the cores and GPU memory, or MRBOT_TEST_WORKERS)')
    start.add_argument('--dispatch', choices=BENCH_DISPATCH, default='off',
                       help='backend dispatch for the gate and the timing of every measurement (default: off)')
    start.add_argument('--env', action='append', default=[], metavar='NAME=VALUE',
                       help="a variable for the gate and the timing of every measurement, e.g. a backend's switch")
    attempt = actions.add_parser('try', help='gate and time the working tree (or a commit) against the baseline')
    attempt.add_argument('--note', default='', help='what this candidate changes, in a few words')
    attempt.add_argument('--commit', help='this commit instead of the working tree')
    status = actions.add_parser('status', help='the tries as a leaderboard')
    status.add_argument('--format', choices=['text', 'json'], default='text')
    promote = actions.add_parser('promote', help='re-measure a faster try in a fresh run and write the claim')
    promote.add_argument('number', type=int, metavar='TRY', help="the try's number (`mrbot loop status`)")
    no_go = actions.add_parser('no-go', help='end the loop without a win and write the no-go record')
    no_go.add_argument('--bound', required=True, help='what bounds the op, in words (e.g. "latency-bound: ...")')
    actions.add_parser('claim', help='print how the last ended loop ended (claim or no-go) as markdown')
    for action in actions.choices.values():
        if action is not start:
            action.add_argument('--op', help='the op whose loop this is, when loops of several ops are open')
        action.add_argument('-q', '--quiet', action='store_true', help='no progress on stderr')
