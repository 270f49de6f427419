# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot bench`: time the ops a change touches on base and head, interleaved, and judge the difference.

`mrbot bench compare BASE.json HEAD.json` compares two single-ref runs with the same statistics.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from mrbot import git
from mrbot.bench import stats
from mrbot.bench.harness import Side, interleave, start_side
from mrbot.bench.machine import cached_ceilings, gpu_state, hardware_class, store_ceilings
from mrbot.bench.ncu import profile
from mrbot.bench.specs import OpSpec, evaluate, format_specs, touched_ops
from mrbot.config import STATE
from mrbot.records import FileRun, MrbotError
from mrbot.testing import device_label, execute, xdist_args
from mrbot.workspace import Workspace

DEFAULT_MIN_EFFECT = 0.02
PLAUSIBLE_SPEEDUP = 3.0


def _row_key(row: dict) -> str:
    return f"{row['op']}|{row['mode']}|{json.dumps(row['shape'], sort_keys=True)}"


def _rows(specs: list[OpSpec], modes: list[str], shape_names: list[str] | None) -> list[dict]:
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
                rows.append({'id': f'r{len(rows)}', 'op': spec.name, 'mode': mode, 'shape_name': name,
                             'dims': spec.shapes[name], 'shape': {'name': name, **spec.shapes[name]}})
    if not rows:
        raise MrbotError('nothing to time: no chosen op has the requested modes and shapes (`mrbot bench --list`)')
    return rows


def _choose_ops(args: argparse.Namespace, workspace: Workspace, base: str | None) -> list[OpSpec]:
    specs = workspace.specs
    if args.op:
        by_name = {s.name: s for s in specs}
        unknown = [name for name in args.op if name not in by_name]
        if unknown:
            raise MrbotError(f"--op {' '.join(unknown)}: unknown; benchmarkable ops: {', '.join(by_name) or 'none'}")
        return [by_name[name] for name in args.op]
    if args.from_diff:
        if base is None:
            raise MrbotError('--from-diff needs --base REF to know the change')
        touched = touched_ops(workspace, git.changed_paths(workspace.root, base, None), gates=False)
        if not touched:
            raise MrbotError("--from-diff: the change touches no benchmarkable op's code; nothing to time")
        return touched
    return specs


def _gate(args: argparse.Namespace, root: Path, ops: list[OpSpec], changed: list[str], interpret: bool,
          earlier: list[FileRun]) -> dict:
    """Run the ops' gate tests on head, and check that the change leaves them and the naive references alone.

    `earlier` are whole-file runs of this head on this device with dispatch off (`mrbot prepare`'s test step); a gate
    file among them is not run again.
    """
    files = sorted({spec.gate for spec in ops if spec.gate})
    contract = set(files) | {f'{_op_folder(root, spec)}/naive.py' for spec in ops}
    frozen_ok = not (contract & set(changed))
    gate = {'test_files': files, 'frozen_ok': frozen_ok, 'partial': bool(args.gate_k),
            'changed_contract': sorted(contract & set(changed))}
    if args.no_gate or not files:
        return {**gate, 'status': 'skipped'}
    pytest_args = (('-k', args.gate_k) if args.gate_k else ()) + xdist_args(args.gate_workers, '--gate-workers')
    reused = [] if args.gate_k else [r for r in earlier if r.file in files and r.dispatch == 'off']
    missing = [f for f in files if f not in {r.file for r in reused}]
    print(f"gate: {' '.join(missing)} {' '.join(pytest_args)}".rstrip()
          + (f" (reusing {', '.join(r.file for r in reused)})" if reused else ''), file=sys.stderr, flush=True)
    runs = reused + (execute(missing, root, jobs=1, timeout=args.gate_timeout, dispatch='off', interpret=interpret,
                             pytest_args=pytest_args) if missing else [])
    passed = all(r.ok for r in runs)
    seconds = round(sum(r.duration for r in runs), 1)
    print(f"gate {'passed' if passed else 'failed'} in {seconds} s", file=sys.stderr, flush=True)
    return {**gate, 'status': 'passed' if passed else 'failed', 'seconds': seconds, 'pytest_args': list(pytest_args),
            'reused': [r.file for r in reused],
            'failures': [f.test for r in runs for f in r.failures][:20]}


def _op_folder(root: Path, spec: OpSpec) -> str:
    """The folder of the op's implementation: its module if that is a package, else the module's folder."""
    module = spec.callable.split(':')[0].replace('.', '/')
    return module if (root / module / '__init__.py').exists() else module.rpartition('/')[0]


def _runner_profile(root: Path, gpu: str) -> Path:
    return root / STATE / f"runner-{re.sub(r'[^0-9A-Za-z]+', '_', gpu)}.json"


def _throughput(spec: OpSpec, row: dict, ms: float, ceilings: dict | None) -> dict:
    """Achieved TB/s and TFLOP/s from the op spec's byte and flop counts, and their share of the device's ceilings."""
    out = {}
    for kind, expressions, ceiling, unit in (('tbs', spec.bytes, 'copy_tbs', 1e9), ('tflops', spec.flops,
                                                                                   'bf16_tflops', 1e9)):
        expression = expressions.get(row['mode'])
        if expression and ms > 0:
            value = evaluate(expression, row['dims']) / ms / unit
            out[kind] = round(value, 3)
            if ceilings and ceilings.get(ceiling):
                out[f'{kind}_of_ceiling'] = round(value / ceilings[ceiling], 3)
    return out


def _verdicts(rows: list[dict], base: Side, head: Side, min_effects: list[float], evidence: bool) -> str:
    comparisons, note = stats.compare_rows(
        [([s['ms'] for s in base.samples[r['id']]], [s['ms'] for s in head.samples[r['id']]]) for r in rows],
        min_effects)
    for row, comparison in zip(rows, comparisons, strict=True):
        verdict = comparison.verdict
        if not evidence and verdict in ('faster', 'slower'):
            verdict = 'noisy'
        row.update(ratio=round(comparison.ratio, 4), ci_low=round(comparison.ci_low, 4),
                   ci_high=round(comparison.ci_high, 4), verdict=verdict)
    return note


def _flag(rows: list[dict], gate: dict) -> None:
    for row in rows:
        flags = row['flags']
        if gate['status'] == 'failed':
            flags.append('gate failed: no verdict')
            row['verdict'] = 'gate-failed'
        elif row.get('verdict') == 'faster' and (not gate['frozen_ok'] or gate['status'] == 'skipped'):
            flags.append('faster withheld: ' + ('test file or naive reference changed' if not gate['frozen_ok']
                                                else 'gate not run'))
            row['verdict'] = 'noisy'
        if row.get('ratio') and row['ratio'] < 1 / PLAUSIBLE_SPEEDUP:
            flags.append(f'over {PLAUSIBLE_SPEEDUP:g}x faster: review for a skipped computation')


def format_table(record: dict) -> str:
    rows = record['rows']
    paired = 'base' in record
    header = f"{'op':<22} {'mode':<7} {'shape':<26} "
    header += f"{'base ms':>9} {'head ms':>9} {'ratio':>7} {'95% CI':>15} {'verdict':<11}" if paired else f"{'ms':>9}"
    header += f" {'eager ms':>9} {'launch ms':>9} {'TB/s':>7} {'TFLOP/s':>8}  flags"
    lines = [header]
    for row in rows:
        line = f"{row['op']:<22} {row['mode']:<7} {row['shape']['name']:<26} "
        if paired:
            ci = f"{row['ci_low']:.3f}-{row['ci_high']:.3f}" if row.get('ratio') is not None else '-'
            line += (f"{row['base_median_ms']:>9.4f} {row['head_median_ms']:>9.4f} {row.get('ratio', 0):>7.3f} "
                     f"{ci:>15} {row.get('verdict', '-'):<11}")
        else:
            line += f"{row['median_ms']:>9.4f}"
        line += (f" {row['eager_median_ms']:>9.4f} {row['launch_overhead_ms']:>9.4f} {row.get('tbs', 0):>7.2f} "
                 f"{row.get('tflops', 0):>8.1f}  {'; '.join(row.get('flags', []))}")
        lines.append(line)
    machine = record['machine']
    lines.append(f"{machine['gpu']}, {machine['class']}, driver {machine.get('driver', '-')}, torch {machine['torch']}, "
                 f"triton {machine['triton']}; {record['rounds']} rounds{' (interrupted)' if record['interrupted'] else ''}")
    if paired:
        gate = record['gate']
        lines.append(f"statistics: {record['statistics']['correction']}; gate: {gate['status']}"
                     + (' (partial: -k)' if gate['partial'] else '')
                     + ('' if gate['frozen_ok'] else f" (frozen contract changed: {', '.join(gate['changed_contract'])})"))
    return '\n'.join(lines) + '\n'


def _summarise(side: Side, row: dict) -> dict:
    samples = side.samples.get(row['id'], [])
    ms = [s['ms'] for s in samples]
    eager = [s['eager_ms'] for s in samples]
    median = stats.summary(ms)['median'] if ms else 0.0
    eager_median = stats.summary(eager)['median'] if eager else 0.0
    return {'samples_ms': [round(x, 5) for x in ms], 'median_ms': median, 'eager_median_ms': eager_median,
            'launch_overhead_ms': round(eager_median - median, 5),
            'timing': samples[0]['timing'] if samples else 'none', 'summary': stats.summary(ms) if ms else {}}


def measure(args: argparse.Namespace, workspace: Workspace, earlier_tests: list[FileRun] = ()) -> dict:
    """One bench run as its record (BenchRun, or a single-ref run without a base); `args` are `mrbot bench`'s.

    `earlier_tests` are test files this head already ran on this device (`mrbot prepare` runs the dependent tests
    before timing); the gate reuses them instead of running those files again.
    """
    root = workspace.root
    if not workspace.specs:
        raise MrbotError('no benchmarkable ops: declare them in [tool.mrbot.bench.ops.<name>] of pyproject.toml')
    base_sha = git.resolve(root, args.base) if args.base else (git.resolve(root, 'HEAD') if args.aa else None)
    ops = _choose_ops(args, workspace, base_sha)
    rows = _rows(ops, args.modes, args.shapes)
    spec_of = {s.name: s for s in ops}
    device = device_label()
    evidence = device.startswith('compiled')
    changed = git.changed_paths(root, base_sha, None) if base_sha else []
    gate = _gate(args, root, ops, changed, not evidence, list(earlier_tests))
    environment = {'FLA_DISABLE_BACKEND_DISPATCH': '0' if args.dispatch == 'on' else '1'}
    if not evidence:
        environment['TRITON_INTERPRET'] = '1'
    head_sha = git.resolve(root, 'HEAD')
    dirty = bool(git.changed_paths(root, head_sha, None))
    if args.aa:
        trees = [('base', git.worktree(root, base_sha)), ('head', git.worktree(root, base_sha))]
    elif base_sha:
        trees = [('base', git.worktree(root, base_sha)), ('head', root)]
    else:
        trees = [('head', root)]
    sides: list[Side] = []
    try:
        for name, tree in trees:
            sides.append(start_side(name, tree, root / STATE / 'bench' / name, environment))
        setup = {'cmd': 'setup', 'specs': [_spec_json(s) for s in ops], 'seed': 0,
                 'rows': [{k: r[k] for k in ('id', 'op', 'mode', 'dims')} for r in rows],
                 'timing': 'eager' if args.eager else 'graph', 'warmup_ms': args.warmup_ms, 'rep_ms': args.rep_ms}
        start_state = gpu_state()
        print(f'setting up {len(rows)} rows on {len(sides)} side(s) ({device}): compiling and autotuning',
              file=sys.stderr, flush=True)
        answers = [side.ask(setup) for side in sides]
        machine = answers[-1]['machine']
        ceilings = None
        if evidence:
            ceilings = cached_ceilings(root / STATE, machine['gpu']) or sides[-1].ask({'cmd': 'ceilings'})
            store_ceilings(root / STATE, machine['gpu'], ceilings)

        def progress(done: int, total: int) -> None:
            print(f'round {done}/{total} done ({len(rows)} rows x {len(sides)} sides)', file=sys.stderr, flush=True)

        finished = interleave(sides, args.rounds, progress)
    finally:
        for side in sides:
            side.close()
    machine.update({f'{k}_start': v for k, v in start_state.items()})
    machine.update({f'{k}_end': v for k, v in gpu_state().items()})
    machine.update(driver=start_state.get('driver', '-'), **{'class': hardware_class(machine.get('capability', ''))},
                   ceilings=ceilings, command=sys.argv, evidence=evidence)
    notes = answers[-1]['notes']
    record: dict = {'schema': 1, 'machine': machine, 'rounds': finished, 'interrupted': finished < args.rounds,
                    'dtypes': {spec.name: {i.name: i.dtype for i in spec.inputs} for spec in ops}}
    head_side = sides[-1]
    for row in rows:
        head_summary = _summarise(head_side, row)
        row.update({k: head_summary[k] for k in ('samples_ms', 'median_ms', 'eager_median_ms', 'launch_overhead_ms',
                                                  'timing')})
        row.update(_throughput(spec_of[row['op']], row, head_summary['median_ms'], ceilings))
        row['flags'] = [f"eager timing: {notes[row['id']]}"] if notes.get(row['id']) and evidence else []
        if not evidence:
            row['flags'].append('not evidence: no GPU, Triton interpreter')
        row['evidence'] = evidence
    if len(sides) == 2:
        base_side = sides[0]
        noise_file = _runner_profile(root, machine['gpu'])
        noise = json.loads(noise_file.read_text()) if noise_file.exists() and not args.aa else {}
        min_effects = [max(args.min_effect, noise.get(_row_key(r), 0.0)) for r in rows]
        for row in rows:
            base_summary = _summarise(base_side, row)
            row.update(base_ms=base_summary['samples_ms'], head_ms=row.pop('samples_ms'),
                       base_median_ms=base_summary['median_ms'], head_median_ms=row['median_ms'])
        correction = _verdicts(rows, base_side, head_side, min_effects, evidence) if finished else 'no finished round'
        _flag(rows, gate)
        record.update(base={'ref': args.base or 'HEAD', 'sha': base_sha},
                      head={'ref': 'HEAD (A/A: base again)' if args.aa else 'working tree', 'sha': base_sha if args.aa
                            else head_sha, 'dirty': dirty and not args.aa},
                      statistics={'min_effect': args.min_effect, 'correction': correction,
                                  'runner_profile': str(noise_file) if noise else None},
                      gate=gate)
        if args.aa and finished >= stats.MIN_ROUNDS:
            aa_noise = {_row_key(r): stats.noise([h / b for h, b in zip(r['head_ms'], r['base_ms'], strict=True)])
                        for r in rows if r['base_ms']}
            noise_file.write_text(json.dumps(aa_noise, indent=2))
            for row in rows:
                row['aa_noise'] = round(aa_noise.get(_row_key(row), 0.0), 5)
    else:
        record.update(ref={'ref': 'working tree', 'sha': head_sha, 'dirty': dirty}, gate=gate)
    if args.ncu:
        row = rows[0]
        run_name = f"{head_sha[:12]}-{row['op']}-{row['mode']}-{row['shape_name']}"
        record['ncu'] = profile(args.ncu, _spec_json(spec_of[row['op']]), {k: row[k] for k in ('op', 'mode', 'dims')},
                                [(side.name, side.tree) for side in sides], root / 'profile' / run_name,
                                {**os.environ, **environment})
    record['rows'] = [{k: v for k, v in r.items() if k not in ('id', 'dims', 'shape_name')} for r in rows]
    return record


def _bench(args: argparse.Namespace) -> int:
    workspace = Workspace.load(git.repo_root(Path.cwd()))
    if args.list:
        print(format_specs(workspace.specs), end='')
        return 0
    record = measure(args, workspace)
    print(format_table(record), end='')
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2) + '\n')
    return 1 if record['gate']['status'] == 'failed' else 0


def _spec_json(spec: OpSpec) -> dict:
    from dataclasses import asdict

    return asdict(spec)


def _compare(args: argparse.Namespace) -> int:
    """Compare two single-ref runs row by row, matched on op, mode and every shape key."""
    if len(args.action) != 3:
        raise MrbotError('usage: mrbot bench compare BASE.json HEAD.json')
    records = []
    for path in args.action[1:]:
        try:
            record = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise MrbotError(f'{path}: cannot read a bench record ({exc})') from None
        if record.get('schema') != 1 or 'ref' not in record:
            raise MrbotError(f'{path}: expected a single-ref bench record with schema 1 (mrbot bench --json without --base)')
        records.append(record)
    base, head = records
    head_rows = {_row_key(r): r for r in head['rows']}
    rows = [(b, head_rows[_row_key(b)]) for b in base['rows'] if _row_key(b) in head_rows]
    if not rows:
        raise MrbotError('the two records share no row (op, mode and shape must all match)')
    try:
        comparisons, correction = stats.compare_rows([(b['samples_ms'], h['samples_ms']) for b, h in rows],
                                                     [args.min_effect] * len(rows))
    except ValueError as exc:
        raise MrbotError(f'the records cannot be compared: {exc}') from None
    evidence = base['machine'].get('evidence', False) and head['machine'].get('evidence', False)
    out_rows = []
    for (b, h), comparison in zip(rows, comparisons, strict=True):
        verdict = comparison.verdict if evidence or comparison.verdict not in ('faster', 'slower') else 'noisy'
        out_rows.append({'op': b['op'], 'mode': b['mode'], 'shape': b['shape'], 'base_ms': b['samples_ms'],
                         'head_ms': h['samples_ms'], 'ratio': round(comparison.ratio, 4),
                         'ci_low': round(comparison.ci_low, 4), 'ci_high': round(comparison.ci_high, 4),
                         'verdict': verdict})
    result = {'schema': 1, 'machine': head['machine'], 'base': base['ref'], 'head': head['ref'], 'rows': out_rows,
              'statistics': {'min_effect': args.min_effect, 'correction': correction},
              'gate': head.get('gate', {'status': 'skipped'})}
    if args.format == 'json':
        print(json.dumps(result, indent=2))
    else:
        for row in out_rows:
            print(f"{row['op']:<22} {row['mode']:<7} {row['shape']['name']:<26} ratio {row['ratio']:.3f} "
                  f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}] {row['verdict']}")
        print(f'statistics: {correction}')
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action:
        if args.action[0] != 'compare':
            raise MrbotError(f"unknown bench action '{args.action[0]}': expected `mrbot bench compare BASE.json HEAD.json`")
        return _compare(args)
    return _bench(args)


def arguments(argv: list[str]) -> argparse.Namespace:
    """The options of `mrbot bench ARGV`, for callers that run `measure` themselves (prepare, the GPU job)."""
    parser = argparse.ArgumentParser(prog='mrbot bench')
    add_arguments(parser)
    return parser.parse_args(argv)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('action', nargs='*', help='`compare BASE.json HEAD.json` to compare two single-ref runs')
    parser.add_argument('--list', action='store_true', help='list the benchmarkable ops and their shapes')
    parser.add_argument('--op', nargs='+', help='ops to time (default: all, or those the change touches with --from-diff)')
    parser.add_argument('--from-diff', action='store_true', help='time the ops the change from --base touches')
    parser.add_argument('--base', help='compare the working tree with this revision, checked out in a worktree')
    parser.add_argument('--aa', action='store_true', help='time the base against itself to measure runner noise')
    parser.add_argument('--modes', nargs='+', choices=['fwd', 'fwdbwd'], default=['fwd', 'fwdbwd'])
    parser.add_argument('--shapes', nargs='+', help='shape names (default: each op\'s default shapes)')
    parser.add_argument('--rounds', type=int, default=10, help='interleaved rounds (default: 10)')
    parser.add_argument('--min-effect', type=float, default=DEFAULT_MIN_EFFECT,
                        help='smallest relative change a verdict may call faster or slower (default: 0.02)')
    parser.add_argument('--eager', action='store_true', help='time eager calls instead of CUDA graph replays')
    parser.add_argument('--warmup-ms', type=float, default=25.0)
    parser.add_argument('--rep-ms', type=float, default=100.0)
    parser.add_argument('--dispatch', choices=['off', 'on'], default='off', help='backend dispatch while timing')
    parser.add_argument('--no-gate', action='store_true', help='skip the correctness gate (a faster verdict is then withheld)')
    parser.add_argument('--gate-k', help='run only the gate tests matching this -k expression (a partial gate)')
    parser.add_argument('--gate-workers', type=int, default=1,
                        help='processes for the gate tests (pytest-xdist; they share the GPU before timing starts)')
    parser.add_argument('--gate-timeout', type=float, default=1800.0)
    parser.add_argument('--format', choices=['text', 'json'], default='text', help='output of `compare`')
    parser.add_argument('--ncu', metavar='KERNEL_REGEX',
                        help='profile the matching kernels of the first row with Nsight Compute (report under profile/)')
    parser.add_argument('--json', help='write the run record to this file')
