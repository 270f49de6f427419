# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""A pytest plugin that says where a kernel test file's time goes, test by test: pytest -p gate_profile (with scripts/
on PYTHONPATH; GATE_PROFILE names the folder of its JSON lines, one file per worker).

Each test's line holds its start and end on the wall clock, its worker, and the seconds it spent in the test module's
`_run` on the naive reference and on the kernels, in Triton's autotuner timing configs, and in Triton's compile step
(a load from the cache included), with how many kernels that step produced, how many of them Triton's cache held and
which kernels it did not, the config each autotuned kernel ran with, and whether the test failed. With
GATE_PROFILE_AUTOTUNE=brief the autotuner times each config in one run after Triton's five-run estimate instead of its
125 ms, to see what that timing costs and which configs it then picks.
`python3 scripts/gate_profile.py FOLDER` sums the lines up.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import torch

SPENT: dict[str, float] = defaultdict(float)
# each autotuned kernel's config in the current test, and whether the test's call failed
CONFIGS: set[str] = set()
FAILED: list[bool] = []
# the kernels of the current test that Triton compiled rather than found in its cache
MISSED: set[str] = set()


def _timed(name: str, function, sync: bool = False):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            if sync and torch.cuda.is_available():
                torch.cuda.synchronize()
            SPENT[name] += time.perf_counter() - start
            SPENT[f'{name} calls'] += 1
    return timed


def _count_cache(*, src, cache_hit: bool, **details) -> None:
    # a compile step that loads from the cache costs tens of ms, one that compiles seconds: the two must be told apart
    SPENT['cache hits' if cache_hit else 'cache misses'] += 1
    if not cache_hit:
        MISSED.add(getattr(src, 'name', str(src)))


def pytest_configure(config) -> None:
    import triton
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction
    Autotuner._bench = _timed('autotune', Autotuner._bench)
    JITFunction._do_compile = _timed('compile', JITFunction._do_compile)
    tuned = Autotuner.run

    @functools.wraps(tuned)
    def run(self, *args, **kwargs):
        result = tuned(self, *args, **kwargs)
        CONFIGS.add(f'{self.base_fn.__name__}: {self.best_config}')
        return result

    Autotuner.run = run
    triton.knobs.compilation.listener = _count_cache
    if os.environ.get('GATE_PROFILE_AUTOTUNE') == 'brief':
        from triton.backends import backends
        for backend in backends.values():
            default = getattr(backend.driver, 'get_benchmarker', None)
            if default is not None:
                backend.driver.get_benchmarker = _brief(default)


def _brief(default):
    def get_benchmarker(driver):
        timer = default(driver)
        # warm-up and repetitions of 0 ms: one run of each after the five that estimate the time
        return lambda fn, *args, quantiles=None, **kwargs: timer(fn, 0, 0, quantiles=quantiles)
    return get_benchmarker


def pytest_collection_modifyitems(items) -> None:
    for module in {item.module for item in items if getattr(item, 'module', None) is not None}:
        run = getattr(module, '_run', None)
        if run is not None and not hasattr(run, '__wrapped__'):
            def split(fn, *args, _run=run, **kwargs):
                side = 'reference' if fn.__name__.startswith('naive') else 'kernel'
                return _timed(side, _run, sync=True)(fn, *args, **kwargs)
            split.__wrapped__ = run
            module._run = split


def pytest_runtest_logreport(report) -> None:
    if report.failed:
        FAILED.append(True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item):
    SPENT.clear()
    CONFIGS.clear()
    FAILED.clear()
    MISSED.clear()
    start = time.time()
    yield
    folder = Path(os.environ.get('GATE_PROFILE', 'gate-profile'))
    folder.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get('PYTEST_XDIST_WORKER', 'main')
    line = {'test': item.nodeid, 'worker': worker, 'start': start, 'end': time.time(), 'failed': bool(FAILED),
            'configs': sorted(CONFIGS), 'missed': sorted(MISSED), **SPENT}
    with (folder / f'{worker}.jsonl').open('a') as sink:
        sink.write(json.dumps(line) + '\n')


def summary(folder: Path) -> str:
    lines = [json.loads(text) for path in sorted(folder.glob('*.jsonl')) for text in path.read_text().splitlines()]
    if not lines:
        return f'{folder}: no test lines\n'
    first, last = min(line['start'] for line in lines), max(line['end'] for line in lines)
    keys = ('reference', 'kernel', 'autotune', 'compile')
    missed = Counter(name for line in lines for name in line.get('missed', ()))
    total = {key: sum(line.get(key, 0.0) for line in lines) for key in keys}
    busy = sum(line['end'] - line['start'] for line in lines)
    workers = defaultdict(float)
    for line in lines:
        workers[line['worker']] = max(workers[line['worker']], line['end'] - first)
    out = [f'{len(lines)} tests on {len(workers)} workers, {last - first:.1f} s from the first start to the last end; '
           f'{busy:.1f} test-seconds: ' + ', '.join(f'{key} {total[key]:.1f}' for key in keys)
           + f" ({sum(line.get('compile calls', 0) for line in lines):.0f} compile steps, "
             f"{sum(line.get('autotune calls', 0) for line in lines):.0f} configs timed; Triton's cache held "
             f"{sum(line.get('cache hits', 0) for line in lines):.0f} kernels and compiled "
             f"{sum(line.get('cache misses', 0) for line in lines):.0f})",
           'compiled, by kernel and tests: ' + ', '.join(f'{name} {count}' for name, count in missed.most_common()),
           'each worker ends at: ' + ', '.join(f'{w} {s:.0f}' for w, s in sorted(workers.items())),
           '| test | worker | starts at | seconds | reference | kernel | autotune | compile |',
           '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |']
    failing = [line for line in lines if line.get('failed')]
    out.insert(1, f'{len(failing)} failed' + ''.join(f"\n  {line['test'].split('::')[-1]}: {'; '.join(line['configs'])}"
                                                      for line in failing))
    for line in sorted(lines, key=lambda x: x['start'] - x['end'])[:25]:
        out.append(f"| {line['test'].split('::')[-1]} | {line['worker']} | {line['start'] - first:.0f} | "
                   f"{line['end'] - line['start']:.1f} | " + ' | '.join(f'{line.get(key, 0.0):.1f}' for key in keys)
                   + ' |')
    return '\n'.join(out) + '\n'


if __name__ == '__main__':
    sys.stdout.write(summary(Path(sys.argv[1])))
