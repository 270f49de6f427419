# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The steps of an optimization loop: start it, try a candidate, promote a win or end with a no-go.

Every candidate is a commit (the working tree is committed under refs/mrbot/, no branch moves) and runs from its own
checkout, so a try can be re-measured and reproduced from its sha, and editing the working tree while it runs changes
nothing. A try is refused before anything runs when it breaks the frozen contract or a gaming rule; it is red when a
kernel does not compile or the full gate fails; only then do its numbers count.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from mrbot import git
from mrbot.bench.stage import PLAUSIBLE_SPEEDUP, BenchInterrupted, measure
from mrbot.check import evaluate
from mrbot.loop.claim import claim, no_go
from mrbot.loop.contract import freeze
from mrbot.loop.records import FROZEN, IMPLAUSIBLE, INTERRUPTED, NOT_REPEATED, Loop, Plan, Reason, Try
from mrbot.progress import say
from mrbot.records import MrbotError
from mrbot.records.bench import BenchRun, Gate
from mrbot.records.change import ChangeSet
from mrbot.records.loop_outcome import Claim, NoGo
from mrbot.repo.workspace import Workspace
from mrbot.rules import all_rules, check_rule_ids
from mrbot.store import Store

if TYPE_CHECKING:
    from mrbot.compile.matrix import CompileMatrix

# The rules a candidate's diff must pass: the gate's own (tolerance, cases, precision) and the gaming rules.
GAMING_RULES = ('GATE002', 'GATE003', 'GATE004', 'GAME')
# A diff longer than this is stored cut, with a line that says so.
MAX_DIFF_CHARS = 200_000


def _ref(loop_id: int, name: str) -> str:
    return f'refs/mrbot/loops/{loop_id}/{name}'


def current_loop(store: Store, op: str | None) -> Loop:
    """The open loop of `op`, or the only open loop when `op` is None."""
    open_loops = [Loop.from_row(row) for row in store.loops(op) if row.state == 'open']
    if not open_loops:
        raise MrbotError(f"no open loop{f' of {op}' if op else ''}: start one with `mrbot loop start --op OP`")
    if len(open_loops) > 1:
        ops = ', '.join(loop.plan.op for loop in open_loops)
        raise MrbotError(f'several loops are open ({ops}): name one with --op')
    return open_loops[0]


def start(root: Path, store: Store, plan: Plan, command: tuple[str, ...], quiet: bool) -> tuple[Loop, BenchRun]:
    """Freeze the contract of `plan.op` at HEAD, time the baseline once (its full gate first), and store the loop."""
    if git.changed_paths(root, 'HEAD', None):
        raise MrbotError('the working tree has uncommitted changes: the baseline is a commit; commit or stash them, then '
                         'start the loop')
    baseline_sha = git.resolve(root, 'HEAD')
    tree = git.pristine_worktree(root, baseline_sha)
    workspace = Workspace.load(tree)
    spec = next((s for s in workspace.specs if s.name == plan.op), None)
    if spec is None:
        known = ', '.join(s.name for s in workspace.specs) or 'none'
        raise MrbotError(f'--op {plan.op}: not a benchmarkable op; declared ops: {known}')
    unknown = [name for name in plan.shapes if name not in spec.shapes]
    if unknown:
        raise MrbotError(f"--shapes {' '.join(unknown)}: {plan.op} has no such shape; it has {', '.join(spec.shapes)}")
    contract = freeze(tree, spec, workspace.config)
    say(f'loop: contract frozen at {baseline_sha[:12]}: {len(contract.files)} files, '
        f'{len(contract.functions)} comparison functions; timing the baseline', quiet)
    baseline = measure(plan.request(None, command), workspace, quiet=quiet, home=root)
    if baseline.gate.status == 'failed':
        failing = '; '.join(f'{f.test}: {f.first_line}' for f in baseline.gate.failures[:3])
        raise MrbotError(f"the baseline's gate fails ({failing}): a loop starts from a green baseline; fix it first")
    loop_id = store.add_loop(plan.op, baseline_sha, contract.to_json(), plan.to_json())
    git.keep(root, _ref(loop_id, 'baseline'), baseline_sha)
    store.set_baseline(loop_id, baseline, 'baseline')
    return Loop.from_row(store.loops(plan.op)[-1]), baseline


def _diff(root: Path, base: str, sha: str) -> str:
    text = git.run_git(root, 'diff', '--text', base, sha).decode('utf-8', 'replace')
    return text if len(text) <= MAX_DIFF_CHARS else text[:MAX_DIFF_CHARS] + '\n[diff cut: longer than 200,000 characters]\n'


def _findings(change: ChangeSet, workspace: Workspace, prefixes: tuple[str, ...], matrix: CompileMatrix | None = None,
              ) -> list[Reason]:
    """The errors that the rules whose ids start with one of `prefixes` find in the candidate's change."""
    rules = [r for r in all_rules() if r.id.startswith(prefixes)]
    return [Reason(f.rule, f.path, f.line, f.message) for f in evaluate(change, workspace, rules, matrix).findings
            if f.severity == 'error']


def _gate_failures(gate: Gate) -> list[Reason]:
    return [Reason('gate', f.test, 0, f.first_line) for f in gate.failures] or [Reason('gate', '', 0, 'the gate failed')]


def verdict(run: BenchRun) -> tuple[str, list[Reason]]:
    """A timed try's verdict: red on a failed gate, held above the plausible speed-up, else the rows' judgement."""
    if run.gate.status == 'failed':
        return 'red', _gate_failures(run.gate)
    implausible = [row for row in run.rows if row.ratio and row.ratio < 1 / PLAUSIBLE_SPEEDUP]
    if implausible:
        return 'held', [Reason(IMPLAUSIBLE, '', 0, f'{row.mode} {row.shape.name} is {1 / row.ratio:.1f}x faster, '
                                                  f'above {PLAUSIBLE_SPEEDUP:g}x: review for a skipped computation')
                        for row in implausible]
    verdicts = {row.verdict for row in run.rows}
    if 'faster' in verdicts and 'slower' in verdicts:
        return 'mixed', []
    for kind in ('faster', 'slower'):
        if kind in verdicts:
            return kind, []
    return ('same' if verdicts == {'same'} else 'noisy'), []


def attempt(root: Path, store: Store, loop: Loop, commit: str | None, note: str, command: tuple[str, ...],
            quiet: bool) -> Try:
    """One try of `loop`: the working tree (or `commit`) refused, red, held or timed against the baseline, stored."""
    sha = git.resolve(root, commit) if commit else git.snapshot(root, f'mrbot loop {loop.id}: candidate')
    if git.same_tree(root, sha, loop.baseline_sha):
        raise MrbotError('the candidate is the baseline itself: change the kernel first (a try is one change)')
    tree = git.pristine_worktree(root, sha)
    diff = _diff(root, loop.baseline_sha, sha)
    reasons = [Reason(FROZEN, b.path, b.line, f'{b.what}: the loop froze it at {loop.baseline_sha[:12]}')
               for b in loop.contract.breaches(tree, git.pristine_worktree(root, loop.baseline_sha))]
    workspace = Workspace.load(tree)
    check_rule_ids(workspace.config)
    # the candidate's diff read as a performance change, so that the gate's and the gaming rules all apply
    change = git.changeset(root, loop.baseline_sha, sha, title=f'[Perf] loop {loop.id}', perf=True,
                           max_bytes=workspace.config.max_file_bytes)
    # a frozen file's own changes are judged too: a loosened tolerance there is named by its rule and line
    reasons += _findings(change, workspace, GAMING_RULES)
    run, verdict_of_try = None, 'refused'
    if not reasons:
        from mrbot.compile.stage import compile_change

        # the caches are the checkout's: a try of the same files, or of files beside them, compiles no cell twice
        matrix = compile_change(workspace, [f.path for f in change.files], quiet=quiet, home=root)
        reasons, verdict_of_try = _findings(change, workspace, ('CMP',), matrix), 'red'
    if not reasons:
        try:
            run = measure(loop.plan.request(loop.baseline_sha, command), workspace, quiet=quiet, home=root,
                          passed_gate=_passed_gate(root, store, loop, sha))
        except BenchInterrupted as stopped:
            # kept in the record with its gate; tried again, it compiles nothing the stopped try compiled (the sides'
            # caches are kept by their files) and runs no gate its files passed on this device
            if stopped.gate.status == 'failed':
                outcome, why = 'red', _gate_failures(stopped.gate)
            else:
                outcome, why = 'interrupted', [Reason(INTERRUPTED, '', 0, f'the gate {stopped.gate.status}, then the '
                                                      f'timing stopped: {stopped}; `mrbot loop try` on the same files '
                                                      f'(or `--commit {sha[:12]}`) tries it again')]
            kept = _keep(root, store, loop, sha, note, diff, outcome, why, stopped.run, stopped.gate)
            raise KeyboardInterrupt(f'{stopped}; kept as try {kept.number} ({outcome})') from None
        verdict_of_try, reasons = verdict(run)
    return _keep(root, store, loop, sha, note, diff, verdict_of_try, reasons, run)


def _passed_gate(root: Path, store: Store, loop: Loop, sha: str) -> Gate | None:
    """The gate an earlier try of `loop` with the same files as `sha` passed: a try stopped after its gate, tried
    again, or the try a promotion re-measures."""
    for attempt in reversed([Try.from_row(row) for row in store.tries(loop.id)]):
        if attempt.gate == 'passed' and git.same_tree(root, attempt.sha, sha):
            return attempt.gate_result
    return None


def _keep(root: Path, store: Store, loop: Loop, sha: str, note: str, diff: str, verdict_of_try: str,
          reasons: list[Reason], run: BenchRun | None, gate: Gate | None = None) -> Try:
    """Store a try of `loop` and keep its commit under the loop's refs."""
    number = store.add_try(loop.id, sha, note, diff, verdict_of_try, [r.to_json() for r in reasons], run, gate)
    git.keep(root, _ref(loop.id, f'try-{number}'), sha)
    return Try.from_row(store.tries(loop.id)[number - 1])


def promote(root: Path, store: Store, loop: Loop, number: int, command: tuple[str, ...], quiet: bool) -> tuple[Try, Claim]:
    """Re-measure try `number` in a fresh run; when it wins again, end the loop with its claim. The re-measure is
    stored as a try of its own either way."""
    tries = [Try.from_row(row) for row in store.tries(loop.id)]
    chosen = next((t for t in tries if t.number == number), None)
    if chosen is None:
        raise MrbotError(f"loop {loop.id} has no try {number}; its tries are {', '.join(str(t.number) for t in tries)}"
                         if tries else f'loop {loop.id} has no tries yet: `mrbot loop try` first')
    if chosen.verdict != 'faster':
        raise MrbotError(f'try {number} is {chosen.verdict}: only a try that was faster with a green gate can be '
                         'promoted')
    say(f'loop: re-measuring try {number} ({chosen.sha[:12]}) against the baseline in a fresh run', quiet)
    workspace = Workspace.load(git.pristine_worktree(root, chosen.sha))
    run = measure(loop.plan.request(loop.baseline_sha, command), workspace, quiet=quiet, home=root,
                  passed_gate=_passed_gate(root, store, loop, chosen.sha))
    again, reasons = verdict(run)
    if again != 'faster' and not reasons:
        reasons = [Reason(NOT_REPEATED, '', 0, f'the fresh run of try {number} is {again}, not faster')]
    note = f're-measure of try {number} for promotion'
    store.add_try(loop.id, chosen.sha, note, chosen.diff, again, [r.to_json() for r in reasons], run)
    remeasured = Try.from_row(store.tries(loop.id)[-1])
    if again != 'faster':
        raise MrbotError(f'try {number} did not win again ({remeasured.verdict}: '
                         f"{'; '.join(map(str, reasons))}); it is stored as try {remeasured.number}, and the loop "
                         'stays open')
    outcome = claim(loop, replace(remeasured, note=chosen.note), number, tries)
    store.end_loop(loop.id, 'promoted', outcome)
    return remeasured, outcome


def give_up(store: Store, loop: Loop, bound: str) -> NoGo:
    """End `loop` without a win: the no-go record of its baseline, attempts and the named bound."""
    if not bound.strip():
        raise MrbotError('--bound is empty: a no-go names what bounds the op (e.g. "latency-bound: one chain of '
                         'dependent steps per chunk")')
    outcome = no_go(loop, [Try.from_row(row) for row in store.tries(loop.id)], bound.strip())
    store.end_loop(loop.id, 'no-go', outcome)
    return outcome
