# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot demo`: what the bot does, and one kernel of the library it serves run against its reference on this machine."""

from __future__ import annotations

import argparse
import os

import torch

JOB = """\
mrbot turns a change to a Triton kernel repository into a pull request a maintainer can merge:
  1. check   the change against CONTRIBUTING.md (title, body, headers, kernel rules), on added lines only
  2. select  the tests that depend on the change through the import graph, and run them
  3. bench   touched kernels before and after on the same GPU, interleaved, with a confidence interval
  4. write   the PR body: summary, test plan, benchmark evidence, breaking changes, checklist
"""


def run(args: argparse.Namespace) -> int:
    print(JOB)
    if not torch.cuda.is_available():
        # Without a GPU the kernels run in Triton's interpreter, which must be chosen before fla is imported.
        os.environ.setdefault('TRITON_INTERPRET', '1')
    from fla.ops.simple_gla import chunk_simple_gla
    from fla.ops.simple_gla.naive import naive_recurrent_simple_gla
    from fla.utils import device

    B, T, H, K, V = 1, 100, 2, 32, 32
    generator = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(B, T, H, d, device=device, generator=generator) for d in (K, K, V))
    g = torch.nn.functional.logsigmoid(torch.randn(B, T, H, device=device, generator=generator))
    o, _ = chunk_simple_gla(q, k, v, g)
    ref, _ = naive_recurrent_simple_gla(q, k, v, g)
    where = 'compiled on ' + torch.cuda.get_device_name() if device == 'cuda' else 'CPU, Triton interpreter'
    print(f'chunk_simple_gla forward, B={B} T={T} H={H} K={K} V={V} float32 ({where})')
    print(f'max abs error against the naive recurrence: {(o - ref).abs().max().item():.3e}')
    return 0
