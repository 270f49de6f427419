# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The test stage: test files run with pytest, one process per file (or a few, with pytest-xdist), results read from
JUnit XML; the device they run on, and what to run for a selection."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from mrbot.progress import Progress
from mrbot.records import MrbotError
from mrbot.records.testruns import FileRun, Selection, TestFailure, check_workers
from mrbot.repo.index import test_files_of
from mrbot.repo.workspace import Workspace
from mrbot.stack import require_kernel_stack, usable_cores
from mrbot.words import plural

# The value of FLA_DISABLE_BACKEND_DISPATCH for each dispatch mode; None leaves the inherited environment alone.
_DISPATCH = {'off': '1', 'on': '0', 'default': None}
_DISPATCH_VARIABLE = 'FLA_DISABLE_BACKEND_DISPATCH'
_MESSAGE_LINES = 5
# pytest's exit codes for "some tests failed" and "no tests were collected".
_TESTS_FAILED = 1
_NO_TESTS = 5
# How long a timed-out pytest gets after SIGINT to write its results and report where it hung before it is killed.
INTERRUPT_GRACE = 5.0
# CUDA's sticky errors, as the runtime and the driver word them after "CUDA error:" (torch) or "Triton Error [CUDA]:":
# after one, every later call of the process fails. Matched on that line alone, since torch's advice that follows
# every CUDA error ("... to enable device-side assertions") would otherwise make an out-of-memory error look sticky.
STICKY_DEVICE_ERRORS = re.compile(
    r'(?:CUDA error|Triton Error \[CUDA\]): (?:an illegal memory access was encountered'
    r'|an illegal instruction was encountered|misaligned address|unspecified launch failure'
    r'|device-side assert triggered|hardware stack error|invalid program counter'
    r'|the launch timed out and was terminated|operation not supported on global/shared address space)'
    r'|CUDA_ERROR_(?:ILLEGAL_ADDRESS|ILLEGAL_INSTRUCTION|MISALIGNED_ADDRESS|LAUNCH_FAILED|ASSERT|HARDWARE_STACK_ERROR'
    r'|INVALID_PC|LAUNCH_TIMEOUT|INVALID_ADDRESS_SPACE)\b')
# A file whose tests crash more often than this gets no more fresh processes: the rest are reported as they ran.
_MAX_RESTARTS = 8
# A budget, not a measurement: 12 processes ran the KDA gate on a 16-core, 80 GB H100 (docs/gpu-runs.md), whose memory
# per process was not read; 6 GiB each keeps that count there and fewer on smaller cards
GPU_MEMORY_PER_WORKER = 6 * 2**30
# the runner's own count of test processes per file, where its cores or GPU memory are shared with other jobs
WORKERS_VARIABLE = 'MRBOT_TEST_WORKERS'


@dataclass(frozen=True)
class _Case:
    """One testcase of a JUnit XML file: its node id, outcome ('passed', 'failed' or 'skipped') and whether its
    failure is a sticky device error."""

    test: str
    outcome: str
    message: str = ''
    sticky: bool = False


@dataclass(frozen=True)
class _Process:
    """One finished pytest process: its exit code (None when it timed out), its testcases and the tail of its output."""

    returncode: int | None
    cases: tuple[_Case, ...] | None
    tail: str


# How a file's note starts when an interrupt cut it short or kept it from starting.
INTERRUPTED = 'interrupted'


class _Stopped(Exception):
    """An interrupt stopped a pytest process, or kept one from starting; `process` is what it left, if it ran."""

    def __init__(self, process: _Process | None) -> None:
        super().__init__('stopped by an interrupt')
        self.process = process


class TestsInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a test run: `files` are every file's outcome in input order, those it cut short or
    never started with a note saying so. Every pytest process it started has ended."""

    def __init__(self, files: list[FileRun]) -> None:
        super().__init__(finished_files(files))
        self.files = files


def finished_files(files: list[FileRun]) -> str:
    """How many of the files of an interrupted run finished: `2 of 5 test files finished`."""
    return f"{sum(not f.note.startswith(INTERRUPTED) for f in files)} of {plural(len(files), 'test file')} finished"


class _Children:
    """The pytest processes of one `execute`, so that an interrupt can stop them all and start no more."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self.stopping = threading.Event()

    def start(self, command: list[str], **options: object) -> subprocess.Popen:
        with self._lock:
            if self.stopping.is_set():
                raise _Stopped(None)
            # A session of its own, so that a timeout or an interrupt can stop every process the tests started.
            process = subprocess.Popen(command, start_new_session=True, **options)
            self._running.add(process)
            return process

    def forget(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._running.discard(process)

    def stop_all(self) -> None:
        with self._lock:
            self.stopping.set()
            running = list(self._running)
        _stop(running)


@dataclass(frozen=True)
class Gpu:
    name: str
    capability: tuple[int, int]
    memory_bytes: int

    @property
    def arch(self) -> int:
        """The compute capability as Triton's targets number it: 90 for sm_90, 100 for sm_100."""
        return self.capability[0] * 10 + self.capability[1]

    @property
    def target(self) -> str:
        return f'sm_{self.arch}'


def local_gpu() -> Gpu | None:
    """The first CUDA GPU torch sees, or None."""
    import torch

    if not torch.cuda.is_available():
        return None
    # the properties need no CUDA context, which would hold GPU memory in this process for the whole run
    properties = torch.cuda.get_device_properties(0)
    return Gpu(properties.name, (properties.major, properties.minor), properties.total_memory)


def device_label() -> str:
    """Where the kernels of a test run execute: 'compiled on NVIDIA H200 (sm_90)' or 'Triton interpreter (CPU)'."""
    gpu = local_gpu()
    if gpu is None:
        return 'Triton interpreter (CPU)'
    return f'compiled on {gpu.name} ({gpu.target})'


def processes_per_test_file(requested: int, flag: str) -> int:
    """Processes that share one test file on this machine: `requested` when above 0, else the machine's
    MRBOT_TEST_WORKERS where it is set, else sized from the machine. On a GPU each process compiles its kernels on a
    core and holds a CUDA context, Triton's compiler and an op test's tensors: three quarters of the cores, and
    GPU_MEMORY_PER_WORKER each. Without a GPU, 1: there the test files themselves run side by side."""
    check_workers(requested, flag)
    if requested:
        return requested
    configured = os.environ.get(WORKERS_VARIABLE, '').strip()
    if configured:
        if not re.fullmatch(r'[1-9][0-9]{0,3}', configured):
            raise MrbotError(f'{WORKERS_VARIABLE}={configured!r}: expected a whole number of test processes, 1 to 9999')
        # refused here, where the count's source is known, rather than by the caller's flag
        xdist_args(int(configured), WORKERS_VARIABLE)
        return int(configured)
    gpu = local_gpu()
    if gpu is None or importlib.util.find_spec('xdist') is None:
        return 1
    return max(1, min(usable_cores() * 3 // 4, gpu.memory_bytes // GPU_MEMORY_PER_WORKER))


def dispatch_variables(dispatch: str) -> dict[str, str]:
    """The variables a test process of the `dispatch` mode runs with, beyond those it inherits."""
    if dispatch not in _DISPATCH:
        raise MrbotError(f"unknown dispatch mode '{dispatch}': expected one of {', '.join(_DISPATCH)}")
    return {_DISPATCH_VARIABLE: _DISPATCH[dispatch]} if _DISPATCH[dispatch] is not None else {}


def _environment(dispatch: str, interpret: bool) -> dict[str, str]:
    env = {**os.environ, **dispatch_variables(dispatch)}
    if interpret:
        env['TRITON_INTERPRET'] = '1'
    return env


def plugin_environment(folder: Path, plugin: ModuleType, name: str) -> dict[str, str]:
    """PYTHONPATH and PYTEST_PLUGINS that load a copy of mrbot's pytest plugin module `plugin`, written to `folder` as
    `name`, into a test process: loaded by file, so that the tested tree's own `mrbot` (an older one, or none in another
    repository) cannot stand in for it. The plugin imports only the standard library until pytest calls it."""
    shutil.copyfile(plugin.__file__, folder / f'{name}.py')
    return {'PYTHONPATH': os.pathsep.join(filter(None, [str(folder), os.environ.get('PYTHONPATH')])),
            'PYTEST_PLUGINS': name}


def _pytest_command(targets: list[str]) -> list[str]:
    return [sys.executable, '-m', 'pytest', *targets, '-q', '-p', 'no:cacheprovider']


def _node_id(file: str, classname: str, name: str) -> str:
    """The pytest node id of a testcase; its classname is the dotted module path followed by any classes."""
    if not classname:
        # A collection error is reported for the module itself.
        return file
    parts = classname.split('.')
    stem = Path(file).stem
    # Classes follow the last part that names the module; nested directories come before it.
    module_end = len(parts) - parts[::-1].index(stem) if stem in parts else len(parts)
    return '::'.join([file, *parts[module_end:], name])


def _first_lines(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    return '\n'.join(lines[:_MESSAGE_LINES])


def _error_lines(text: str) -> str:
    """The last block of pytest's `E   ` lines in a traceback: the exception that ended the test, without its source."""
    blocks: list[list[str]] = []
    previous_was_error = False
    for line in text.splitlines():
        is_error = line.startswith('E ')
        if is_error:
            if not previous_was_error:
                blocks.append([])
            blocks[-1].append(line[1:])
        previous_was_error = is_error
    if not blocks:
        return ''
    return _first_lines(textwrap.dedent('\n'.join(blocks[-1])))


def _message(element: ElementTree.Element) -> str:
    text = element.text or ''
    return _error_lines(text) or _first_lines(element.get('message', '')) or _first_lines(text)


def _read_cases(xml: Path, file: str) -> tuple[_Case, ...] | None:
    try:
        tree = ElementTree.parse(xml)
    except (OSError, ElementTree.ParseError):
        return None
    cases = []
    for testcase in tree.iter('testcase'):
        # pytest leaves an empty testcase for a test that a KeyboardInterrupt stopped.
        if not testcase.get('name'):
            continue
        test = _node_id(file, testcase.get('classname', ''), testcase.get('name', ''))
        problem = next((child for child in testcase if child.tag in ('failure', 'error')), None)
        skipped = testcase.find('skipped')
        if problem is not None:
            text = f"{problem.get('message', '')}\n{problem.text or ''}"
            cases.append(_Case(test, 'failed', _message(problem), bool(STICKY_DEVICE_ERRORS.search(text))))
        elif skipped is not None:
            cases.append(_Case(test, 'skipped', _first_lines(skipped.get('message', ''))))
        else:
            cases.append(_Case(test, 'passed'))
    return tuple(cases)


def _stop(processes: list[subprocess.Popen]) -> None:
    """Interrupt each process group so pytest writes its results and where it hung, then kill whatever is left."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
        deadline = time.monotonic() + INTERRUPT_GRACE
        for process in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, deadline - time.monotonic()))


def _last_lines(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    return '\n'.join(lines[-_MESSAGE_LINES:])


def _run_pytest(command: list[str], file: str, root: Path, env: dict[str, str], timeout: float,
                children: _Children) -> _Process:
    """One pytest process to its end; raises _Stopped with what it left when an interrupt stopped it."""
    with tempfile.TemporaryDirectory(prefix='mrbot-test-') as scratch:
        xml = Path(scratch) / 'results.xml'
        log = Path(scratch) / 'output.log'
        with log.open('wb') as output:
            process = children.start([*command, f'--junitxml={xml}', '-o', 'junit_family=xunit2'], cwd=root, env=env,
                                     stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)
            try:
                returncode = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _stop([process])
                returncode = None
            finally:
                children.forget(process)
        result = _Process(returncode, _read_cases(xml, file), _last_lines(log.read_text(errors='replace')))
    if children.stopping.is_set():
        raise _Stopped(result)
    return result


def _exit_description(returncode: int) -> str:
    if returncode < 0:
        try:
            return f'pytest exited with code {returncode} ({signal.Signals(-returncode).name})'
        except ValueError:
            pass
    return f'pytest exited with code {returncode}'


def _problem(process: _Process, timeout: float) -> str:
    """Why a pytest process's results are incomplete, or '' when it ran to a normal end."""
    if process.returncode is None:
        return f'timed out after {timeout:g} s'
    if process.cases is None or process.returncode not in (0, _TESTS_FAILED):
        return _exit_description(process.returncode)
    failed_without_a_failure = process.returncode == _TESTS_FAILED and not _count(process.cases, 'failed')
    return _exit_description(process.returncode) if failed_without_a_failure else ''


def _count(cases: tuple[_Case, ...], outcome: str) -> int:
    return sum(c.outcome == outcome for c in cases)


def _retry(failures: list[TestFailure], file: str, root: Path, env: dict[str, str], timeout: float,
           children: _Children) -> tuple[list[TestFailure], int, str]:
    """Run the failed tests once more in one fresh process: those that failed again, how many passed, and a note."""
    retry = _run_pytest(_pytest_command([f.test for f in failures]), file, root, env, timeout, children)
    retried = {c.test: c for c in retry.cases or ()}
    still_failing = []
    for failure in failures:
        again = retried.get(failure.test)
        if again is None or again.outcome != 'passed':
            still_failing.append(TestFailure(failure.test, again.message) if again and again.message else failure)
    problem = _problem(retry, timeout)
    return still_failing, len(failures) - len(still_failing), f'retry: {problem}' if problem else ''


@dataclass(frozen=True)
class _AfterCrashes:
    """A file's results once the tests after each sticky device error ran again in fresh processes: every test's
    last outcome, the tests that first reported each error, how many passed in a fresh process, and the last
    process (whose end decides whether the results are whole)."""

    cases: tuple[_Case, ...]
    crashed: tuple[TestFailure, ...]
    restarted: int
    last: _Process


def _restart_after_crashes(first: _Process, file: str, root: Path, env: dict[str, str], timeout: float,
                           pytest_args: tuple[str, ...], children: _Children) -> _AfterCrashes:
    """The first test to report a sticky device error is named as crashed (CUDA reports errors late, so the kernel at
    fault may be an earlier test's); those after it in the same process run again in a fresh one, and so on until a
    process ends without such an error or `_MAX_RESTARTS` tests have crashed."""
    kept: list[_Case] = []
    crashed: list[TestFailure] = []
    before_first_crash = 0
    process = first
    cases = list(first.cases or ())
    while len(crashed) < _MAX_RESTARTS and process.returncode in (0, _TESTS_FAILED):
        cause = next((i for i, case in enumerate(cases) if case.sticky), None)
        if cause is None:
            break
        kept.extend(cases[:cause])
        if not crashed:
            # what the first process ran before its crash; every result after these comes from a fresh process
            before_first_crash = len(kept)
        crashed.append(TestFailure(cases[cause].test, cases[cause].message))
        remaining = [case.test for case in cases[cause + 1:]]
        cases = []
        if remaining:
            process = _run_pytest(_pytest_command([*remaining, *pytest_args]), file, root, env, timeout, children)
            cases = list(process.cases or ())
    results = tuple(kept + cases)
    restarted = _count(results[before_first_crash:], 'passed') if crashed else 0
    return _AfterCrashes(results, tuple(crashed), restarted, process)


def _not_started(file: str, command: list[str], dispatch: str) -> FileRun:
    return FileRun(file, tuple(command), dispatch, 0.0, 0, 0, 0, 0, note=f'{INTERRUPTED} before it started')


def _cut_short(file: str, command: list[str], dispatch: str, start: float, cases: tuple[_Case, ...]) -> FileRun:
    """A file an interrupt stopped: the tests that ran before it, as they ran the first time."""
    failures = tuple(TestFailure(c.test, c.message) for c in cases if c.outcome == 'failed')
    return FileRun(file=file, command=tuple(command), dispatch=dispatch, duration=time.monotonic() - start,
                   passed=_count(cases, 'passed'), failed=len(failures), skipped=_count(cases, 'skipped'), flaky=0,
                   failures=failures, note=f"{INTERRUPTED}: {plural(len(cases), 'test')} ran before it stopped")


def _run_file(file: str, root: Path, env: dict[str, str], timeout: float, dispatch: str,
              pytest_args: tuple[str, ...], children: _Children) -> FileRun:
    start = time.monotonic()
    command = _pytest_command([file, *pytest_args])
    try:
        first = _run_pytest(command, file, root, env, timeout, children)
    except _Stopped as stopped:
        if stopped.process is None:
            return _not_started(file, command, dispatch)
        return _cut_short(file, command, dispatch, start, stopped.process.cases or ())
    try:
        return _finish_file(first, file, command, start, root, env, timeout, dispatch, pytest_args, children)
    except _Stopped:
        return _cut_short(file, command, dispatch, start, first.cases or ())


def _finish_file(first: _Process, file: str, command: list[str], start: float, root: Path, env: dict[str, str],
                 timeout: float, dispatch: str, pytest_args: tuple[str, ...], children: _Children) -> FileRun:
    """A file's outcome from its first process, after the reruns its crashes and failures need."""
    after = _restart_after_crashes(first, file, root, env, timeout, pytest_args, children)
    cases = after.cases
    failures = [TestFailure(c.test, c.message) for c in cases if c.outcome == 'failed']
    flaky, note = 0, ''
    if first.returncode == _NO_TESTS:
        note = 'no tests collected'
    elif problem := _problem(after.last, timeout):
        note = problem
        # A test that crashed or hung is missing from the results, so the file stands for it.
        if after.last.returncode is None or not failures:
            failures.append(TestFailure(file, after.last.tail or 'no output'))
    elif failures:
        failures, flaky, note = _retry(failures, file, root, env, timeout, children)
    if after.crashed:
        restarts = f'{plural(len(after.crashed), "sticky device error")}; the tests after each ran again in a fresh ' \
                   f'process: {after.restarted} passed after restart'
        note = f'{restarts}; {note}' if note else restarts
    return FileRun(file=file, command=tuple(command), dispatch=dispatch, duration=time.monotonic() - start,
                   passed=_count(cases, 'passed'), failed=len(failures), skipped=_count(cases, 'skipped'), flaky=flaky,
                   failures=tuple(failures), note=note, crashed=after.crashed, restarted=after.restarted)


def execute(tests: list[str], root: Path, jobs: int, timeout: float, dispatch: str = 'default',
            interpret: bool | None = None, progress: Callable[[FileRun, int, int], None] | None = None,
            pytest_args: tuple[str, ...] = (), environment: dict[str, str] | None = None) -> list[FileRun]:
    """Run each test file (relative to `root`) in its own pytest process, `jobs` at a time; results in input order.

    `pytest_args` are added to each file's command line, e.g. `('-k', 'varlen')` for a partial run, and `environment`
    to its variables.
    `interpret` None means: under the Triton interpreter exactly when torch sees no CUDA GPU. `progress` is called
    with each finished file, how many are done and how many there are, one call at a time.
    """
    require_kernel_stack('running the tests')
    if interpret is None:
        interpret = local_gpu() is None
    env = {**_environment(dispatch, interpret), **(environment or {})}
    lock = threading.Lock()
    done = 0
    children = _Children()

    def run_one(file: str) -> FileRun:
        nonlocal done
        file_run = _run_file(file, root, env, timeout, dispatch, pytest_args, children)
        with lock:
            done += 1
            if progress is not None:
                progress(file_run, done, len(tests))
        return file_run

    pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(tests) or 1)))
    futures = [pool.submit(run_one, file) for file in tests]
    try:
        return [future.result() for future in futures]
    except KeyboardInterrupt:
        with _uninterrupted():
            for future in futures:
                future.cancel()
            children.stop_all()
            pool.shutdown(wait=True)
        files = [_not_started(file, _pytest_command([file, *pytest_args]), dispatch) if future.cancelled()
                 else future.result() for file, future in zip(tests, futures, strict=True)]
        raise TestsInterrupted(files) from None
    finally:
        pool.shutdown(wait=True)


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """Ignore Ctrl-C and SIGTERM while the children of an interrupted run stop (seconds at most), so that a second
    one cannot leave them running; a no-op outside the main thread, where Python sets no signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def execute_with_progress(tests: list[str], root: Path, jobs: int, timeout: float, dispatch: str = 'default', *,
                          quiet: bool = False, title: str = 'tests', **options: object) -> list[FileRun]:
    """`execute` with its progress on stderr (see mrbot.progress): each finished file with its counts, and the totals
    so far; `options` are `execute`'s."""
    totals = {'passed': 0, 'failed': 0}
    with Progress(title, len(tests), quiet) as progress:
        def finished(file_run: FileRun, done: int, total: int) -> None:
            totals['passed'] += file_run.passed
            totals['failed'] += file_run.failed
            progress.finished(_progress_line(file_run, done, total),
                              f"{totals['passed']} passed, {totals['failed']} failed")

        return execute(tests, root, jobs, timeout, dispatch, progress=finished, **options)


def test_targets(selection: Selection, workspace: Workspace) -> tuple[list[str], bool]:
    """What to run for a selection, and whether it is the smoke set: a changed source file that no test reaches runs
    the configured smoke tests (or every test file) rather than nothing."""
    if not selection.tests and selection.unselected:
        return list(workspace.config.smoke_tests) or test_files_of(workspace.graph.index, workspace.config), True
    return [t.test for t in selection.tests], False


def xdist_args(workers: int, flag: str) -> tuple[str, ...]:
    """pytest-xdist arguments that spread one file's tests over `workers` processes (1: none); `flag` names the option
    that asked for them, for the error."""
    if workers < 1:
        raise MrbotError(f'{flag} must be at least 1, got {workers}')
    if workers == 1:
        return ()
    if importlib.util.find_spec('xdist') is None:
        raise MrbotError(f'{flag} {workers} needs pytest-xdist in this environment: pip install pytest-xdist')
    return ('-n', str(workers))


def shell_command(file_run: FileRun, device: str) -> str:
    """The command that reruns one file as it ran, with the variables that mattered, for a reader to copy."""
    variables = ['TRITON_INTERPRET=1'] if not device.startswith('compiled') else []
    if _DISPATCH.get(file_run.dispatch) is not None:
        variables.append(f'{_DISPATCH_VARIABLE}={_DISPATCH[file_run.dispatch]}')
    command = list(file_run.command)
    if command and command[0] == sys.executable:
        command[0] = 'python'
    return shlex.join(command) if not variables else f"{' '.join(variables)} {shlex.join(command)}"


def _progress_line(file_run: FileRun, done: int, total: int) -> str:
    crashes = f', {len(file_run.crashed)} crashed' if file_run.crashed else ''
    counts = f'{file_run.passed} passed, {file_run.failed} failed{crashes}, {file_run.flaky} flaky'
    note = f' ({file_run.note})' if file_run.note else ''
    return f'[{done}/{total}] {file_run.file} [{file_run.dispatch}] {counts} in {file_run.duration:.1f} s{note}'


def check_timeout(seconds: float, flag: str) -> None:
    """A per-file time limit must leave the tests some time: 0 or less would fail every file unrun."""
    if not seconds > 0:
        raise MrbotError(f'{flag} must be above 0 seconds per test file, got {seconds:g}')
