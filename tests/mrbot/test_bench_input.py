# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Bench records read back: every malformed file `mrbot bench compare` may be given is one line naming the file and
the field, exit 2; two runs of different GPUs are refused; a record written and read again is the same record."""

from __future__ import annotations

import copy
import json

import pytest

from mrbot.cli import main
from mrbot.records import MrbotError
from mrbot.records.bench import BenchRequest, BenchRun
from mrbot.records.reading import JsonObject
from mrbot.render import render

MACHINE = {'torch': '2.9.0', 'triton': '3.6.0', 'cuda': '12.8', 'python': '3.11.9', 'dispatch': False,
           'interpreter': False, 'gpu': 'NVIDIA H100 80GB HBM3', 'capability': 'sm_90', 'multiprocessors': 132,
           'driver_start': '570.86', 'sm_clock_start': '1980 MHz', 'driver': '570.86', 'class': 'sm_90 baseline',
           'ceilings': {'copy_tbs': 3.1, 'bf16_tflops': 700.0}, 'command': ['mrbot', 'bench'], 'evidence': True}


def single(samples: list[float], gpu: str = 'NVIDIA H100 80GB HBM3', capability: str = 'sm_90') -> dict:
    """A single-ref record as `mrbot bench --json` writes it, with one row."""
    return {'schema': 1, 'machine': {**MACHINE, 'gpu': gpu, 'capability': capability}, 'rounds': len(samples),
            'interrupted': False, 'dtypes': {'scale': {'x': 'bfloat16'}},
            'ref': {'ref': 'working tree', 'sha': 'a' * 40, 'dirty': False},
            'gate': {'test_files': ['tests/test_scale.py'], 'frozen_ok': True, 'partial': False, 'changed_contract': [],
                     'status': 'passed', 'seconds': 1.5, 'pytest_args': [], 'reused': [], 'failures': []},
            'rows': [{'op': 'scale', 'mode': 'fwd', 'shape': {'name': 'small', 'B': 2, 'D': 4}, 'samples_ms': samples,
                      'median_ms': sorted(samples)[len(samples) // 2], 'eager_median_ms': 0.5,
                      'launch_overhead_ms': 0.1, 'timing': 'graph', 'tbs': 1.2, 'flags': [], 'evidence': True}]}


def _compare(tmp_path, capsys, base: object, head: object, *argv: str) -> tuple[int, str, str]:
    for name, record in (('A.json', base), ('B.json', head)):
        (tmp_path / name).write_text(record if isinstance(record, str) else json.dumps(record))
    code = main(['bench', 'compare', str(tmp_path / 'A.json'), str(tmp_path / 'B.json'), *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _broken(change) -> dict:
    record = single([1.0, 1.0, 1.0])
    change(record)
    return record


CORPUS = [
    ('[]', 'B.json: expected a JSON object (a bench record of mrbot bench --json), got a list'),
    ('null', 'B.json: expected a JSON object (a bench record of mrbot bench --json), got null'),
    ('"fast"', 'B.json: expected a JSON object (a bench record of mrbot bench --json), got the string "fast"'),
    ('{"schema": 1,', 'B.json: not JSON (Expecting property name enclosed in double quotes'),
    (_broken(lambda r: r.pop('schema')), 'B.json: schema: missing, expected 1 (a record of this mrbot bench)'),
    (_broken(lambda r: r.update(schema=2)), 'B.json: schema: expected 1 (a record of this mrbot bench), got 2'),
    (_broken(lambda r: r.pop('rows')), 'B.json: rows: missing, expected a list'),
    (_broken(lambda r: r.update(rows=None)), 'B.json: rows: expected a list, got null'),
    (_broken(lambda r: r['rows'].append(3)), 'B.json: rows[1]: expected an object, got 3'),
    (_broken(lambda r: r['rows'][0].pop('op')), 'B.json: rows[0].op: missing, expected a string'),
    (_broken(lambda r: r['rows'][0].update(samples_ms=None)),
     'B.json: rows[0].samples_ms: expected a list of numbers, got null'),
    (_broken(lambda r: r['rows'][0].pop('samples_ms')), 'B.json: rows[0].samples_ms: missing, expected a list of numbers'),
    (_broken(lambda r: r['rows'][0].update(samples_ms=[1.0, 'x'])),
     'B.json: rows[0].samples_ms[1]: expected a positive number of ms, got the string "x"'),
    (_broken(lambda r: r['rows'][0].update(samples_ms=[1.0, 0])),
     'B.json: rows[0].samples_ms[1]: expected a positive number of ms, got 0'),
    (_broken(lambda r: r['rows'][0]['shape'].pop('name')), 'B.json: rows[0].shape.name: missing, expected a string'),
    (_broken(lambda r: r['rows'][0].update(shape='small')), 'B.json: rows[0].shape: expected an object, got the string'),
    (_broken(lambda r: r['rows'][0]['shape'].update(B=[2])),
     'B.json: rows[0].shape.B: expected a number or a string (a dimension), got a list'),
    (_broken(lambda r: r.pop('machine')), 'B.json: machine: missing, expected an object'),
    (_broken(lambda r: r.update(machine='h100')), 'B.json: machine: expected an object, got the string "h100"'),
    (_broken(lambda r: r['machine'].pop('gpu')), 'B.json: machine.gpu: missing, expected a string'),
    (_broken(lambda r: r['machine'].update(evidence='yes')),
     'B.json: machine.evidence: expected true or false, got the string "yes"'),
    (_broken(lambda r: r.pop('ref')), 'B.json: ref: missing, expected an object'),
    (_broken(lambda r: r['gate'].update(status='green')),
     'B.json: gate.status: expected one of passed, failed, skipped, got the string "green"'),
]


@pytest.mark.parametrize(('head', 'message'), CORPUS, ids=[message.split(': ', 1)[1][:50] for _, message in CORPUS])
def test_a_malformed_record_is_one_line_naming_the_file_and_the_field(tmp_path, capsys, head, message):
    code, out, err = _compare(tmp_path, capsys, single([1.0, 1.0, 1.0]), head)
    assert code == 2 and out == ''
    assert err.startswith(f'mrbot bench: error: {tmp_path}/{message}'), err
    assert err.count('\n') == 1 and 'internal error' not in err


def test_a_missing_file_and_a_folder_are_one_line_each(tmp_path, capsys):
    for path in (tmp_path / 'missing.json', tmp_path):
        assert main(['bench', 'compare', str(path), str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f'mrbot bench: error: {path}: cannot read it (') and err.count('\n') == 1


def test_a_paired_record_is_not_a_single_ref_one(tmp_path, capsys):
    paired = single([1.0, 1.0, 1.0])
    paired['base'] = paired['head'] = paired.pop('ref')
    row = paired['rows'][0]
    row['base_ms'] = row['head_ms'] = row.pop('samples_ms')
    code, _, err = _compare(tmp_path, capsys, paired, single([1.0, 1.0, 1.0]))
    assert code == 2
    assert err == (f'mrbot bench: error: {tmp_path}/A.json: a paired record (base and head); expected a single-ref one '
                   '(mrbot bench --json without --base)\n')


def test_runs_of_two_gpus_are_refused_naming_both(tmp_path, capsys):
    code, out, err = _compare(tmp_path, capsys, single([1.0, 1.0, 1.0]),
                              single([0.5, 0.5, 0.5], 'NVIDIA H200', 'sm_90'))
    assert code == 2 and out == ''
    assert err == (f'mrbot bench: error: {tmp_path}/A.json was timed on NVIDIA H100 80GB HBM3 (sm_90), {tmp_path}/B.json '
                   'on NVIDIA H200 (sm_90): a before/after comparison needs both on the same GPU model; time both there\n')


def test_a_faster_head_on_one_gpu_is_called_faster(tmp_path, capsys):
    base, head = single([1.0, 1.01, 0.99, 1.0, 1.02]), single([0.5, 0.51, 0.49, 0.5, 0.5])
    code, out, _ = _compare(tmp_path, capsys, base, head, '--format', 'json')
    result = json.loads(out)
    assert code == 0 and [(r['verdict'], r['ratio']) for r in result['rows']] == [('faster', 0.5)]
    assert result['base']['sha'] == 'a' * 40 and result['rows'][0]['base_median_ms'] == 1.0
    code, out, _ = _compare(tmp_path, capsys, base, head)
    columns = out.splitlines()[1].split()
    assert columns[:6] + columns[7:8] == ['scale', 'fwd', 'small', '1.0000', '0.5000', '0.500', 'faster']
    assert out.splitlines()[2].startswith('NVIDIA H100 80GB HBM3, sm_90 baseline, driver 570.86')


def test_a_cpu_record_never_calls_a_row_faster(tmp_path, capsys):
    cpu = copy.deepcopy(single([0.5, 0.5, 0.5, 0.5, 0.5], 'cpu', ''))
    cpu['machine']['evidence'] = False
    base = copy.deepcopy(cpu)
    base['rows'][0]['samples_ms'] = [1.0] * 5
    code, out, _ = _compare(tmp_path, capsys, base, cpu, '--format', 'json')
    assert code == 0 and json.loads(out)['rows'][0]['verdict'] == 'noisy'


def test_a_record_read_back_writes_the_same_json():
    written = single([1.0, 1.1, 0.9])
    assert BenchRun.from_json(JsonObject(written, 'run.json')).to_json() == written
    paired = _paired()
    assert BenchRun.from_json(JsonObject(paired, 'run.json')).to_json() == paired


def _paired() -> dict:
    """A paired record as `mrbot bench --base` writes it, with one row twice as fast on the head."""
    paired = single([1.0, 1.1, 0.9])
    paired['base'], paired['head'] = paired.pop('ref'), {'ref': 'working tree', 'sha': 'b' * 40, 'dirty': True}
    paired['statistics'] = {'min_effect': 0.02, 'correction': 'Holm', 'runner_profile': None}
    row = paired['rows'][0]
    row.update(base_ms=row.pop('samples_ms'), head_ms=[0.5] * 3, base_median_ms=1.0, head_median_ms=row['median_ms'],
               ratio=0.5, ci_low=0.45, ci_high=0.55, verdict='faster')
    return paired


def test_a_failed_gate_keeps_each_tests_error_and_an_older_record_its_names():
    failed = _paired()
    failure = {'test': 'tests/test_scale.py::test_x[bf16]', 'message': 'AssertionError: o: relative error 0.031\nmore'}
    failed['gate'].update(status='failed', failures=[failure])
    assert BenchRun.from_json(JsonObject(failed, 'run.json')).to_json() == failed
    # the PR body and the /bench comment name the test and its error's first line
    shown = render('bench_run.md.j2', b=failed, command='mrbot bench --op scale')
    assert "Correctness gate: failed.\nCommand: `mrbot bench --op scale --rounds 3`.\n\nThe gate's failures:\n" \
           '- `tests/test_scale.py::test_x[bf16]`: AssertionError: o: relative error 0.031\n' in shown
    # a loop store written before the errors were kept lists the tests alone; it reads, its errors unknown
    failed['gate']['failures'] = [failure['test']]
    older = BenchRun.from_json(JsonObject(failed, 'run.json')).gate.failures
    assert [(f.test, f.message, f.first_line) for f in older] == [(failure['test'], '', 'failed')]
    failed['gate']['failures'] = [failure['test'], 3]
    with pytest.raises(MrbotError, match=r'^run.json: gate.failures\[1\]: expected a string, got 3$'):
        BenchRun.from_json(JsonObject(failed, 'run.json'))


@pytest.mark.parametrize(('fields', 'message'), [
    ({'rounds': 0}, '--rounds must be at least 1, got 0'),
    ({'rounds': 2, 'base': 'main'}, '--rounds must be at least 3 with --base or --aa (a confidence interval needs them), '
                                    'got 2'),
    ({'min_effect': 1.5}, '--min-effect must be at least 0 and below 1 (a share of the time), got 1.5'),
    ({'rep_ms': 0.0}, '--rep-ms must be above 0, got 0'),
    ({'warmup_ms': -1.0}, '--warmup-ms must be 0 or more, got -1'),
    ({'gate_workers': -1}, '--gate-workers must be 0 (sized for this machine) or more, got -1'),
    ({'gate_timeout': 0.0}, '--gate-timeout must be above 0 seconds, got 0'),
    ({'modes': ('bwd',)}, '--modes bwd: expected one or more of fwd, fwdbwd'),
    ({'from_diff': True}, '--from-diff needs --base REF to know the change'),
])
def test_a_bad_request_is_refused_when_made(fields, message):
    with pytest.raises(MrbotError) as error:
        BenchRequest(**fields)
    assert str(error.value) == message
