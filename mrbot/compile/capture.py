# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Launch capture: which specializations of which Triton kernels a repository's tests and benchmarks launch.

Loaded into a pytest process as a plugin (or run as a script over benchmark rows), with `TRITON_INTERPRET=0` and no
GPU, it puts a stand-in driver in front of Triton once the test modules are imported (so that a library asking Triton
for its device at import still sees none) and sets Triton's `jit_cache_hook`. On a GPU machine that compiles ahead for
its own test run (MRBOT_CAPTURE_ON_GPU=1) the tests keep the GPU and Triton its driver, so that they take the paths
they will take when they run. Every launch then goes through Triton's own argument specialization (pointer dtypes,
integer widths, integers equal to 1, 16-byte divisibility, `do_not_specialize`, heuristics) up to the point of
compiling, where the hook records Triton's serialized specialization and tells Triton to skip the compile; nothing
runs, so outputs are garbage and test results meaningless, but every launch the code makes on the way is seen. An
autotuned kernel is launched once per config that Triton's pruning keeps (never timed; pre-hooks are noted, not run).
Each process appends what it saw to `launches-<pid>.jsonl` in MRBOT_CAPTURE_DIR.

It imports only the standard library until the first launch (`mrbot compile` loads a copy of it by file, like the
coverage plugin), so the tested repository's own `mrbot`, if any, cannot stand in for it.
"""

from __future__ import annotations

import contextvars
import importlib.util
import inspect
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

DIR_VARIABLE = 'MRBOT_CAPTURE_DIR'
# Set to 1: the process sees a GPU, and keeps it and Triton's driver.
ON_GPU_VARIABLE = 'MRBOT_CAPTURE_ON_GPU'
# Seconds each test may run under capture ([tool.mrbot] compile-test-seconds).
SECONDS_VARIABLE = 'MRBOT_CAPTURE_TEST_SECONDS'
# How the benchmark script starts the line of a row that raised.
ROW_FAILED = 'row failed:'
# The autotune config a launch is made for: its Triton description, its place in the space and the space's size,
# and whether it has a pre-hook; ('', 0, 0, False) outside an autotuner.
_CONFIG: contextvars.ContextVar[tuple[str, int, int, bool]] = contextvars.ContextVar('mrbot_capture_config',
                                                                                      default=('', 0, 0, False))
# The benchmark row being called; inside pytest, the current test names the origin instead.
_ROW: contextvars.ContextVar[str] = contextvars.ContextVar('mrbot_capture_row', default='')
_SEEN: set[str] = set()
_installed = False


class _StandInDriver:
    """What `JITFunction.run` asks of a driver before it compiles: a device, a stream and an NVIDIA target.

    It has no `utils`, so code asking for device properties gets the error it gets without a GPU.
    """

    def __init__(self) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget('cuda', 90, 32)

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        pass

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_current_target(self):
        return self.target

    def get_active_torch_device(self):
        import torch

        return torch.device('cpu')

    def get_benchmarker(self):
        raise RuntimeError('mrbot launch capture: nothing is timed')


def _relative(path: str) -> str:
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path


def _user_options(options: dict, defaults: dict) -> dict:
    """The launch options that differ from the backend's defaults: what a recompile for another target passes again."""
    return {name: value for name, value in options.items() if name != 'arch' and defaults.get(name) != value}


def _record(key: Any, repr: str, fn: Any, compile: dict, is_manual_warmup: bool, already_compiled: bool) -> bool:
    """Triton's `jit_cache_hook`: note this launch, and answer True so that Triton neither compiles nor launches."""
    jit = fn.jit_function
    data = json.loads(compile['specialization_data'])
    backend_defaults = _defaults()
    config, config_index, config_count, pre_hook = _CONFIG.get()
    source = inspect.getsourcefile(jit.fn) or ''
    lines, first = inspect.getsourcelines(jit.fn)
    def_offset = next((i for i, line in enumerate(lines) if line.lstrip().startswith('def ')), 0)
    launch = {
        'kernel': jit.fn.__name__, 'module': jit.fn.__module__, 'path': _relative(source), 'line': first + def_offset,
        'source_hash': jit.cache_key,
        'signature': data['signature'], 'constant_keys': data['constant_keys'], 'constant_vals': data['constant_vals'],
        'attrs_keys': data['attrs_keys'], 'attrs_vals': data['attrs_vals'],
        'options': _user_options(data['options'], backend_defaults),
        'config': config, 'config_index': config_index, 'configs': config_count, 'pre_hook': pre_hook,
        'origin': _ROW.get() or os.environ.get('PYTEST_CURRENT_TEST', '').split(' ')[0],
    }
    identity = json.dumps({k: v for k, v in launch.items() if k != 'origin'}, sort_keys=True, default=str)
    if identity not in _SEEN:
        _SEEN.add(identity)
        folder = os.environ.get(DIR_VARIABLE)
        if folder:
            with open(Path(folder) / f'launches-{os.getpid()}.jsonl', 'a', encoding='utf-8') as out:
                out.write(json.dumps(launch, default=str) + '\n')
    return True


_BACKEND_DEFAULTS: dict = {}


def _defaults() -> dict:
    if not _BACKEND_DEFAULTS:
        from triton.compiler import make_backend
        from triton.runtime import driver

        # through JSON, as the launch's own options come, so that tuples compare equal to lists
        options = make_backend(driver.active.get_current_target()).parse_options({}).__dict__
        _BACKEND_DEFAULTS.update(json.loads(json.dumps(options, default=str)))
    return _BACKEND_DEFAULTS


def _autotuned_run(self, *args: Any, **kwargs: Any) -> None:
    """`Autotuner.run` under capture: one launch per config that Triton's own pruning keeps (`early_config_prune`,
    then `perf_model`), none timed."""
    from triton.runtime.errors import AutotunerError

    self.nargs = dict(zip(self.arg_names, args, strict=False))
    try:
        configs = self.prune_configs(kwargs) if len(self.configs) > 1 else self.configs
    except AutotunerError:
        # nothing left after pruning: the launch fails so on a GPU too
        raise
    except Exception:
        # a pruning that asks the device, which is not there: the whole space, as the safe side
        configs = self.configs
    for index, config in enumerate(configs):
        token = _CONFIG.set((str(config), index, len(configs), config.pre_hook is not None))
        try:
            self.fn.run(*args, **kwargs, **config.all_kwargs())
        finally:
            _CONFIG.reset(token)
    self.nargs = None


def _cuda_on_cpu() -> None:
    """Where torch has no CUDA, run code that insists on the `cuda` device (upstream flash-linear-attention's tests
    and ops pick it even without a GPU) on the CPU: a torch function mode moves every `cuda` device argument to the
    CPU, and the `torch.cuda` calls that tests make around their kernels do nothing."""
    import contextlib

    import torch
    from torch.overrides import TorchFunctionMode

    if torch.cuda.is_available():
        return

    def on_cpu(value: Any) -> Any:
        if isinstance(value, str) and value.split(':')[0] == 'cuda':
            return 'cpu'
        if isinstance(value, torch.device) and value.type == 'cuda':
            return torch.device('cpu')
        return value

    class CudaOnCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is torch.Tensor.cuda:
                return args[0]
            kwargs = {name: on_cpu(value) if name == 'device' else value for name, value in (kwargs or {}).items()}
            if func is torch.Tensor.to:
                args = tuple(on_cpu(value) for value in args)
            return func(*args, **kwargs)

    for name, stand_in in (('synchronize', lambda *a, **k: None), ('empty_cache', lambda: None),
                           ('current_device', lambda: 0), ('set_device', lambda device: None),
                           ('device', lambda device: contextlib.nullcontext()),
                           ('manual_seed', lambda seed: None), ('manual_seed_all', lambda seed: None)):
        setattr(torch.cuda, name, stand_in)
    CudaOnCpu().__enter__()


def install() -> None:
    """Route every launch of this process to the recorder; safe to call more than once."""
    global _installed
    if _installed:
        return
    import torch
    import triton
    from triton.runtime import driver
    from triton.runtime.autotuner import Autotuner

    # beside a GPU only where torch sees one: elsewhere the launches are captured as without it
    if os.environ.get(ON_GPU_VARIABLE) != '1' or not torch.cuda.is_available():
        _cuda_on_cpu()
        driver.set_active(_StandInDriver())
    triton.knobs.runtime.jit_cache_hook = _record
    Autotuner.run = _autotuned_run
    _installed = True


class TestBudgetSpent(BaseException):
    """Raised into a test that has run out of its seconds; a BaseException, so the test's own `except Exception` cannot
    swallow it."""


def _stop_test(signum: int, frame: Any) -> None:
    raise TestBudgetSpent(f'mrbot compile: stopped after {_test_seconds()} s; its launches until then are kept')


def _test_seconds() -> float:
    return float(os.environ.get(SECONDS_VARIABLE, '60'))


def pytest_collection_finish(session: Any) -> None:
    install()


def pytest_runtest_setup(item: Any) -> None:
    """Give each test its seconds (`SECONDS_VARIABLE`), its fixtures included: a test that runs longer (a CPU
    reference at a GPU size, a generation loop over thousands of tokens) has by then made the launches of its kernels,
    and only repeats them."""
    signal.signal(signal.SIGALRM, _stop_test)
    signal.setitimer(signal.ITIMER_REAL, _test_seconds())


def pytest_runtest_teardown(item: Any) -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == 'call' and report.failed and 'TestBudgetSpent' in str(report.longrepr):
        folder = os.environ.get(DIR_VARIABLE)
        if folder:
            with open(Path(folder) / f'stopped-{os.getpid()}.txt', 'a', encoding='utf-8') as out:
                out.write(report.nodeid + '\n')


def _load_by_file(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    """`python capture.py WORKER_FILE ROWS_JSON`: call each benchmark row (`{"spec", "mode", "dims", "label"}`) once
    through the bench worker's input builder; a row that raises is a line on stdout and stops only itself."""
    worker_file, rows_file = argv
    worker = _load_by_file('mrbot_capture_bench_worker', worker_file)
    rows = json.loads(Path(rows_file).read_text(encoding='utf-8'))
    # the ops are imported before the stand-in driver is in place, as under pytest, so that code asking Triton for its
    # device while being imported still hears there is none
    for callable_path in dict.fromkeys(row['spec']['callable'] for row in rows):
        try:
            worker._callable(callable_path)
        except Exception as error:  # the rows of this op fail below, each with its label
            print(f'{ROW_FAILED} {callable_path}: cannot import it: {type(error).__name__}: {error}')
    install()
    for row in rows:
        token = _ROW.set(row['label'])
        try:
            worker.Row(row['spec'], row['mode'], row['dims'], 0)()
        except Exception as error:  # reported by the caller, with the row's label
            print(f"{ROW_FAILED} {row['label']}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
        finally:
            _ROW.reset(token)
    return 0


if __name__ == '__main__':
    sys.path.insert(0, os.getcwd())
    sys.exit(main(sys.argv[1:]))
