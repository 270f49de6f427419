# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Which stage of a forced-Gluon `chunk_simple_gla` call fails on this GPU, for one shape, each stage synchronized so a
sticky CUDA error names its own stage: python scripts/gluon_probe.py B T H K V [--dtype bf16|fp16].
Each backend's time is benchmarks/chunk_ops.py's, run with FLA_SIMPLE_GLA_GLUON=1 or FLA_DISABLE_BACKEND_DISPATCH=1."""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ('B', 'T', 'H', 'K', 'V'):
        parser.add_argument(name, type=int)
    parser.add_argument('--dtype', choices=('bf16', 'fp16'), default='bf16')
    shape = parser.parse_args()
    dtype = {'bf16': torch.bfloat16, 'fp16': torch.float16}[shape.dtype]
    from fla.ops.simple_gla import chunk_simple_gla

    torch.manual_seed(0)
    B, T, H, K, V = shape.B, shape.T, shape.H, shape.K, shape.V
    leaves = {'q': torch.randn(B, T, H, K, device='cuda').to(dtype), 'k': torch.randn(B, T, H, K, device='cuda').to(dtype),
              'v': torch.randn(B, T, H, V, device='cuda').to(dtype), 'g': F.logsigmoid(torch.randn(B, T, H, device='cuda')),
              'initial_state': 0.1 * torch.randn(B, H, K, V, device='cuda')}
    for backend, environment in (('triton', {'FLA_DISABLE_BACKEND_DISPATCH': '1'}), ('gluon', {'FLA_SIMPLE_GLA_GLUON': '1'})):
        os.environ.pop('FLA_DISABLE_BACKEND_DISPATCH', None)
        os.environ.update(environment)
        inputs = {name: x.detach().clone().requires_grad_() for name, x in leaves.items()}
        stage = 'forward'
        try:
            o, ht = chunk_simple_gla(**inputs, output_final_state=True)
            torch.cuda.synchronize()
            stage = 'backward'
            (o.float().sum() + ht.sum()).backward()
            torch.cuda.synchronize()
        except Exception as error:
            # the stage that raised is the finding; the process is spent after a sticky error
            print(f'{B} {T} {H} {K} {V} {shape.dtype} {backend} {stage}: {type(error).__name__}: {str(error).splitlines()[0]}')
            return 1
        finite = bool(o.isfinite().all())
        print(f'{B} {T} {H} {K} {V} {shape.dtype} {backend}: forward and backward ran, o finite {finite}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
