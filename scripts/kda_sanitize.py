# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""chunk_kda forward and backward at small shapes, dense and packed, bf16 and float32: a driver for compute-sanitizer.

Usage: compute-sanitizer --tool memcheck python scripts/kda_sanitize.py [dense|packed|both]

Each autotuned kernel keeps its first config, so the sanitizer spends its time in the kernels rather than in
autotuning. The packed batch holds sequences of 1, 36, 0 and 63 tokens; every run starts from an initial state and
differentiates through the output and the final state.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from triton.runtime.autotuner import Autotuner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fla.ops.kda.chunk_bwd as chunk_bwd  # noqa: E402
import fla.ops.kda.chunk_fwd as chunk_fwd  # noqa: E402
from fla.ops.kda import chunk_kda  # noqa: E402


def first_configs_only() -> None:
    for module in (chunk_fwd, chunk_bwd):
        for value in vars(module).values():
            if isinstance(value, Autotuner):
                value.configs = value.configs[:1]
                value.early_config_prune = None


def run(dtype: torch.dtype, packed: bool) -> str:
    B, T, H, K, V = (1, 100, 2, 32, 32) if packed else (2, 100, 2, 32, 32)
    q = F.normalize(torch.randn(B, T, H, K, device='cuda'), dim=-1).to(dtype).requires_grad_()
    k = F.normalize(torch.randn(B, T, H, K, device='cuda'), dim=-1).to(dtype).requires_grad_()
    v = torch.randn(B, T, H, V, device='cuda', dtype=dtype).requires_grad_()
    g = F.logsigmoid(torch.randn(B, T, H, K, device='cuda')).requires_grad_()
    beta = torch.rand(B, T, H, device='cuda', dtype=dtype).requires_grad_()
    cu_seqlens = torch.tensor([0, 1, 37, 37, 100], device='cuda', dtype=torch.int32) if packed else None
    h0 = torch.randn(4 if packed else B, H, K, V, device='cuda').requires_grad_()
    o, ht = chunk_kda(q=q, k=k, v=v, g=g, beta=beta, initial_state=h0, output_final_state=True, cu_seqlens=cu_seqlens)
    ((o.float() ** 2).sum() + (ht ** 2).sum()).backward()
    torch.cuda.synchronize()
    layout = 'packed' if packed else 'dense'
    return f'{dtype} {layout}: |o| {o.float().norm().item():.4f}, |dq| {q.grad.float().norm().item():.4f}'


def main() -> int:
    layout = sys.argv[1] if len(sys.argv) > 1 else 'both'
    if layout not in ('dense', 'packed', 'both'):
        print(f'scripts/kda_sanitize.py: unknown layout {layout!r}: expected dense, packed or both', file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print('scripts/kda_sanitize.py: no CUDA GPU here; the sanitizer needs one', file=sys.stderr)
        return 2
    first_configs_only()
    torch.manual_seed(0)
    for dtype in (torch.bfloat16, torch.float32):
        for packed in (False, True):
            if layout in ('both', 'packed' if packed else 'dense'):
                print(run(dtype, packed), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
