# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`--ncu` against a stand-in `ncu` on PATH: what it is asked to profile, and how its raw page becomes a summary."""

from __future__ import annotations

import json
import os
import sys

from mrbot.bench.ncu import profile
from mrbot.bench.worker import PROFILED_RANGE

# Stands in for Nsight Compute: records its arguments, writes the report it is asked for, and on `--import` prints a
# raw page whose second row holds the units, as ncu's CSV does.
FAKE_NCU = '''#!PYTHON
import json, sys
args = sys.argv[1:]
if '--import' in args:
    print('"Kernel Name","gpu__time_duration.sum","launch__registers_per_thread",'
          '"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",'
          '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"')
    print('"","usecond","register/thread","",""')
    print('"fwd_kernel","152.67","255","0.4","2.5"')
    sys.exit(0)
open(LOG, 'a').write(json.dumps(args) + '\\n')
open(args[args.index('-o') + 1] + '.ncu-rep', 'w').write('report')
'''


def _install_ncu(tmp_path, monkeypatch, script: str) -> None:
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    (bin_dir / 'ncu').write_text(script)
    (bin_dir / 'ncu').chmod(0o755)
    monkeypatch.setenv('PATH', f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_profile_asks_for_the_tuned_launch_and_keeps_units(tmp_path, monkeypatch):
    log = tmp_path / 'ncu-args.jsonl'
    _install_ncu(tmp_path, monkeypatch, FAKE_NCU.replace('PYTHON', sys.executable).replace('LOG', repr(str(log))))
    sides = [('base', tmp_path / 'base'), ('head', tmp_path / 'head')]
    for _, tree in sides:
        tree.mkdir()
    result = profile('fwd_kernel', {'name': 'op'}, {'op': 'op', 'mode': 'fwd', 'dims': {'B': 2}}, sides,
                     tmp_path / 'profile', dict(os.environ))
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 2
    for call, (_, tree) in zip(calls, sides, strict=True):
        # only launches inside the worker's NVTX range, which opens after autotuning, are profiled
        assert call[call.index('--nvtx-include') + 1] == f'{PROFILED_RANGE}/' and '--nvtx' in call
        assert call[call.index('--once') - 1] == str(tree)
    kernel = {'duration': '152.67 usecond', 'registers_per_thread': '255 register/thread', 'top_stall': 'long_scoreboard'}
    assert result['sides'] == {name: {'report': str(tmp_path / 'profile' / f'{name}.ncu-rep'),
                                      'kernels': {'fwd_kernel': kernel}} for name, _ in sides}


def test_a_failing_profile_is_reported_per_side(tmp_path, monkeypatch):
    message = '==ERROR== ERR_NVGPUCTRPERM: no access to performance counters'
    _install_ncu(tmp_path, monkeypatch, f'#!/bin/sh\necho "{message}" >&2\nexit 1\n')
    result = profile('k', {'name': 'op'}, {'op': 'op', 'mode': 'fwd', 'dims': {}}, [('head', tmp_path)],
                     tmp_path / 'profile', dict(os.environ))
    assert result['sides'] == {'head': {'status': f'ncu failed (exit 1): {message}'}}
