# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Run one `chunk_simple_gla` forward and backward under the Triton interpreter with every masked-in address of every
load and store checked against the tensors the launch was given, and name the kernels that reach outside them:
    python scripts/interpreter_bounds.py B T H K V [--dtype bfloat16]

The interpreter itself reads and writes wherever a pointer points, so an out-of-bounds access there passes silently
and shows only on a GPU as an illegal address. This finds the accesses outside every tensor of the launch; one that
lands inside another argument's storage is not seen. Gluon kernels do not run under the interpreter.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

os.environ['TRITON_INTERPRET'] = '1'

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from triton.runtime import interpreter  # noqa: E402

# (start, end) of each tensor storage handed to the launch that runs now, and its kernel's name
LAUNCH: dict = {'ranges': [], 'kernel': '?'}
OUTSIDE: Counter = Counter()


def _launch(original):
    def call(self, *args, **kwargs):
        storages = [t.untyped_storage() for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor)]
        LAUNCH['ranges'] = [(s.data_ptr(), s.data_ptr() + s.nbytes()) for s in storages]
        LAUNCH['kernel'] = getattr(self.fn, '__name__', repr(self.fn))
        return original(self, *args, **kwargs)
    return call


def _checked(original, access: str, mask_at: int):
    """`original` with the addresses of its pointer tensor checked where its mask (argument `mask_at` after the
    pointers) is set."""
    def run(self, ptrs, *rest):
        mask = rest[mask_at].data if rest[mask_at] is not None else True
        addresses = np.unique(ptrs.data[np.broadcast_to(mask, ptrs.data.shape)])
        width = ptrs.dtype.element_ty.primitive_bitwidth // 8
        outside = [a for a in addresses if not any(lo <= a and a + width <= hi for lo, hi in LAUNCH['ranges'])]
        if outside:
            OUTSIDE[LAUNCH['kernel'], access] += len(outside)
        return original(self, ptrs, *rest)
    return run


def check_addresses(patch=setattr) -> Counter:
    """Check every masked-in address of the interpreter's loads and stores from now on; `patch` sets each wrapper in
    place (a test passes pytest's, which takes them back). The count of addresses outside, by kernel and access."""
    patch(interpreter.GridExecutor, '__call__', _launch(interpreter.GridExecutor.__call__))
    builder = interpreter.InterpreterBuilder
    patch(builder, 'create_masked_load', _checked(builder.create_masked_load, 'load', 0))
    patch(builder, 'create_masked_store', _checked(builder.create_masked_store, 'store', 1))
    OUTSIDE.clear()
    return OUTSIDE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    for name in 'BTHKV':
        parser.add_argument(name, type=int)
    parser.add_argument('--dtype', default='bfloat16', choices=['bfloat16', 'float16', 'float32'])
    args = parser.parse_args()
    outside = check_addresses()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fla.ops.simple_gla import chunk_simple_gla

    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype)
    B, T, H, K, V = args.B, args.T, args.H, args.K, args.V
    q, k = (torch.randn(B, T, H, K).to(dtype).requires_grad_() for _ in range(2))
    v = torch.randn(B, T, H, V).to(dtype).requires_grad_()
    g = F.logsigmoid(torch.randn(B, T, H)).requires_grad_()
    h0 = (0.1 * torch.randn(B, H, K, V)).requires_grad_()
    o, ht = chunk_simple_gla(q, k, v, g, initial_state=h0, output_final_state=True)
    ((o.float() * torch.randn(o.shape)).sum() + (ht * torch.randn(ht.shape)).sum()).backward()
    for (kernel, access), count in sorted(outside.items()):
        print(f'{kernel}: {count} {access} addresses outside every tensor of the launch')
    print('no access outside the launch tensors' if not outside else f'{sum(outside.values())} addresses outside')
    return 1 if outside else 0


if __name__ == '__main__':
    sys.exit(main())
