# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The Evidence record of `mrbot prepare`: every step's outcome in one versioned JSON document, and what it proves.

The PR body is rendered from this record alone, so a repository's own template sees the same plain data, and the
checklist and the benchmark conclusion are computed here, where they can be tested, not in a template.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from mrbot.testing import plural

SCHEMA = 2
# Hardware classes whose numbers can back a performance claim (docs: sm_90 is the baseline, sm_100 preferred).
EVIDENCE_CLASSES = ('sm_90 baseline', 'sm_100 preferred')


@dataclass(frozen=True)
class Step:
    """One stage of `mrbot prepare`: done, failed (it ran and found a problem), error (it could not run),
    skipped (by a flag or because nothing needed it) or pending (needs a machine this is not: `command` runs it)."""

    name: str
    status: str
    seconds: float = 0.0
    detail: str = ''
    command: str = ''

    def to_json(self) -> dict:
        return {**asdict(self), 'seconds': round(self.seconds, 2)}


def conclusion(record: dict) -> dict:
    """improvement / neutral / trade-off / regression / pending / gate-failed / not-evidence, with every regressed row
    named."""
    bench, steps = record.get('bench'), {s['name']: s for s in record['steps']}
    if not record.get('bench_ops'):
        if not any(f.get('code', True) for f in record['change']['files']):
            return {'kind': 'neutral', 'regressed': [],
                    'text': 'neutral: no code changed (prose, comments, docstrings, error messages, layout or local '
                            'names only)'}
        return {'kind': 'neutral', 'text': "neutral: no benchmarked op's code changed (none declared in "
                                           '[tool.mrbot.bench] reaches a changed source file)', 'regressed': []}
    step = steps.get('bench', {})
    if bench is None:
        why = step.get('detail') or 'not run'
        command = f": `{step['command']}`" if step.get('command') else ''
        return {'kind': 'pending', 'text': f'pending ({why}){command}', 'regressed': []}
    if bench['gate']['status'] == 'failed':
        return {'kind': 'gate-failed', 'text': 'no speed claim: the correctness gate failed', 'regressed': []}
    if not bench['machine'].get('evidence'):
        return {'kind': 'not-evidence', 'text': 'no speed claim: timed under the Triton interpreter, not on a GPU',
                'regressed': []}

    def name(row: dict) -> str:
        return f"{row['op']} {row['mode']} {row['shape']['name']} ({row['ratio']:.3f}x time)"

    slower = [name(r) for r in bench['rows'] if r.get('verdict') == 'slower']
    faster = [r for r in bench['rows'] if r.get('verdict') == 'faster']
    if slower and faster:
        return {'kind': 'trade-off', 'text': f'trade-off: {len(faster)} rows faster, {len(slower)} slower',
                'regressed': slower}
    if slower:
        return {'kind': 'regression', 'text': f'regression: {len(slower)} of {len(bench["rows"])} rows slower',
                'regressed': slower}
    if faster:
        return {'kind': 'improvement', 'text': f'improvement: {len(faster)} of {len(bench["rows"])} rows faster, '
                                               'none slower', 'regressed': []}
    return {'kind': 'neutral', 'text': 'neutral: no row is faster or slower beyond its minimum effect', 'regressed': []}


def _rules(record: dict) -> set[str]:
    check = record.get('check') or {}
    return {f['rule'] for f in check.get('findings', []) if f['severity'] == 'error'}


def checklist(record: dict) -> list[dict]:
    """The PR checklist: each item is ticked only when the record proves it, and says what it rests on."""
    steps = {s['name']: s for s in record['steps']}
    checked = steps.get('check', {}).get('status') in ('done', 'failed')
    errors = _rules(record)
    tests, selection = record.get('tests'), record.get('selection') or {}
    # the body lists every finding, warnings too: a box ticked beside a title warning would contradict it
    title = [f['message'] for f in (record.get('check') or {}).get('findings', []) if f['rule'] == 'MR-TITLE']
    items = [
        ('Title is `[Tag] Summary`', checked and not title, title[0] if title else 'mrbot check (MR-TITLE)'),
        ('`mrbot check` reports no errors on the change', checked and not errors,
         f"{len(errors)} rule(s) with errors" if errors else 'mrbot check'),
        ('Dependent tests pass', bool(tests) and steps['tests']['status'] == 'done',
         f"{sum(f['passed'] for f in tests['files'])} passed in {plural(len(tests['files']), 'file')}, {tests['device']}"
         if tests else steps.get('tests', {}).get('detail', 'not run')),
        ('Every changed source file is reached by a test', bool(selection) and not selection.get('unselected'),
         'import graph' if selection else 'not selected'),
    ]
    compiled = record.get('compile')
    if compiled and not compiled['reached']:
        items.append(('No kernel reached, so none to compile', True, 'import graph'))
    elif compiled:
        failing = [k['kernel'] for k in compiled['kernels'] if any(t['verdict'] != 'ok' for t in k['targets'].values())]
        unlaunched = [k['kernel'] for k in compiled['unlaunched']]
        why = (f"{', '.join(failing)} fail or overrun shared memory" if failing else
               f"{', '.join(unlaunched)} launched by no test, so not compiled" if unlaunched else
               f"{plural(len(compiled['kernels']), 'kernel')} in {plural(compiled['cells'], 'compile')}, the Compiles for "
               'table')
        items.append((f"Kernels compile for {' and '.join(compiled['targets'])}", not failing and not unlaunched, why))
    else:
        items.append(('Kernels compile for every GPU target', False, steps.get('compile', {}).get('detail', 'not run')))
    if record['ops']:
        coverage = record.get('coverage') or []
        missing = [f"{c['op']}: {', '.join(c['missing'])}" for c in coverage if c['missing']]
        items.append(('Tests exercise every coverage axis of the touched ops', bool(coverage) and not missing,
                      '; '.join(missing) if missing else ('coverage matrix' if coverage else 'tests not run')))
    bench = record.get('bench')
    if record.get('bench_ops'):
        proven = (bench is not None and bench['machine'].get('class') in EVIDENCE_CLASSES
                  and bench['gate']['status'] == 'passed')
        items.append(('Before/after benchmark on sm_90 or newer, correctness gate green', proven,
                      f"{bench['machine']['gpu']}, gate {bench['gate']['status']}" if bench else 'pending'))
    else:
        items.append(("No benchmarked op's code changed, so no benchmark is needed", True,
                      'no op declared in [tool.mrbot.bench] reaches a changed source file'))
    breaking = record.get('breaking')
    items.append(('No public signature broken', breaking == [] and steps.get('breaking', {}).get('status') == 'done',
                  f'{len(breaking)} breaking change(s)' if breaking else 'signature diff of base and head'))
    items.append(('No profiler reports or tool attribution added', checked and not errors & {'MR-ARTIFACT', 'MR-ATTRIBUTION'},
                  'mrbot check (MR-ARTIFACT, MR-ATTRIBUTION)'))
    return [{'item': text, 'done': bool(done), 'why': why} for text, done, why in items]
