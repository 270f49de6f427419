# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Time chunk_simple_gla or chunk_kda forward and forward+backward on the GPU against the bytes that must move.

Usage: python benchmarks/chunk_ops.py [--op simple_gla|kda] [--shapes 8x2048x16x128x128 packed:8x2048x16x128x128 ...]
       [--modes fwd fwdbwd] [--json FILE]

Whichever `fla` is importable is measured (this repository's, or upstream's when its package is first on PYTHONPATH),
so two implementations can be timed on the same machine in two runs of this script. Both take the same inputs: bf16
q, k, v, a float32 log decay, and for KDA unit-norm q and k (no in-kernel norm) and a bf16 beta in (0, 1). A shape
written `packed:BxTxHxKxV` is the same B * T tokens as B sequences of uneven lengths packed into one row (`cu_seqlens`).
"""

from __future__ import annotations

import argparse
import inspect
import json
import platform
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
import triton
from triton.testing import do_bench, do_bench_cudagraph

DEFAULT_SHAPES = ['8x2048x16x128x128', '4x4096x32x64x64']


@dataclass(frozen=True)
class Shape:
    B: int
    T: int
    H: int
    K: int
    V: int
    packed: bool = False

    def __str__(self) -> str:
        return ('packed:' if self.packed else '') + f'{self.B}x{self.T}x{self.H}x{self.K}x{self.V}'

    def seqlens(self) -> list[int]:
        """The packed sequences' lengths: B of them, from T / 4 to about 7T / 4, summing to B * T, from a fixed seed.
        Most end inside a chunk, so the packed row has partial chunks to mask."""
        weights = torch.rand(self.B, generator=torch.Generator().manual_seed(0)) * 1.5 + 0.25
        lengths = (weights / weights.sum() * self.B * self.T).long().clamp(min=1)
        lengths[-1] += self.B * self.T - int(lengths.sum())
        return lengths.tolist()


def parse_shape(text: str) -> Shape:
    packed = text.startswith('packed:')
    try:
        B, T, H, K, V = (int(part) for part in text.removeprefix('packed:').split('x'))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'shape {text!r}: expected BxTxHxKxV or packed:BxTxHxKxV, e.g. 8x2048x16x128x128') from None
    return Shape(B, T, H, K, V, packed)


def machine_line() -> str:
    try:
        driver = subprocess.run(['nvidia-smi', '--query-gpu=driver_version,clocks.sm,clocks.mem', '--format=csv,noheader'],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        driver = 'driver unknown'
    return (f'{torch.cuda.get_device_name()} (sm_{"".join(map(str, torch.cuda.get_device_capability()))}), '
            f'driver/SM MHz/mem MHz {driver}, CUDA {torch.version.cuda}, torch {torch.__version__}, '
            f'triton {triton.__version__}, Python {platform.python_version()}')


def copy_bandwidth_gbs() -> float:
    """Device-to-device copy rate, bytes read plus written: the practical ceiling for a memory-bound kernel."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device='cuda')
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), warmup=50, rep=300, return_mode='median')
    return 2 * src.numel() / ms / 1e6


def bytes_moved(op: str, shape: Shape, mode: str, elem: int = 2) -> int:
    """Each input read once and each output written once: q, k, v, g (and beta) in, o out; the backward reads them
    again with do and writes their gradients. Simple GLA's g is one float32 per head, KDA's one per key channel."""
    B, T, H, K, V = shape.B, shape.T, shape.H, shape.K, shape.V
    gate = 4 * (K if op == 'kda' else 1) + (elem if op == 'kda' else 0)
    forward = B * T * H * ((2 * K + 2 * V) * elem + gate)
    if mode == 'fwd':
        return forward
    return 2 * forward + B * T * H * ((2 * K + V) * elem + gate)


def make_call(op: str, shape: Shape, mode: str, device: str = 'cuda') -> Callable[[], object]:
    """Inputs built once from a fixed seed, and a call that runs the forward or the forward and backward on them."""
    torch.manual_seed(0)
    B, T, H, K, V = shape.B, shape.T, shape.H, shape.K, shape.V
    packing = {}
    if shape.packed:
        B, T = 1, B * T
        packing['cu_seqlens'] = torch.tensor([0, *shape.seqlens()]).cumsum(0).to(device)

    def leaf(*shape, dtype=torch.bfloat16, transform=None):
        x = torch.randn(shape, device=device)
        return (transform(x) if transform is not None else x).to(dtype).requires_grad_()

    do = torch.randn(B, T, H, V, device=device, dtype=torch.bfloat16)
    if op == 'kda':
        from fla.ops.kda import chunk_kda

        def unit(x):
            return torch.nn.functional.normalize(x, dim=-1)

        inputs = (leaf(B, T, H, K, transform=unit), leaf(B, T, H, K, transform=unit), leaf(B, T, H, V),
                  leaf(B, T, H, K, dtype=torch.float32, transform=torch.nn.functional.logsigmoid),
                  leaf(B, T, H, transform=torch.sigmoid))

        # upstream's op also takes the lengths on the host, which spares it a device-to-host copy per call
        if shape.packed and 'cu_seqlens_cpu' in inspect.signature(chunk_kda).parameters:
            packing['cu_seqlens_cpu'] = packing['cu_seqlens'].cpu()

        def run():
            return chunk_kda(*inputs, **packing)
    else:
        from fla.ops.simple_gla import chunk_simple_gla

        inputs = (leaf(B, T, H, K), leaf(B, T, H, K), leaf(B, T, H, V),
                  leaf(B, T, H, dtype=torch.float32, transform=torch.nn.functional.logsigmoid))

        def run():
            return chunk_simple_gla(*inputs, **packing)

    def forward():
        with torch.no_grad():
            return run()

    def forward_backward():
        o, _ = run()
        return torch.autograd.grad(o, inputs, do)

    return forward if mode == 'fwd' else forward_backward


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--op', choices=['simple_gla', 'kda'], default='simple_gla')
    parser.add_argument('--shapes', nargs='+', type=parse_shape, default=[parse_shape(s) for s in DEFAULT_SHAPES])
    parser.add_argument('--modes', nargs='+', choices=['fwd', 'fwdbwd'], default=['fwd', 'fwdbwd'])
    parser.add_argument('--json', help='also write the rows to this file')
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print('benchmarks/chunk_ops.py: no CUDA GPU here; timings need one', file=sys.stderr)
        return 2

    import fla

    ceiling = copy_bandwidth_gbs()
    print(f'machine: {machine_line()}')
    print(f'fla: {fla.__file__}; op: chunk_{args.op}')
    print(f'device-to-device copy: {ceiling:.0f} GB/s')
    print(f'{"shape BxTxHxKxV":>27} {"mode":>6} {"eager ms":>9} {"graph ms":>9} {"floor ms":>9} '
          f'{"GB/s":>6} {"of copy":>7} {"graph GB/s":>10}')
    rows = []
    for shape in args.shapes:
        for mode in args.modes:
            fn = make_call(args.op, shape, mode)
            eager_ms = do_bench(fn, warmup=100, rep=500, return_mode='median')
            # one replay of a captured graph per call: the kernels without host launch overhead
            graph_ms = do_bench_cudagraph(fn, rep=200, return_mode='median')
            moved = bytes_moved(args.op, shape, mode)
            floor_ms = moved / ceiling / 1e6
            gbs = moved / eager_ms / 1e6
            print(f'{str(shape):>27} {mode:>6} {eager_ms:9.4f} {graph_ms:9.4f} {floor_ms:9.4f} '
                  f'{gbs:6.0f} {gbs / ceiling:7.0%} {moved / graph_ms / 1e6:10.0f}')
            rows.append({'op': f'chunk_{args.op}', 'shape': {'B': shape.B, 'T': shape.T, 'H': shape.H, 'K': shape.K,
                                                           'V': shape.V, 'packed': shape.packed},
                         'dtype': 'bfloat16', 'mode': mode, 'eager_median_ms': eager_ms, 'graph_median_ms': graph_ms,
                         'floor_ms': floor_ms, 'bytes': moved})
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'machine': machine_line(), 'fla': fla.__file__, 'copy_gbs': ceiling, 'rows': rows}, f, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
