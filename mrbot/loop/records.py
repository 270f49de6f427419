# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The records of an optimization loop: its plan, the loop itself, each try and why a try did not count."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from mrbot.bench import stats
from mrbot.loop.contract import Contract
from mrbot.records.bench import BENCH_DISPATCH, BenchRequest, BenchRun, Gate, parse_environment
from mrbot.records.loop_outcome import LoopOutcome
from mrbot.records.reading import JsonObject
from mrbot.store import FILE, LoopRow, TryRow

# What a try came to: refused before running (frozen contract, gaming rule), red (compile or gate), interrupted (its
# timing stopped), held for review (an implausible speed-up), or the bench's judgement across the timed rows.
TRY_VERDICTS = ('refused', 'red', 'interrupted', 'held', 'faster', 'slower', 'mixed', 'same', 'noisy')
# The verdicts of tries whose numbers count: timed on a green gate and not held.
COUNTED = TRY_VERDICTS[4:]
# The ids of the loop's own refusals, beside the rule ids of `mrbot rules` (docs/loop.md documents both).
FROZEN = 'LOOP001'
IMPLAUSIBLE = 'LOOP002'
NOT_REPEATED = 'LOOP003'
# The reason of a try whose timing was stopped (Ctrl-C, SIGTERM, a time limit), like 'gate' of a red one.
INTERRUPTED = 'timing'


@dataclass(frozen=True)
class Reason:
    """Why a try was refused, red, interrupted or held: a rule id (GAME001, GATE002, CMP001, LOOP001, or 'gate' or
    'timing'), where, and what."""

    rule: str
    path: str
    line: int
    message: str

    def to_json(self) -> dict:
        return {'rule': self.rule, 'path': self.path, 'line': self.line, 'message': self.message}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Reason:
        return cls(fields.text('rule'), fields.text('path'), fields.integer('line'), fields.text('message'))

    def __str__(self) -> str:
        where = f'{self.path}:{self.line}: ' if self.path and self.line else f'{self.path}: ' if self.path else ''
        return f'{self.rule} {where}{self.message}'


@dataclass(frozen=True)
class Plan:
    """What every measurement of the loop times, fixed at its start: the op, shapes, modes, rounds, least effect, how
    many processes share the full gate, and the backend dispatch and variables under which both gate and timing run
    (a backend's port is timed and gated as served)."""

    op: str
    shapes: tuple[str, ...]
    modes: tuple[str, ...]
    rounds: int
    min_effect: float
    gate_workers: int = 0
    dispatch: str = 'off'
    environment: tuple[tuple[str, str], ...] = ()

    def request(self, base: str | None, command: tuple[str, ...]) -> BenchRequest:
        """The bench request of one measurement: paired against `base`, or of one tree when `base` is None."""
        return BenchRequest(ops=(self.op,), base=base, modes=self.modes, shapes=self.shapes, rounds=self.rounds,
                            min_effect=self.min_effect, gate_workers=self.gate_workers, dispatch=self.dispatch,
                            environment=self.environment, command=command)

    def options(self) -> list[str]:
        """The command-line options of the plan's dispatch and variables, shared by `loop start` and `bench`."""
        return [*(['--dispatch', self.dispatch] if self.dispatch != 'off' else []),
                *[f'--env {shlex.quote(f"{name}={value}")}' for name, value in self.environment]]

    def bench_command(self, base: str) -> str:
        """The `mrbot bench` line that reproduces a measurement against `base` from a checkout of the candidate."""
        return ' '.join(['mrbot bench --op', self.op, '--base', base[:12], '--modes', *self.modes,
                         *(['--shapes', *self.shapes] if self.shapes else []), '--rounds', str(self.rounds),
                         *self.options()])

    def to_json(self) -> dict:
        return {'op': self.op, 'shapes': list(self.shapes), 'modes': list(self.modes), 'rounds': self.rounds,
                'min_effect': self.min_effect, 'gate_workers': self.gate_workers, 'dispatch': self.dispatch,
                'environment': dict(self.environment)}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Plan:
        # loops stored before dispatch and variables were part of the plan ran with dispatch off and none
        environment = fields.mapping('environment', {})
        return cls(fields.text('op'), fields.texts('shapes'), fields.texts('modes'), fields.integer('rounds'),
                   fields.number('min_effect'), fields.integer('gate_workers', 1),
                   fields.choice('dispatch', BENCH_DISPATCH, 'off'),
                   parse_environment([f'{name}={value}' for name, value in environment.items()]))


def speedup(run: BenchRun | None) -> float | None:
    """The equal-weight geometric mean of base/candidate medians over a paired run's rows; None without one."""
    ratios = [row.base_median_ms / row.median_ms for row in run.rows if row.base_median_ms and row.median_ms] \
        if run is not None and run.paired else []
    return stats.geomean(ratios) if ratios else None


@dataclass(frozen=True)
class Try:
    """One candidate of a loop: its commit, note, diff against the baseline, verdict, reasons and the paired run."""

    number: int
    created: str
    sha: str
    note: str
    diff: str
    verdict: str
    reasons: tuple[Reason, ...]
    run: BenchRun | None
    # the gate of a try stopped before it was timed (a timed run holds its own)
    stopped_gate: Gate | None = None

    @property
    def gate_result(self) -> Gate | None:
        return self.run.gate if self.run is not None else self.stopped_gate

    @property
    def speedup(self) -> float | None:
        return speedup(self.run)

    @property
    def gate(self) -> str:
        return self.gate_result.status if self.gate_result is not None else 'not run'

    @classmethod
    def from_row(cls, row: TryRow) -> Try:
        fields = JsonObject({'reasons': row.reasons, 'run': row.run, 'gate': row.gate}, FILE, f'tries[{row.number}]')
        run, gate = fields.optional_object('run'), fields.optional_object('gate')
        return cls(row.number, row.created, row.candidate_sha, row.note, row.diff, row.verdict,
                   tuple(Reason.from_json(r) for r in fields.objects('reasons')),
                   BenchRun.from_json(run) if run is not None else None, Gate.from_json(gate) if gate is not None else None)


@dataclass(frozen=True)
class Loop:
    """An optimization loop as stored: the op, baseline commit, frozen contract and plan, the baseline's run, and
    whether it is open, promoted (its outcome a claim) or ended as a no-go (its outcome the no-go record)."""

    id: int
    started: str
    baseline_sha: str
    contract: Contract
    plan: Plan
    baseline: BenchRun | None
    state: str
    outcome: LoopOutcome | None

    @classmethod
    def from_row(cls, row: LoopRow) -> Loop:
        fields = JsonObject({'contract': row.contract, 'plan': row.request, 'baseline': row.baseline}, FILE,
                            f'loops[{row.id}]')
        baseline = fields.optional_object('baseline')
        return cls(row.id, row.started, row.baseline_sha, Contract.from_json(fields.object('contract')),
                   Plan.from_json(fields.object('plan')), BenchRun.from_json(baseline) if baseline else None,
                   row.state, row.outcome)
