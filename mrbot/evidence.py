# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The Evidence record of `mrbot prepare`: every step's outcome in one versioned JSON document, and what it proves.

The PR body is rendered from this record's JSON form alone, so a repository's own template sees the same plain data,
and the checklist and the benchmark conclusion are computed here, where they can be tested, not in a template.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from mrbot.coverage import OpCoverage
from mrbot.records.bench import BenchRun
from mrbot.records.compiles import CompileEvidence
from mrbot.records.findings import CheckReport
from mrbot.records.loop_outcome import LoopOutcome
from mrbot.records.testruns import Selection, TestRun
from mrbot.signatures import BreakingChange
from mrbot.summary import ChangeSummary
from mrbot.words import plural

SCHEMA = 2
# Hardware classes whose numbers can back a performance claim (docs: sm_90 is the baseline, sm_100 preferred).
EVIDENCE_CLASSES = ('sm_90 baseline', 'sm_100 preferred')
# Statuses that let `mrbot prepare` exit 0: nothing found wrong, whatever could not run here said so.
PASSING = ('done', 'skipped', 'pending')


@dataclass(frozen=True)
class Step:
    """One stage of `mrbot prepare`: done, failed (it ran and found a problem), error (it could not run),
    skipped (by a flag or because nothing needed it), pending (needs a machine this is not: `command` runs it) or
    interrupted (Ctrl-C or SIGTERM stopped it)."""

    name: str
    status: str
    seconds: float = 0.0
    detail: str = ''
    command: str = ''

    def to_json(self) -> dict:
        return {**asdict(self), 'seconds': round(self.seconds, 2)}


@dataclass(frozen=True)
class Conclusion:
    """What the benchmark says of the change: improvement, neutral, trade-off, regression, pending, interrupted,
    gate-failed or not-evidence, in words, with every regressed row named."""

    kind: str
    text: str
    regressed: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {'kind': self.kind, 'text': self.text, 'regressed': list(self.regressed)}


@dataclass(frozen=True)
class ChecklistItem:
    """A box of the PR checklist: ticked (`done`) only when the record proves it; `why` says what it rests on."""

    item: str
    done: bool
    why: str

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Evidence:
    """Everything `mrbot prepare` found, filled in step by step: the records of its stages, None (or empty) for a stage
    that did not run, with `test_commands` the command that reruns each test file. `loops` are the outcomes (claim or
    no-go) of the touched ops' ended loops, as stored."""

    created: str
    device: str
    change: ChangeSummary
    check: CheckReport | None = None
    selection: Selection | None = None
    compile: CompileEvidence | None = None
    tests: TestRun | None = None
    test_commands: dict[str, str] = field(default_factory=dict)
    reached: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    bench_ops: list[str] = field(default_factory=list)
    coverage: list[OpCoverage] = field(default_factory=list)
    bench: BenchRun | None = None
    breaking: list[BreakingChange] | None = None
    steps: list[Step] = field(default_factory=list)
    conclusion: Conclusion | None = None
    checklist: list[ChecklistItem] = field(default_factory=list)
    pull_request: str | None = None
    loops: list[LoopOutcome] = field(default_factory=list)

    @property
    def failed_steps(self) -> list[str]:
        """The steps that found a problem, could not run or were interrupted."""
        return [step.name for step in self.steps if step.status not in PASSING]

    def step(self, name: str) -> Step | None:
        return next((step for step in self.steps if step.name == name), None)

    def to_json(self) -> dict:
        """The document the PR body's template reads."""
        tests = None if self.tests is None else {**self.tests.to_json(), 'commands': self.test_commands}
        out = {'schema': SCHEMA, 'created': self.created, 'device': self.device, 'change': self.change.to_json(),
               'check': self.check.to_json() if self.check else None,
               'selection': self.selection.to_json() if self.selection else None,
               'compile': self.compile.to_json() if self.compile else None, 'tests': tests,
               'reached': self.reached, 'ops': self.ops, 'bench_ops': self.bench_ops,
               'coverage': [c.to_json() for c in self.coverage],
               'bench': self.bench.to_json() if self.bench else None,
               'breaking': None if self.breaking is None else [b.to_json() for b in self.breaking],
               'steps': [step.to_json() for step in self.steps],
               'conclusion': self.conclusion.to_json() if self.conclusion else None,
               'checklist': [item.to_json() for item in self.checklist],
               'loops': [outcome.to_json() for outcome in self.loops]}
        if self.pull_request is not None:
            out['pull_request'] = self.pull_request
        return out


def conclusion(record: Evidence) -> Conclusion:
    """improvement / neutral / trade-off / regression / pending / interrupted / gate-failed / not-evidence, with every
    regressed row named."""
    bench = record.bench
    if not record.bench_ops:
        if not any(f.code for f in record.change.files):
            return Conclusion('neutral', 'neutral: no code changed (prose, comments, docstrings, error messages, layout or '
                                         'local names only)')
        return Conclusion('neutral', "neutral: no benchmarked op's code changed (none declared in [tool.mrbot.bench] "
                                     'reaches a changed source file)')
    if bench is None:
        step = record.step('bench')
        why = step.detail if step and step.detail else 'not run'
        command = f': `{step.command}`' if step and step.command else ''
        return Conclusion('pending', f'pending ({why}){command}')
    if bench.interrupted:
        return Conclusion('interrupted', f"no speed claim: interrupted after {plural(bench.rounds, 'round')}")
    if bench.gate.status == 'failed':
        return Conclusion('gate-failed', 'no speed claim: the correctness gate failed')
    if not bench.machine.evidence:
        return Conclusion('not-evidence', 'no speed claim: timed under the Triton interpreter, not on a GPU')
    slower = tuple(f'{r.op} {r.mode} {r.shape.name} ({r.ratio:.3f}x time)' for r in bench.rows if r.verdict == 'slower')
    faster = [r for r in bench.rows if r.verdict == 'faster']
    rows = len(bench.rows)
    if slower and faster:
        return Conclusion('trade-off', f"trade-off: {plural(len(faster), 'row')} faster, {len(slower)} slower", slower)
    if slower:
        return Conclusion('regression', f'regression: {len(slower)} of {plural(rows, "row")} slower', slower)
    if faster:
        return Conclusion('improvement', f'improvement: {len(faster)} of {plural(rows, "row")} faster, none slower')
    return Conclusion('neutral', 'neutral: no row is faster or slower beyond its minimum effect')


def _rules(record: Evidence) -> set[str]:
    findings = record.check.findings if record.check else ()
    return {f.rule for f in findings if f.severity == 'error'}


def checklist(record: Evidence) -> list[ChecklistItem]:
    """The PR checklist: each item is ticked only when the record proves it, and says what it rests on."""
    check_step, tests_step = record.step('check'), record.step('tests')
    checked = check_step is not None and check_step.status in ('done', 'failed')
    errors = _rules(record)
    tests, selection = record.tests, record.selection
    # the body lists every finding, warnings too: a box ticked beside a title warning would contradict it
    title = [f.message for f in (record.check.findings if record.check else ()) if f.rule == 'MR-TITLE']
    items = [
        ('Title is `[Tag] Summary`', checked and not title, title[0] if title else 'mrbot check (MR-TITLE)'),
        ('`mrbot check` reports no errors on the change', checked and not errors,
         f"{plural(len(errors), 'rule')} with errors" if errors else 'mrbot check'),
        ('Dependent tests pass', tests is not None and tests_step is not None and tests_step.status == 'done',
         f"{sum(f.passed for f in tests.files)} passed in {plural(len(tests.files), 'file')}, {tests.device}"
         if tests else tests_step.detail if tests_step else 'not run'),
        ('Every changed source file is reached by a test', selection is not None and not selection.unselected,
         'import graph' if selection else 'not selected'),
    ]
    compiled = record.compile
    if compiled and not compiled.reached:
        items.append(('No kernel reached, so none to compile', True, 'import graph'))
    elif compiled:
        # a target the kernel is not written for ('unavailable') is neither a failure nor a compile
        failing = [k.kernel.name for k in compiled.kernels if k.fails]
        unlaunched = [k.name for k in compiled.unlaunched]
        why = (f"{', '.join(failing)} fail or overrun shared memory" if failing else
               f"{', '.join(unlaunched)} launched by no test, so not compiled" if unlaunched else
               f"{plural(len(compiled.kernels), 'kernel')} in {plural(compiled.cells, 'compile')}, the Compiles for "
               'table')
        items.append((f"Kernels compile for {' and '.join(compiled.targets)}", not failing and not unlaunched, why))
    else:
        compile_step = record.step('compile')
        items.append(('Kernels compile for every GPU target', False, compile_step.detail if compile_step else 'not run'))
    if record.ops:
        coverage = record.coverage
        missing = [f"{c.op}: {', '.join(c.missing)}" for c in coverage if c.missing]
        items.append(('Tests exercise every coverage axis of the touched ops', bool(coverage) and not missing,
                      '; '.join(missing) if missing else ('coverage matrix' if coverage else 'tests not run')))
    bench = record.bench
    if record.bench_ops:
        proven = bench is not None and bench.machine.hardware_class in EVIDENCE_CLASSES and bench.gate.status == 'passed'
        items.append(('Before/after benchmark on sm_90 or newer, correctness gate green', proven,
                      f'{bench.machine.gpu}, gate {bench.gate.status}' if bench else 'pending'))
    else:
        items.append(("No benchmarked op's code changed, so no benchmark is needed", True,
                      'no op declared in [tool.mrbot.bench] reaches a changed source file'))
    breaking, breaking_step = record.breaking, record.step('breaking')
    items.append(('No public signature broken', breaking == [] and breaking_step is not None
                  and breaking_step.status == 'done',
                  f"{plural(len(breaking), 'breaking change')}" if breaking else 'signature diff of base and head'))
    items.append(('No profiler reports or tool attribution added', checked and not errors & {'MR-ARTIFACT', 'MR-ATTRIBUTION'},
                  'mrbot check (MR-ARTIFACT, MR-ATTRIBUTION)'))
    return [ChecklistItem(text, bool(done), why) for text, done, why in items]
