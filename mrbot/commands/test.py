# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot test`: the tests a change needs, listed with why, or run file by file; the table of the run and its record."""

from __future__ import annotations

import argparse
from pathlib import Path

from mrbot import git
from mrbot.commands.record_file import writable_file, write_record
from mrbot.compile.stage import warm_kernel_cache
from mrbot.progress import say
from mrbot.records import MrbotError
from mrbot.records.testruns import FileRun, Selection, TestRun, check_workers
from mrbot.repo.workspace import Workspace
from mrbot.selection import expand_paths, format_selection, select, select_change
from mrbot.stack import usable_cores
from mrbot.testing import (
    TestsInterrupted,
    check_timeout,
    device_label,
    execute_with_progress,
    finished_files,
    local_gpu,
    processes_per_test_file,
    test_targets,
    xdist_args,
)
from mrbot.words import plural


def format_run(run: TestRun) -> str:
    """The terminal summary of a test run: a row per file, each failure with its message, and the totals."""
    header = ('file', 'dispatch', 'passed', 'failed', 'crashed', 'skipped', 'flaky', 'seconds')
    rows = [(f.file, f.dispatch, str(f.passed), str(f.failed), str(len(f.crashed)), str(f.skipped), str(f.flaky),
             f'{f.duration:.1f}') for f in run.files]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    # Names align left, numbers right.
    lines = ['  '.join([*(c.ljust(w) for c, w in zip(row[:2], widths[:2], strict=True)),
                        *(c.rjust(w) for c, w in zip(row[2:], widths[2:], strict=True))]).rstrip()
             for row in [header, *rows]]
    for f in run.files:
        if f.note:
            lines.append(f'{f.file}: {f.note}')
        for label, tests in (('CRASHED', f.crashed), ('FAILED', f.failures)):
            for failure in tests:
                lines.append(f'{label} {failure.test}')
                lines.extend(f'    {line}' for line in failure.message.splitlines())
    totals = [sum(getattr(f, name) for f in run.files) for name in ('passed', 'failed', 'skipped', 'flaky')]
    crashed = sum(len(f.crashed) for f in run.files)
    crashes = f'{crashed} crashed ({sum(f.restarted for f in run.files)} passed after restart), ' if crashed else ''
    lines.append(f'{totals[0]} passed, {totals[1]} failed, {crashes}{totals[2]} skipped, {totals[3]} flaky '
                 f'in {plural(len(run.files), "file")} ({run.device})')
    return '\n'.join(lines) + '\n'


def _selection(args: argparse.Namespace, workspace: Workspace) -> Selection:
    root, config = workspace.root, workspace.config
    if args.paths:
        return select(workspace, expand_paths(root, Path.cwd(), args.paths))
    base, head = git.revisions(root, args.base, args.head, config.target_branches)
    return select_change(workspace, git.changeset(root, base, head, max_bytes=config.max_file_bytes))


def _check_paths(paths: list[str], root: Path) -> None:
    """Each path given exists, or is a file deleted since the last commit (which still names what imported it)."""
    missing = [path for path in paths if not (Path.cwd() / path).exists()]
    if not missing:
        return
    deleted = set(git.changed_paths(root, 'HEAD', None))
    for path in missing:
        target = (Path.cwd() / path).resolve()
        if not target.is_relative_to(root.resolve()) or target.relative_to(root.resolve()).as_posix() not in deleted:
            raise MrbotError(f'{path}: no such file or folder; expected files or folders of this repository, or files '
                             'deleted since the last commit')


def run(args: argparse.Namespace) -> int:
    """`mrbot test`: select the tests a change needs, then run them file by file, or only list them with --list."""
    check_timeout(args.timeout, '--timeout')
    if args.jobs < 0:
        raise MrbotError(f'--jobs must be 0 (one per CPU, or 1 on a GPU) or more, got {args.jobs}')
    check_workers(args.workers, '--workers')
    output = writable_file(args.json, '--json') if args.json else None
    workspace = Workspace.load(git.repo_root(Path.cwd()))
    root = workspace.root
    _check_paths(args.paths, root)
    selection = _selection(args, workspace)
    if args.list:
        listed = format_selection(selection, args.format)
        print(listed if args.format == 'json' else git.printable(listed), end='')
        return 0
    targets, smoke = test_targets(selection, workspace)
    if smoke:
        print(f'no test reaches {", ".join(selection.unselected)}; running the smoke set ({plural(len(targets), "target")})')
    if not targets:
        changed = len(selection.changed)
        print('no test to run: ' + ('the changed file is not' if changed == 1 else f'none of the {changed} changed files is')
              + ' Python that a test imports')
        return 0
    device = device_label()
    jobs = args.jobs or (1 if device.startswith('compiled') else usable_cores())
    workers = processes_per_test_file(args.workers, '--workers')
    modes = ['off', 'on'] if args.dispatch == 'both' else [args.dispatch]
    say(f"running {plural(len(targets), 'test target')} x {plural(len(modes), 'dispatch mode')}, {jobs} at a time"
        + (f', {workers} processes each' if workers > 1 else '') + f' ({device})', args.quiet)
    files: list[FileRun] = []
    gpu = local_gpu() if device.startswith('compiled') else None
    try:
        for mode in modes:
            if warmed := warm_kernel_cache(workspace, targets, gpu, mode):
                say(f'tests, dispatch {mode}: {warmed}', args.quiet)
            files += execute_with_progress(targets, root, jobs, args.timeout, mode, quiet=args.quiet,
                                           title=f'tests, dispatch {mode}', interpret=not device.startswith('compiled'),
                                           pytest_args=xdist_args(workers, '--workers'))
    except TestsInterrupted as stopped:
        files += stopped.files
        test_run = TestRun(device, tuple(files), selection, smoke)
        print(git.printable(format_run(test_run)), end='')
        if output is not None:
            write_record(output, test_run.to_json(), '--json')
        raise KeyboardInterrupt(finished_files(files) + (f'; their results are in {output}' if output else '')) from None
    test_run = TestRun(device, tuple(files), selection, smoke)
    print(git.printable(format_run(test_run)), end='')
    if output is not None:
        write_record(output, test_run.to_json(), '--json')
    return 0 if test_run.ok else 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('paths', nargs='*', help='changed files or folders (default: the change from --base to --head)')
    parser.add_argument('--base', help='base revision (default: merge base of HEAD with the target branch)')
    parser.add_argument('--head', help='head revision (default: the working tree)')
    parser.add_argument('--list', action='store_true', help='print the selected tests and why, run nothing')
    parser.add_argument('--format', choices=['text', 'json'], default='text', help='format of --list')
    parser.add_argument('-j', '--jobs', type=int, default=0, help='test files at once (default: CPUs, 1 with a GPU)')
    parser.add_argument('--workers', type=int, default=0,
                        help='processes per test file (pytest-xdist; default on a GPU: sized from the cores and GPU '
                             'memory, or MRBOT_TEST_WORKERS; without one: 1)')
    parser.add_argument('--timeout', type=float, default=1800.0, help='seconds per test file (default: 1800)')
    parser.add_argument('--dispatch', choices=['off', 'on', 'both', 'default'], default='off',
                        help='backend dispatch during the run: off (the Triton gate, default), on, both, default (env)')
    parser.add_argument('--json', help='write the TestRun evidence record to this file')
    parser.add_argument('-q', '--quiet', action='store_true', help='no progress on stderr, only the results')
