# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Where the time of chunk_kda or chunk_simple_gla goes: CUDA time per kernel, from torch's profiler.

Usage: python benchmarks/kernel_times.py [--op kda|simple_gla] [--modes fwd fwdbwd] [--shapes 8x2048x16x128x128 ...]

Like `chunk_ops.py`, it measures whichever `fla` is importable, on the same inputs, so upstream's wheel and this
repository can be read kernel by kernel. The first call autotunes; after three more, five calls are profiled.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from chunk_ops import DEFAULT_SHAPES, make_call, parse_shape
from torch.profiler import ProfilerActivity, profile

WARMUP = 3
CALLS = 5
ROWS = 14


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--op', choices=['simple_gla', 'kda'], default='kda')
    parser.add_argument('--shapes', nargs='+', type=parse_shape, default=[parse_shape(s) for s in DEFAULT_SHAPES])
    parser.add_argument('--modes', nargs='+', choices=['fwd', 'fwdbwd'], default=['fwd', 'fwdbwd'])
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print('benchmarks/kernel_times.py: no CUDA GPU here; kernel times need one', file=sys.stderr)
        return 2

    import fla

    print(f'fla: {fla.__file__}; op: chunk_{args.op}')
    for shape in args.shapes:
        for mode in args.modes:
            fn = make_call(args.op, shape, mode)
            start = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            print(f'{shape} {mode}: first call (autotuning) {time.perf_counter() - start:.1f} s')
            for _ in range(WARMUP):
                fn()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as profiler:
                for _ in range(CALLS):
                    fn()
                torch.cuda.synchronize()
            rows = sorted(((e.key, e.device_time_total / CALLS / 1000, e.count // CALLS)
                           for e in profiler.key_averages() if e.device_time_total > 0), key=lambda row: -row[1])
            print(f'{shape} {mode}: {sum(ms for _, ms, _ in rows):.3f} ms of kernels per call')
            for name, ms, count in rows[:ROWS]:
                print(f'{ms:8.3f} ms x{count:<3} {name[:100]}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
