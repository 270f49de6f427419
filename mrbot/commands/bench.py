# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot bench`: time the ops a change touches on base and head, interleaved, and judge the difference.

`mrbot bench compare BASE.json HEAD.json` compares two single-ref runs with the same statistics.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mrbot import git
from mrbot.bench.specs import format_specs
from mrbot.bench.stage import DEFAULT_MIN_EFFECT, BenchInterrupted, compare, format_table, measure
from mrbot.commands.record_file import writable_file, write_record
from mrbot.progress import say
from mrbot.records import MrbotError
from mrbot.records.bench import BENCH_DISPATCH, BENCH_MODES, BenchRequest, BenchRun, check_min_effect, parse_environment
from mrbot.repo.workspace import Workspace
from mrbot.store import Store
from mrbot.words import plural


def request_of(args: argparse.Namespace, command: tuple[str, ...]) -> BenchRequest:
    """The request `mrbot bench`'s options make; `command` is the command line to record with the numbers."""
    return BenchRequest(ops=tuple(args.op or ()), from_diff=args.from_diff, base=args.base, aa=args.aa,
                        modes=tuple(args.modes), shapes=tuple(args.shapes or ()), rounds=args.rounds,
                        min_effect=args.min_effect, eager=args.eager, warmup_ms=args.warmup_ms, rep_ms=args.rep_ms,
                        dispatch=args.dispatch, environment=parse_environment(args.env), gate=not args.no_gate,
                        gate_k=args.gate_k, gate_workers=args.gate_workers, gate_timeout=args.gate_timeout,
                        ncu=args.ncu, command=command)


def _bench(args: argparse.Namespace) -> int:
    workspace = Workspace.load(git.repo_root(Path.cwd()))
    if args.list:
        print(format_specs(workspace.specs), end='')
        return 0
    request = request_of(args, tuple(sys.argv))
    output = writable_file(args.json, '--json') if args.json else None
    try:
        run = measure(request, workspace, quiet=args.quiet)
    except BenchInterrupted as stopped:
        if stopped.run is None:
            raise KeyboardInterrupt(f'{stopped}; the gate {stopped.gate.status}') from None
        print(format_table(stopped.run), end='')
        if output is not None:
            write_record(output, stopped.run.to_json(), '--json')
        raise KeyboardInterrupt(f'{stopped}' + (f'; their record is in {output}' if output else '')) from None
    print(format_table(run), end='')
    if output is not None:
        write_record(output, run.to_json(), '--json')
    if args.record:
        with Store.open(workspace.root) as store:
            added = store.add_bench(run)
        say(f'recorded {plural(added, "median")} in {store.path}', args.quiet)
    return 1 if run.gate.status == 'failed' else 0


def _compare(args: argparse.Namespace) -> int:
    """`mrbot bench compare BASE.json HEAD.json`: two single-ref records of one GPU, compared."""
    if len(args.action) != 3:
        raise MrbotError('usage: mrbot bench compare BASE.json HEAD.json')
    check_min_effect(args.min_effect)
    paths = args.action[1:]
    base, head = (BenchRun.load(Path(path)) for path in paths)
    for path, run in zip(paths, (base, head), strict=True):
        if run.paired:
            raise MrbotError(f'{path}: a paired record (base and head); expected a single-ref one (mrbot bench --json '
                             'without --base)')
    # a ratio across two GPUs measures the hardware, not the change: no verdict could be read from it
    if base.machine.name != head.machine.name:
        raise MrbotError(f'{paths[0]} was timed on {base.machine.name}, {paths[1]} on {head.machine.name}: a before/after '
                         'comparison needs both on the same GPU model; time both there')
    result = compare(base, head, args.min_effect)
    if args.format == 'json':
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(format_table(result), end='')
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action:
        if args.action[0] != 'compare':
            raise MrbotError(f"unknown bench action '{args.action[0]}': expected `mrbot bench compare BASE.json HEAD.json`")
        return _compare(args)
    return _bench(args)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('action', nargs='*', help='`compare BASE.json HEAD.json` to compare two single-ref runs')
    parser.add_argument('--list', action='store_true', help='list the benchmarkable ops and their shapes')
    parser.add_argument('--op', nargs='+', help='ops to time (default: all, or those the change touches with --from-diff)')
    parser.add_argument('--from-diff', action='store_true', help='time the ops the change from --base touches')
    parser.add_argument('--base', help='compare the working tree with this revision, checked out in a worktree')
    parser.add_argument('--aa', action='store_true', help='time the base against itself to measure runner noise')
    parser.add_argument('--modes', nargs='+', choices=BENCH_MODES, default=list(BENCH_MODES))
    parser.add_argument('--shapes', nargs='+', help='shape names (default: each op\'s default shapes)')
    parser.add_argument('--rounds', type=int, default=10,
                        help='interleaved rounds (default: 10; at least 3 with --base or --aa)')
    parser.add_argument('--min-effect', type=float, default=DEFAULT_MIN_EFFECT,
                        help='smallest relative change a verdict may call faster or slower (default: 0.02)')
    parser.add_argument('--eager', action='store_true', help='time eager calls instead of CUDA graph replays')
    parser.add_argument('--warmup-ms', type=float, default=25.0)
    parser.add_argument('--rep-ms', type=float, default=100.0)
    parser.add_argument('--dispatch', choices=BENCH_DISPATCH, default='off', help='backend dispatch while timing')
    parser.add_argument('--env', action='append', default=[], metavar='NAME=VALUE',
                        help="a variable for the gate and both timed sides, e.g. a backend's switch (repeatable)")
    parser.add_argument('--no-gate', action='store_true', help='skip the correctness gate (a faster verdict is then withheld)')
    parser.add_argument('--gate-k', help='run only the gate tests matching this -k expression (a partial gate)')
    parser.add_argument('--gate-workers', type=int, default=0,
                        help='processes for the gate tests (pytest-xdist; they share the GPU before timing starts; '
                             'default: sized from the cores and GPU memory, or MRBOT_TEST_WORKERS)')
    parser.add_argument('--gate-timeout', type=float, default=1800.0)
    parser.add_argument('--format', choices=['text', 'json'], default='text', help='output of `compare`')
    parser.add_argument('--ncu', metavar='KERNEL_REGEX',
                        help='profile the matching kernels of the first row with Nsight Compute (report under profile/)')
    parser.add_argument('--json', help='write the run record to this file')
    parser.add_argument('--record', action='store_true',
                        help='append the medians to the history under .mrbot/ (`mrbot history` shows them)')
    parser.add_argument('-q', '--quiet', action='store_true', help='no progress on stderr, only the results')
