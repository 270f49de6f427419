# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The PR checklist: the compile item is ticked only when every kernel the change reaches was compiled and fits, the
title item only when no finding of any severity is about the title."""

from __future__ import annotations

from mrbot.evidence import checklist


def record(kernels: list[dict], unlaunched: list[dict], reached: list[str]) -> dict:
    return {'steps': [{'name': 'compile', 'status': 'done', 'detail': ''}], 'check': None, 'tests': None,
            'selection': None, 'ops': [], 'bench': None, 'bench_ops': [], 'breaking': None,
            'compile': {'targets': ['sm_90', 'sm_100'], 'reached': reached, 'cells': 12, 'kernels': kernels,
                        'unlaunched': unlaunched}}


def kernel(verdict_90: str = 'ok', verdict_100: str = 'ok') -> dict:
    return {'kernel': 'fwd_kernel', 'targets': {'sm_90': {'verdict': verdict_90}, 'sm_100': {'verdict': verdict_100}}}


def item(record: dict) -> dict:
    return next(i for i in checklist(record) if 'ompile' in i['item'])


def test_ticked_when_every_reached_kernel_compiled_and_fits():
    assert item(record([kernel()], [], ['lib/ops.py'])) == {
        'item': 'Kernels compile for sm_90 and sm_100', 'done': True,
        'why': '1 kernel in 12 compiles, the Compiles for table'}


def test_not_ticked_when_a_kernel_overruns_a_target():
    assert item(record([kernel(verdict_100='over')], [], ['lib/ops.py']))['done'] is False


def test_not_ticked_when_a_reached_kernel_was_never_launched():
    found = item(record([kernel()], [{'kernel': 'bwd_kernel', 'path': 'lib/ops.py', 'line': 40}], ['lib/ops.py']))
    assert (found['done'], found['why']) == (False, 'bwd_kernel launched by no test, so not compiled')


def test_a_change_that_reaches_no_kernel_has_nothing_to_compile():
    assert item(record([], [], [])) == {'item': 'No kernel reached, so none to compile', 'done': True,
                                        'why': 'import graph'}


def title_item(findings: list[dict]) -> dict:
    checked = {**record([], [], []), 'check': {'findings': findings}}
    checked['steps'] = [*checked['steps'], {'name': 'check', 'status': 'done', 'detail': ''}]
    return next(i for i in checklist(checked) if i['item'].startswith('Title'))


def test_a_title_warning_leaves_the_title_box_unticked_and_says_why():
    warning = {'rule': 'MR-TITLE', 'severity': 'warning', 'message': 'title tag [Fix] is not one of the listed tags'}
    assert title_item([warning]) == {'item': 'Title is `[Tag] Summary`', 'done': False,
                                     'why': 'title tag [Fix] is not one of the listed tags'}
    assert title_item([])['done'] is True
