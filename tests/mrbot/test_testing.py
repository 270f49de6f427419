# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Running test files: counts from JUnit XML, one retry of failures, crashes, timeouts, environment, parallel jobs."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from mrbot import records, testing
from mrbot.commands.test import format_run
from mrbot.records import testruns
from mrbot.testing import INTERRUPT_GRACE, WORKERS_VARIABLE, device_label, execute, processes_per_test_file

# long enough for pytest to start on a loaded 2-core machine; the hanging file waits it out
TIMEOUT = 10.0

# Each file is a plain pytest module; they run from a directory outside this repository, so no conftest applies.
SUITE = {
    'suite/test_pass.py': '''
def test_one():
    assert 1 + 1 == 2


def test_two():
    assert 'a'.upper() == 'A'


def test_three():
    pass
''',
    'suite/test_fail.py': '''
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def test_passes():
    with (HERE / 'passes.log').open('a') as log:
        log.write('ran\\n')


def test_skips():
    pytest.skip('not on this machine')


class TestThing:
    @pytest.mark.parametrize('size', [16, 32])
    def test_size(self, size):
        if size == 32:
            with (HERE / 'fail.attempts').open('a') as attempts:
                attempts.write('x')
            assert size == 16, f"attempt {len((HERE / 'fail.attempts').read_text())}"
''',
    'suite/test_flaky.py': '''
import time
from pathlib import Path

COUNTER = Path(__file__).with_name('flaky.count')


def test_steady():
    pass


def test_flaky():
    time.sleep(0.3)
    runs = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
    COUNTER.write_text(str(runs))
    assert runs > 1, 'first run fails'
''',
    'suite/test_crash.py': '''
import os


def test_fine():
    pass


def test_crashes():
    os._exit(3)
''',
    'suite/test_hang.py': '''
import subprocess
import sys
import time
from pathlib import Path

STUBBORN = 'import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)'


def test_quick():
    pass


def test_hangs():
    child = subprocess.Popen([sys.executable, '-c', STUBBORN])
    Path(__file__).with_name('hang.pid').write_text(str(child.pid))
    time.sleep(60)
''',
    'suite/test_empty.py': '''
def helper():
    return 1
''',
    'suite/test_broken.py': '''
import not_a_module_mrbot_knows
''',
}


# A file whose tests meet a sticky device error twice, simulated: a module flag set by a test, read by every test.
POISONED = '''
import pytest

# what a CUDA context is after an illegal address: every later call of the process fails the same way
POISONED = False
ADVICE = 'Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.'
STICKY = 'CUDA error: an illegal memory access was encountered\\n' + ADVICE


def launch():
    if POISONED:
        raise RuntimeError(STICKY)


def poison():
    global POISONED
    POISONED = True
    launch()


@pytest.fixture(autouse=True)
def device():
    launch()


def test_before():
    pass


def test_out_of_bounds():
    poison()


def test_after():
    pass


@pytest.mark.parametrize('n', range(3))
def test_many(n):
    pass


def test_out_of_memory():
    # torch's advice after it mentions device-side assertions, yet the context is fine
    raise RuntimeError('CUDA error: out of memory\\n' + ADVICE)


def test_second_out_of_bounds():
    poison()


def test_last():
    pass
'''


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture(scope='module')
def suite(tmp_path_factory):
    """All of SUITE run once, every file at the same time; the runs by file and the progress calls."""
    root = tmp_path_factory.mktemp('suite')
    _write(root, SUITE)
    calls = []
    started = time.monotonic()
    runs = execute(list(SUITE), root, jobs=len(SUITE), timeout=TIMEOUT, interpret=False,
                   progress=lambda run, done, total: calls.append((run.file, done, total,
                                                                   time.monotonic() - started)))
    return root, {run.file: run for run in runs}, calls


def _alive(pid: int) -> bool:
    try:
        stat = Path(f'/proc/{pid}/stat').read_text()
    except FileNotFoundError:
        return False
    # A zombie has exited; it only waits for its parent to collect it.
    return stat.rsplit(')', 1)[1].split()[0] != 'Z'


def test_results_come_back_in_input_order_with_the_command_that_ran(suite):
    _, runs, _ = suite
    assert list(runs) == list(SUITE)
    passing = runs['suite/test_pass.py']
    assert passing.command == (sys.executable, '-m', 'pytest', 'suite/test_pass.py', '-q', '-p', 'no:cacheprovider')
    assert (passing.passed, passing.failed, passing.skipped, passing.flaky) == (3, 0, 0, 0)
    assert passing.failures == () and passing.note == '' and passing.dispatch == 'default'


def test_a_failure_is_retried_alone_and_keeps_the_retrys_message(suite):
    root, runs, _ = suite
    run = runs['suite/test_fail.py']
    assert (run.passed, run.failed, run.skipped, run.flaky, run.note) == (2, 1, 1, 0, '')
    assert [f.test for f in run.failures] == ['suite/test_fail.py::TestThing::test_size[32]']
    assert run.failures[0].message.splitlines()[0] == 'AssertionError: attempt 2'
    assert len(run.failures[0].message.splitlines()) <= 5
    # Only the failing node id ran again.
    assert (root / 'suite/passes.log').read_text() == 'ran\n'


def test_a_test_that_passes_on_retry_is_flaky_not_failed(suite):
    _, runs, _ = suite
    run = runs['suite/test_flaky.py']
    assert (run.passed, run.failed, run.skipped, run.flaky, run.failures, run.note) == (1, 0, 0, 1, (), '')
    # Both runs of the 0.3 s test are in the duration.
    assert run.duration >= 0.6


def test_a_crash_without_results_is_one_failure_naming_the_exit_code(suite):
    _, runs, _ = suite
    run = runs['suite/test_crash.py']
    assert (run.passed, run.failed, run.skipped, run.flaky) == (0, 1, 0, 0)
    assert run.note == 'pytest exited with code 3'
    assert [f.test for f in run.failures] == ['suite/test_crash.py']


def test_a_timeout_stops_the_process_group_and_counts_as_failed(suite):
    root, runs, _ = suite
    run = runs['suite/test_hang.py']
    assert run.note == f'timed out after {TIMEOUT:g} s'
    assert (run.passed, run.failed, run.skipped, run.flaky) == (1, 1, 0, 0)
    assert [f.test for f in run.failures] == ['suite/test_hang.py']
    assert 'KeyboardInterrupt' in run.failures[0].message
    # interrupted at the timeout and ended within the grace the runner gives it, far short of the test's 60 s sleep;
    # how much of the grace pytest takes to wind down depends on the machine's load
    assert TIMEOUT <= run.duration < TIMEOUT + INTERRUPT_GRACE
    assert not _alive(int((root / 'suite/hang.pid').read_text()))


def test_a_sticky_device_error_names_its_test_and_the_tests_after_it_run_again_in_a_fresh_process(tmp_path):
    _write(tmp_path, {'suite/test_poisoned.py': POISONED})
    run, = execute(['suite/test_poisoned.py'], tmp_path, jobs=1, timeout=60, interpret=False)
    assert [c.test for c in run.crashed] == ['suite/test_poisoned.py::test_out_of_bounds',
                                             'suite/test_poisoned.py::test_second_out_of_bounds']
    assert 'illegal memory access' in run.crashed[0].message
    # before, after, many x3 and last pass; of them, all but `before` in a fresh process
    assert (run.passed, run.restarted, run.failed, run.skipped, run.flaky) == (6, 5, 1, 0, 0)
    assert [f.test for f in run.failures] == ['suite/test_poisoned.py::test_out_of_memory']
    assert run.failures[0].message.startswith('RuntimeError: CUDA error: out of memory')
    assert run.note == '2 sticky device errors; the tests after each ran again in a fresh process: 5 passed after restart'
    assert not run.ok


def test_a_file_without_tests_has_zero_counts_and_a_note(suite):
    _, runs, _ = suite
    run = runs['suite/test_empty.py']
    assert (run.passed, run.failed, run.skipped, run.flaky, run.failures) == (0, 0, 0, 0, ())
    assert run.note == 'no tests collected'


def test_a_collection_error_is_one_failure_with_its_exception(suite):
    _, runs, _ = suite
    run = runs['suite/test_broken.py']
    assert (run.passed, run.failed, run.note) == (0, 1, 'pytest exited with code 2')
    assert run.failures == (testruns.TestFailure(
        'suite/test_broken.py', "ModuleNotFoundError: No module named 'not_a_module_mrbot_knows'"),)


def test_progress_reports_each_file_once_as_it_finishes(suite):
    _, runs, calls = suite
    assert sorted(file for file, _, _, _ in calls) == sorted(SUITE)
    assert [done for _, done, _, _ in calls] == list(range(1, len(SUITE) + 1))
    assert {total for _, _, total, _ in calls} == {len(SUITE)}
    # A quick file listed after the hung one was reported while the hung one still ran: not at the end, nor in the
    # order the files were given; the order of the other files depends on the machine's load.
    reported = {file: seconds for file, _, _, seconds in calls}
    assert reported['suite/test_empty.py'] < runs['suite/test_hang.py'].duration


def test_the_summary_totals_a_real_run(suite):
    _, runs, _ = suite
    text = format_run(testruns.TestRun('Triton interpreter (CPU)', tuple(runs.values())))
    assert text.splitlines()[-1] == '7 passed, 4 failed, 1 skipped, 1 flaky in 7 files (Triton interpreter (CPU))'
    assert 'FAILED suite/test_fail.py::TestThing::test_size[32]\n    AssertionError: attempt 2\n' in text
    assert f'suite/test_hang.py: timed out after {TIMEOUT:g} s\n' in text


ENV_PROBE = '''
import json
import os
from pathlib import Path


def test_environment():
    names = ('TRITON_INTERPRET', 'FLA_DISABLE_BACKEND_DISPATCH')
    Path(__file__).with_name('env.json').write_text(json.dumps({name: os.environ.get(name) for name in names}))
'''


@pytest.mark.parametrize(('dispatch', 'interpret', 'expected'), [
    ('off', True, {'TRITON_INTERPRET': '1', 'FLA_DISABLE_BACKEND_DISPATCH': '1'}),
    ('on', False, {'TRITON_INTERPRET': None, 'FLA_DISABLE_BACKEND_DISPATCH': '0'}),
    ('default', False, {'TRITON_INTERPRET': None, 'FLA_DISABLE_BACKEND_DISPATCH': 'inherited'}),
])
def test_interpreter_and_dispatch_reach_the_tests(tmp_path, monkeypatch, dispatch, interpret, expected):
    monkeypatch.delenv('TRITON_INTERPRET', raising=False)
    monkeypatch.setenv('FLA_DISABLE_BACKEND_DISPATCH', 'inherited')
    _write(tmp_path, {'test_env.py': ENV_PROBE})
    [run] = execute(['test_env.py'], tmp_path, jobs=1, timeout=TIMEOUT, dispatch=dispatch, interpret=interpret)
    assert (run.passed, run.dispatch) == (1, dispatch)
    assert json.loads((tmp_path / 'env.json').read_text()) == expected


def test_without_a_gpu_the_interpreter_is_the_default(tmp_path, monkeypatch):
    monkeypatch.delenv('TRITON_INTERPRET', raising=False)
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    _write(tmp_path, {'test_env.py': ENV_PROBE})
    execute(['test_env.py'], tmp_path, jobs=1, timeout=TIMEOUT)
    assert json.loads((tmp_path / 'env.json').read_text())['TRITON_INTERPRET'] == '1'


def test_jobs_run_files_at_the_same_time(tmp_path):
    sleeper = ('import time\nfrom pathlib import Path\n\n\ndef test_sleeps():\n    start = time.time()\n    time.sleep(1)\n'
               '    Path(__file__).with_suffix(".span").write_text(f"{start} {time.time()}")\n')
    _write(tmp_path, {'test_a.py': sleeper, 'test_b.py': sleeper})
    runs = execute(['test_a.py', 'test_b.py'], tmp_path, jobs=2, timeout=TIMEOUT, interpret=False)
    assert [(r.file, r.passed) for r in runs] == [('test_a.py', 1), ('test_b.py', 1)]
    # the two one-second sleeps overlap, however loaded the machine is
    (a_start, a_end), (b_start, b_end) = (map(float, (tmp_path / f'test_{x}.span').read_text().split()) for x in 'ab')
    assert a_start < b_end and b_start < a_end


def test_unknown_dispatch_mode_is_a_user_error(tmp_path):
    with pytest.raises(records.MrbotError, match="unknown dispatch mode 'both'"):
        execute(['test_a.py'], tmp_path, jobs=1, timeout=TIMEOUT, dispatch='both', interpret=False)


def _stand_in_gpu(monkeypatch, gib: int) -> None:
    properties = SimpleNamespace(name='NVIDIA H200', major=9, minor=0, total_memory=gib * 2**30)
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.cuda, 'get_device_properties', lambda device=None: properties)


def test_device_label_names_the_gpu_and_its_compute_capability(monkeypatch):
    _stand_in_gpu(monkeypatch, 141)
    assert device_label() == 'compiled on NVIDIA H200 (sm_90)'
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    assert device_label() == 'Triton interpreter (CPU)'


@pytest.mark.parametrize(('cores', 'gib', 'expected'), [
    pytest.param(16, 80, 12, id='h100-runner-three-quarters-of-the-cores'),
    pytest.param(16, 24, 4, id='small-card-6-gib-per-process'),
    pytest.param(64, 141, 23, id='h200-on-a-large-host-its-memory'),
    pytest.param(2, 80, 1, id='never-fewer-than-one'),
])
def test_gpu_test_processes_are_sized_from_the_cores_and_the_gpu_memory(monkeypatch, cores, gib, expected):
    monkeypatch.delenv(WORKERS_VARIABLE, raising=False)
    monkeypatch.setattr(testing, 'usable_cores', lambda: cores)
    _stand_in_gpu(monkeypatch, gib)
    assert processes_per_test_file(0, '--workers') == expected
    # a count asked for wins over the sizing, and the runner's variable over the sizing too
    assert processes_per_test_file(3, '--workers') == 3
    monkeypatch.setenv(WORKERS_VARIABLE, '5')
    assert processes_per_test_file(0, '--workers') == 5 and processes_per_test_file(2, '--workers') == 2


def test_without_a_gpu_a_test_file_is_one_process(monkeypatch):
    monkeypatch.delenv(WORKERS_VARIABLE, raising=False)
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    assert processes_per_test_file(0, '--workers') == 1


@pytest.mark.parametrize('value', ['0', 'many', '-2', '1.5', '\u00b2', '10000', '9' * 5000])
def test_a_bad_runner_worker_count_is_a_clear_error(monkeypatch, value):
    monkeypatch.setenv(WORKERS_VARIABLE, value)
    with pytest.raises(records.MrbotError) as error:
        processes_per_test_file(0, '--workers')
    assert str(error.value) == f"MRBOT_TEST_WORKERS={value!r}: expected a whole number of test processes, 1 to 9999"


def test_a_runner_worker_count_without_xdist_names_the_variable(monkeypatch):
    monkeypatch.setenv(WORKERS_VARIABLE, '4')
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name, *a: None if name == 'xdist' else real(name, *a))
    with pytest.raises(records.MrbotError) as error:
        processes_per_test_file(0, '--workers')
    assert str(error.value) == 'MRBOT_TEST_WORKERS 4 needs pytest-xdist in this environment: pip install pytest-xdist'


def test_importing_the_module_does_not_import_torch():
    code = 'import sys, mrbot.testing; print("torch" in sys.modules)'
    done = subprocess.run([sys.executable, '-c', code], cwd=Path(__file__).parents[2], capture_output=True, text=True)
    assert done.stdout.strip() == 'False', done.stderr


PACKAGE = {
    'pkg/__init__.py': '',
    'pkg/calc.py': 'def double(x):\n    return 2 * x\n',
    'pkg/orphan.py': 'VALUE = 1\n',
    'tests/test_calc.py': 'from pkg.calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n',
    'tests/test_smoke.py': 'def test_alive():\n    assert True\n',
    'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\nsmoke-tests = ["tests/test_smoke.py"]\n',
    'docs/a.md': 'a\n',
}


SLOW = '''import subprocess
import sys
import time
from pathlib import Path

from pkg.calc import double

STUBBORN = 'import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)'


def test_first():
    assert double(1) == 2


def test_sleeps():
    child = subprocess.Popen([sys.executable, '-c', STUBBORN])
    Path(__file__).with_name('pids').write_text(f'{child.pid} {__import__("os").getpid()}')
    time.sleep(60)
'''


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_keeps_the_finished_files_stops_every_process_and_removes_its_folders(repo, tmp_path_factory,
                                                                                          signum):
    repo.commit({**PACKAGE, 'tests/test_slow.py': SLOW, 'tests/test_zlast.py': PACKAGE['tests/test_calc.py']})
    scratch, out = tmp_path_factory.mktemp('tmp'), tmp_path_factory.mktemp('out') / 'run.json'
    process = subprocess.Popen([sys.executable, '-m', 'mrbot.cli', 'test', 'pkg/calc.py', '-j', '1', '--json', str(out)],
                               cwd=repo.root, env={**os.environ, 'TMPDIR': str(scratch)}, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pids = repo.root / 'tests' / 'pids'
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1].startswith('mrbot test: interrupted') and 'Traceback' not in stderr
    assert [pid for pid in map(int, pids.read_text().split()) if _alive(pid)] == []
    assert [p.name for p in scratch.iterdir() if p.name.startswith('mrbot-test-')] == []
    files = {f['file']: f for f in json.loads(out.read_text())['files']}
    assert (files['tests/test_calc.py']['passed'], files['tests/test_calc.py']['note']) == (1, '')
    assert (files['tests/test_slow.py']['passed'], files['tests/test_slow.py']['note']) == (
        1, 'interrupted: 1 test ran before it stopped')
    assert files['tests/test_zlast.py']['note'] == 'interrupted before it started'
    assert 'tests/test_slow.py: interrupted: 1 test ran before it stopped' in stdout
