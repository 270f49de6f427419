# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The launches a repository's tests and benchmarks make: captured without a GPU, deduplicated, cached by content.

The capture itself happens in child processes (`mrbot/compile/capture.py`): one pytest run per test file, with the
capture loaded as a plugin, and one process calling the benchmark rows forward and backward; a test file that hangs,
crashes or runs out of its memory share loses only its own remaining launches. This module starts
them, reads what they wrote back into `Launch` records, and keeps the result under `.mrbot/cache/` keyed by the
content of every Python file of the repository, so that an unchanged tree is not captured twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import triton

from mrbot.bench.harness import WORKER as BENCH_WORKER
from mrbot.bench.specs import OpSpec
from mrbot.compile import capture
from mrbot.config import state_dir
from mrbot.records import MrbotError
from mrbot.selection import load_index

SCHEMA = 1
CACHE_FILE = 'compile-capture.json'
# The module name the capture plugin is loaded under in test processes (see mrbot/prepare.py for why by copy).
PLUGIN = 'mrbot_capture_plugin'
_CREDENTIAL = re.compile(r'TOKEN|SECRET|PASSWORD|CREDENTIAL|_KEY$|JWT', re.IGNORECASE)
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

    @classmethod
    def from_json(cls, data: Any, where: str) -> Capture:
        if not isinstance(data, dict) or data.get('schema') != SCHEMA:
            raise MrbotError(f'{where}: expected a capture record with "schema": {SCHEMA}')
        for key in ('tests', 'bench_rows', 'problems', 'launches'):
            if not isinstance(data.get(key), list):
                raise MrbotError(f'{where}: field {key!r}: expected a list')
        launches = tuple(Launch.from_json(item, f'{where} launch {i}') for i, item in enumerate(data['launches']))
        return cls(launches, tuple(map(str, data['tests'])), tuple(map(str, data['bench_rows'])),
                   tuple(map(str, data['problems'])), float(data.get('seconds', 0)), cached=True)


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
    env = {name: value for name, value in os.environ.items() if not _CREDENTIAL.search(name)}
    env.update({'TRITON_INTERPRET': '0', 'CUDA_VISIBLE_DEVICES': '', 'PYTHONUNBUFFERED': '1'})
    return env


def _environment(folder: Path, plugin_dir: Path | None) -> dict[str, str]:
    env = {**compile_environment(), capture.DIR_VARIABLE: str(folder)}
    if plugin_dir is not None:
        env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(plugin_dir), os.environ.get('PYTHONPATH')]))
        env['PYTEST_PLUGINS'] = PLUGIN
    return env


def _memory_share(jobs: int) -> int:
    """Bytes of memory each of `jobs` capture processes may take: an equal share of what is available now."""
    try:
        with open('/proc/meminfo') as info:
            available = next(int(line.split()[1]) * 1024 for line in info if line.startswith('MemAvailable:'))
    except (OSError, StopIteration, ValueError):
        return 0
    return int(available * 0.9) // max(1, jobs)


def _run(command: list[str], root: Path, env: dict[str, str], timeout: float, log: Path, memory: int) -> str:
    """Run a capture process in a session of its own, its memory capped at `memory` bytes (0: uncapped), so that a
    test that allocates beyond it fails there instead of drawing the out-of-memory killer; returns '' or why its
    capture may be incomplete."""

    def cap_memory() -> None:
        if memory:
            resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))

    with log.open('ab') as output:
        process = subprocess.Popen(command, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=cap_memory)
        try:
            returncode = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return f'stopped after {timeout:g} s; the launches seen until then were kept'
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            raise
    if returncode < 0:
        return f'killed by {signal.Signals(-returncode).name}; the launches seen until then were kept'
    return ''


def _read_launches(folder: Path) -> list[Launch]:
    merged: dict[str, Launch] = {}
    for file in sorted(folder.glob('launches-*.jsonl')):
        for number, line in enumerate(file.read_text(encoding='utf-8').splitlines(), 1):
            launch = Launch.from_json(json.loads(line), f'{file.name}:{number}')
            known = merged.get(launch.identity)
            if known is None:
                merged[launch.identity] = launch
            elif len(known.origins) < 3 and not set(launch.origins) <= set(known.origins):
                merged[launch.identity] = Launch(**{**known.__dict__, 'origins': (*known.origins, *launch.origins)[:3]})
    return sorted(merged.values(), key=lambda x: (x.path, x.line, x.identity))


def _content_key(root: Path, tests: list[str], rows: list[dict], test_seconds: int) -> str:
    """A hash of everything a capture depends on: every Python file's content, the pyproject, what runs, and Triton."""
    digest = hashlib.sha256()
    for path, entry in sorted(load_index(root).items()):
        digest.update(f'{path}\0{entry["hash"]}\n'.encode())
    pyproject = root / 'pyproject.toml'
    digest.update(pyproject.read_bytes() if pyproject.is_file() else b'')
    digest.update(json.dumps([tests, rows, test_seconds, triton.__version__, Path(capture.__file__).read_text()],
                             sort_keys=True, default=str).encode())
    return digest.hexdigest()


def capture_launches(root: Path, tests: list[str], rows: list[dict], timeout: float, jobs: int, test_seconds: int,
                     use_cache: bool = True) -> Capture:
    """The launches that the test files (one pytest process each, `jobs` at a time, `timeout` seconds per file and
    `test_seconds` per test) and the benchmark rows (one process) make, with the capture in place."""
    cache = root / '.mrbot' / 'cache' / CACHE_FILE
    key = _content_key(root, tests, rows, test_seconds)
    if use_cache:
        with contextlib.suppress(OSError, ValueError, MrbotError):
            data = json.loads(cache.read_text(encoding='utf-8'))
            if isinstance(data, dict) and data.get('key') == key:
                return Capture.from_json(data.get('capture'), str(cache))
    start = time.monotonic()
    logs = state_dir(root, 'compile', 'capture')
    for stale in logs.glob('*.log'):
        stale.unlink()
    memory = _memory_share(jobs)
    with tempfile.TemporaryDirectory(prefix='mrbot-capture-') as scratch:
        folder = Path(scratch)
        plugin_dir = folder / 'plugin'
        plugin_dir.mkdir()
        shutil.copyfile(capture.__file__, plugin_dir / f'{PLUGIN}.py')
        env = {**_environment(folder, plugin_dir), capture.SECONDS_VARIABLE: str(test_seconds)}

        def run_tests(test: str) -> str:
            log = logs / f"{test.replace('/', '.')}.log"
            problem = _run([sys.executable, '-m', 'pytest', test, '-q', '-p', 'no:cacheprovider'], root, env, timeout,
                           log, memory)
            return f'{test}: {problem} (log: {log.relative_to(root)})' if problem else ''

        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(tests) or 1))) as pool:
            problems = [problem for problem in pool.map(run_tests, tests) if problem]
        if rows:
            rows_file = folder / 'rows.json'
            rows_file.write_text(json.dumps(rows), encoding='utf-8')
            log = logs / 'benchmark-rows.log'
            problem = _run([sys.executable, str(plugin_dir / f'{PLUGIN}.py'), str(BENCH_WORKER), str(rows_file)], root,
                           _environment(folder, None), timeout, log, memory * max(1, jobs))
            if problem:
                problems.append(f'benchmark rows: {problem} (log: {log.relative_to(root)})')
            problems += [f'benchmark {line}' for line in log.read_text(errors='replace').splitlines()
                         if line.startswith(capture.ROW_FAILED)]
        stopped = [line for file in sorted(folder.glob('stopped-*.txt')) for line in file.read_text().splitlines()]
        if stopped:
            problems.append(f'{len(stopped)} tests stopped after {test_seconds} s each, their launches until '
                            f"then kept: {', '.join(stopped[:3])}{', ...' if len(stopped) > 3 else ''}")
        launches = _read_launches(folder)
    result = Capture(tuple(launches), tuple(tests), tuple(row['label'] for row in rows), tuple(problems),
                     time.monotonic() - start)
    with contextlib.suppress(OSError):
        state_dir(root, 'cache')
        cache.write_text(json.dumps({'key': key, 'capture': result.to_json()}), encoding='utf-8')
    return result
