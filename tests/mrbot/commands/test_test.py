# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The face of `mrbot test`: the summary table, the selection listed or run, what it prints and writes, and the
arguments it refuses before any test runs."""

from __future__ import annotations

import json
import re

import pytest

from mrbot.commands.test import format_run
from mrbot.records import testruns
from tests.mrbot.test_testing import PACKAGE


def test_the_summary_is_a_table_then_failures_then_totals():
    fast = testruns.FileRun('tests/ops/test_a.py', ('python',), 'off', 1.25, 12, 1, 0, 1,
                           (testruns.TestFailure('tests/ops/test_a.py::test_x[2]', 'AssertionError: o diff\nratio 0.3'),))
    slow = testruns.FileRun('tests/test_b.py', ('python',), 'default', 10.0, 0, 0, 0, 0, (), 'no tests collected')
    text = format_run(testruns.TestRun('compiled on NVIDIA H200 (sm_90)', (fast, slow)))
    assert text == (
        'file                 dispatch  passed  failed  crashed  skipped  flaky  seconds\n'
        'tests/ops/test_a.py  off           12       1        0        0      1      1.2\n'
        'tests/test_b.py      default        0       0        0        0      0     10.0\n'
        'FAILED tests/ops/test_a.py::test_x[2]\n'
        '    AssertionError: o diff\n'
        '    ratio 0.3\n'
        'tests/test_b.py: no tests collected\n'
        '12 passed, 1 failed, 0 skipped, 1 flaky in 2 files (compiled on NVIDIA H200 (sm_90))\n'
    )


def test_the_summary_names_the_crashed_test_and_counts_what_passed_after_restart():
    crashed = testruns.FileRun('tests/ops/test_kda.py', ('python',), 'off', 30.0, 80, 0, 0, 0, (), 'restarted',
                              (testruns.TestFailure('tests/ops/test_kda.py::test_x[7]', 'CUDA error: an illegal memory'),),
                              79)
    text = format_run(testruns.TestRun('compiled on NVIDIA H200 (sm_90)', (crashed,)))
    assert 'CRASHED tests/ops/test_kda.py::test_x[7]\n    CUDA error: an illegal memory\n' in text
    assert text.splitlines()[-1] == ('80 passed, 0 failed, 1 crashed (79 passed after restart), 0 skipped, 0 flaky '
                                     'in 1 file (compiled on NVIDIA H200 (sm_90))')


def _mrbot_test(repo, monkeypatch, capsys, *argv):
    from mrbot.cli import main

    monkeypatch.chdir(repo.root)
    code = main(['test', *argv])
    return code, capsys.readouterr().out


def test_list_prints_the_selection_and_runs_nothing(repo, monkeypatch, capsys):
    repo.commit(PACKAGE)
    repo.write({'pkg/calc.py': 'def double(x):\n    return x + x\n'})
    code, out = _mrbot_test(repo, monkeypatch, capsys, '--list', '--format', 'json')
    assert code == 0
    assert json.loads(out)['selected'] == [{'test': 'tests/test_calc.py', 'because': ['pkg/calc.py:double']}]


def test_run_writes_the_evidence_and_fails_on_a_failing_test(repo, monkeypatch, capsys, tmp_path_factory):
    repo.commit(PACKAGE)
    repo.write({'pkg/calc.py': 'def double(x):\n    return 3 * x\n'})
    evidence = tmp_path_factory.mktemp('out') / 'run.json'
    code, out = _mrbot_test(repo, monkeypatch, capsys, '--json', str(evidence), '-j', '1')
    assert code == 1
    assert 'FAILED tests/test_calc.py::test_double' in out
    record = json.loads(evidence.read_text())
    assert record['selection']['selected'][0]['test'] == 'tests/test_calc.py' and not record['smoke']
    assert [(f['file'], f['passed'], f['failed'], f['dispatch']) for f in record['files']] == [
        ('tests/test_calc.py', 0, 1, 'off')]


def test_workers_spread_each_file_over_processes(repo, monkeypatch, capsys, tmp_path_factory):
    repo.commit(PACKAGE)
    repo.write({'pkg/calc.py': 'def double(x):\n    return x + x\n'})
    evidence = tmp_path_factory.mktemp('out') / 'run.json'
    code, _ = _mrbot_test(repo, monkeypatch, capsys, '--json', str(evidence), '--workers', '2')
    [run] = json.loads(evidence.read_text())['files']
    assert code == 0 and run['passed'] == 1 and ' -n 2 ' in ' '.join(run['command'])


def test_a_change_no_test_reaches_runs_the_smoke_set(repo, monkeypatch, capsys):
    repo.commit(PACKAGE)
    code, out = _mrbot_test(repo, monkeypatch, capsys, 'pkg/orphan.py')
    assert code == 0
    assert 'no test reaches pkg/orphan.py; running the smoke set (1 target)' in out
    assert 'tests/test_smoke.py' in out and '1 passed' in out


def test_a_change_without_python_runs_nothing(repo, monkeypatch, capsys):
    repo.commit(PACKAGE)
    code, out = _mrbot_test(repo, monkeypatch, capsys, 'docs/a.md')
    assert code == 0
    assert out == 'no test to run: the changed file is not Python that a test imports\n'


def test_progress_is_on_stderr_a_line_per_file_and_nothing_under_quiet(repo, monkeypatch, capsys):
    repo.commit(PACKAGE)
    repo.write({'pkg/calc.py': 'def double(x):\n    return 3 * x\n'})
    code, out = _mrbot_test(repo, monkeypatch, capsys, '-j', '1')
    assert code == 1 and not any(line.startswith('[1/1]') for line in out.splitlines())
    assert main_err(repo, monkeypatch, capsys, '-j', '1') == [
        'running 1 test target x 1 dispatch mode, 1 at a time (Triton interpreter (CPU))',
        '[1/1] tests/test_calc.py [off] 0 passed, 1 failed, 0 flaky']
    assert main_err(repo, monkeypatch, capsys, '-j', '1', '-q') == []


def main_err(repo, monkeypatch, capsys, *argv) -> list[str]:
    """The stderr lines of `mrbot test ARGV`, each cut before its duration."""
    from mrbot.cli import main

    monkeypatch.chdir(repo.root)
    main(['test', *argv])
    return [line.partition(' in ')[0] for line in capsys.readouterr().err.splitlines()]


@pytest.mark.parametrize(('argv', 'message'), [
    (['--timeout', '0'], '--timeout must be above 0 seconds per test file, got 0'),
    (['--timeout', '-1'], '--timeout must be above 0 seconds per test file, got -1'),
    (['-j', '-1'], '--jobs must be 0 (one per CPU, or 1 on a GPU) or more, got -1'),
    (['--workers', '-1'], '--workers must be 0 (sized for this machine) or more, got -1'),
    (['does/not/exist.py'], 'does/not/exist.py: no such file or folder; expected files or folders of this repository, '
                            'or files deleted since the last commit'),
    (['--json', '/nonexistent/x.json'], '--json /nonexistent/x.json: no folder /nonexistent; expected a file in an '
                                        'existing folder'),
])
def test_bad_arguments_are_refused_before_any_test_runs(repo, monkeypatch, capsys, argv, message):
    from mrbot.cli import main

    repo.commit(PACKAGE)
    repo.write({'pkg/calc.py': 'def double(x):\n    return 3 * x\n'})
    monkeypatch.chdir(repo.root)
    assert main(['test', *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err == f'mrbot test: error: {message}\n' and captured.out == ''


def test_a_file_deleted_since_the_last_commit_still_selects_its_tests(repo, monkeypatch, capsys):
    repo.commit(PACKAGE)
    repo.write({'pkg/calc.py': None})
    code, out = _mrbot_test(repo, monkeypatch, capsys, 'pkg/calc.py', '-j', '1')
    assert code == 1 and 'FAILED tests/test_calc.py' in out


def test_on_a_gpu_the_selected_tests_kernels_are_compiled_before_they_run(repo, monkeypatch, capsys, tmp_path):
    """Each test process would compile every kernel its tests launch; compiled first, once each, for the machine's GPU,
    the tests load them from Triton's cache (a stand-in GPU here: the compile is for sm_90 on the CPU)."""
    from mrbot.commands import test as test_command
    from mrbot.testing import Gpu
    from tests.mrbot.loop_repo import files

    monkeypatch.setattr(test_command, 'device_label', lambda: 'compiled (a stand-in for a GPU in this test)')
    monkeypatch.setattr(test_command, 'local_gpu', lambda: Gpu('NVIDIA H100', (9, 0), 80 * 2**30))
    monkeypatch.setenv('TRITON_CACHE_DIR', str(tmp_path / 'triton'))
    repo.commit(files(0.0))
    repo.write({'pkg/ops/product/chunk.py': files(0.01)['pkg/ops/product/chunk.py']})
    monkeypatch.chdir(repo.root)
    from mrbot.cli import main

    main(['test', '--timeout', '120'])
    err = capsys.readouterr().err
    said = re.search(r'tests, dispatch off: (\d+) kernel launch(?:es)? compiled ahead for sm_90', err)
    assert said and err.index(said.group(0)) < err.index('tests/ops/test_product.py')
    assert [entry.name for entry in (tmp_path / 'triton').iterdir() if (entry / 'product_kernel.cubin').exists()]
