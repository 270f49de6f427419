# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""How a loop ends: the claim of a promoted try, or the no-go record of a loop that found no win, made from the
stored runs (the records are `mrbot/records/loop_outcome.py`) and rendered to markdown by `loop_outcome.md.j2`."""

from __future__ import annotations

from pathlib import Path

from mrbot.bench import stats
from mrbot.loop.records import Loop, Try
from mrbot.records.bench import BenchRow
from mrbot.records.loop_outcome import (
    Attempt,
    BaselineRow,
    BestAttempt,
    Claim,
    ComparedRow,
    LoopOutcome,
    NoGo,
    OutcomeMachine,
    RoundStatistics,
)
from mrbot.render import render


def _rates(row: BenchRow, ms: float) -> dict[str, float]:
    """The row's achieved rates at `ms`: the same bytes and flops move in either side, so they scale with the time."""
    return {key: value * row.median_ms / ms for key, value in row.throughput.items()} if ms else {}


def _compared(row: BenchRow) -> ComparedRow:
    base_ms = row.base_median_ms or 0.0
    return ComparedRow(row.op, row.mode, row.shape.name, RoundStatistics(**stats.summary(row.base_ms)),
                       RoundStatistics(**stats.summary(row.samples_ms)), base_ms / row.median_ms, row.ratio,
                       row.ci_low, row.ci_high, row.verdict, _rates(row, base_ms), dict(row.throughput), row.flags)


def _attempt(attempt: Try) -> Attempt:
    return Attempt(attempt.number, attempt.sha, attempt.note, attempt.verdict, attempt.gate, attempt.speedup,
                   tuple(str(reason) for reason in attempt.reasons))


def _commands(loop: Loop, candidate: str) -> list[str]:
    plan = loop.plan
    return [f"mrbot loop start --op {plan.op} --modes {' '.join(plan.modes)}"
            + (f" --shapes {' '.join(plan.shapes)}" if plan.shapes else '') + f' --rounds {plan.rounds}'
            + ''.join(f' {option}' for option in plan.options()) + f'  # at {loop.baseline_sha[:12]}',
            f'git checkout {candidate[:12]} && {plan.bench_command(loop.baseline_sha)}']


def claim(loop: Loop, remeasured: Try, number: int, tries: list[Try]) -> Claim:
    """The claim of try `number`, from its fresh re-measure `remeasured`: per shape statistics of both sides, the
    geomean speed-up, the rates against the ceilings, the machine and its clocks, the commands and every attempt."""
    run = remeasured.run
    return Claim(loop.id, loop.plan.op, loop.baseline_sha, remeasured.sha, number, remeasured.number, remeasured.note,
                 remeasured.speedup, run.rounds, run.gate, tuple(_compared(row) for row in run.rows),
                 OutcomeMachine.of(run.machine), (*_commands(loop, remeasured.sha), f'mrbot loop promote {number}'),
                 tuple(_attempt(t) for t in tries))


def no_go(loop: Loop, tries: list[Try], bound: str) -> NoGo:
    """The record of a loop that ends without a win: its baseline, every attempt with its gate and verdict, the best
    timed attempt's numbers as evidence, and the bound that the author names."""
    timed = [t for t in tries if t.speedup is not None and t.gate == 'passed']
    best = max(timed, key=lambda t: t.speedup, default=None)
    baseline = loop.baseline
    return NoGo(loop.id, loop.plan.op, loop.baseline_sha, bound,
                tuple(BaselineRow(row.mode, row.shape.name, RoundStatistics(**stats.summary(row.samples_ms)),
                                  dict(row.throughput)) for row in baseline.rows) if baseline else (),
                OutcomeMachine.of(baseline.machine) if baseline else None, tuple(_attempt(t) for t in tries),
                None if best is None else BestAttempt(best.number, tuple(_compared(row) for row in best.run.rows)),
                tuple(_commands(loop, best.sha) if best else _commands(loop, '')[:1]))


def markdown(outcome: LoopOutcome, overrides: Path | None = None) -> str:
    """The claim or no-go as the markdown the PR body carries."""
    # the PR body includes the same template with the outcome as Evidence's JSON holds it, so both render one shape
    return render('loop_outcome.md.j2', overrides, o=outcome.to_json())
