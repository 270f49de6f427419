# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The GPU job: run an authorized command on exactly the authorized commit and leave its result for the poster."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from mrbot import git
from mrbot.bench import stage as bench_stage
from mrbot.ci import grammar
from mrbot.ci.artifacts import MAX_TIMINGS, write_artifact
from mrbot.config import Config
from mrbot.progress import say
from mrbot.records import MrbotError
from mrbot.records.bench import BENCH_MODES, BenchRequest, BenchRun
from mrbot.records.testruns import TestRun
from mrbot.render import render
from mrbot.repo.ops import load_specs
from mrbot.repo.workspace import Workspace
from mrbot.selection import select_change
from mrbot.stack import require_kernel_stack
from mrbot.testing import (
    WORKERS_VARIABLE,
    device_label,
    execute,
    local_gpu,
    processes_per_test_file,
    shell_command,
    test_targets,
    xdist_args,
)


def _bench_result(workspace: Workspace, args: dict, base: str) -> tuple[BenchRun, str]:
    """The paired bench run of a `/bench` command, and the command line that reproduces it (rounds aside)."""
    argv = ['--op', *args['ops']] if args['ops'] else ['--from-diff']
    argv += ['--modes', *args['modes']] if args['modes'] else []
    argv += ['--shapes', *args['shapes']] if args['shapes'] else []
    request = BenchRequest(ops=tuple(args['ops']), from_diff=not args['ops'], base=base, rounds=args['rounds'],
                           modes=tuple(args['modes']) or BENCH_MODES, shapes=tuple(args['shapes']),
                           command=('mrbot', 'bench', *argv, '--base', base, '--rounds', str(args['rounds'])))
    return bench_stage.measure(request, workspace), ' '.join(['mrbot bench', *argv, '--base', base[:12]])


def _base_timings(run: BenchRun) -> list[dict]:
    """The base side's medians of a paired run, for the poster's history: the base branch's numbers, never the PR's."""
    timings = [{'op': row.op, 'mode': row.mode, 'shape': row.shape.name, 'median_ms': row.base_median_ms,
                'gpu': run.machine.gpu, 'evidence': row.evidence} for row in run.rows if row.base_median_ms]
    # the poster refuses an artifact with more, which would lose the result itself
    return timings[:MAX_TIMINGS]


def _test_result(root: Path, config: Config, args: dict, base: str) -> dict:
    if args['tests']:
        targets = list(args['tests'])
        selection = None
    else:
        workspace = Workspace(root, config)
        selection = select_change(workspace, git.changeset(root, base, 'HEAD', max_bytes=config.max_file_bytes))
        targets, _ = test_targets(selection, workspace)
    device = device_label()
    workers = xdist_args(processes_per_test_file(0, WORKERS_VARIABLE), WORKERS_VARIABLE)
    say(f"running {' '.join([*targets, *workers])} ({device})")
    files = execute(targets, root, 1, 3600.0, 'off', interpret=False,
                    pytest_args=(('-k', args['k']) if args['k'] else ()) + workers)
    run = TestRun(device, tuple(files), selection, False)
    return {**run.to_json(), 'commands': {f.file: shell_command(f, device) for f in files}}


def run_job(root: Path, config: Config, environ: Mapping[str, str], out: Path, targets: tuple[str, ...],
            run_url: str | None = None) -> int:
    """Run the authorized command of MRBOT_* on this checkout and leave its result comment in `out`; the base is the
    merge base with the first of `targets` the checkout has, unless the command names one; `run_url` links the run
    (default: the GitHub Actions run of the environment)."""
    missing = [v for v in ('MRBOT_COMMAND', 'MRBOT_ARGS', 'MRBOT_SHA', 'MRBOT_RUNNER', 'MRBOT_PR') if not environ.get(v)]
    if missing:
        raise MrbotError(f"{', '.join(missing)} not set: mrbot action run takes the outputs of the authorize step")
    require_kernel_stack('mrbot action run')
    runner, sha = environ['MRBOT_RUNNER'], environ['MRBOT_SHA']
    if runner not in config.runners:
        raise MrbotError(f"MRBOT_RUNNER={runner}: unknown runner class; expected one of {', '.join(config.runners)}")
    try:
        command = grammar.from_json(environ['MRBOT_COMMAND'], json.loads(environ['MRBOT_ARGS']), runner,
                                    load_specs(root, config), config)
        pr = int(environ['MRBOT_PR'])
    except (ValueError, grammar.UsageError) as error:
        raise MrbotError(f'MRBOT_COMMAND/MRBOT_ARGS/MRBOT_PR: not an authorized command ({error})') from None
    server = environ.get('GITHUB_SERVER_URL', 'https://github.com')
    result = {'kind': command.kind, 'runner': runner, 'pr': pr, 'sha': sha, 'base': '', 'line': command.line(),
              'requested_by': environ.get('MRBOT_USER', ''), 'error': '', 'bench': None, 'tests': None,
              'bench_command': '',
              'run_url': run_url or f"{server}/{environ.get('GITHUB_REPOSITORY', '')}/actions/runs/"
                                    f"{environ.get('GITHUB_RUN_ID', '')}"}
    code, measured = 0, {}
    try:
        head = git.resolve(root, 'HEAD')
        if head != sha:
            raise MrbotError(f'the checkout is at {head[:12]}, but the command was authorized for {sha[:12]}')
        wanted = grammar.capabilities(config.runners[runner])
        gpu = local_gpu()
        have = gpu.target if gpu else ''
        if wanted and have not in wanted:
            raise MrbotError(f"this runner has {have or 'no GPU'}, but class {runner} needs {' or '.join(sorted(wanted))}: "
                             "fix the runner's labels")
        base_ref = command.args.get('base')
        # the merge base with the first of these that the checkout has (fetch-depth: 0 gives it all)
        result['base'] = base = git.default_base(root, [f'origin/{base_ref}', base_ref] if base_ref
                                                 else targets)
        if command.kind == 'bench':
            run, result['bench_command'] = _bench_result(Workspace(root, config), command.args, base)
            result['bench'], measured = run.to_json(), {'base': base, 'timings': _base_timings(run)}
        else:
            result['tests'] = _test_result(root, config, command.args, base)
    except MrbotError as error:
        result['error'], code = str(error), 1
    body = render('command_result.md.j2', root / config.templates if config.templates else None, r=result)
    write_artifact(out, {'schema': 1, 'kind': 'result', 'pr': pr, 'sha': sha, 'run': environ.get('GITHUB_RUN_ID', ''),
                         'purpose': f'{command.kind}-{runner}', 'body': body, 'check': None, **measured})
    print(body, end='')
    if result['error']:
        print(f"mrbot action run: error: {result['error']}", file=sys.stderr)
    return code
