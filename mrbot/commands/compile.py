# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot compile`: every kernel a change reaches, compiled on this CPU for each target, with the findings."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from mrbot import git
from mrbot.compile.stage import DEFAULT_TIMEOUT, compile_change
from mrbot.config import Config
from mrbot.output import format_report
from mrbot.records import MrbotError
from mrbot.records.change import ChangeSet
from mrbot.records.findings import CheckReport
from mrbot.repo.workspace import Workspace
from mrbot.rules import all_rules, check_rule_ids, is_compile_rule
from mrbot.selection import expand_paths
from mrbot.stack import require_kernel_stack
from mrbot.testing import local_gpu
from mrbot.words import plural

if TYPE_CHECKING:
    from mrbot.compile.matrix import CompileMatrix


def compile_rules() -> list:
    return [rule for rule in all_rules() if is_compile_rule(rule)]


def _size(value: int | None) -> str:
    return '-' if value is None else f'{value / 1024:.0f} KiB' if value >= 1024 else f'{value} B'


def format_table(matrix: CompileMatrix) -> str:
    """A row per kernel, a column per target: ok with the largest shared memory and spills, what failed, or not
    available where the kernel's module declares targets without this one."""
    from mrbot.compile.matrix import summarize

    header = ['kernel', 'where', *(t.name for t in matrix.targets)]
    rows = []
    for launch, per_target in summarize(matrix):
        entries = []
        for target in matrix.targets:
            summary = per_target[target.name]
            if summary.verdict == 'unavailable':
                entries.append('not available')
            elif summary.failed:
                entries.append(f'{summary.failed}/{summary.cells} fail')
            else:
                over = f' ({summary.over_limit} over {_size(summary.shared_limit)})' if summary.over_limit else ''
                spills = '' if summary.max_spills is None else f', spills {summary.max_spills:,} B'
                entries.append(f'ok {_size(summary.max_shared)}{over}{spills}')
        rows.append([launch.kernel, f'{launch.path}:{launch.line}', *entries])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ['  '.join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    return '\n'.join(lines) + '\n'


def unavailable_lines(matrix: CompileMatrix) -> list[str]:
    """One line per kernel and target it is not written for: `not available for sm_100: kernel (path:line): ...`."""
    from mrbot.compile.matrix import summarize

    declared = dict(matrix.declared)
    return [f"not available for {name}: {launch.kernel} ({launch.path}:{launch.line}), whose module declares "
            f"TARGETS = {declared.get(launch.path, ())!r}" for launch, per_target in summarize(matrix)
            for name, summary in per_target.items() if summary.verdict == 'unavailable']


def describe_run(matrix: CompileMatrix) -> str:
    """One line: what was compiled, how much came from the cache, and how long it took."""
    capture = matrix.capture
    kernels = len({(c.launch.path, c.launch.kernel) for c in matrix.cells})
    targets = ', '.join(t.name for t in matrix.targets)
    unavailable = len(matrix.cells) - len(matrix.compiles)
    return (f"{plural(kernels, 'kernel')} x {plural(len(matrix.targets), 'target')} ({targets}), "
            f"{plural(len(matrix.cells), 'cell')} with Triton {matrix.triton}: {matrix.compiled} compiled, "
            f"{len(matrix.compiles) - matrix.compiled} cached"
            f"{f', {unavailable} not available' if unavailable else ''}, in {matrix.seconds:.1f} s "
            f"({plural(matrix.jobs, 'job')}); "
            f"launches from {plural(len(capture.tests), 'test file')} and "
            f"{plural(len(capture.bench_rows), 'benchmark row')}")


def _changed(args: argparse.Namespace, root: Path, config: Config) -> list[str] | None:
    if args.all:
        if args.paths:
            raise MrbotError('--all compiles every kernel: give either paths or --all, not both')
        return None
    if args.paths:
        return expand_paths(root, Path.cwd(), args.paths)
    base, _ = git.revisions(root, args.base, None, config.target_branches)
    return git.changed_paths(root, base, None)


def run(args: argparse.Namespace) -> int:
    require_kernel_stack('mrbot compile')
    workspace = Workspace.load(git.repo_root(Path.cwd()))
    check_rule_ids(workspace.config)
    root, config = workspace.root, workspace.config
    changed = _changed(args, root, config)
    gpu = local_gpu() if args.depth == 'binary' else None
    matrix = compile_change(workspace, changed, args.targets, args.depth, args.jobs, args.timeout,
                            gpu_arch=gpu.arch if gpu else None)
    if not matrix.reached:
        print('mrbot compile: no kernel is reached by the change; nothing to compile')
        return 0
    from mrbot.check import evaluate

    rules = compile_rules()
    report = evaluate(ChangeSet(root, '', None, ()), workspace, rules, matrix)
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(matrix.to_json(), indent=1) + '\n', encoding='utf-8')
        except OSError as error:
            raise MrbotError(f'--json {args.json}: cannot write it ({error.strerror})') from None
    print(_format(report, matrix, args.format, rules), end='')
    return 1 if report.has_errors else 0


def _format(report: CheckReport, matrix: CompileMatrix, fmt: str, rules: list) -> str:
    if fmt == 'json':
        return json.dumps({**report.to_json(), 'compile': matrix.to_json()}, indent=2) + '\n'
    if fmt != 'text':
        return format_report(report, fmt, rules)
    lines = [format_table(matrix).rstrip('\n') if matrix.cells else 'no kernel the change reaches was launched by a test or '
             'benchmark row']
    lines += [f'{f.path}:{f.line}: {f.severity} {f.rule} {f.message}' for f in report.findings]
    lines += unavailable_lines(matrix)
    lines += [f'capture: {problem}' for problem in matrix.capture.problems]
    counts = {s: sum(f.severity == s for f in report.findings) for s in ('error', 'warning', 'note')}
    lines.append(f"{describe_run(matrix)}; {counts['error']} errors, {counts['warning']} warnings, {counts['note']} notes")
    return '\n'.join(lines) + '\n'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('paths', nargs='*', help='changed files or folders (default: the change from --base to the '
                                                 'working tree)')
    parser.add_argument('--all', action='store_true', help='compile every kernel of the repository')
    parser.add_argument('--base', help='base revision (default: merge base of HEAD with the target branch)')
    parser.add_argument('--targets', help='comma-separated targets, e.g. sm_90,sm_100 (default: [tool.mrbot] '
                                          'compile-targets)')
    # the depths are checked where compiling starts: naming them here would load Triton for `mrbot --help`
    parser.add_argument('--depth', default='auto',
                        help='how far to compile every launch for every target: ttgir (errors and shared memory), '
                             'llir (the whole lowering to LLVM), sass (also registers and spills, through ptxas), '
                             "binary (Triton's whole compile, into its cache: warms it for a GPU of the target, and "
                             'beside such a GPU the tests see it while their launches are captured); auto '
                             '(default): every config for the first target, the benchmarked ones through ptxas, and '
                             "each specialization's first config for the other targets, all through ttgir; quick "
                             "(mrbot check's): what the cache holds, and of the rest each code path's smallest and "
                             'largest blocks through ttgir')
    parser.add_argument('-j', '--jobs', type=int, default=0, help='compile processes (default: one per CPU)')
    parser.add_argument('--timeout', type=float, default=DEFAULT_TIMEOUT,
                        help=f'seconds for one compile, and for each capture run (default: {DEFAULT_TIMEOUT:g})')
    parser.add_argument('--format', choices=['text', 'json', 'markdown', 'sarif', 'github'], default='text')
    parser.add_argument('--json', help='also write the whole matrix, every cell, to this file')
