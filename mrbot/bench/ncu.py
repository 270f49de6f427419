# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""An Nsight Compute summary of one representative row: a few metrics that explain a timing, and the report on disk."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

from mrbot.bench.harness import WORKER
from mrbot.bench.worker import PROFILED_RANGE

METRICS = {
    'gpu__time_duration.sum': 'duration',
    'gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed': 'dram_throughput_pct',
    'sm__throughput.avg.pct_of_peak_sustained_elapsed': 'sm_throughput_pct',
    'sm__warps_active.avg.pct_of_peak_sustained_active': 'achieved_occupancy_pct',
    'launch__registers_per_thread': 'registers_per_thread',
}
STALL_PREFIX = 'smsp__average_warps_issue_stalled_'
STALL_SUFFIX = '_per_issue_active.ratio'


def _metrics(report: Path) -> dict:
    """The key metrics of every profiled kernel, from the report's raw page, and each kernel's top stall reason.

    Values keep the unit ncu gives them (its second CSV row), e.g. `152.67 usecond`, so a reader never guesses.
    """
    out = subprocess.run(['ncu', '--import', str(report), '--csv', '--page', 'raw'], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    rows = list(csv.reader(io.StringIO(out)))
    if len(rows) < 3:
        return {}
    header, units, kernels = rows[0], dict(zip(rows[0], rows[1], strict=False)), rows[2:]
    summary = {}
    for values in kernels:
        record = dict(zip(header, values, strict=False))
        name = record.get('Kernel Name', 'kernel')
        entry = {label: f'{record[metric]} {units.get(metric, "")}'.strip()
                 for metric, label in METRICS.items() if metric in record}
        stalls = {k[len(STALL_PREFIX):-len(STALL_SUFFIX)]: float(v.replace(',', '')) for k, v in record.items()
                  if k.startswith(STALL_PREFIX) and k.endswith(STALL_SUFFIX) and _number(v)}
        if stalls:
            entry['top_stall'] = max(stalls, key=stalls.get)
        summary[name] = entry
    return summary


def _number(text: str) -> bool:
    try:
        float(text.replace(',', ''))
    except ValueError:
        return False
    return True


def profile(regex: str, spec: dict, row: dict, sides: list[tuple[str, Path]], folder: Path, env: dict) -> dict:
    """Profile the kernels matching `regex` in one row on each side; say so when ncu is missing or fails."""
    if shutil.which('ncu') is None:
        return {'status': 'ncu not available on this machine'}
    folder.mkdir(parents=True, exist_ok=True)
    result = {'status': 'collected', 'row': {'op': row['op'], 'mode': row['mode'], 'shape': row['dims']}, 'sides': {}}
    for name, tree in sides:
        report = folder / f'{name}.ncu-rep'
        command = ['ncu', '--clock-control', 'none', '--set', 'full', '--kernel-name', f'regex:{regex}',
                   '--nvtx', '--nvtx-include', f'{PROFILED_RANGE}/', '-f', '-o', str(report.with_suffix('')),
                   sys.executable, str(WORKER), str(tree), '--once', json.dumps(spec), json.dumps(row)]
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0 or not report.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ['no output']
            result['sides'][name] = {'status': f'ncu failed (exit {done.returncode}): {tail[0]}'}
            continue
        result['sides'][name] = {'report': str(report), 'kernels': _metrics(report)}
    return result
