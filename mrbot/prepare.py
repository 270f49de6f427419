# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot prepare`: check the change, run its dependent tests, benchmark its kernels, and write the PR body.

The stages run in order, each a function of the records of the stages before it that returns its own; a stage that
fails or cannot run here is recorded as such, with the command that runs it elsewhere, and the others go on. One
Evidence record (`.mrbot/evidence.json`) is made of their records. The body
(`.mrbot/pr_body.md`) is rendered from that record alone. `--open`/`--update` then put it on the forge.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import fnmatch
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from mrbot import coverage, git
from mrbot.bench.specs import touched_ops
from mrbot.bench.stage import BenchInterrupted, format_table, measure
from mrbot.check import evaluate
from mrbot.compile.stage import compile_change, warm_kernel_cache
from mrbot.config import Config, state_dir
from mrbot.coverage import OpCoverage, read_observations
from mrbot.evidence import Evidence, Step, checklist, conclusion
from mrbot.progress import say
from mrbot.records import MrbotError
from mrbot.records.bench import PAIRED_MIN_ROUNDS, BenchRequest, BenchRun
from mrbot.records.change import ChangedFile, ChangeSet
from mrbot.records.findings import CheckReport
from mrbot.records.loop_outcome import LoopOutcome
from mrbot.records.testruns import Selection, TestRun, check_workers
from mrbot.render import check_template, render
from mrbot.repo.workspace import Workspace
from mrbot.rules import all_rules, check_rule_ids
from mrbot.selection import dependency_chains, select_change
from mrbot.signatures import BreakingChange, breaking_changes, exported, reached_ops
from mrbot.stack import usable_cores
from mrbot.store import Store
from mrbot.summary import ChangeSummary, FileSummary, area, choose_title, line_counts, test_changes
from mrbot.testing import (
    TestsInterrupted,
    check_timeout,
    device_label,
    execute_with_progress,
    local_gpu,
    plugin_environment,
    processes_per_test_file,
    shell_command,
    test_targets,
    xdist_args,
)
from mrbot.words import plural

if TYPE_CHECKING:
    from mrbot.compile.matrix import CompileMatrix
    from mrbot.forges import Forge

T = TypeVar('T')

EVIDENCE_FILE = 'evidence.json'
BODY_FILE = 'pr_body.md'
# The module name the coverage plugin is loaded under in test processes.
PLUGIN = 'mrbot_coverage_plugin'
# Where a body cut to fit the forge says the whole text is.
FULL_BODY = '.mrbot/pr_body.md of `mrbot prepare` in the author\'s checkout'


def _changes_code(file: ChangedFile, config: Config) -> bool:
    """Whether a changed file can change what the code does: its code changed, or code reads it (a prose file
    configured in `data-files` is data)."""
    return file.changes_code or any(fnmatch.fnmatchcase(file.path, pattern) for pattern in config.data_files)


def _change_summary(change: ChangeSet, workspace: Workspace) -> ChangeSummary:
    config = workspace.config
    files = tuple(FileSummary(file.path, file.status, area(file.path), *line_counts(file), _changes_code(file, config))
                  for file in change.files)
    sources = [f.path for f in change.files if config.is_source(f.path) and f.path.endswith('.py')]
    dependents = [f.path for f in change.files if f.path.endswith('.py') and not config.is_source(f.path)]
    chains = dependency_chains(workspace.graph, sources, dependents) if sources and dependents else {}
    return ChangeSummary(change.base, change.head or 'WORKTREE', git.current_branch(workspace.root), change.title,
                         change.title_source, tuple((c.sha, c.subject) for c in change.commits), files,
                         test_changes(change, config), tuple(sorted(chains.items())))


def _coverage_environment(root: Path, callables: dict[str, str], folder: Path) -> dict[str, str]:
    """Variables that load the coverage plugin into a test process, watching `callables` and writing to `folder`."""
    return {**plugin_environment(state_dir(root, 'plugins'), coverage, PLUGIN),
            coverage.OPS_VARIABLE: json.dumps(callables), coverage.DIR_VARIABLE: str(folder)}


class PrepareInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped `mrbot prepare`: `record` holds the finished steps, what the interrupted one had
    finished (tests, rounds) and that step as interrupted; every process the steps started has ended."""

    def __init__(self, record: Evidence) -> None:
        stopped = record.steps[-1]
        super().__init__(f'{stopped.name}: {stopped.detail}' if stopped.detail else stopped.name)
        self.record = record


@dataclasses.dataclass(frozen=True)
class PrepareOptions:
    """What `mrbot prepare` was asked, however it was asked (its command line, `mrbot demo`)."""

    title: str | None = None
    no_compile: bool = False
    no_tests: bool = False
    no_bench: bool = False
    bench_rounds: int = 10
    test_workers: int = 0
    test_timeout: float = 1800.0
    quiet: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PrepareOptions:
        return cls(**{option.name: getattr(args, option.name) for option in dataclasses.fields(cls)})


class Skipped(Exception):
    """A stage that cannot run or need not: why, and the command that runs it elsewhere; `pending` where it waits
    for a machine this is not."""

    def __init__(self, reason: str, command: str = '', status: str = 'skipped') -> None:
        super().__init__(reason)
        self.reason, self.command, self.status = reason, command, status


class StageInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a stage that had finished part of its work: `partial` is its record so far."""

    def __init__(self, message: str, partial: object) -> None:
        super().__init__(message)
        self.partial = partial


@dataclasses.dataclass(frozen=True)
class Staged(Generic[T]):
    """A stage's record, and how its step went."""

    value: T
    status: str
    detail: str = ''
    command: str = ''


@dataclasses.dataclass(frozen=True)
class Reach:
    """What a change reaches: the tests that select it; the public ops whose implementation it changes (`reached`);
    the declared ops whose code or tests it changes (`ops`), of which those whose code it changes are timed
    (`bench_ops`); and each touched op's public callable, whose coverage by the tests is watched."""

    selection: Selection
    reached: tuple[str, ...]
    ops: tuple[str, ...]
    bench_ops: tuple[str, ...]
    callables: tuple[tuple[str, str], ...]


@dataclasses.dataclass(frozen=True)
class Tested:
    """The dependent tests' run, and how much of each touched op's interface they reached."""

    run: TestRun
    coverage: tuple[OpCoverage, ...] = ()


class _Steps:
    """Runs the stages in order, times them, shows progress, and keeps a stage's failure from losing the others."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.done: list[Step] = []
        self.partial: dict[str, object] = {}
        self.total = total
        self.quiet = quiet

    def run(self, name: str, stage: Callable[..., Staged[T]], *inputs: object) -> T | None:
        """The stage's record, or None where it was skipped or could not run."""
        say(f'[{len(self.done) + 1}/{self.total}] {name} ...', self.quiet)
        start = time.monotonic()
        value = None
        try:
            staged = stage(*inputs)
            value, step = staged.value, Step(name, staged.status, detail=staged.detail, command=staged.command)
        except Skipped as skipped:
            step = Step(name, skipped.status, detail=skipped.reason, command=skipped.command)
        except KeyboardInterrupt as error:
            if isinstance(error, StageInterrupted):
                self.partial[name] = error.partial
            self.done.append(Step(name, 'interrupted', time.monotonic() - start, str(error) or 'stopped before it ended'))
            raise
        except MrbotError as error:
            step = Step(name, 'error', detail=str(error))
        except Exception as error:  # noqa: BLE001 - a bug in one stage must not cost the evidence of the others
            traceback.print_exc()
            step = Step(name, 'error', detail=f'{type(error).__name__}: {error}')
        step = dataclasses.replace(step, seconds=time.monotonic() - start)
        shown = f' ({step.detail})' if step.detail else ''
        say(f'[{len(self.done) + 1}/{self.total}] {name}: {step.status} in {step.seconds:.1f} s{shown}', self.quiet)
        self.done.append(step)
        return value


def select_stage(workspace: Workspace, change: ChangeSet, public: set[tuple[str, str]]) -> Staged[Reach]:
    config = workspace.config
    changed = [f.path for f in change.files]
    code_changed = [f.path for f in change.files if _changes_code(f, config)]
    selection = select_change(workspace, change)
    touched = touched_ops(workspace, changed)
    # a change to an op's tests alone changes what they prove, not its speed, and a comment or docstring changes
    # neither: only changed code is timed
    timed = touched_ops(workspace, code_changed, gates=False)
    reach = Reach(selection, tuple(reached_ops(workspace.graph, public, code_changed, config.source_roots)),
                  tuple(spec.name for spec in touched), tuple(spec.name for spec in timed),
                  tuple((spec.name, spec.callable) for spec in touched))
    return Staged(reach, 'done', f"{plural(len(selection.tests), 'test file')}; ops reached: "
                                 f"{', '.join(reach.reached) or 'none'}")


def compile_stage(workspace: Workspace, change: ChangeSet, reach: Reach | None,
                  options: PrepareOptions) -> Staged[CompileMatrix]:
    if options.no_compile:
        raise Skipped('--no-compile', 'mrbot compile')
    # the select stage's tests and timed ops: neither is found a second time
    selection = reach.selection if reach is not None else None
    timed = [spec for spec in workspace.specs if spec.name in reach.bench_ops] if reach is not None else None
    matrix = compile_change(workspace, [f.path for f in change.files], selection=selection, timed=timed)
    if not matrix.reached:
        return Staged(matrix, 'skipped', 'the change reaches no kernel')
    from mrbot.compile.matrix import summarize

    kernels = summarize(matrix)
    failing = [launch.kernel for launch, targets in kernels
               if any(target.verdict in ('error', 'over') for target in targets.values())]
    return Staged(matrix, 'failed' if failing else 'done',
                  f"{plural(len(kernels), 'kernel')} for {', '.join(t.name for t in matrix.targets)}: "
                  + (f'{len(failing)} fail or overrun shared memory' if failing else 'all compile and fit'),
                  'mrbot compile')


def check_stage(workspace: Workspace, change: ChangeSet, matrix: CompileMatrix | None, reach: Reach | None,
                ) -> Staged[CheckReport]:
    report = evaluate(change, workspace, all_rules(), matrix, reach.selection if reach else None)
    errors = sum(f.severity == 'error' for f in report.findings)
    return Staged(report, 'failed' if errors else 'done',
                  f"{plural(len(report.findings), 'finding')}, {plural(errors, 'error')}" if report.findings
                  else 'no findings')


def test_stage(workspace: Workspace, reach: Reach | None, options: PrepareOptions, device: str, base: str,
               ) -> Staged[Tested]:
    root = workspace.root
    if options.no_tests:
        raise Skipped('--no-tests', f'mrbot test --base {base[:12]}')
    if reach is None:
        raise Skipped('no selection')
    targets, smoke = test_targets(reach.selection, workspace)
    if not targets:
        raise Skipped('no test reaches the change')
    coverage_dir = state_dir(root, 'coverage')
    for stale in coverage_dir.glob('*.jsonl'):
        stale.unlink()
    callables = dict(reach.callables)
    watch = _coverage_environment(root, callables, coverage_dir) if callables else {}
    on_gpu = device.startswith('compiled')
    # on a GPU one file at a time, its tests spread over processes; on CPU the files side by side, one process each
    # unless asked otherwise
    workers = processes_per_test_file(options.test_workers, '--test-workers')
    if warmed := warm_kernel_cache(workspace, targets, local_gpu() if on_gpu else None, 'off'):
        say(f'tests: {warmed}', options.quiet)
    try:
        files = execute_with_progress(targets, root, 1 if on_gpu else usable_cores(), options.test_timeout, 'off',
                                      quiet=options.quiet, interpret=not on_gpu,
                                      pytest_args=xdist_args(workers, '--test-workers'), environment=watch)
    except TestsInterrupted as stopped:
        raise StageInterrupted(str(stopped), Tested(TestRun(device, tuple(stopped.files), reach.selection, smoke))) \
            from None
    run = TestRun(device, tuple(files), reach.selection, smoke)
    observed = tuple(read_observations(coverage_dir, reach.ops)) if callables else ()
    passed, failed = sum(f.passed for f in files), sum(f.failed for f in files)
    crashed = sum(len(f.crashed) for f in files)
    crashes = f', {crashed} crashed' if crashed else ''
    return Staged(Tested(run, observed), 'done' if run.ok else 'failed',
                  f"{passed} passed, {failed} failed{crashes} in {plural(len(files), 'file')} ({device})")


def breaking_stage(workspace: Workspace, change: ChangeSet, public: set[tuple[str, str]],
                   ) -> Staged[tuple[BreakingChange, ...]]:
    changes = tuple(breaking_changes(change, public, list(workspace.graph.index)))
    return Staged(changes, 'done', plural(len(changes), 'breaking change') if changes else 'none')


def bench_stage(workspace: Workspace, reach: Reach | None, tested: Tested | None, options: PrepareOptions,
                device: str, base: str) -> Staged[BenchRun]:
    if reach is None or not reach.bench_ops:
        raise Skipped("no benchmarked op's code changed")
    ops = reach.bench_ops
    command = f"mrbot bench --op {' '.join(ops)} --base {base[:12]}"
    if options.no_bench:
        raise Skipped('--no-bench', command)
    if not device.startswith('compiled'):
        raise Skipped(f"no GPU here; or comment `/bench {' '.join(ops)}` on the PR", command, 'pending')
    if tested is not None and not tested.run.ok:
        raise Skipped('the dependent tests failed', command)
    request = BenchRequest(ops=ops, base=base, rounds=options.bench_rounds,
                           command=('mrbot', 'bench', '--op', *ops, '--base', base[:12], '--rounds',
                                    str(options.bench_rounds)))
    try:
        run = measure(request, workspace, tested.run.files if tested else (), quiet=options.quiet)
    except BenchInterrupted as stopped:
        raise StageInterrupted(str(stopped), stopped.run) from None
    if not options.quiet:
        print(format_table(run), end='', file=sys.stderr)
    return Staged(run, 'failed' if run.gate.status == 'failed' else 'done', command=command)


def prepare(options: PrepareOptions, workspace: Workspace, base: str) -> Evidence | None:
    """Every stage of `mrbot prepare` on the change from `base` to the working tree of `workspace`; returns the
    Evidence record, or None when there is no change. Ctrl-C or SIGTERM raises PrepareInterrupted with the record so
    far."""
    root, config = workspace.root, workspace.config
    change = git.changeset(root, base, None, max_bytes=config.max_file_bytes)
    if not change.files:
        return None
    title, title_source = choose_title(change, config, options.title)
    change = dataclasses.replace(change, title=title, title_source=title_source)
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')
    summary = _change_summary(change, workspace)
    device = device_label()
    public = exported(workspace.graph, change, config.public_roots)
    steps = _Steps(6, options.quiet)
    reach = matrix = report = tested = breaking = bench = None
    try:
        reach = steps.run('select', select_stage, workspace, change, public)
        # read before the long stages: a store that cannot be read stops the run before it costs anything
        loops = loop_outcomes(root, list(reach.ops)) if reach is not None else []
        # the check reads the compilation matrix, so the kernels compile first
        matrix = steps.run('compile', compile_stage, workspace, change, reach, options)
        report = steps.run('check', check_stage, workspace, change, matrix, reach)
        tested = steps.run('tests', test_stage, workspace, reach, options, device, base)
        breaking = steps.run('breaking', breaking_stage, workspace, change, public)
        bench = steps.run('bench', bench_stage, workspace, reach, tested, options, device, base)
    except KeyboardInterrupt:
        tested = tested or steps.partial.get('tests')
        bench = bench or steps.partial.get('bench')
        raise PrepareInterrupted(_evidence(created, device, summary, reach, matrix, report, tested, breaking, bench,
                                           steps.done)) from None
    record = _evidence(created, device, summary, reach, matrix, report, tested, breaking, bench, steps.done)
    record.loops = loops
    return record


def _evidence(created: str, device: str, change: ChangeSummary, reach: Reach | None, matrix: CompileMatrix | None,
              report: CheckReport | None, tested: Tested | None, breaking: tuple[BreakingChange, ...] | None,
              bench: BenchRun | None, steps: list[Step]) -> Evidence:
    """The Evidence record of the stages' records, with the conclusion and the checklist they support."""
    record = Evidence(created, device, change, check=report, bench=bench, steps=steps,
                      breaking=list(breaking) if breaking is not None else None)
    if matrix is not None:
        from mrbot.compile.matrix import evidence_of

        record.compile = evidence_of(matrix)
    if reach is not None:
        record.selection = reach.selection
        record.reached, record.ops, record.bench_ops = list(reach.reached), list(reach.ops), list(reach.bench_ops)
    if tested is not None:
        record.tests = tested.run
        record.test_commands = {f.file: shell_command(f, device) for f in tested.run.files}
        record.coverage = list(tested.coverage)
    record.conclusion = conclusion(record)
    record.checklist = checklist(record)
    return record


def loop_outcomes(root: Path, ops: list[str]) -> list[LoopOutcome]:
    """The claim or no-go of the last ended loop of each touched op whose baseline this change builds on."""
    store = Store.open(root, create=False)
    if store is None:
        return []
    with store:
        # the touched ops' loops only: another op's stored outcome is not read, so it cannot stop this change
        ended = [row for op in ops for row in store.loops(op) if row.state != 'open']
    latest = {row.op: row for row in ended if git.is_ancestor(root, row.baseline_sha, 'HEAD')}
    return [row.outcome for row in latest.values()]


def _templates(root: Path, config: Config) -> Path | None:
    """The repository's own template folder, where it has one; an error where the setting names none."""
    overrides = root / config.templates if config.templates else None
    if overrides is not None and not overrides.is_dir():
        raise MrbotError(f'[tool.mrbot] templates = "{config.templates}": no such folder in the repository')
    return overrides


def render_body(record: Evidence, root: Path, config: Config) -> str:
    return render('pr_body.md.j2', _templates(root, config), e=record.to_json())


@dataclasses.dataclass(frozen=True)
class _Target:
    """Where `--open`/`--update` will put the body: the forge of the remote and the pushed branch."""

    forge: Forge
    branch: str


def _publishing_target(args: argparse.Namespace, root: Path) -> _Target:
    """The forge and branch to publish to, checked before any step runs (the tests alone may take minutes): a clean
    checked-out branch, a remote of a known forge, a token, and the branch pushed there."""
    from mrbot import forges

    if args.head:
        raise MrbotError('--open and --update publish the checked-out branch; --head names another revision')
    branch = git.current_branch(root)
    if branch is None:
        raise MrbotError('HEAD is detached: check out the branch to open the pull request from')
    if git.changed_paths(root, 'HEAD', None):
        raise MrbotError('the working tree has uncommitted changes, which the pull request would not contain: '
                         'commit and push them, then run mrbot prepare --open again')
    kind, project, _ = forges.parse_remote(git.remote_url(root, args.remote))
    kind = args.forge or kind
    forge = forges.connect(kind, project, url=args.gitlab_url if kind == 'gitlab' else None)
    if not forge.branch_exists(branch):
        raise MrbotError(f"branch '{branch}' is not on {args.remote}: push it first (git push -u {args.remote} {branch}); "
                         'mrbot prepare --open pushes nothing itself')
    return _Target(forge, branch)


def _publish(args: argparse.Namespace, target: _Target, title: str, body: str) -> str:
    """Create or update the PR/MR of the branch with the body; returns its URL. Pushes nothing."""
    from mrbot import forges

    forge, branch = target.forge, target.branch
    body = forges.fit_body(body, forge.body_limit, FULL_BODY)
    existing = forge.find_pull(branch)
    if existing is not None:
        return forge.update_pull(existing.number, title=title, body=body).url
    if args.update:
        raise MrbotError(f"no open pull request has '{branch}' as its head: use --open to create one")
    return forge.create_pull(branch, args.target, title, body, draft=not args.ready).url


def _summary(record: Evidence, body_path: Path, evidence_path: Path) -> str:
    lines = [f'title: {record.change.title}']
    lines += [f'  {s.name:<9} {s.status:<8} {s.detail}' + (f' -> {s.command}' if s.command and s.status != 'done' else '')
              for s in record.steps]
    ticked = sum(item.done for item in record.checklist)
    lines.append(f'benchmark: {record.conclusion.text}')
    lines.append(f'checklist: {ticked} of {len(record.checklist)} ticked')
    lines.append(f'PR body: {body_path}')
    lines.append(f'evidence: {evidence_path}')
    return '\n'.join(lines) + '\n'


def _save(record: Evidence, path: Path) -> None:
    path.write_text(json.dumps(record.to_json(), indent=2) + '\n', encoding='utf-8')


def run(args: argparse.Namespace) -> int:
    root = git.repo_root(Path.cwd())
    if args.bench_rounds < PAIRED_MIN_ROUNDS:
        raise MrbotError(f'--bench-rounds must be at least {PAIRED_MIN_ROUNDS} (a confidence interval needs them), got '
                         f'{args.bench_rounds}')
    check_timeout(args.test_timeout, '--test-timeout')
    check_workers(args.test_workers, '--test-workers')
    target = _publishing_target(args, root) if args.open or args.update else None
    workspace = Workspace.load(root)
    base, head = git.revisions(root, args.base, args.head, workspace.config.target_branches)
    if head is not None:
        # a clean checkout of the revision, so that tests, compilation and the import graph see what it holds
        workspace = Workspace.load(git.worktree(root, head))
    check_rule_ids(workspace.config)
    evidence_path, body_path = state_dir(root) / EVIDENCE_FILE, state_dir(root) / BODY_FILE
    # a template that does not parse is refused before the steps, not after them
    check_template('pr_body.md.j2', _templates(root, workspace.config))
    try:
        record = prepare(PrepareOptions.from_args(args), workspace, base)
    except PrepareInterrupted as stopped:
        if head is not None:
            stopped.record.change = dataclasses.replace(stopped.record.change, head=head)
        _save(stopped.record, evidence_path)
        raise KeyboardInterrupt(f'{stopped}; the evidence so far is in {evidence_path}') from None
    if record is None:
        print(f'mrbot prepare: nothing to prepare: {args.head or "the working tree"} does not differ from the base '
              f'({args.base or " or ".join(workspace.config.target_branches)}); no PR body written')
        return 0
    if head is not None:
        record.change = dataclasses.replace(record.change, head=head)
    # saved first: a template that fails on a field loses no evidence
    _save(record, evidence_path)
    try:
        # a file name git holds as bytes that are not UTF-8 is shown escaped: the body is UTF-8 text, posted as it is
        body = git.printable(render_body(record, root, workspace.config))
    except MrbotError as error:
        raise MrbotError(f'{error} (the evidence is saved in {evidence_path}; no body written)') from None
    body_path.write_text(body, encoding='utf-8')
    if target is not None:
        try:
            record.pull_request = _publish(args, target, record.change.title, body)
        except MrbotError as error:
            raise MrbotError(f'{error} (the evidence is saved in {evidence_path}, the body in {body_path})') from None
        _save(record, evidence_path)
    if args.format == 'json':
        print(json.dumps(record.to_json(), indent=2))
    else:
        print(git.printable(_summary(record, body_path, evidence_path)), end='')
        if record.pull_request:
            print(f'pull request: {record.pull_request}')
    return 1 if record.failed_steps else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--base', help='base revision (default: merge base of HEAD with the target branch)')
    parser.add_argument('--head', help='prepare this revision, checked out in .mrbot/worktrees/ (default: the working '
                                       'tree)')
    parser.add_argument('--title', help='the PR title (default: the first commit subject, tagged from the paths)')
    parser.add_argument('--no-tests', action='store_true', help='do not run the dependent tests')
    parser.add_argument('--no-compile', action='store_true',
                        help='do not compile the kernels the change reaches for the GPU targets (see mrbot compile)')
    parser.add_argument('--no-bench', action='store_true', help='do not benchmark, even on a GPU')
    parser.add_argument('--bench-rounds', type=int, default=10, help='interleaved rounds of the benchmark (default 10)')
    parser.add_argument('--test-workers', type=int, default=0,
                        help='processes per test file on a GPU (pytest-xdist; default: sized from the cores and GPU '
                             'memory, or MRBOT_TEST_WORKERS)')
    parser.add_argument('--test-timeout', type=float, default=1800.0, help='seconds per test file (default: 1800)')
    parser.add_argument('--format', choices=['text', 'json'], default='text', help='the terminal summary')
    publish = parser.add_mutually_exclusive_group()
    publish.add_argument('--open', action='store_true',
                         help='create the PR/MR of this branch (draft) or update it; the branch must be pushed')
    publish.add_argument('--update', action='store_true', help='update the existing PR/MR of this branch')
    parser.add_argument('--ready', action='store_true', help='with --open: create it ready for review, not as a draft')
    parser.add_argument('--remote', default='origin', help='the git remote whose forge hosts the PR (default: origin)')
    parser.add_argument('--forge', choices=['github', 'gitlab'], help='the forge, when the remote URL does not say')
    parser.add_argument('--gitlab-url', help='a self-hosted GitLab (default: CI_SERVER_URL, else https://gitlab.com)')
    parser.add_argument('--target', default='main', help='the branch the PR/MR merges into (default: main)')
    parser.add_argument('-q', '--quiet', action='store_true', help='no progress on stderr, only the summary')
