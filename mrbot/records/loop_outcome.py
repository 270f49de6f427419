# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""How an optimization loop ended: the claim of a promoted try, or the no-go record of a loop that found no win.

Both are stored as the loop's outcome, carried into the PR body by `mrbot prepare`, and rendered from their JSON by
`templates/loop_outcome.md.j2`. Every number in them comes from the stored runs, unrounded: the template rounds once,
so a try shows the same speed-up in `mrbot loop status` and in the claim.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from mrbot.records.bench import Gate, Machine
from mrbot.records.reading import JsonObject, is_number

OUTCOME_KINDS = ('claim', 'no-go')


@dataclass(frozen=True)
class RoundStatistics:
    """Summary statistics of one side's per-round medians, in ms, in the order the outcome shows them."""

    median: float
    mean: float
    std: float
    min: float
    p10: float
    p90: float

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, fields: JsonObject) -> RoundStatistics:
        return cls(fields.number('median'), fields.number('mean'), fields.number('std'), fields.number('min'),
                   fields.number('p10'), fields.number('p90'))


@dataclass(frozen=True)
class ComparedRow:
    """One op x mode x shape of a paired run as an outcome shows it: both sides' statistics, the speed-up of the
    medians, the ratio with its 95% interval and verdict, both sides' rates and the row's flags."""

    op: str
    mode: str
    shape: str
    baseline: RoundStatistics
    candidate: RoundStatistics
    speedup: float
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str | None
    baseline_rates: dict[str, float]
    candidate_rates: dict[str, float]
    flags: tuple[str, ...]

    def to_json(self) -> dict:
        return {'op': self.op, 'mode': self.mode, 'shape': self.shape, 'baseline': self.baseline.to_json(),
                'candidate': self.candidate.to_json(), 'speedup': self.speedup, 'ratio': self.ratio,
                'ci': [self.ci_low, self.ci_high], 'verdict': self.verdict, 'baseline_rates': self.baseline_rates,
                'candidate_rates': self.candidate_rates, 'flags': list(self.flags)}

    @classmethod
    def from_json(cls, fields: JsonObject) -> ComparedRow:
        ci = fields.sequence('ci')
        if len(ci) != 2 or not all(bound is None or is_number(bound) for bound in ci):
            raise fields.error(fields.at('ci'), 'a list of two numbers or nulls', ci)
        return cls(fields.text('op'), fields.text('mode'), fields.text('shape'),
                   RoundStatistics.from_json(fields.object('baseline')),
                   RoundStatistics.from_json(fields.object('candidate')), fields.number('speedup'),
                   fields.optional_number('ratio'), ci[0], ci[1], fields.optional_text('verdict'),
                   fields.numbers('baseline_rates'), fields.numbers('candidate_rates'), fields.texts('flags'))


@dataclass(frozen=True)
class OutcomeMachine:
    """The machine an outcome's numbers were timed on: the GPU and its class, the software, the clocks read at start
    and end, the measured ceilings, and whether the numbers are evidence (False under the Triton interpreter)."""

    gpu: str
    hardware_class: str
    driver: str
    cuda: str | None
    torch: str
    triton: str
    evidence: bool
    clocks: dict[str, str]
    ceilings: dict[str, float] | None

    @classmethod
    def of(cls, machine: Machine) -> OutcomeMachine:
        return cls(machine.gpu, machine.hardware_class, machine.driver, machine.cuda, machine.torch, machine.triton,
                   machine.evidence, dict(machine.readings), machine.ceilings)

    def to_json(self) -> dict:
        return {'gpu': self.gpu, 'class': self.hardware_class, 'driver': self.driver, 'cuda': self.cuda,
                'torch': self.torch, 'triton': self.triton, 'evidence': self.evidence, 'clocks': self.clocks,
                'ceilings': self.ceilings}

    @classmethod
    def from_json(cls, fields: JsonObject) -> OutcomeMachine:
        clocks = fields.object('clocks')
        return cls(fields.text('gpu'), fields.text('class'), fields.text('driver'), fields.optional_text('cuda'),
                   fields.text('torch'), fields.text('triton'), fields.flag('evidence'),
                   {name: clocks.text(name) for name in clocks.data}, fields.optional_numbers('ceilings'))


@dataclass(frozen=True)
class Attempt:
    """One try of the loop as its outcome lists it: commit, note, verdict, gate, geomean speed-up and reasons."""

    number: int
    sha: str
    note: str
    verdict: str
    gate: str
    speedup: float | None
    reasons: tuple[str, ...]

    def to_json(self) -> dict:
        return {'number': self.number, 'sha': self.sha, 'note': self.note, 'verdict': self.verdict, 'gate': self.gate,
                'speedup': self.speedup, 'reasons': list(self.reasons)}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Attempt:
        return cls(fields.integer('number'), fields.text('sha'), fields.text('note'), fields.text('verdict'),
                   fields.text('gate'), fields.optional_number('speedup'), fields.texts('reasons'))


def _attempts(fields: JsonObject) -> tuple[Attempt, ...]:
    return tuple(Attempt.from_json(attempt) for attempt in fields.objects('attempts'))


def _compared_rows(fields: JsonObject) -> tuple[ComparedRow, ...]:
    return tuple(ComparedRow.from_json(row) for row in fields.objects('rows'))


@dataclass(frozen=True)
class Claim:
    """The claim of try `try_number`, from its fresh re-measure (stored as try `remeasure_number`): per shape
    statistics of both sides, the geomean speed-up, the full gate, the machine, the commands and every attempt."""

    loop_id: int
    op: str
    baseline_sha: str
    candidate_sha: str
    try_number: int
    remeasure_number: int
    note: str
    speedup: float
    rounds: int
    gate: Gate
    rows: tuple[ComparedRow, ...]
    machine: OutcomeMachine
    commands: tuple[str, ...]
    attempts: tuple[Attempt, ...]

    def to_json(self) -> dict:
        return {'kind': 'claim', 'loop': self.loop_id, 'op': self.op, 'baseline_sha': self.baseline_sha,
                'candidate_sha': self.candidate_sha, 'try': self.try_number, 'remeasure': self.remeasure_number,
                'note': self.note, 'speedup': self.speedup, 'rounds': self.rounds, 'gate': self.gate.to_json(),
                'rows': [row.to_json() for row in self.rows], 'machine': self.machine.to_json(),
                'commands': list(self.commands), 'attempts': [attempt.to_json() for attempt in self.attempts]}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Claim:
        return cls(fields.integer('loop'), fields.text('op'), fields.text('baseline_sha'), fields.text('candidate_sha'),
                   fields.integer('try'), fields.integer('remeasure'), fields.text('note'), fields.number('speedup'),
                   fields.integer('rounds'), Gate.from_json(fields.object('gate')), _compared_rows(fields),
                   OutcomeMachine.from_json(fields.object('machine')), fields.texts('commands'), _attempts(fields))


@dataclass(frozen=True)
class BaselineRow:
    """One mode x shape of a no-go's baseline run: the statistics of its per-round medians and its rates."""

    mode: str
    shape: str
    statistics: RoundStatistics
    rates: dict[str, float]

    def to_json(self) -> dict:
        return {'mode': self.mode, 'shape': self.shape, **self.statistics.to_json(), 'rates': self.rates}

    @classmethod
    def from_json(cls, fields: JsonObject) -> BaselineRow:
        return cls(fields.text('mode'), fields.text('shape'), RoundStatistics.from_json(fields), fields.numbers('rates'))


@dataclass(frozen=True)
class BestAttempt:
    """The best timed attempt of a no-go with a green gate, its rows as evidence of how close the loop came."""

    try_number: int
    rows: tuple[ComparedRow, ...]

    def to_json(self) -> dict:
        return {'try': self.try_number, 'rows': [row.to_json() for row in self.rows]}

    @classmethod
    def from_json(cls, fields: JsonObject) -> BestAttempt:
        return cls(fields.integer('try'), _compared_rows(fields))


@dataclass(frozen=True)
class NoGo:
    """The record of a loop that ended without a win: its baseline (empty and without a machine when none was timed),
    every attempt with its gate and verdict, the best timed attempt, the bound that the author names, the commands."""

    loop_id: int
    op: str
    baseline_sha: str
    bound: str
    baseline: tuple[BaselineRow, ...]
    machine: OutcomeMachine | None
    attempts: tuple[Attempt, ...]
    best: BestAttempt | None
    commands: tuple[str, ...]

    def to_json(self) -> dict:
        return {'kind': 'no-go', 'loop': self.loop_id, 'op': self.op, 'baseline_sha': self.baseline_sha,
                'bound': self.bound, 'baseline': [row.to_json() for row in self.baseline],
                'machine': None if self.machine is None else self.machine.to_json(),
                'attempts': [attempt.to_json() for attempt in self.attempts],
                'best': None if self.best is None else self.best.to_json(), 'commands': list(self.commands)}

    @classmethod
    def from_json(cls, fields: JsonObject) -> NoGo:
        machine, best = fields.optional_object('machine'), fields.optional_object('best')
        return cls(fields.integer('loop'), fields.text('op'), fields.text('baseline_sha'), fields.text('bound'),
                   tuple(BaselineRow.from_json(row) for row in fields.objects('baseline')),
                   None if machine is None else OutcomeMachine.from_json(machine), _attempts(fields),
                   None if best is None else BestAttempt.from_json(best), fields.texts('commands'))


LoopOutcome = Claim | NoGo


def outcome_from_json(fields: JsonObject) -> LoopOutcome:
    """The claim or no-go that `fields` holds, by its `kind`."""
    return Claim.from_json(fields) if fields.choice('kind', OUTCOME_KINDS) == 'claim' else NoGo.from_json(fields)
