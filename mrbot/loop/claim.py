# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""How a loop ends: the claim of a promoted try, or the no-go record of a loop that found no win.

Both are plain JSON (stored as the loop's outcome, put in the PR body by `mrbot prepare`) and rendered to markdown by
the `loop_outcome.md.j2` template. Every number in them comes from the stored runs, unrounded: the template rounds
once, so a try shows the same speed-up in `mrbot loop status` and in the claim.
"""

from __future__ import annotations

from pathlib import Path

from mrbot.bench import stats
from mrbot.loop.records import Loop, Try
from mrbot.records.bench import BenchRow, BenchRun
from mrbot.render import render

# Summary statistics of a side's per-round medians, in the order the claim shows them.
STATISTICS = ('median', 'mean', 'std', 'min', 'p10', 'p90')


def _statistics(summary: dict[str, float]) -> dict[str, float]:
    return {key: summary[key] for key in STATISTICS}


def _rates(row: BenchRow, ms: float) -> dict[str, float]:
    """The row's achieved rates at `ms`: the same bytes and flops move in either side, so they scale with the time."""
    return {key: value * row.median_ms / ms for key, value in row.throughput.items()} if ms else {}


def _row(row: BenchRow) -> dict:
    base_ms = row.base_median_ms or 0.0
    return {'op': row.op, 'mode': row.mode, 'shape': row.shape.name, 'baseline': _statistics(stats.summary(row.base_ms)),
            'candidate': _statistics(stats.summary(row.samples_ms)), 'speedup': base_ms / row.median_ms,
            'ratio': row.ratio, 'ci': [row.ci_low, row.ci_high], 'verdict': row.verdict,
            'baseline_rates': _rates(row, base_ms), 'candidate_rates': dict(row.throughput), 'flags': list(row.flags)}


def _machine(run: BenchRun) -> dict:
    machine = run.machine
    return {'gpu': machine.gpu, 'class': machine.hardware_class, 'driver': machine.driver, 'cuda': machine.cuda,
            'torch': machine.torch, 'triton': machine.triton, 'evidence': machine.evidence,
            'clocks': dict(machine.readings), 'ceilings': machine.ceilings}


def _attempt(attempt: Try) -> dict:
    return {'number': attempt.number, 'sha': attempt.sha, 'note': attempt.note, 'verdict': attempt.verdict,
            'gate': attempt.gate, 'speedup': attempt.speedup,
            'reasons': [str(reason) for reason in attempt.reasons]}


def _commands(loop: Loop, candidate: str) -> list[str]:
    plan = loop.plan
    return [f"mrbot loop start --op {plan.op} --modes {' '.join(plan.modes)}"
            + (f" --shapes {' '.join(plan.shapes)}" if plan.shapes else '') + f' --rounds {plan.rounds}'
            + ''.join(f' {option}' for option in plan.options()) + f'  # at {loop.baseline_sha[:12]}',
            f'git checkout {candidate[:12]} && {plan.bench_command(loop.baseline_sha)}']


def claim(loop: Loop, remeasured: Try, number: int, tries: list[Try]) -> dict:
    """The claim of try `number`, from its fresh re-measure `remeasured`: per shape statistics of both sides, the
    geomean speed-up, the rates against the ceilings, the machine and its clocks, the commands and every attempt."""
    run = remeasured.run
    return {'kind': 'claim', 'loop': loop.id, 'op': loop.plan.op, 'baseline_sha': loop.baseline_sha,
            'candidate_sha': remeasured.sha, 'try': number, 'remeasure': remeasured.number, 'note': remeasured.note,
            'speedup': remeasured.speedup, 'rounds': run.rounds, 'gate': run.gate.to_json(),
            'rows': [_row(row) for row in run.rows], 'machine': _machine(run),
            'commands': [*_commands(loop, remeasured.sha), f'mrbot loop promote {number}'],
            'attempts': [_attempt(t) for t in tries]}


def no_go(loop: Loop, tries: list[Try], bound: str) -> dict:
    """The record of a loop that ends without a win: its baseline, every attempt with its gate and verdict, the best
    timed attempt's numbers as evidence, and the bound that the author names."""
    timed = [t for t in tries if t.speedup is not None and t.gate == 'passed']
    best = max(timed, key=lambda t: t.speedup, default=None)
    baseline = loop.baseline
    return {'kind': 'no-go', 'loop': loop.id, 'op': loop.plan.op, 'baseline_sha': loop.baseline_sha, 'bound': bound,
            'baseline': [{'mode': row.mode, 'shape': row.shape.name, **_statistics(stats.summary(row.samples_ms)),
                          'rates': dict(row.throughput)} for row in baseline.rows] if baseline else [],
            'machine': _machine(baseline) if baseline else None, 'attempts': [_attempt(t) for t in tries],
            'best': None if best is None else {'try': best.number, 'rows': [_row(row) for row in best.run.rows]},
            'commands': _commands(loop, best.sha) if best else _commands(loop, '')[:1]}


def markdown(outcome: dict, overrides: Path | None = None) -> str:
    """The claim or no-go as the markdown the PR body carries."""
    return render('loop_outcome.md.j2', overrides, o=outcome)
