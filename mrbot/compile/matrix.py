# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The compilation matrix: every captured launch compiled for every target, on the CPU, in parallel, cached.

Each cell (a launch and a target) is compiled by a worker process (`mrbot/compile/worker.py`) with Triton's own
stages for that target. A worker that dies (a compiler assertion aborts it) costs only the cell it was compiling,
which is reported with what the compiler printed; a cell past its time limit is killed the same way. Results are
kept under `.mrbot/cache/` by the launch's identity (the kernel's source and dependencies, its specialization), the
target, the depth, Triton's version and the worker's code, so an unchanged tree compiles nothing twice. A kernel whose
module declares the targets it is written for (`TARGETS = ('sm_90',)`) is not compiled for the others: those cells
are 'unavailable', a state of their own, neither a failure nor left out.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import triton

from mrbot.compile import BLOCK_SIZE_NAME
from mrbot.compile import worker as worker_module
from mrbot.compile.launches import Capture, GpuRun, Launch, capture_launches, compile_environment
from mrbot.compile.plan import CompilePlan
from mrbot.compile.processes import SERVER_IDLE_S, SERVER_SWITCH, Worker, server_address, start_server
from mrbot.config import state_dir, write_whole
from mrbot.records import MrbotError
from mrbot.records.compiles import CompileEvidence, Kernel, KernelCompiles, KernelTarget
from mrbot.targets import Target
from mrbot.words import plural

SCHEMA = 1
CACHE_FILE = 'compile-cells.json'
# `ttgir`: every pass up to the layouts and the shared-memory allocation; `llir`: the whole lowering to LLVM; `sass`:
# on through PTX to ptxas, for registers and spills; `binary`: Triton's whole compile into its own cache, where a launch
# on a GPU of that target finds it (see mrbot/compile/worker.py).
DEPTHS = ('ttgir', 'llir', 'sass', 'binary')
# What a binary cell makes is the entry in Triton's cache, which may be another folder next time: never kept here.
_UNKEPT = 'binary'
# The plan of `mrbot check`: cached cells, and each uncached code path at its extremes (quick_cells).
QUICK = 'quick'
STATUSES = ('ok', 'error', 'crashed', 'timeout', 'unavailable')


@dataclass(frozen=True)
class CellResult:
    """What compiling one launch for one target gave.

    `status` is 'ok', 'error' (the compiler refused, `error` says why at `error_path:error_line`), 'crashed' (the
    compiler aborted its process), 'timeout', or 'unavailable' (the kernel's module declares targets without this
    one, so it was not compiled; `error` says which). `shared` is the shared memory the kernel asks per block;
    `registers` and `spills` (bytes stored and loaded) come from ptxas, so they are None unless the cell went to depth
    'sass'.
    """

    status: str
    depth: str
    shared: int | None = None
    registers: int | None = None
    spills: int | None = None
    error: str = ''
    error_path: str = ''
    error_line: int = 0
    seconds: float = 0.0
    cached: bool = False

    def to_json(self) -> dict:
        return {'status': self.status, 'depth': self.depth, 'shared': self.shared, 'registers': self.registers,
                'spills': self.spills, 'error': self.error, 'error_path': self.error_path, 'error_line': self.error_line,
                'seconds': round(self.seconds, 3)}

    @classmethod
    def from_json(cls, data: Any, where: str, cached: bool = False) -> CellResult:
        if not isinstance(data, dict) or data.get('status') not in STATUSES or data.get('depth') not in DEPTHS:
            raise MrbotError(f'{where}: expected a compile result with a status of {", ".join(STATUSES)}')
        numbers = {key: data.get(key) for key in ('shared', 'registers', 'spills')}
        if any(value is not None and (not isinstance(value, int) or isinstance(value, bool)) for value in numbers.values()):
            raise MrbotError(f'{where}: shared, registers and spills must be integers or null, got {numbers}')
        text = {key: data.get(key, '') for key in ('error', 'error_path')}
        line, seconds = data.get('error_line', 0), data.get('seconds', 0.0)
        if not (all(isinstance(value, str) for value in text.values()) and isinstance(line, int)
                and isinstance(seconds, (int, float)) and not isinstance(seconds, bool)):
            raise MrbotError(f'{where}: error and error_path must be strings, error_line an integer, seconds a number')
        return cls(data['status'], data['depth'], **numbers, **text, error_line=line, seconds=float(seconds), cached=cached)


@dataclass(frozen=True)
class Cell:
    launch: Launch
    target: Target
    result: CellResult

    @property
    def over_shared_limit(self) -> bool:
        return self.result.status == 'ok' and (self.result.shared or 0) > self.target.shared_limit


@dataclass(frozen=True)
class CompileMatrix:
    """Every compiled cell of one run, the capture it came from, and how long the compiles took."""

    targets: tuple[Target, ...]
    cells: tuple[Cell, ...]
    capture: Capture
    triton: str
    jobs: int
    seconds: float
    # the kernel files the change reaches (every kernel file for a whole-repository run), and the kernels of those
    # files that no test or benchmark row launched, which are therefore not compiled
    reached: tuple[str, ...] = ()
    unlaunched: tuple[Kernel, ...] = ()
    # the files among `reached` that declare the targets their kernels are written for
    declared: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the cells a quick run left to a full one (`mrbot compile`)
    deferred: int = 0

    @property
    def compiles(self) -> tuple[Cell, ...]:
        """The cells that were compiled or taken from the cache: all but those of targets a kernel is not written for."""
        return tuple(cell for cell in self.cells if cell.result.status != 'unavailable')

    @property
    def compiled(self) -> int:
        return sum(not cell.result.cached for cell in self.compiles)

    def to_json(self) -> dict:
        return {'schema': SCHEMA, 'triton': self.triton, 'jobs': self.jobs, 'seconds': round(self.seconds, 3),
                'targets': [t.name for t in self.targets], 'reached': list(self.reached),
                'unlaunched': [{'path': k.path, 'kernel': k.name, 'line': k.line} for k in self.unlaunched],
                'declared': {path: list(names) for path, names in self.declared},
                'capture': {key: value for key, value in self.capture.to_json().items() if key != 'launches'},
                'cells': [{'kernel': c.launch.kernel, 'specialization': c.launch.describe(), 'target': c.target.name,
                           'shared_limit': c.target.shared_limit, **c.result.to_json(), 'cached': c.result.cached,
                           'launch': c.launch.to_json()} for c in self.cells]}


@functools.cache
def _worker_digest() -> str:
    return hashlib.sha256(Path(worker_module.__file__).read_bytes()).hexdigest()


def _cell_key(launch: Launch, target: Target, depth: str) -> str:
    return hashlib.sha256('\0'.join([launch.identity, target.name, depth, triton.__version__,
                                     _worker_digest()]).encode()).hexdigest()


# Statuses a rerun would give again: a crash or a timeout may have been the machine's (an interrupt, a load spike).
_LASTING = ('ok', 'error')
# Cached results kept at most, the least recently used going first: a whole run of upstream flash-linear-attention
# (62,483 cells, about 14 MB) fits twice.
_CACHE_CELLS = 150_000


def load_cache(root: Path) -> dict[str, dict]:
    """The cached cell results of the repository at `root`, read before anything of the repository runs."""
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((state_dir(root, 'cache') / CACHE_FILE).read_text(encoding='utf-8'))
        if isinstance(data, dict) and data.get('schema') == SCHEMA and isinstance(data.get('cells'), dict):
            return data['cells']
    return {}


def _save_cache(root: Path, cache: dict[str, dict]) -> None:
    """Write the cache whole or not at all (a second file renamed over the first)."""
    kept = dict(list(cache.items())[-_CACHE_CELLS:])
    with contextlib.suppress(OSError):
        write_whole(state_dir(root, 'cache') / CACHE_FILE, json.dumps({'schema': SCHEMA, 'cells': kept}))


class CellCompiler:
    """Compiles cells `jobs` processes at a time as they are handed in, so that a capture can hand in each launch as it
    hears of it while the rest still run; used as a context manager, whose end stops the workers. `progress` hears of
    each cell done: how many are, of how many handed in, and whether `finish` has handed in the last. Results in `cache`
    are reused, and the new ones that a rerun would give again are added to it and saved (in `home`'s state, `root`'s
    by default). Where compile servers may run (server_address), the processes come from one, and one is started for
    the next run if none answered; `started` hears of it."""

    def __init__(self, root: Path, jobs: int, timeout: float, cache: dict[str, dict],
                 progress: Callable[[int, int, bool], None] | None = None,
                 started: Callable[[str], None] | None = None, home: Path | None = None, reserved: int = 0) -> None:
        self.root, self.jobs, self.timeout, self.cache = root, max(1, jobs), timeout, cache
        self.progress, self.started, self.home = progress, started, home or root
        self.env = compile_environment()
        self.results: dict[str, CellResult] = {}
        self.handed: set[str] = set()
        # the cells handed in and not yet taken, the slow ones (ptxas, then large blocks) first, so that the last to
        # finish are short
        self.pending: list[tuple[str, Launch, Target, str]] = []
        # compiles at once: until `finish`, the cores `reserved` for other processes (the capture's) are left to them
        self.limit = max(1, self.jobs - reserved)
        self.active = 0
        self.compiling = False
        self.closed = False
        self.ready = threading.Condition()

    def __enter__(self) -> CellCompiler:
        self.server = server_address(self.env)
        self.served = self.server is not None and self.server.exists()
        self.scratch = tempfile.TemporaryDirectory(prefix='mrbot-compile-')
        # each worker's process starts at its first cell
        self.workers = [Worker(self.root, self.env, Path(self.scratch.name), n, self.server) for n in range(self.jobs)]
        self.threads = [threading.Thread(target=self._serve, args=(w,), daemon=True) for w in self.workers]
        for thread in self.threads:
            thread.start()
        return self

    def hand_in(self, cells: list[tuple[Launch, Target, str]]) -> None:
        """Compile these cells, those not handed in already."""
        with self.ready:
            for launch, target, depth in cells:
                key = _cell_key(launch, target, depth)
                if key in self.handed:
                    continue
                self.handed.add(key)
                if key in self.cache and depth != _UNKEPT:
                    with contextlib.suppress(MrbotError):
                        self.results[key] = CellResult.from_json(self.cache[key], f'cached result {key[:12]}',
                                                                 cached=True)
                        # most recently used last, so that trimming the cache drops the oldest
                        self.cache[key] = self.cache.pop(key)
                        continue
                self.pending.append((key, launch, target, depth))
            self.pending.sort(key=lambda item: (item[3] not in ('sass', 'binary'), -_blocks(item[1])))
            self.ready.notify_all()

    def _serve(self, worker: Worker) -> None:
        while True:
            with self.ready:
                while not self.closed and (not self.pending or self.active >= self.limit):
                    self.ready.wait()
                if not self.pending:
                    return
                key, launch, target, depth = self.pending.pop(0)
                self.active += 1
                self.compiling = True
            try:
                answer = worker.compile({'launch': launch.to_json(), 'arch': target.arch, 'depth': depth},
                                        self.timeout)
                result = CellResult.from_json({**answer, 'depth': depth}, f'the answer for {launch.kernel}')
            except Exception as error:  # noqa: BLE001 - one cell's failure, whatever failed: the thread goes on
                result = CellResult('crashed', depth, error=str(error), error_path=launch.path, error_line=launch.line)
                worker.kill()
            with self.ready:
                self.active -= 1
                self.results[key] = result
                if result.status in _LASTING and depth != _UNKEPT:
                    self.cache[key] = result.to_json()
                if self.progress is not None:
                    self.progress(len(self.results), len(self.handed), self.closed)
                self.ready.notify_all()

    def finish(self, work: list[tuple[Launch, Target, str]]) -> list[CellResult]:
        """Hand in `work` and wait for every cell handed in; the results of `work`, in its order."""
        self.hand_in(work)
        with self.ready:
            self.limit, self.closed = self.jobs, True
            self.ready.notify_all()
        for thread in self.threads:
            thread.join()
        keys = [_cell_key(launch, target, depth) for launch, target, depth in work]
        missing = sum(key not in self.results for key in keys)
        if missing:
            raise MrbotError(f'{missing} cells got no result: a compile thread ended early (a bug of mrbot)')
        return [self.results[key] for key in keys]

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        with self.ready:
            self.closed = True
            if kind is not None:
                # an interrupt, or a failure of the capture, reaches this thread only: hand out nothing more
                self.pending.clear()
            self.ready.notify_all()
        if kind is not None:
            # end every worker now, and again after their threads end: a thread that took its cell before the stop
            # starts a process for it
            for worker in self.workers:
                worker.kill()
            deadline = time.monotonic() + 5
            for thread in self.threads:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
            for worker in self.workers:
                worker.kill()
        for worker in self.workers:
            worker.close()
        self.scratch.cleanup()
        with self.ready:
            _save_cache(self.home, dict(self.cache))
        if kind is None and self.compiling and self.server is not None and not self.server.exists():
            start_server(self.server, self.env)
            if not self.served and self.started is not None:
                self.started(f'a compile server stays {SERVER_IDLE_S // 60} minutes after its last use, so that the '
                             f'next run need not import torch and Triton again ({SERVER_SWITCH}=0 turns it off)')


def plan_cells(launches: list[Launch], targets: tuple[Target, ...], depth: str,
               declared: dict[str, tuple[str, ...]] | None = None) -> list[tuple[Launch, Target, str]]:
    """The cells of the matrix, each with its depth; those of a target the launch's module does not declare in
    `declared` (path -> target names) are the matrix's unavailable cells, which nothing compiles.

    An explicit depth compiles every launch for every target that far. 'auto' keeps a cold run of a whole repository
    within minutes on two cores: on the first target the kernel is written for, every autotune config through TTGIR
    and the shared-memory allocation, and the benchmarked launches on through ptxas (spills cost the speed that is
    measured there); on every other target, the first config of each specialization through TTGIR.
    """
    declared = declared or {}
    cells = []
    for launch in launches:
        first = next((t for t in targets if _written_for(launch, t, declared)), None)
        for target in targets:
            if depth != 'auto':
                cells.append((launch, target, depth))
            elif target == first:
                cells.append((launch, target, 'sass' if launch.benchmarked else 'ttgir'))
            elif launch.config_index == 0:
                cells.append((launch, target, 'ttgir'))
    return cells


def quick_cells(planned: list[tuple[Launch, Target, str]], cached: set[str]) -> list[tuple[Launch, Target, str]]:
    """The cells of a quick run: every cell of `planned` whose result is `cached` (at its depth, or through TTGIR by an
    earlier quick run), and for each kernel, target and code path (the compile-time values that are not integers:
    flags, precisions, dtypes), the specializations with the smallest and the largest blocks (the most stages among
    the largest) through TTGIR; one where every block is one size, and on a launch's later targets the largest alone,
    since what a target changes is the shared memory a block may have.
    A kernel's branches and its shared memory are what an edit breaks; the sizes between two extremes rarely are.
    `planned` holds a launch's cells in target order, the first target it is written for first."""
    kept, paths, first = {}, defaultdict(list), {}
    for launch, target, depth in planned:
        first.setdefault(id(launch), target.name)
        for held in (depth, 'ttgir'):
            if _cell_key(launch, target, held) in cached:
                kept[id(launch), target.name] = (launch, target, held)
                break
        path = sorted((name, repr(value)) for name, value in launch.constants().items()
                      if not isinstance(value, int) or isinstance(value, bool))
        paths[launch.path, launch.kernel, target.name, repr(path)].append((launch, target))
    for group in paths.values():
        group.sort(key=lambda cell: (_blocks(cell[0]), cell[0].specialization['options'].get('num_stages') or 1))
        smallest, largest = group[0], group[-1]
        # blocks of one size in both: the largest holds the most stages, and so the most shared memory
        both = first[id(smallest[0])] == smallest[1].name and _blocks(smallest[0]) < _blocks(largest[0])
        for launch, target in (smallest, largest) if both else (largest,):
            kept.setdefault((id(launch), target.name), (launch, target, 'ttgir'))
    return list(kept.values())


def _blocks(launch: Launch) -> int:
    """The product of a launch's block sizes (`BT`, `BK`, ...): with its pipelining stages, what its shared memory
    grows with."""
    size = 1
    for name, value in launch.constants().items():
        if BLOCK_SIZE_NAME.match(name) and isinstance(value, int) and not isinstance(value, bool):
            size *= max(value, 1)
    return size


def _written_for(launch: Launch, target: Target, declared: dict[str, tuple[str, ...]]) -> bool:
    return launch.path not in declared or target.name in declared[launch.path]


def _unavailable(launch: Launch, depth: str, declared: dict[str, tuple[str, ...]]) -> CellResult:
    names = declared[launch.path]
    return CellResult('unavailable', depth, error=f"{launch.path} declares TARGETS = {names!r}: its kernels are written "
                                                  f"for {', '.join(names)} only", error_path=launch.path,
                      error_line=launch.line)


def build_matrix(root: Path, plan: CompilePlan, targets: tuple[Target, ...], depth: str, jobs: int, timeout: float,
                 test_seconds: int, progress: Callable[[str], None] | None = None,
                 use_cache: bool = True, home: Path | None = None, gpu_run: GpuRun | None = None) -> CompileMatrix:
    """Capture the launches of the plan's tests and benchmark rows, keep those of its kernels, and compile each for
    every target. `home` is the repository whose caches are used where `root` is a worktree of it: the caches are keyed
    by what was compiled, so the worktrees of a loop's tries share them. `gpu_run`: the test run on this machine's GPU
    that the capture prepares, where there is one (`capture_launches`)."""
    start = time.monotonic()
    say = progress or (lambda _: None)
    # read before the repository's tests run, so that they cannot write what this run believes
    cache = load_cache(home or root) if use_cache else {}
    say(f'capturing launches: {len(plan.tests)} test files, {len(plan.rows)} benchmark rows')
    wanted = {(kernel.path, kernel.name) for kernel in plan.kernels}
    declared = dict(plan.declared)
    last = [time.monotonic()]

    def tick(done: int, total: int, all_handed_in: bool) -> None:
        if time.monotonic() - last[0] > 10 or (done == total and all_handed_in):
            last[0] = time.monotonic()
            say(f'compiled {done}/{total} cells in {time.monotonic() - start:.0f} s')

    def planned_cells(launches: list[Launch]) -> list[tuple[Launch, Target, str]]:
        ours = [launch for launch in launches if (launch.path, launch.kernel) in wanted]
        return plan_cells(ours, targets, 'auto' if depth == QUICK else depth, declared)

    def compilable(cells: list[tuple[Launch, Target, str]]) -> list[tuple[Launch, Target, str]]:
        return [cell for cell in cells if _written_for(cell[0], cell[1], declared)]

    # each launch is compiled as the capture hears of it, on the cores its processes leave; not where they take every
    # core (compiles beside the tests would slow them towards their time limits), nor in a quick run, which plans from
    # every launch at once (quick_cells)
    capturing = len(plan.tests) + bool(plan.rows)
    streamed = depth != QUICK and capturing < jobs
    with CellCompiler(root, jobs, timeout, cache, tick, say, home, capturing if streamed else 0) as compiler:
        def heard(found: list[Launch]) -> None:
            compiler.hand_in(compilable(planned_cells(found)))

        capture = capture_launches(root, list(plan.tests), list(plan.rows), timeout, jobs, test_seconds, use_cache,
                                   dict(plan.imports), home, gpu_run, heard if streamed else None)
        launches = [launch for launch in capture.launches if (launch.path, launch.kernel) in wanted]
        planned = planned_cells(launches)
        deferred = 0
        if depth == QUICK:
            available = compilable(planned)
            quick = quick_cells(available, set(cache))
            deferred = len(available) - len(quick)
            planned = quick + [cell for cell in planned if not _written_for(cell[0], cell[1], declared)]
        work = compilable(planned)
        say(f"{plural(len(capture.launches), 'launch', 'launches')} captured in {capture.seconds:.1f} s"
            f"{' (cached)' if capture.cached else ''}; {plural(len(work), 'cell')} of "
            f"{plural(len(launches), 'launch', 'launches')} for {', '.join(t.name for t in targets)}, {jobs} at a time"
            + (f' ({len(planned) - len(work)} on targets their kernels are not written for: not available)'
               if len(planned) > len(work) else ''))
        compiled = iter(compiler.finish(work))
    cells = tuple(Cell(launch, target, next(compiled) if _written_for(launch, target, declared)
                       else _unavailable(launch, cell_depth, declared)) for launch, target, cell_depth in planned)
    launched = {(launch.path, launch.kernel) for launch in launches}
    return CompileMatrix(targets, cells, capture, triton.__version__, jobs, time.monotonic() - start,
                         tuple(sorted(plan.files)), tuple(k for k in plan.kernels if (k.path, k.name) not in launched),
                         plan.declared, deferred)


def summarize(matrix: CompileMatrix) -> list[tuple[Launch, dict[str, KernelTarget]]]:
    """Per kernel (its first launch stands for it), per target name: how its specializations fared."""
    by_kernel: dict[tuple[str, str], list[Cell]] = {}
    for cell in matrix.cells:
        by_kernel.setdefault((cell.launch.path, cell.launch.kernel), []).append(cell)
    rows = []
    for cells in by_kernel.values():
        per_target = {}
        for target in matrix.targets:
            mine = [c for c in cells if c.target == target]
            shared = [c.result.shared for c in mine if c.result.shared is not None]
            spills = [c.result.spills for c in mine if c.result.spills is not None]
            unavailable = sum(c.result.status == 'unavailable' for c in mine)
            per_target[target.name] = KernelTarget(len(mine), sum(c.result.status not in ('ok', 'unavailable')
                                                                  for c in mine),
                                                   sum(c.over_shared_limit for c in mine), max(shared, default=None),
                                                   target.shared_limit, max(spills, default=None), unavailable)
        rows.append((cells[0].launch, per_target))
    return rows


def evidence_of(matrix: CompileMatrix) -> CompileEvidence:
    """The part of `mrbot prepare`'s Evidence record that the PR body's "Compiles for" table and checklist read."""
    declared = dict(matrix.declared)
    return CompileEvidence(
        tuple(t.name for t in matrix.targets), matrix.reached, matrix.triton, len(matrix.compiles), matrix.compiled,
        matrix.seconds, matrix.capture.problems,
        tuple(KernelCompiles(Kernel(launch.path, launch.kernel, launch.line), declared.get(launch.path, ()),
                             tuple(per_target.items())) for launch, per_target in summarize(matrix)),
        matrix.unlaunched)
