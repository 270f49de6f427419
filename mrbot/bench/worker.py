# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The timing process of one side of a benchmark: `python worker.py TREE` imports the ops from TREE and times them.

It imports nothing of mrbot, so that the base side runs the base tree's code even when that tree holds an older
mrbot. It reads one JSON command per line on stdin and answers one JSON line on stdout; everything else the ops
print goes to stderr. Commands: `setup` (build every row's inputs from a fixed seed, warm up, autotune, capture a
CUDA graph per row), `round` (time every row once: a median over repetitions), `ceilings` (copy bandwidth and bf16
matmul rate of the device) and `exit`. With `--once SPEC ROW` it runs one row and exits, for a profiler.
"""

import importlib
import json
import os
import platform
import statistics
import sys
import time
import traceback

# the NVTX range around the profiled call; mrbot/bench/ncu.py names it to Nsight Compute
PROFILED_RANGE = 'mrbot-profiled'


def _torch():
    import torch

    return torch


def _device() -> str:
    return 'cuda' if _torch().cuda.is_available() else 'cpu'


def _callable(path: str):
    module, _, attribute = path.partition(':')
    return getattr(importlib.import_module(module), attribute)


def _ragged_offsets(T: int, N: int, seed: int) -> list[int]:
    """N sequences of uneven lengths that sum to T, from a seeded split."""
    import random

    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, T), N - 1)) if N > 1 else []
    return [0, *cuts, T]


def _tensor(spec: dict, dims: dict, generator):
    torch = _torch()
    shape = [dims[d] if isinstance(d, str) else d for d in spec['shape']]
    if 'N' in dims and shape and spec['shape'][0] == 'B':
        shape[0] = 1
    x = torch.randn(shape, generator=generator, device=_device(), dtype=torch.float32)
    transform = spec.get('transform', '')
    if transform == 'logsigmoid':
        x = torch.nn.functional.logsigmoid(x)
    elif transform == 'sigmoid':
        x = x.sigmoid()
    elif transform == 'l2norm':
        x = torch.nn.functional.normalize(x, dim=-1)
    elif transform == 'abs_neg':
        x = -x.abs()
    x = x.to(getattr(torch, spec.get('dtype', 'bfloat16')))
    return x.requires_grad_(spec.get('requires_grad', True))


def _config_inputs(spec: dict, dims: dict, seed: int) -> dict:
    torch = _torch()
    generator = torch.Generator(device=_device()).manual_seed(seed)
    inputs = {s['name']: _tensor(s, dims, generator) for s in spec['inputs']}
    if 'N' in dims:
        offsets = _ragged_offsets(dims['T'], dims['N'], seed)
        inputs['cu_seqlens'] = torch.tensor(offsets, dtype=torch.int32, device=_device())
    return {**inputs, **spec.get('kwargs', {})}


def _registry_inputs(spec: dict, dims: dict, seed: int) -> dict:
    """Inputs from upstream flash-linear-attention's own registry, which knows how to build each of its ops'."""
    torch = _torch()
    registry = importlib.import_module('benchmarks.ops.registry')
    config = registry.get_op(spec['name'])
    torch.manual_seed(seed)
    extra = {k: v for k, v in dims.items() if k not in ('B', 'T', 'H', 'D')}
    inputs = registry.generate_inputs(config, dims['B'], dims['T'], dims['H'], dims['D'], dtype=torch.bfloat16,
                                      device=_device(), **extra)
    return {**inputs, **config.extra_kwargs}


class Row:
    """One op x mode x shape: its inputs, its call, and the graph that replays the call."""

    def __init__(self, spec: dict, mode: str, dims: dict, seed: int) -> None:
        torch = _torch()
        self.op = _callable(spec['callable'])
        build = _registry_inputs if spec['source'] == 'fla-registry' else _config_inputs
        self.inputs = build(spec, dims, seed)
        self.mode = mode
        self.leaves = [v for v in self.inputs.values() if isinstance(v, torch.Tensor) and v.requires_grad]
        self.graph = None
        self.grad_output = None

    def __call__(self):
        torch = _torch()
        if self.mode == 'fwd':
            with torch.no_grad():
                return self.op(**self.inputs)
        out = self.op(**self.inputs)
        out = out[0] if isinstance(out, (tuple, list)) else out
        if self.grad_output is None:
            self.grad_output = torch.randn_like(out)
        return torch.autograd.grad(out, self.leaves, self.grad_output, allow_unused=True)

    def capture(self) -> str:
        """Capture one call in a CUDA graph; return '' or why it could not be captured."""
        torch = _torch()
        if _device() != 'cuda':
            return 'no CUDA device'
        try:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(2):
                    self()
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self()
            torch.cuda.synchronize()
            self.graph = graph
            return ''
        except Exception as exc:
            torch.cuda.synchronize()
            return f'{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ""}'.strip()


def _median_ms(fn, warmup_ms: float, rep_ms: float) -> float:
    if _device() == 'cuda':
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode='median'))
    samples = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def _machine() -> dict:
    torch = _torch()
    import triton

    info = {'torch': torch.__version__, 'triton': triton.__version__, 'cuda': torch.version.cuda,
            'python': platform.python_version(), 'dispatch': os.environ.get('FLA_DISABLE_BACKEND_DISPATCH') != '1',
            'interpreter': os.environ.get('TRITON_INTERPRET') == '1'}
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        info.update(gpu=torch.cuda.get_device_name(), capability=f'sm_{major}{minor}',
                    multiprocessors=torch.cuda.get_device_properties(0).multi_processor_count)
    else:
        info.update(gpu='cpu', capability='')
    return info


def _ceilings() -> dict:
    """The two numbers a kernel is measured against: device-to-device copy rate and dense bf16 matmul rate."""
    torch = _torch()
    from triton.testing import do_bench

    src = torch.empty(1 << 30, dtype=torch.uint8, device='cuda')
    dst = torch.empty_like(src)
    copy_ms = do_bench(lambda: dst.copy_(src), warmup=50, rep=300, return_mode='median')
    a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)
    matmul_ms = do_bench(lambda: a @ b, warmup=50, rep=300, return_mode='median')
    return {'copy_tbs': 2 * src.numel() / copy_ms / 1e9, 'bf16_tflops': 2 * 8192 ** 3 / matmul_ms / 1e9}


class Worker:
    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}
        self.warmup_ms, self.rep_ms, self.timing = 25.0, 100.0, 'graph'

    def setup(self, command: dict) -> dict:
        specs = {s['name']: s for s in command['specs']}
        self.warmup_ms, self.rep_ms, self.timing = command['warmup_ms'], command['rep_ms'], command['timing']
        notes = {}
        for i, row in enumerate(command['rows']):
            built = Row(specs[row['op']], row['mode'], row['dims'], command['seed'] + i)
            # the first calls compile and autotune, outside any timing
            for _ in range(3):
                built()
            notes[row['id']] = built.capture() if self.timing == 'graph' else 'eager timing requested'
            self.rows[row['id']] = built
        return {'machine': _machine(), 'notes': notes}

    def round(self, command: dict) -> dict:
        times = {}
        for row_id, row in self.rows.items():
            eager = _median_ms(row, self.warmup_ms, self.rep_ms)
            graph = _median_ms(row.graph.replay, self.warmup_ms, self.rep_ms) if row.graph is not None else None
            times[row_id] = {'ms': graph if graph is not None else eager, 'eager_ms': eager,
                             'timing': 'graph' if graph is not None else 'eager'}
        return {'times': times}


def profile_once(spec: dict, row: dict) -> None:
    """Run one row and stop: the program Nsight Compute profiles (`worker.py TREE --once SPEC ROW`).

    Warm-up calls autotune first; only the last call runs inside the NVTX range the profiler is told to watch, so the
    profiled launches are the tuned kernels, not the autotuner's trials.
    """
    torch = _torch()
    built = Row(spec, row['mode'], row['dims'], 0)
    for _ in range(3):
        built()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(PROFILED_RANGE)
    built()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def main() -> int:
    # the tree takes the place of this script's folder, whose modules must not shadow the standard library's
    sys.path[0] = os.path.abspath(sys.argv[1])
    if len(sys.argv) == 5 and sys.argv[2] == '--once':
        profile_once(json.loads(sys.argv[3]), json.loads(sys.argv[4]))
        return 0
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), 'w', buffering=1)
    # whatever the ops print must not mix with the answers
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    worker = Worker()
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if command['cmd'] == 'exit':
                return 0
            answer = _ceilings() if command['cmd'] == 'ceilings' else getattr(worker, command['cmd'])(command)
        except Exception as exc:
            answer = {'error': f'{type(exc).__name__}: {exc}', 'traceback': traceback.format_exc(limit=8)}
        protocol.write(json.dumps(answer) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
