# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The Evidence record: the PR checklist (the compile item is ticked only when every kernel the change reaches was
compiled and fits, the title item only when no finding of any severity is about the title), the benchmark conclusion,
and the record read back from its JSON."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mrbot.evidence import ChecklistItem, Evidence, Step, checklist, conclusion
from mrbot.records import MrbotError
from mrbot.records.bench import BenchRun
from mrbot.records.reading import JsonObject
from tests.mrbot.test_bench_input import single


def record(kernels: list[dict], unlaunched: list[dict], reached: list[str]) -> Evidence:
    return Evidence('2026-01-01T00:00:00+00:00', 'Triton interpreter (CPU)', {'title': '[Ops] Change', 'files': []},
                    steps=[Step('compile', 'done')],
                    compile={'targets': ['sm_90', 'sm_100'], 'reached': reached, 'cells': 12, 'kernels': kernels,
                             'unlaunched': unlaunched})


def kernel(verdict_90: str = 'ok', verdict_100: str = 'ok') -> dict:
    return {'kernel': 'fwd_kernel', 'targets': {'sm_90': {'verdict': verdict_90}, 'sm_100': {'verdict': verdict_100}}}


def item(record: Evidence) -> dict:
    return dataclasses.asdict(next(i for i in checklist(record) if 'ompile' in i.item))


def test_ticked_when_every_reached_kernel_compiled_and_fits():
    assert item(record([kernel()], [], ['lib/ops.py'])) == {
        'item': 'Kernels compile for sm_90 and sm_100', 'done': True,
        'why': '1 kernel in 12 compiles, the Compiles for table'}


def test_ticked_when_a_kernel_is_not_available_for_a_target_its_module_does_not_declare():
    assert item(record([kernel(verdict_100='unavailable')], [], ['lib/ops.py']))['done'] is True


def test_not_ticked_when_a_kernel_overruns_a_target():
    assert item(record([kernel(verdict_100='over')], [], ['lib/ops.py']))['done'] is False


def test_not_ticked_when_a_reached_kernel_was_never_launched():
    found = item(record([kernel()], [{'kernel': 'bwd_kernel', 'path': 'lib/ops.py', 'line': 40}], ['lib/ops.py']))
    assert (found['done'], found['why']) == (False, 'bwd_kernel launched by no test, so not compiled')


def test_a_change_that_reaches_no_kernel_has_nothing_to_compile():
    assert item(record([], [], [])) == {'item': 'No kernel reached, so none to compile', 'done': True,
                                        'why': 'import graph'}


def title_item(findings: list[dict]) -> dict:
    checked = dataclasses.replace(record([], [], []), check={'findings': findings})
    checked.steps.append(Step('check', 'done'))
    return dataclasses.asdict(next(i for i in checklist(checked) if i.item.startswith('Title')))


def test_a_title_warning_leaves_the_title_box_unticked_and_says_why():
    warning = {'rule': 'MR-TITLE', 'severity': 'warning', 'message': 'title tag [Fix] is not one of the listed tags'}
    assert title_item([warning]) == {'item': 'Title is `[Tag] Summary`', 'done': False,
                                     'why': 'title tag [Fix] is not one of the listed tags'}
    assert title_item([])['done'] is True


def measured(verdicts: list[str], **bench: object) -> Evidence:
    """A record whose benchmark timed one row per verdict on an H100."""
    run = single([1.0, 1.0, 1.0])
    run['base'], run['head'] = run.pop('ref'), {'ref': 'working tree', 'sha': 'b' * 40, 'dirty': False}
    row = run['rows'].pop()
    row['base_ms'] = row['head_ms'] = row.pop('samples_ms')
    run['rows'] = [{**row, 'shape': {'name': f'shape{i}'}, 'ratio': 1.0, 'ci_low': 0.9, 'ci_high': 1.1, 'verdict': v}
                   for i, v in enumerate(verdicts)]
    evidence = dataclasses.replace(record([], [], []), bench_ops=['scale'], bench=BenchRun.from_json(JsonObject(
        {**run, **bench}, 'bench.json')))
    evidence.steps.append(Step('bench', 'done'))
    return evidence


@pytest.mark.parametrize(('verdicts', 'bench', 'kind', 'text'), [
    (['faster'], {}, 'improvement', 'improvement: 1 of 1 row faster, none slower'),
    (['faster', 'slower', 'slower'], {}, 'trade-off', 'trade-off: 1 row faster, 2 slower'),
    (['slower', 'same'], {}, 'regression', 'regression: 1 of 2 rows slower'),
    (['faster'], {'interrupted': True, 'rounds': 1}, 'interrupted', 'no speed claim: interrupted after 1 round'),
])
def test_the_conclusion_counts_rows_in_words(verdicts, bench, kind, text):
    found = conclusion(measured(verdicts, **bench))
    assert (found.kind, found.text) == (kind, text)


def test_a_record_read_back_is_the_record_written(tmp_path):
    written = measured(['slower'])
    written.conclusion = conclusion(written)
    written.checklist = checklist(written)
    path = tmp_path / 'evidence.json'
    path.write_text(json.dumps(written.to_json()))
    assert Evidence.load(path) == written
    assert Evidence.load(path).checklist[0] == ChecklistItem('Title is `[Tag] Summary`', False, 'mrbot check (MR-TITLE)')


@pytest.mark.parametrize(('change', 'message'), [
    (lambda r: r.update(schema=1), 'schema: expected 2 (an evidence record of this mrbot prepare), got 1'),
    (lambda r: r.pop('device'), 'device: missing, expected a string'),
    (lambda r: r['steps'].append({'name': 'tests', 'status': 'green'}),
     'steps[2].status: expected one of done, failed, error, skipped, pending, interrupted, got the string "green"'),
    (lambda r: r['bench'].update(rows={}), 'bench.rows: expected a list, got an object'),
    (lambda r: r['change'].update(files=None), 'change.files: expected a list, got null'),
])
def test_a_malformed_record_is_one_error_naming_the_field(tmp_path, change, message):
    data = measured(['same']).to_json()
    change(data)
    path = tmp_path / 'evidence.json'
    path.write_text(json.dumps(data))
    with pytest.raises(MrbotError) as error:
        Evidence.load(path)
    assert str(error.value) == f'{path}: {message}'
