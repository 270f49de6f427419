# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The bench stage: the ops timed on base and head in separate processes, interleaved round by round, behind the
correctness gate, each row judged with a confidence interval; two single-ref runs compared with the same statistics;
the table of a run."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from mrbot import git
from mrbot.bench import stats
from mrbot.bench.harness import Side, interleave, start_side
from mrbot.bench.machine import cached_ceilings, gpu_state, hardware_class, store_ceilings
from mrbot.bench.ncu import profile
from mrbot.bench.specs import touched_ops
from mrbot.config import state_dir
from mrbot.progress import Progress, say
from mrbot.records import MrbotError
from mrbot.records.bench import BenchRequest, BenchRow, BenchRun, Gate, Machine, Revision, Shape, Statistics
from mrbot.records.testruns import FileRun
from mrbot.repo.ops import OpSpec, count_of, op_folder
from mrbot.repo.workspace import Workspace
from mrbot.stack import require_kernel_stack
from mrbot.testing import (
    device_label,
    dispatch_variables,
    execute_with_progress,
    local_gpu,
    processes_per_test_file,
    xdist_args,
)
from mrbot.words import plural

DEFAULT_MIN_EFFECT = 0.02
PLAUSIBLE_SPEEDUP = 3.0


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped the timing: `gate` is how the gate ended, `run` the record of the rounds that finished
    (None before the first did), its workers already gone."""

    def __init__(self, gate: Gate, run: BenchRun | None, rounds: int) -> None:
        super().__init__(f'{run.rounds} of {plural(rounds, "round")} finished' if run is not None
                         else 'stopped before the first round finished: nothing timed to keep')
        self.gate = gate
        self.run = run


@dataclass(frozen=True)
class _Planned:
    """A row to time, as the workers know it: an id, the op, the mode and the shape."""

    id: str
    op: str
    mode: str
    shape: Shape

    def to_worker(self) -> dict:
        return {'id': self.id, 'op': self.op, 'mode': self.mode, 'dims': self.shape.dims}


def _plan(specs: list[OpSpec], modes: tuple[str, ...], shape_names: tuple[str, ...]) -> list[_Planned]:
    """One row per op, mode and shape: the requested shapes an op has, else its default shapes, else all of them."""
    if shape_names:
        known = {name for spec in specs for name in spec.shapes}
        unknown = [name for name in shape_names if name not in known]
        if unknown:
            raise MrbotError(f"--shapes {' '.join(unknown)}: no chosen op has it; `mrbot bench --list` shows the shapes")
    rows = []
    for spec in specs:
        names = [n for n in shape_names if n in spec.shapes] if shape_names else list(spec.default_shapes or spec.shapes)
        for mode in (m for m in modes if m in spec.modes):
            for name in names:
                rows.append(_Planned(f'r{len(rows)}', spec.name, mode, Shape(name, dict(spec.shapes[name]))))
    if not rows:
        raise MrbotError('nothing to time: no chosen op has the requested modes and shapes (`mrbot bench --list`)')
    return rows


def _choose_ops(request: BenchRequest, workspace: Workspace, base: str | None) -> list[OpSpec]:
    specs = workspace.specs
    if request.ops:
        by_name = {s.name: s for s in specs}
        unknown = [name for name in request.ops if name not in by_name]
        if unknown:
            raise MrbotError(f"--op {' '.join(unknown)}: unknown; benchmarkable ops: {', '.join(by_name) or 'none'}")
        return [by_name[name] for name in request.ops]
    if request.from_diff:
        touched = touched_ops(workspace, git.changed_paths(workspace.root, base, None), gates=False)
        if not touched:
            raise MrbotError("--from-diff: the change touches no benchmarkable op's code; nothing to time")
        return touched
    return specs


def _gate(request: BenchRequest, workspace: Workspace, ops: list[OpSpec], changed: list[str], device: str,
          earlier: list[FileRun], quiet: bool) -> Gate:
    """Run the ops' gate tests on head, and check that the change leaves them and the naive references alone.

    `earlier` are whole-file runs of this head on this device with dispatch off (`mrbot prepare`'s test step); a gate
    file among them is not run again. On a GPU, a whole gate's kernels are compiled first on every core, each once,
    where the test processes would each compile what its tests launch.
    """
    root = workspace.root
    files = sorted({spec.gate for spec in ops if spec.gate})
    contract = set(files) | {f'{op_folder(root, spec)}/naive.py' for spec in ops}
    gate = Gate('skipped', test_files=tuple(files), frozen_ok=not (contract & set(changed)),
                partial=bool(request.gate_k), changed_contract=tuple(sorted(contract & set(changed))))
    if not request.gate or not files:
        return gate
    workers = processes_per_test_file(request.gate_workers, '--gate-workers')
    pytest_args = (('-k', request.gate_k) if request.gate_k else ()) + xdist_args(workers, '--gate-workers')
    # the gate checks what is timed: the same dispatch and variables, so a backend served while timing is the one tested
    reusable = not request.gate_k and request.dispatch == 'off' and not request.environment
    reused = [r for r in earlier if r.file in files and r.dispatch == 'off'] if reusable else []
    missing = [f for f in files if f not in {r.file for r in reused}]
    say(f"gate: {' '.join(missing)} {' '.join(pytest_args)}".rstrip()
        + (f" (reusing {', '.join(r.file for r in reused)})" if reused else ''), quiet)
    interpret = not device.startswith('compiled')
    gpu = None if interpret else local_gpu()
    if gpu is not None and missing and reusable:
        from mrbot.compile.stage import warm_kernel_cache

        warmed = warm_kernel_cache(workspace, missing, gpu, request.dispatch)
        if warmed:
            say(f'gate: {warmed}', quiet)
    runs = reused + (execute_with_progress(missing, root, 1, request.gate_timeout, request.dispatch, quiet=quiet,
                                           title='gate', interpret=interpret, pytest_args=pytest_args,
                                           environment=dict(request.environment)) if missing else [])
    passed = all(r.ok for r in runs)
    seconds = round(sum(r.duration for r in runs), 1)
    say(f"gate {'passed' if passed else 'failed'} in {seconds} s", quiet)
    return replace(gate, status='passed' if passed else 'failed', seconds=seconds, pytest_args=pytest_args,
                   reused=tuple(r.file for r in reused), failures=tuple([f for r in runs for f in r.failures][:20]),
                   device=device)


def _runner_profile(root: Path, gpu: str) -> Path:
    return state_dir(root) / f"runner-{re.sub(r'[^0-9A-Za-z]+', '_', gpu)}.json"


def _throughput(spec: OpSpec, row: _Planned, ms: float, ceilings: dict | None) -> dict[str, float]:
    """Achieved TB/s and TFLOP/s from the op spec's byte and flop counts, and their share of the device's ceilings."""
    out = {}
    for kind, expressions, ceiling, unit in (('tbs', spec.bytes, 'copy_tbs', 1e9), ('tflops', spec.flops,
                                                                                   'bf16_tflops', 1e9)):
        expression = expressions.get(row.mode)
        if expression and ms > 0:
            value = count_of(expression, row.shape.dims) / ms / unit
            out[kind] = round(value, 3)
            if ceilings and ceilings.get(ceiling):
                out[f'{kind}_of_ceiling'] = round(value / ceilings[ceiling], 3)
    return out


def _judged(rows: list[BenchRow], min_effects: list[float], evidence: bool) -> tuple[list[BenchRow], str]:
    """The rows with their ratio, interval and verdict; no faster or slower where the numbers are not evidence."""
    comparisons, note = stats.compare_rows([(row.base_ms, row.samples_ms) for row in rows], min_effects)
    judged = []
    for row, comparison in zip(rows, comparisons, strict=True):
        verdict = comparison.verdict if evidence or comparison.verdict not in ('faster', 'slower') else 'noisy'
        judged.append(replace(row, ratio=round(comparison.ratio, 4), ci_low=round(comparison.ci_low, 4),
                              ci_high=round(comparison.ci_high, 4), verdict=verdict))
    return judged, note


def _flagged(row: BenchRow, gate: Gate) -> BenchRow:
    """A row as the gate allows it: no verdict on a red gate, no faster without a green gate on a frozen contract."""
    flags, verdict = list(row.flags), row.verdict
    if gate.status == 'failed':
        flags.append('gate failed: no verdict')
        verdict = 'gate-failed'
    elif verdict == 'faster' and (not gate.frozen_ok or gate.status == 'skipped'):
        flags.append('faster withheld: ' + ('test file or naive reference changed' if not gate.frozen_ok
                                            else 'gate not run'))
        verdict = 'noisy'
    if row.ratio and row.ratio < 1 / PLAUSIBLE_SPEEDUP:
        flags.append(f'over {PLAUSIBLE_SPEEDUP:g}x faster: review for a skipped computation')
    return replace(row, flags=tuple(flags), verdict=verdict)


def format_table(run: BenchRun) -> str:
    header = f"{'op':<22} {'mode':<7} {'shape':<26} "
    header += (f"{'base ms':>9} {'head ms':>9} {'ratio':>7} {'95% CI':>15} {'verdict':<11}" if run.paired
               else f"{'ms':>9}")
    header += f" {'eager ms':>9} {'launch ms':>9} {'TB/s':>7} {'TFLOP/s':>8}  flags"
    lines = [header]
    for row in run.rows:
        line = f'{row.op:<22} {row.mode:<7} {row.shape.name:<26} '
        if run.paired:
            ci = f'{row.ci_low:.3f}-{row.ci_high:.3f}' if row.ratio is not None else '-'
            line += (f"{row.base_median_ms or 0:>9.4f} {row.median_ms:>9.4f} {row.ratio or 0:>7.3f} {ci:>15} "
                     f"{row.verdict or '-':<11}")
        else:
            line += f'{row.median_ms:>9.4f}'
        line += (f" {row.eager_median_ms:>9.4f} {row.launch_overhead_ms:>9.4f} {row.throughput.get('tbs', 0):>7.2f} "
                 f"{row.throughput.get('tflops', 0):>8.1f}  {'; '.join(row.flags)}")
        lines.append(line)
    machine = run.machine
    lines.append(f"{machine.gpu}, {machine.hardware_class}, driver {machine.driver}, torch {machine.torch}, triton "
                 f"{machine.triton}; {plural(run.rounds, 'round')}{' (interrupted)' if run.interrupted else ''}")
    if run.paired:
        gate = run.gate
        correction = run.statistics.correction if run.statistics else '-'
        lines.append(f'statistics: {correction}; gate: {gate.status}' + (' (partial: -k)' if gate.partial else '')
                     + ('' if gate.frozen_ok else f" (frozen contract changed: {', '.join(gate.changed_contract)})"))
        lines += [f'  FAILED {f.test}: {f.first_line}' for f in gate.failures]
    return '\n'.join(lines) + '\n'


@dataclass(frozen=True)
class _Timed:
    """One side's numbers for one row: a median per round, their median, the eager median and how it was timed."""

    samples: tuple[float, ...]
    median: float
    eager_median: float
    timing: str


def _timed(side: Side, row_id: str) -> _Timed:
    samples = side.samples.get(row_id, [])
    ms = [s['ms'] for s in samples]
    eager = [s['eager_ms'] for s in samples]
    return _Timed(tuple(round(x, 5) for x in ms), stats.summary(ms)['median'] if ms else 0.0,
                  stats.summary(eager)['median'] if eager else 0.0, samples[0]['timing'] if samples else 'none')


def _machine(info: dict, start: dict[str, str], ceilings: dict | None, evidence: bool, command: tuple[str, ...]) -> Machine:
    """The machine record from the worker's answer and nvidia-smi's readings at the start and now."""
    readings = {**{f'{k}_start': v for k, v in start.items()}, **{f'{k}_end': v for k, v in gpu_state().items()}}
    return Machine(gpu=info['gpu'], capability=info['capability'], hardware_class=hardware_class(info['capability']),
                   torch=info['torch'], triton=info['triton'], cuda=info.get('cuda'), python=info.get('python', ''),
                   driver=start.get('driver', '-'), multiprocessors=info.get('multiprocessors'),
                   dispatch=info['dispatch'], interpreter=info['interpreter'], evidence=evidence, readings=readings,
                   ceilings=ceilings, command=command)


def _earlier_gate(request: BenchRequest, passed: Gate | None, device: str, quiet: bool) -> Gate | None:
    """`passed` where it stands for this run's gate: whole (no -k), passed, on this device, with the same dispatch and
    variables (the gate checks what is timed)."""
    if passed is None or not request.gate or request.gate_k or request.dispatch != 'off' or request.environment:
        return None
    if passed.status != 'passed' or passed.partial or passed.device != device:
        return None
    say(f"gate: {' '.join(passed.test_files)} passed on these files on {device} before ({passed.seconds} s); "
        'not run again', quiet)
    return passed


def measure(request: BenchRequest, workspace: Workspace, earlier_tests: Sequence[FileRun] = (),
            quiet: bool = False, home: Path | None = None, passed_gate: Gate | None = None) -> BenchRun:
    """One bench run as its record: paired with `request.base` (or `aa`), else of the working tree alone.

    `earlier_tests` are test files this head already ran on this device (`mrbot prepare` runs the dependent tests
    before timing); the gate reuses them instead of running those files again. `home` is the repository whose state
    keeps the base's checkout, each side's compiled kernels, the machine's ceilings and its A/A noise (the workspace's
    own by default; a loop's, whose tries each have a checkout). `passed_gate` is the whole gate this head's files
    passed on this device before (a loop's try stopped after its gate, or promoted): it stands for the gate here.
    Progress goes to stderr unless `quiet`. Ctrl-C or SIGTERM after the gate raises BenchInterrupted with the gate and
    the finished rounds' record.
    """
    root = workspace.root
    home = home or root
    require_kernel_stack('mrbot bench')
    if not workspace.specs:
        raise MrbotError('no benchmarkable ops: declare them in [tool.mrbot.bench.ops.<name>] of pyproject.toml')
    base_sha = git.resolve(root, request.base) if request.base else (git.resolve(root, 'HEAD') if request.aa else None)
    ops = _choose_ops(request, workspace, base_sha)
    planned = _plan(ops, request.modes, request.shapes)
    spec_of = {s.name: s for s in ops}
    device = device_label()
    evidence = device.startswith('compiled')
    changed = git.changed_paths(root, base_sha, None) if base_sha else []
    environment = {**dict(request.environment), **dispatch_variables(request.dispatch)}
    if not evidence:
        environment['TRITON_INTERPRET'] = '1'
    head_sha = git.resolve(root, 'HEAD')
    dirty = bool(git.changed_paths(root, head_sha, None))
    # (side, checkout, its files): a side that is a commit keeps its compiled kernels under its tree's sha, so a base
    # timed again, or a candidate whose timing was stopped, compiles nothing twice; a changed working tree under `head`;
    # the two sides of one run never share a cache, not even in an A/A run
    head = ('head', root, None if dirty else git.files_of(root, head_sha))
    if base_sha:
        base_tree = git.files_of(home, base_sha)
        base = ('base', git.pristine_worktree(home, base_sha), base_tree)
        trees = [base, ('head', base[1], base_tree) if request.aa else head]
    else:
        trees = [head]
    setup = {'cmd': 'setup', 'specs': [asdict(s) for s in ops], 'seed': 0,
             'rows': [row.to_worker() for row in planned], 'timing': 'eager' if request.eager else 'graph',
             'warmup_ms': request.warmup_ms, 'rep_ms': request.rep_ms}
    size = f"{plural(len(planned), 'row')} x {plural(len(trees), 'side')}"
    sides: list[Side] = []
    answers: list[dict] = []
    gate: Gate | None = None
    stopped = False
    try:
        for name, tree, files in trees:
            folder = files[:12] if files else name
            if sides and sides[0].log.parent.name == folder:
                folder = f'{folder}-{name}'
            if name == 'head':
                # the base is compiled, autotuned and loaded before any code of head runs (the gate, head's worker):
                # head's code runs as the same user and could otherwise rewrite what the base loads
                gate = _earlier_gate(request, passed_gate, device, quiet) or _gate(
                    request, workspace, ops, changed, device, list(earlier_tests), quiet)
            sides.append(start_side(name, tree, state_dir(home, 'bench', folder), environment))
            say(f'setting up the {name} side ({size}, {device}): compiling and autotuning', quiet)
            answers.append(sides[-1].ask(setup))
        say(f'timing {size}: {plural(request.rounds, "round")}', quiet)
        start_state = gpu_state()
        with Progress(f'timing {size}', request.rounds, quiet) as progress:
            ceilings = None
            if evidence:
                gpu = answers[-1]['machine']['gpu']
                ceilings = cached_ceilings(state_dir(home), gpu) or sides[-1].ask({'cmd': 'ceilings'})
                store_ceilings(state_dir(home), gpu, ceilings)
            finished = interleave(sides, request.rounds,
                                  lambda done, total: progress.finished(f'round {done}/{total} done ({size})'))
        stopped = finished < request.rounds
    except KeyboardInterrupt:
        stopped = True
        if gate is None:
            # stopped during the gate or before it: the gate's own interrupt says what finished
            raise
        raise BenchInterrupted(gate, None, request.rounds) from None
    finally:
        for side in sides:
            if stopped:
                side.kill()
            else:
                side.close()
    machine = _machine(answers[-1]['machine'], start_state, ceilings, evidence, request.command)
    notes = answers[-1]['notes']
    rows = []
    for plan in planned:
        head = _timed(sides[-1], plan.id)
        flags = [f'eager timing: {notes[plan.id]}'] if notes.get(plan.id) and evidence else []
        if not evidence:
            flags.append('not evidence: no GPU, Triton interpreter')
        rows.append(BenchRow(plan.op, plan.mode, plan.shape, head.samples, median_ms=head.median,
                             eager_median_ms=head.eager_median,
                             launch_overhead_ms=round(head.eager_median - head.median, 5), timing=head.timing,
                             throughput=_throughput(spec_of[plan.op], plan, head.median, ceilings), flags=tuple(flags),
                             evidence=evidence))
    dtypes = {spec.name: {i.name: i.dtype for i in spec.inputs} for spec in ops}
    if len(sides) == 1:
        run = BenchRun(machine, tuple(rows), gate, finished, stopped, dtypes,
                       ref=Revision('working tree', head_sha, dirty))
    else:
        run = _paired(request, home, rows, planned, sides[0], machine, gate, finished, stopped, dtypes,
                      Revision(request.base or 'HEAD', base_sha),
                      Revision('HEAD (A/A: base again)', base_sha) if request.aa
                      else Revision('working tree', head_sha, dirty))
    if stopped:
        raise BenchInterrupted(gate, run, request.rounds)
    if request.ncu:
        plan = planned[0]
        run_name = f'{head_sha[:12]}-{plan.op}-{plan.mode}-{plan.shape.name}'
        run = replace(run, ncu=profile(request.ncu, asdict(spec_of[plan.op]), plan.to_worker(),
                                       [(side.name, side.tree) for side in sides], root / 'profile' / run_name,
                                       {**os.environ, **environment}))
    return run


def _paired(request: BenchRequest, home: Path, rows: list[BenchRow], planned: list[_Planned], base_side: Side,
            machine: Machine, gate: Gate, finished: int, stopped: bool, dtypes: dict, base: Revision,
            head: Revision) -> BenchRun:
    """The paired record: each row with the base's numbers and a verdict, and, for an A/A run, the runner's noise."""
    noise_file = _runner_profile(home, machine.gpu)
    noise = json.loads(noise_file.read_text()) if noise_file.exists() and not request.aa else {}
    min_effects = [max(request.min_effect, noise.get(row.key, 0.0)) for row in rows]
    with_base = []
    for row, plan in zip(rows, planned, strict=True):
        timed = _timed(base_side, plan.id)
        with_base.append(replace(row, base_ms=timed.samples, base_median_ms=timed.median))
    if finished:
        rows, correction = _judged(with_base, min_effects, machine.evidence)
    else:
        rows, correction = with_base, 'no finished round'
    rows = [_flagged(row, gate) for row in rows]
    if request.aa and finished >= stats.MIN_ROUNDS:
        aa_noise = {row.key: stats.noise([h / b for h, b in zip(row.samples_ms, row.base_ms, strict=True)])
                    for row in rows if row.base_ms}
        noise_file.write_text(json.dumps(aa_noise, indent=2))
        rows = [replace(row, aa_noise=round(aa_noise.get(row.key, 0.0), 5)) for row in rows]
    return BenchRun(machine, tuple(rows), gate, finished, stopped, dtypes, base=base, head=head,
                    statistics=Statistics(request.min_effect, correction, str(noise_file) if noise else None))


def compare(base: BenchRun, head: BenchRun, min_effect: float) -> BenchRun:
    """Two single-ref runs on the same GPU compared row by row, matched on op, mode and every shape key: a paired
    record with the base's and the head's numbers, and verdicts only where both are evidence and the head's gate
    allows them."""
    head_rows = {row.key: row for row in head.rows}
    matched = [(b, head_rows[b.key]) for b in base.rows if b.key in head_rows]
    if not matched:
        raise MrbotError('the two records share no row (op, mode and shape must all match)')
    try:
        rows, correction = _judged([replace(h, base_ms=b.samples_ms, base_median_ms=b.median_ms) for b, h in matched],
                                   [min_effect] * len(matched), base.machine.evidence and head.machine.evidence)
    except ValueError as exc:
        raise MrbotError(f'the records cannot be compared: {exc}') from None
    return BenchRun(head.machine, tuple(_flagged(row, head.gate) for row in rows), head.gate, head.rounds,
                    base.interrupted or head.interrupted, {**base.dtypes, **head.dtypes}, base=base.ref, head=head.ref,
                    statistics=Statistics(min_effect, correction))
