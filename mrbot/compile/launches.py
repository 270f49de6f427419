# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The launches a repository's tests and benchmarks make: captured without a GPU, deduplicated, cached by content.

The capture itself happens in child processes (`mrbot/compile/capture.py`): one pytest run per test file, with the
capture loaded as a plugin, and one process calling the benchmark rows forward and backward; a test file that hangs,
crashes or runs out of its memory share loses only its own remaining launches. This module starts them, reads what
they wrote back into `Launch` records, and keeps each process's result under `.mrbot/cache/capture/`, keyed by the
content of every Python file of the repository and what the process runs, so that an unchanged tree is not captured
twice and a stopped capture resumes.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import triton

from mrbot.bench.harness import WORKER as BENCH_WORKER
from mrbot.compile import capture
from mrbot.config import state_dir, write_whole
from mrbot.git import run_git
from mrbot.records import MrbotError
from mrbot.repo.ops import OpSpec
from mrbot.stack import usable_cores
from mrbot.testing import STICKY_DEVICE_ERRORS, plugin_environment
from mrbot.words import plural

SCHEMA = 1
# The module name the capture plugin is loaded under in test processes (see mrbot/prepare.py for why by copy).
PLUGIN = 'mrbot_capture_plugin'
# Variables a test must not see: credentials by the words their names use, and the files through which a CI step
# changes the steps after it.
_CREDENTIAL = re.compile(r'TOKEN|SECRET|PASS|CREDENTIAL|AUTH|KEY|JWT|CERT|COOKIE|SESSION|_PAT$|^GITHUB_(ENV|OUTPUT|PATH|'
                         r'STEP_SUMMARY)$', re.IGNORECASE)
# A value that carries a password in a URL: scheme://user:password@host
_URL_WITH_PASSWORD = re.compile(r'://[^/\s:@]+:[^/\s@]+@')
# How the origin of a launch made by a benchmark row starts (a test's origin is its pytest node id).
BENCH_ORIGIN = 'bench:'
_SIGNATURE_KEYS = ('signature', 'constant_keys', 'constant_vals', 'attrs_keys', 'attrs_vals', 'options')


@dataclass(frozen=True)
class Launch:
    """One specialization of one kernel, as Triton would compile it for a launch the code made.

    `specialization` is Triton's own (signature, constexprs and attributes keyed by argument path, and the options the
    launch set, such as `num_warps`); `config` is the autotune config it was launched for ('' outside an autotuner),
    `config_index` its place among the `configs` its autotuner keeps; `origins` name the tests or benchmark rows that
    launched it.
    """

    kernel: str
    module: str
    path: str
    line: int
    source_hash: str
    specialization: dict[str, Any]
    config: str = ''
    config_index: int = 0
    configs: int = 0
    pre_hook: bool = False
    origins: tuple[str, ...] = ()

    @property
    def benchmarked(self) -> bool:
        return any(origin.startswith(BENCH_ORIGIN) for origin in self.origins)

    @property
    def identity(self) -> str:
        """What makes two launches one compile: the kernel's source and dependencies, and the specialization."""
        return json.dumps([self.module, self.kernel, self.source_hash, self.specialization, self.config],
                          sort_keys=True, default=str)

    def constants(self) -> dict[str, Any]:
        """Compile-time values by parameter name (the top-level ones; nested tuple entries are left out)."""
        names = list(self.specialization['signature'])
        return {names[key[0]]: value for key, value in zip(self.specialization['constant_keys'],
                                                           self.specialization['constant_vals'], strict=True)
                if len(key) == 1 and key[0] < len(names)}

    def describe(self) -> str:
        """`K=128, V=128, BK=64, num_warps=4, num_stages=2`: the upper-case compile-time sizes and flags, then the
        launch options; what a reader needs to find the specialization again."""
        sizes = [f'{name}={value}' for name, value in self.constants().items()
                 if name.isupper() and value is not None and not isinstance(value, dict)]
        options = [f'{name}={value}' for name, value in sorted(self.specialization['options'].items())
                   if name in ('num_warps', 'num_stages', 'num_ctas', 'maxnreg')]
        return ', '.join(sizes + options)

    def to_json(self) -> dict:
        return {'kernel': self.kernel, 'module': self.module, 'path': self.path, 'line': self.line,
                'source_hash': self.source_hash, **self.specialization, 'config': self.config,
                'config_index': self.config_index, 'configs': self.configs, 'pre_hook': self.pre_hook,
                'origins': list(self.origins)}

    @classmethod
    def from_json(cls, data: Any, where: str) -> Launch:
        """Read one launch back, checking every field's type, so that a damaged file is one clear error."""
        expected = {'kernel': str, 'module': str, 'path': str, 'line': int, 'source_hash': str, 'signature': dict,
                    'constant_keys': list, 'constant_vals': list, 'attrs_keys': list, 'attrs_vals': list,
                    'options': dict, 'config': str, 'config_index': int, 'configs': int, 'pre_hook': bool}
        if not isinstance(data, dict):
            raise MrbotError(f'{where}: expected a launch object, got {type(data).__name__}')
        for key, kind in expected.items():
            if not isinstance(data.get(key), kind):
                raise MrbotError(f'{where}: launch field {key!r}: expected {kind.__name__}, got {data.get(key)!r:.60}')
        origins = data.get('origins') or ([data['origin']] if data.get('origin') else [])
        return cls(data['kernel'], data['module'], data['path'], data['line'], data['source_hash'],
                   {key: data[key] for key in _SIGNATURE_KEYS}, data['config'], data['config_index'], data['configs'],
                   data['pre_hook'], tuple(str(o) for o in origins))


@dataclass(frozen=True)
class Capture:
    """The launches of one capture, what ran to find them, and what went wrong on the way (each a line)."""

    launches: tuple[Launch, ...]
    tests: tuple[str, ...]
    bench_rows: tuple[str, ...]
    problems: tuple[str, ...]
    seconds: float
    cached: bool = False

    def to_json(self) -> dict:
        return {'schema': SCHEMA, 'tests': list(self.tests), 'bench_rows': list(self.bench_rows),
                'problems': list(self.problems), 'seconds': round(self.seconds, 3),
                'launches': [launch.to_json() for launch in self.launches]}


def bench_rows(specs: list[OpSpec]) -> list[dict]:
    """One row per op, declared mode and declared shape: the calls the benchmarks make."""
    from dataclasses import asdict

    return [{'spec': asdict(spec), 'mode': mode, 'dims': dims, 'label': f'{BENCH_ORIGIN}{spec.name}:{mode}:{shape}'}
            for spec in specs for mode in spec.modes for shape, dims in spec.shapes.items()]


def compile_environment() -> dict[str, str]:
    """The environment of every process that runs or imports the repository's code for `mrbot compile`: never
    interpreted, so that launches reach Triton's compile path and kernels import as JIT functions; GPUs hidden, so that
    every machine captures alike; and no variable that looks like a credential, since in CI that code is the pull
    request's."""
    env = {name: value for name, value in os.environ.items()
           if not _CREDENTIAL.search(name) and not _URL_WITH_PASSWORD.search(value)}
    env.update({'TRITON_INTERPRET': '0', 'CUDA_VISIBLE_DEVICES': '', 'PYTHONUNBUFFERED': '1'})
    return env


@dataclass(frozen=True)
class GpuRun:
    """The test run on this machine's GPU that a capture prepares: the GPU's compute capability as a number (90), and
    the variables the tests will run with (the dispatch mode's)."""

    arch: int
    variables: tuple[tuple[str, str], ...] = ()


def _environment(folder: Path, jobs: int, gpu_run: GpuRun | None = None) -> dict[str, str]:
    env = {**compile_environment(), capture.DIR_VARIABLE: str(folder)}
    env.pop(capture.ON_GPU_VARIABLE, None)
    if gpu_run is not None:
        # the tests see the GPU, and run with its run's variables, as they will when they run
        env.update({capture.ON_GPU_VARIABLE: '1', **dict(gpu_run.variables)})
        del env['CUDA_VISIBLE_DEVICES']
        if 'CUDA_VISIBLE_DEVICES' in os.environ:
            env['CUDA_VISIBLE_DEVICES'] = os.environ['CUDA_VISIBLE_DEVICES']
    # the cores are shared out as processes already; torch's own threads on top of that (one per core each) only
    # contend: 16 processes of 16 threads on a 16-core machine
    env.setdefault('OMP_NUM_THREADS', str(max(1, usable_cores() // max(1, jobs))))
    return env


def _memory_share(jobs: int) -> int:
    """Bytes of memory each of `jobs` capture processes may take: an equal share of what is available now."""
    try:
        with open('/proc/meminfo') as info:
            available = next(int(line.split()[1]) * 1024 for line in info if line.startswith('MemAvailable:'))
    except (OSError, StopIteration, ValueError):
        return 0
    return int(available * 0.9) // max(1, jobs)


class _Processes:
    """The capture processes running now, so that an interrupt, which only the main thread sees, can end them all."""

    def __init__(self) -> None:
        self.running: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.stopping = False

    def run(self, command: list[str], root: Path, env: dict[str, str], timeout: float, log: Path, memory: int) -> str:
        """Run a capture process in a session of its own, its memory capped at `memory` bytes (0: uncapped), so that a
        test that allocates beyond it fails there instead of drawing the out-of-memory killer; whatever it leaves
        running is ended with it. Returns '' or why its capture may be incomplete."""
        with log.open('ab') as output, self.lock:
            if self.stopping:
                return 'not run: interrupted'
            process = subprocess.Popen(command, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            self.running.add(process)
        if memory:
            with contextlib.suppress(OSError):
                resource.prlimit(process.pid, resource.RLIMIT_DATA, (memory, memory))
        try:
            returncode = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            self._end(process)
        if self.stopping:
            return 'interrupted'
        if returncode is None:
            return f'stopped after {timeout:g} s; the launches seen until then were kept'
        if returncode < 0:
            return f'killed by {signal.Signals(-returncode).name}; the launches seen until then were kept'
        return ''

    def _end(self, process: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        with self.lock:
            self.running.discard(process)

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            running = list(self.running)
        for process in running:
            self._end(process)


def _read_launches(files: list[Path]) -> tuple[list[dict], int]:
    """The launch records the capture processes wrote, as JSON objects, and how many lines were not one."""
    records, malformed = [], 0
    for file in files:
        read, bad = _read_records(file.read_text(encoding='utf-8', errors='replace'))
        records += read
        malformed += bad
    return records, malformed


def _read_records(text: str) -> tuple[list[dict], int]:
    """The JSON objects of `text`'s lines, and how many lines were not one."""
    records, malformed = [], 0
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            malformed += 1
    return records, malformed


def _merged(records: list[dict]) -> tuple[list[Launch], int]:
    """Launches from their records, one per identity, with up to three origins each; and how many records were not
    launches (the tests run the repository's code, which can write anything where the capture writes)."""
    merged: dict[str, Launch] = {}
    malformed = 0
    for record in records:
        try:
            launch = Launch.from_json(record, 'a launch record')
        except MrbotError:
            malformed += 1
            continue
        known = merged.get(launch.identity)
        if known is None:
            merged[launch.identity] = launch
        elif not set(launch.origins) <= set(known.origins):
            merged[launch.identity] = Launch(**{**known.__dict__, 'origins': _kept_origins(known.origins,
                                                                                           launch.origins)})
    return sorted(merged.values(), key=lambda x: (x.path, x.line, x.identity)), malformed


def _kept_origins(known: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    """Up to three origins, in the order heard, one of them a benchmark row's where one launched it: a benchmarked
    launch compiles further (`plan_cells`), whatever number of tests launched it first."""
    origins = tuple(dict.fromkeys((*known, *more)))
    kept = origins[:3]
    row = next((origin for origin in origins if origin.startswith(BENCH_ORIGIN)), None)
    if row is not None and row not in kept:
        kept = (*kept[:2], row)
    return kept


def _is_jit(node: ast.AST) -> bool:
    """Whether `node` defines a function under `@triton.jit` (or any decorator named `jit`, Gluon's too)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (target.attr if isinstance(target, ast.Attribute) else getattr(target, 'id', '')) == 'jit':
            return True
    return False


def _host_and_bodies(text: str) -> tuple[str, dict[str, str]] | None:
    """A file's code without the bodies of its jit functions (what its launches depend on), and a digest of each
    body by function name (what its kernels compile); None where it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    bodies = {}
    for node in [node for node in ast.walk(tree) if _is_jit(node)]:
        bodies[node.name] = hashlib.sha256(ast.dump(ast.Module(body=node.body, type_ignores=[])).encode()).hexdigest()
        node.body = [ast.Pass()]
    return ast.dump(tree), bodies


@dataclass(frozen=True)
class TreeState:
    """What a capture depends on: `key` hashes the working tree but for the bodies of the jit functions of Python
    files changed only there (launches are made by the code around kernels, never by a kernel's body), and `bodies`
    holds, for each such file, the digest of each of those bodies by function name."""

    key: str
    bodies: dict[str, dict[str, str]]


def _tree_state(root: Path, test_seconds: int) -> TreeState:
    """The tree a capture depends on: every file of the working tree that git does not ignore (data files and
    configuration too), the pyproject, the seconds per test, the versions of Python, torch and Triton, and the
    capture's own code; of a Python file changed only in the bodies of its jit functions, the version in the index,
    with the digest of the bodies apart."""
    digest = hashlib.sha256(run_git(root, 'ls-files', '--stage', '-z'))
    status = run_git(root, 'status', '--porcelain=v1', '-z', '--untracked-files=all').decode(errors='replace')
    bodies = {}
    for entry in sorted(filter(None, status.split('\0'))):
        path = root / entry[3:]
        if entry[:2] == ' M' and entry.endswith('.py') and path.is_file():
            text = path.read_text(encoding='utf-8', errors='replace')
            now = _host_and_bodies(text)
            indexed = _host_and_bodies(run_git(root, 'show', f':{entry[3:]}').decode(errors='replace'))
            if now is not None and indexed is not None and now[0] == indexed[0]:
                bodies[entry[3:]] = now[1]
                continue
        digest.update(entry.encode())
        if path.is_file() and not path.is_symlink():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(json.dumps([test_seconds, sys.version, _version('torch'), triton.__version__,
                              Path(capture.__file__).read_text()]).encode())
    return TreeState(digest.hexdigest(), bodies)


def _version(distribution: str) -> str:
    """An installed distribution's version, read without importing it (torch takes a second to import)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ''


def _rebodied(data: dict, bodies: dict[str, dict[str, str]], imports: dict[str, frozenset[str]], root: Path) -> dict:
    """A stored capture made with other jit bodies than `bodies`: the same launches, under a source hash of its own
    for each kernel whose body changed or that may call a jit helper (a jit function no launch names) whose body
    changed in a file its own imports, so that those cells compile again and no other; each at the line its `def` is
    on now."""
    before = data.get('bodies') or {}
    if before == bodies:
        return data
    changed = set()
    for path in before.keys() | bodies.keys():
        # a file clean at the capture, or now, has the bodies of its version in the index, which the key holds still
        indexed = _host_and_bodies(run_git(root, 'show', f':{path}').decode(errors='replace')) or ('', {})
        old, new = before.get(path, indexed[1]), bodies.get(path, indexed[1])
        changed |= {(path, name) for name in old.keys() | new.keys() if old.get(name) != new.get(name)}
    launched = {(record.get('path'), record.get('kernel')) for record in data['launches']}
    helpers = {(path, name) for path, name in changed if (path, name) not in launched}
    lines: dict[str, dict[str, int]] = {}
    for path in {path for path, _ in changed}:
        with contextlib.suppress(OSError, SyntaxError, ValueError):
            tree = ast.parse((root / path).read_text(encoding='utf-8'))
            lines[path] = {node.name: node.lineno for node in ast.walk(tree) if _is_jit(node)}
    launches = []
    for record in data['launches']:
        path, kernel = record.get('path'), record.get('kernel')
        reach = imports.get(path, frozenset({path}))
        touched = sorted({(path, kernel)} & changed | {(p, n) for p, n in helpers if p in reach})
        if touched:
            now = json.dumps([(p, n, bodies.get(p, {}).get(n, 'index')) for p, n in touched])
            record = {**record, 'source_hash': hashlib.sha256(f"{record.get('source_hash')}\0{now}".encode()).hexdigest()}
        # an edit above a kernel moves it, changed or not
        launches.append({**record, 'line': lines.get(path, {}).get(kernel, record.get('line'))})
    return {**data, 'launches': launches}


@dataclass(frozen=True)
class _Unit:
    """One capture process: a test file, or the benchmark rows; `key` names its result in the cache."""

    name: str
    command: list[str]
    env: dict[str, str]
    memory: int
    key: str

    @property
    def cache_file(self) -> str:
        return f'{hashlib.sha256(self.name.encode()).hexdigest()[:24]}.json'


def _cached(folder: Path, unit: _Unit) -> dict | None:
    """The stored result of a unit, when it was made from the same tree and is well formed."""
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((folder / unit.cache_file).read_text(encoding='utf-8'))
        if (isinstance(data, dict) and data.get('key') == unit.key and isinstance(data.get('launches'), list)
                and all(isinstance(data.get(name), list) for name in ('stopped', 'problems'))):
            return data
    return None


def _follow(out: Path, heard: Callable[[list[Launch]], None], ended: threading.Event) -> None:
    """Hand `heard` the launches a capture process writes into `out` as it writes them, each whole line once, until
    `ended` (the process has ended) and all of them are read."""
    read: dict[Path, int] = {}
    while True:
        last = ended.is_set()
        records = []
        for file in sorted(out.glob('launches-*.jsonl')):
            try:
                with file.open('rb') as text:
                    text.seek(read.get(file, 0))
                    written = text.read()
            except OSError:
                continue
            whole = written[:written.rfind(b'\n') + 1]
            read[file] = read.get(file, 0) + len(whole)
            records += _read_records(whole.decode('utf-8', errors='replace'))[0]
        if records:
            heard(_merged(records)[0])
        if last:
            return
        ended.wait(0.5)


def capture_launches(root: Path, tests: list[str], rows: list[dict], timeout: float, jobs: int, test_seconds: int,
                     use_cache: bool = True, imports: dict[str, frozenset[str]] | None = None,
                     home: Path | None = None, gpu_run: GpuRun | None = None,
                     heard: Callable[[list[Launch]], None] | None = None) -> Capture:
    """The launches that the test files (one pytest process each, `timeout` seconds per file and `test_seconds` per
    test) and the benchmark rows (one process) make with the capture in place, `jobs` processes at a time.

    Each process's result is kept under `.mrbot/cache/capture/` (of `home`, `root` by default) as soon as it ends, keyed
    by the tree's content, so an unchanged tree captures
    nothing twice, and a run that was stopped resumes where it was. A tree changed since only in the bodies of jit
    functions captures nothing either: the stored launches stand, and the kernels of the files that import a changed
    one (`imports`: each kernel file with the files it imports) get source hashes of their own.

    GPUs are hidden from the processes, so that every machine captures alike, unless `gpu_run` is the test run on this
    machine's GPU that the capture prepares: then the tests see the GPU and that run's variables, as they will when
    they run (a test skipped without a GPU runs, a branch that asks for the device's properties takes its answer), and
    the capture is stored apart from the hidden ones.

    `heard`, where given, is handed the launches each process writes while it runs (or those stored for it), so that
    compiling them can start before the capture ends.
    """
    start = time.monotonic()
    state = _tree_state(root, test_seconds)
    tree = state.key if gpu_run is None else f'{state.key}\0{json.dumps(gpu_run.variables)}'
    stored = state_dir(home or root, 'cache', 'capture' if gpu_run is None else f'capture-sm_{gpu_run.arch}')
    logs = state_dir(root, 'compile', 'capture')
    # a CUDA context maps far more than the tests' data: a cap meant for tests on the CPU would stop it starting
    memory = _memory_share(jobs) if gpu_run is None else 0
    processes = _Processes()
    with tempfile.TemporaryDirectory(prefix='mrbot-capture-') as scratch:
        folder = Path(scratch)
        loading = plugin_environment(folder, capture, PLUGIN)
        plugin = folder / f'{PLUGIN}.py'
        # --maxfail=0 after the repository's own options: a -x there would end the file at its first garbage result
        units = [_Unit(test, [sys.executable, '-m', 'pytest', test, '-q', '-p', 'no:cacheprovider', '--maxfail=0'],
                       {**_environment(folder / str(number), jobs, gpu_run), **loading,
                        capture.SECONDS_VARIABLE: str(test_seconds)},
                       memory, hashlib.sha256(f'{tree}\0{test}'.encode()).hexdigest())
                 for number, test in enumerate(tests)]
        if rows:
            rows_file = folder / 'rows.json'
            rows_file.write_text(json.dumps(rows), encoding='utf-8')
            units.append(_Unit('benchmark rows', [sys.executable, str(plugin), str(BENCH_WORKER), str(rows_file)],
                               _environment(folder / 'rows', jobs, gpu_run), memory,
                               hashlib.sha256(f'{tree}\0{json.dumps(rows, sort_keys=True)}'.encode()).hexdigest()))

        def run_unit(unit: _Unit) -> tuple[dict, bool]:
            if use_cache and (data := _cached(stored, unit)) is not None:
                data = _rebodied(data, state.bodies, imports or {}, root)
                if heard is not None:
                    heard(_merged(data['launches'])[0])
                return data, True
            out = Path(unit.env[capture.DIR_VARIABLE])
            out.mkdir()
            log = logs / f"{unit.name.replace('/', '.').replace(' ', '-')}.log"
            log.write_bytes(b'')
            ended = threading.Event()
            follower = None if heard is None else threading.Thread(target=_follow, args=(out, heard, ended),
                                                                   daemon=True)
            if follower is not None:
                follower.start()
            try:
                problem = processes.run(unit.command, root, unit.env, timeout, log, unit.memory)
            finally:
                ended.set()
                if follower is not None:
                    follower.join()
            output = log.read_text(errors='replace')
            # only a process that sees the GPU can break its context; elsewhere the words are a test's own text
            if not problem and gpu_run is not None and (sticky := STICKY_DEVICE_ERRORS.search(output)):
                problem = f'{sticky.group(0)}; every launch after it failed uncaptured'
            problems = [f'{unit.name}: {problem} (log: {log.relative_to(root)})'] if problem else []
            problems += [f'benchmark {line}' for line in output.splitlines() if line.startswith(capture.ROW_FAILED)]
            records, malformed = _read_launches(sorted(out.glob('launches-*.jsonl')))
            stopped = [line for file in sorted(out.glob('stopped-*.txt'))
                       for line in file.read_text(errors='replace').splitlines()]
            data = {'key': unit.key, 'launches': records, 'problems': problems, 'stopped': stopped,
                    'malformed': malformed, 'bodies': state.bodies}
            # a capture cut short, by a limit or by a device error that fails the rest, is not what a rerun sees
            if not problem:
                with contextlib.suppress(OSError):
                    write_whole(stored / unit.cache_file, json.dumps(data))
            return data, False

        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(units) or 1))) as pool:
            try:
                results = list(pool.map(run_unit, units))
            except BaseException:
                processes.stop()
                raise
    problems = [problem for data, _ in results for problem in data['problems']]
    stopped = [test for data, _ in results for test in data['stopped']]
    if stopped:
        problems.append(f"{plural(len(stopped), 'test')} stopped after {test_seconds} s each, their launches until then "
                        f"kept: {', '.join(stopped[:3])}{', ...' if len(stopped) > 3 else ''}")
    launches, malformed = _merged([record for data, _ in results for record in data['launches']])
    malformed += sum(data.get('malformed', 0) for data, _ in results)
    if malformed:
        problems.append(f"{plural(malformed, 'launch record')} in the capture's files ignored: not what the capture "
                        'writes')
    return Capture(tuple(launches), tuple(tests), tuple(row['label'] for row in rows), tuple(map(str, problems)),
                   time.monotonic() - start, cached=all(hit for _, hit in results))
