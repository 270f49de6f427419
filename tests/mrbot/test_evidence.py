# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The Evidence record: the PR checklist (the compile item is ticked only when every kernel the change reaches was
compiled and fits, the title item only when no finding of any severity is about the title), the benchmark conclusion,
and the plain document the PR body's template reads."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mrbot.evidence import ChecklistItem, Evidence, Step, checklist, conclusion
from mrbot.records.bench import BenchRun
from mrbot.records.change import ChangeSet
from mrbot.records.compiles import CompileEvidence, Kernel, KernelCompiles, KernelTarget
from mrbot.records.findings import CheckReport, Finding
from mrbot.records.reading import JsonObject
from mrbot.summary import ChangeSummary
from tests.mrbot.test_bench_input import single

SHARED_LIMIT = 232448
# a kernel target's counts that give each verdict
VERDICTS = {'ok': KernelTarget(2, 0, 0, 8192, SHARED_LIMIT, 0), 'error': KernelTarget(2, 1, 0, None, SHARED_LIMIT, None),
            'over': KernelTarget(2, 0, 1, 300000, SHARED_LIMIT, None),
            'unavailable': KernelTarget(2, 0, 0, None, SHARED_LIMIT, None, unavailable=2)}


def record(kernels: list[KernelCompiles], unlaunched: list[Kernel], reached: list[str]) -> Evidence:
    change = ChangeSummary('a' * 40, 'WORKTREE', 'main', '[Ops] Change', 'flag', (), (), (), ())
    return Evidence('2026-01-01T00:00:00+00:00', 'Triton interpreter (CPU)', change, steps=[Step('compile', 'done')],
                    compile=CompileEvidence(('sm_90', 'sm_100'), tuple(reached), '3.6.0', 12, 12, 1.0, (),
                                            tuple(kernels), tuple(unlaunched)))


def kernel(verdict_90: str = 'ok', verdict_100: str = 'ok') -> KernelCompiles:
    assert VERDICTS[verdict_90].verdict == verdict_90 and VERDICTS[verdict_100].verdict == verdict_100
    return KernelCompiles(Kernel('lib/ops.py', 'fwd_kernel', 10), (),
                          (('sm_90', VERDICTS[verdict_90]), ('sm_100', VERDICTS[verdict_100])))


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
    found = item(record([kernel()], [Kernel('lib/ops.py', 'bwd_kernel', 40)], ['lib/ops.py']))
    assert (found['done'], found['why']) == (False, 'bwd_kernel launched by no test, so not compiled')


def test_a_change_that_reaches_no_kernel_has_nothing_to_compile():
    assert item(record([], [], [])) == {'item': 'No kernel reached, so none to compile', 'done': True,
                                        'why': 'import graph'}


def title_item(findings: list[Finding]) -> dict:
    report = CheckReport(ChangeSet(Path('.'), 'a' * 40, None, ()), tuple(findings))
    checked = dataclasses.replace(record([], [], []), check=report)
    checked.steps.append(Step('check', 'done'))
    return dataclasses.asdict(next(i for i in checklist(checked) if i.item.startswith('Title')))


def test_a_title_warning_leaves_the_title_box_unticked_and_says_why():
    warning = Finding('MR-TITLE', 'warning', '', 0, 'title tag [Fix] is not one of the listed tags')
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


def test_the_document_for_the_template_is_plain_json_of_every_section():
    written = measured(['slower'])
    written.conclusion = conclusion(written)
    written.checklist = checklist(written)
    document = written.to_json()
    assert json.loads(json.dumps(document)) == document
    assert document['change']['title'] == '[Ops] Change'
    assert document['compile']['targets'] == ['sm_90', 'sm_100']
    assert [row['verdict'] for row in document['bench']['rows']] == ['slower']
    assert document['conclusion']['kind'] == 'regression'
    assert ChecklistItem(**document['checklist'][0]) == ChecklistItem('Title is `[Tag] Summary`', False,
                                                                      'mrbot check (MR-TITLE)')
    assert (document['check'], document['tests'], document['breaking']) == (None, None, None)


def test_a_kernel_row_names_each_target_with_its_verdict():
    document = record([kernel(verdict_100='over')], [Kernel('lib/ops.py', 'bwd_kernel', 40)], ['lib/ops.py']).to_json()
    row = document['compile']['kernels'][0]
    assert (row['kernel'], row['path'], row['line']) == ('fwd_kernel', 'lib/ops.py', 10)
    assert {name: target['verdict'] for name, target in row['targets'].items()} == {'sm_90': 'ok', 'sm_100': 'over'}
    assert document['compile']['unlaunched'] == [{'kernel': 'bwd_kernel', 'path': 'lib/ops.py', 'line': 40}]
