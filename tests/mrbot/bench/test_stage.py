# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot bench` end to end on CPU with a small op: records, worktrees, gate, frozen contract, compare, interruption."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mrbot.bench import stage
from mrbot.bench.harness import Side, interleave
from mrbot.bench.machine import hardware_class
from mrbot.cli import main

OP = '''import sys
import time

import torch


def scaled_sum(x, y, factor=1.0):
    print('ops may print; the worker keeps it off its answers')
    time.sleep(DELAY)
    return (x * y * factor).sum(-1)
'''
NAIVE = 'def naive_scaled_sum(x, y, factor=1.0):\n    return (x * y * factor).sum(-1)\n'
GATE = '''import torch

from pkg.op import scaled_sum


def test_scaled_sum():
    x = torch.ones(2, 3)
    assert scaled_sum(x, x, 2.0).tolist() == [6.0, 6.0]
'''
BENCH = '''[tool.mrbot]
source-roots = ["pkg"]

[tool.mrbot.bench.ops.scaled_sum]
callable = "pkg.op:scaled_sum"
gate = "tests/test_op.py"
modes = ["fwd", "fwdbwd"]
kwargs = { factor = 2.0 }

[tool.mrbot.bench.ops.scaled_sum.inputs]
x = { shape = ["B", "D"], dtype = "float32" }
y = { shape = ["B", "D"], dtype = "float32", transform = "sigmoid" }

[tool.mrbot.bench.ops.scaled_sum.shapes]
small = { B = 4, D = 8 }
wide = { B = 2, D = 64 }

[tool.mrbot.bench.ops.scaled_sum.bytes]
fwd = "2*B*D*4 + B*4"
'''


PAIRED = ('--base', 'HEAD', '--shapes', 'small', '--modes', 'fwd')


def _files(delay: float = 0.0, gate: str = GATE) -> dict[str, str]:
    return {'pkg/__init__.py': '', 'pkg/op.py': OP.replace('DELAY', str(delay)), 'pkg/naive.py': NAIVE,
            'tests/test_op.py': gate, 'pyproject.toml': BENCH}


@pytest.fixture
def out_dir(tmp_path_factory):
    """Where records go: outside the repository, so they are no part of the change."""
    return tmp_path_factory.mktemp('out')


def _bench(repo, monkeypatch, capsys, out_dir, *argv):
    monkeypatch.chdir(repo.root)
    record = out_dir / 'record.json'
    code = main(['bench', '--rounds', '3', '--json', str(record), *argv])
    out = capsys.readouterr().out
    return code, (json.loads(record.read_text()) if record.exists() else None), out


def test_single_ref_run_records_one_median_per_round(repo, monkeypatch, capsys, out_dir):
    repo.commit(_files())
    code, record, out = _bench(repo, monkeypatch, capsys, out_dir, '--shapes', 'small', '--no-gate')
    assert code == 0 and record['schema'] == 1 and record['ref']['sha'] == repo.git('rev-parse', 'HEAD')
    small = {'name': 'small', 'B': 4, 'D': 8}
    assert [(r['op'], r['mode'], r['shape']) for r in record['rows']] == [('scaled_sum', 'fwd', small),
                                                                          ('scaled_sum', 'fwdbwd', small)]
    assert all(len(r['samples_ms']) == 3 and r['evidence'] is False for r in record['rows'])
    assert record['machine']['class'] == 'cpu (not evidence)' and record['machine']['interpreter'] is True
    assert 'not evidence: no GPU, Triton interpreter' in out


def test_paired_run_against_a_worktree_never_claims_speed_on_cpu(repo, monkeypatch, capsys, out_dir):
    base = repo.commit(_files())
    repo.write({'pkg/op.py': OP.replace('DELAY', '0.02')})
    code, record, _ = _bench(repo, monkeypatch, capsys, out_dir, *PAIRED)
    assert code == 0 and (repo.root / '.mrbot' / 'worktrees' / base[:12] / 'pkg' / 'op.py').is_file()
    row = record['rows'][0]
    assert record['base']['sha'] == base and record['head']['dirty'] is True
    assert len(row['base_ms']) == len(row['head_ms']) == 3 and row['ratio'] > 1.5
    # the head is many times slower, but a CPU run is not evidence
    assert row['verdict'] == 'noisy' and record['gate']['status'] == 'passed'
    assert repo.git('status', '--porcelain') == 'M pkg/op.py'


def test_the_base_is_set_up_before_any_code_of_head_runs(repo, monkeypatch, capsys, out_dir):
    """Head's gate and worker run as the same user as the base's worker: the base compiles, autotunes and loads its
    kernels first, so nothing head runs can rewrite what the base times."""
    repo.commit(_files())
    repo.write({'pkg/op.py': OP.replace('DELAY', '0.02')})
    order = []
    gate, start = stage._gate, stage.start_side
    monkeypatch.setattr(stage, '_gate', lambda *a, **k: order.append('gate') or gate(*a, **k))
    monkeypatch.setattr(stage, 'start_side', lambda name, *a, **k: order.append(name) or start(name, *a, **k))
    code, record, _ = _bench(repo, monkeypatch, capsys, out_dir, *PAIRED)
    assert code == 0 and record['gate']['status'] == 'passed'
    assert order == ['base', 'gate', 'head']


def test_red_gate_means_no_verdict_and_exit_one(repo, monkeypatch, capsys, out_dir):
    repo.commit(_files())
    repo.write({'tests/test_op.py': GATE.replace('[6.0, 6.0]', '[7.0, 7.0]')})
    code, record, out = _bench(repo, monkeypatch, capsys, out_dir, *PAIRED)
    assert code == 1
    assert record['gate']['status'] == 'failed'
    # which test failed and how, so that a red gate can be acted on without rerunning it
    [failure] = record['gate']['failures']
    assert failure['test'] == 'tests/test_op.py::test_scaled_sum' and '[7.0, 7.0]' in failure['message']
    assert f"  FAILED tests/test_op.py::test_scaled_sum: {failure['message'].splitlines()[0]}\n" in out
    assert record['rows'][0]['verdict'] == 'gate-failed'
    # the gate file itself changed: the frozen contract is broken too
    assert record['gate']['frozen_ok'] is False and record['gate']['changed_contract'] == ['tests/test_op.py']


def test_gate_workers_spread_the_gate_over_processes(repo, monkeypatch, capsys, out_dir):
    repo.commit(_files())
    code, record, _ = _bench(repo, monkeypatch, capsys, out_dir, *PAIRED, '--gate-workers', '2')
    assert code == 0 and record['gate']['status'] == 'passed' and record['gate']['seconds'] > 0
    assert record['gate']['pytest_args'] == ['-n', '2']


def test_the_gate_and_both_sides_run_under_the_dispatch_and_variables_that_are_timed(repo, monkeypatch, capsys,
                                                                                    out_dir):
    """A backend timed with dispatch on and its switch set is the one the gate tests: a gate run with dispatch off
    would pass on the default implementation while the numbers came from the backend."""
    served = "    assert os.environ['FLA_DISABLE_BACKEND_DISPATCH'] == '0' and os.environ.get('OP_VARIANT') == 'fast'\n"
    gate = 'import os\n' + GATE + '\n\ndef test_served_as_timed():\n' + served
    op = 'import os\n' + OP.replace("    print('ops may print; the worker keeps it off its answers')\n", served)
    repo.commit(_files(gate=gate))
    code, record, _ = _bench(repo, monkeypatch, capsys, out_dir, *PAIRED)
    assert code == 1 and [f['test'] for f in record['gate']['failures']] == ['tests/test_op.py::test_served_as_timed']
    # the head's op now fails without the variable: its side ran with it
    repo.write({'pkg/op.py': op.replace('DELAY', '0.0')})
    code, record, _ = _bench(repo, monkeypatch, capsys, out_dir, *PAIRED, '--dispatch', 'on', '--env', 'OP_VARIANT=fast')
    assert code == 0 and record['gate']['status'] == 'passed'
    assert all(len(row['head_ms']) == 3 for row in record['rows'])


def test_the_runners_worker_count_spreads_the_gate(repo, monkeypatch, capsys, out_dir):
    repo.commit(_files())
    monkeypatch.setenv('MRBOT_TEST_WORKERS', '2')
    code, record, _ = _bench(repo, monkeypatch, capsys, out_dir, *PAIRED)
    assert code == 0 and record['gate']['pytest_args'] == ['-n', '2']


def test_a_changed_naive_reference_breaks_the_frozen_contract(repo, monkeypatch, capsys, out_dir):
    repo.commit(_files())
    repo.write({'pkg/naive.py': NAIVE + '\nEPS = 0\n'})
    _, record, _ = _bench(repo, monkeypatch, capsys, out_dir, *PAIRED)
    assert record['gate']['changed_contract'] == ['pkg/naive.py']


def test_compare_matches_rows_of_two_single_ref_runs(repo, monkeypatch, capsys, out_dir):
    repo.commit(_files())
    _, first, _ = _bench(repo, monkeypatch, capsys, out_dir, '--no-gate')
    tmp_path = out_dir / 'records'
    tmp_path.mkdir()
    (tmp_path / 'base.json').write_text(json.dumps(first))
    first['rows'] = first['rows'][:1]
    (tmp_path / 'head.json').write_text(json.dumps(first))
    assert main(['bench', 'compare', str(tmp_path / 'base.json'), str(tmp_path / 'head.json'), '--format', 'json']) == 0
    result = json.loads(capsys.readouterr().out)
    assert [(r['op'], r['mode'], r['shape']['name'], r['ratio'], r['verdict']) for r in result['rows']] == [
        ('scaled_sum', 'fwd', 'small', 1.0, 'same')]
    assert result['schema'] == 1 and 'Holm' in result['statistics']['correction']


def test_interleave_alternates_order_and_keeps_finished_rounds_on_ctrl_c(tmp_path):
    calls = []

    class Fake(Side):
        def ask(self, command):
            calls.append(self.name)
            if len(calls) == 5:
                raise KeyboardInterrupt
            return {'times': {'r0': {'ms': 1.0, 'eager_ms': 1.5, 'timing': 'graph'}}}

    sides = [Fake('base', tmp_path, None, tmp_path / 'log'), Fake('head', tmp_path, None, tmp_path / 'log')]
    assert interleave(sides, 10) == 2
    assert calls == ['base', 'head', 'head', 'base', 'base']
    assert [len(s.samples['r0']) for s in sides] == [2, 2]


def test_worker_answers_stay_clean_when_ops_print(tmp_path):
    from mrbot.bench.harness import WORKER

    (tmp_path / 'noisy.py').write_text('def op(x):\n    print("chatter")\n    return x * 2\n')
    spec = {'name': 'op', 'callable': 'noisy:op', 'source': 'config', 'kwargs': {},
            'inputs': [{'name': 'x', 'shape': ['B'], 'dtype': 'float32', 'transform': '', 'requires_grad': True}]}
    commands = [{'cmd': 'setup', 'specs': [spec], 'seed': 0, 'timing': 'graph', 'warmup_ms': 1, 'rep_ms': 1,
                 'rows': [{'id': 'r0', 'op': 'op', 'mode': 'fwdbwd', 'dims': {'B': 4}}]},
                {'cmd': 'round'}, {'cmd': 'exit'}]
    done = subprocess.run([sys.executable, str(WORKER), str(tmp_path)], capture_output=True, text=True, timeout=120,
                          input=''.join(json.dumps(c) + '\n' for c in commands))
    setup, timed = (json.loads(line) for line in done.stdout.splitlines())
    assert done.returncode == 0 and 'chatter' in done.stderr
    assert setup['notes'] == {'r0': 'no CUDA device'} and setup['machine']['gpu'] == 'cpu'
    assert timed['times']['r0']['timing'] == 'eager' and timed['times']['r0']['ms'] > 0


@pytest.mark.parametrize(('capability', 'expected'), [
    ('sm_90', 'sm_90 baseline'), ('sm_100', 'sm_100 preferred'), ('sm_86', 'sm_86 reference only'),
    ('', 'cpu (not evidence)')])
def test_hardware_class(capability, expected):
    assert hardware_class(capability) == expected


def test_ncu_missing_is_recorded_not_fatal(repo, monkeypatch, capsys, out_dir):
    repo.commit(_files())
    monkeypatch.setenv('PATH', '/usr/bin:/bin')
    code, record, _ = _bench(repo, monkeypatch, capsys, out_dir, '--shapes', 'small', '--modes', 'fwd', '--no-gate',
                             '--ncu', 'scaled')
    assert code == 0 and record['ncu'] == {'status': 'ncu not available on this machine'}


def test_progress_is_a_line_per_round_on_stderr_and_nothing_under_quiet(repo, monkeypatch, capsys):
    repo.commit(_files())
    monkeypatch.chdir(repo.root)
    main(['bench', '--rounds', '2', '--shapes', 'small', '--modes', 'fwd', '--no-gate'])
    err = capsys.readouterr().err
    assert err.splitlines() == ['setting up the head side (1 row x 1 side, Triton interpreter (CPU)): compiling and '
                                'autotuning', 'timing 1 row x 1 side: 2 rounds',
                                'round 1/2 done (1 row x 1 side)', 'round 2/2 done (1 row x 1 side)']
    main(['bench', '--rounds', '2', '--shapes', 'small', '--modes', 'fwd', '--no-gate', '-q'])
    captured = capsys.readouterr()
    assert captured.err == '' and captured.out.startswith('op ')


def _workers_of(tree: Path) -> list[int]:
    """The bench workers still running on `tree`."""
    found = []
    for entry in Path('/proc').iterdir():
        try:
            command = (entry / 'cmdline').read_bytes().split(b'\0')
        except OSError:
            continue
        if any(part.endswith(b'bench/worker.py') for part in command) and str(tree).encode() in command:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_keeps_the_finished_rounds_and_stops_the_workers(repo, out_dir, signum):
    repo.commit(_files(delay=0.2))
    record = out_dir / 'record.json'
    process = subprocess.Popen([sys.executable, '-m', 'mrbot.cli', 'bench', '--rounds', '50', '--shapes', 'small',
                                '--no-gate', '--json', str(record)], cwd=repo.root, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.startswith('round 1/50 done'):
            break
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, ''.join(seen) + err
    assert err.splitlines()[-1].startswith('mrbot bench: interrupted')
    assert 'Traceback' not in err
    saved = json.loads(record.read_text())
    assert saved['interrupted'] is True and saved['rounds'] >= 1
    assert all(len(row['samples_ms']) == saved['rounds'] for row in saved['rows'])
    assert f"{saved['rounds']} rounds (interrupted)" in out or '1 round (interrupted)' in out
    assert _workers_of(repo.root) == []


def test_a_compiled_run_judges_rows_and_rates_them_against_the_ceilings(repo, monkeypatch, capsys, out_dir):
    """The GPU path, with a stand-in device label: the worker still runs on the CPU, the ceilings come from the cache."""
    import mrbot.bench.stage
    from mrbot.bench.machine import store_ceilings
    from mrbot.config import state_dir

    repo.commit(_files())
    repo.write({'pkg/op.py': OP.replace('DELAY', '0.02')})
    monkeypatch.setattr(mrbot.bench.stage, 'device_label', lambda: 'compiled on a stand-in (sm_90)')
    store_ceilings(state_dir(repo.root), 'cpu', {'copy_tbs': 2.0, 'bf16_tflops': 500.0})
    code, record, out = _bench(repo, monkeypatch, capsys, out_dir, *PAIRED)
    row = record['rows'][0]
    assert code == 0 and record['machine']['evidence'] is True
    assert record['machine']['ceilings'] == {'copy_tbs': 2.0, 'bf16_tflops': 500.0}
    assert row['verdict'] == 'slower' and row['flags'] == ['eager timing: no CUDA device']
    assert abs(row['tbs_of_ceiling'] - row['tbs'] / 2.0) < 1e-3
    assert 'slower' in out.splitlines()[1]
