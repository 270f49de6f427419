# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Scratch, kept with the try it informed: where the forward intra-chunk kernel's time goes, by timing variants with
parts cut out."""
import functools
import importlib.util
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from triton.testing import do_bench

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
SOURCE = (ROOT / 'fla/ops/kda/chunk_fwd.py').read_text()

INVERSE = """    b_M = unit_lower_inverse(tl.where(o_t[:, None] > o_t[None, :], b_beta[:, None] * b_Akk, 0), BT, BC,
                             DOT_PRECISION)"""
OFFDIAG = "    for i_s in range(1, tl.cdiv(tl.minimum(eos - row0, BT), BC)):"
DIAG = """        b_sq += tl.where(m_diagonal, tl.dot(b_q * b_up, b_kd, input_precision=DOT_PRECISION), 0)
        b_sk += tl.where(m_diagonal, tl.dot(b_k * b_up, b_kd, input_precision=DOT_PRECISION), 0)"""
WY = ("    store_wy(b_M * b_beta[None, :], k, v, gk, w, u, o_row, m_t, i_h, i_hv, H, HV, K, V, BK, BV, DOT_PRECISION)"
      "\n\n\n@triton.jit\ndef store_wy")
# the same place with only M stored, so that the scores and the inverse still have a use
STORE_M = ("    tl.store(akk_inv + (o_row[:, None] * HV + i_hv) * BT + o_t[None, :], b_M, mask=m_tt)"
           "\n\n\n@triton.jit\ndef store_wy")
NO_INVERSE = "    b_M = tl.where(o_t[:, None] > o_t[None, :], b_beta[:, None] * b_Akk, 0)"
SUBST = "    for i in range(1, BC):\n        m_rows"
NEUMANN = """    b_N = precise_dot(b_D, tl.where(m_block, 0, b_A), DOT_PRECISION)
    b_N_inverse = precise_dot(b_I - b_N, b_I + precise_dot(b_N, b_N, DOT_PRECISION), DOT_PRECISION)
    return precise_dot(b_N_inverse, b_D, DOT_PRECISION)"""

EDITS = {
    'full': [],
    'no_inverse': [(INVERSE, NO_INVERSE)],
    'no_substitution': [(SUBST, "    for i in range(1, 1):\n        m_rows")],
    'no_neumann': [(NEUMANN, "    return b_D + b_A")],
    'no_offdiag': [(OFFDIAG, "    for i_s in range(1, 1):")],
    'no_diag': [(DIAG, "        pass")],
    'no_wy': [(WY, STORE_M)],
    'scores_only': [(INVERSE, NO_INVERSE), (WY, STORE_M)],
}


def variant(name, edits, folder):
    text = SOURCE
    for old, new in edits:
        assert text.count(old) == 1, (name, old[:60])
        text = text.replace(old, new)
    path = Path(folder) / f'kda_fwd_{name}.py'
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f'kda_fwd_{name}', path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main():
    shapes = [(8, 2048, 16, 128, 128), (4, 4096, 32, 64, 64)]
    folder = tempfile.mkdtemp()
    chosen = sys.argv[1:] or list(EDITS)
    modules = {name: variant(name, edits, folder) for name, edits in EDITS.items() if name in chosen}
    for B, T, H, K, V in shapes:
        torch.manual_seed(0)
        q = F.normalize(torch.randn(B, T, H, K, device='cuda'), dim=-1).bfloat16()
        k = F.normalize(torch.randn(B, T, H, K, device='cuda'), dim=-1).bfloat16()
        v = torch.randn(B, T, H, V, device='cuda').bfloat16()
        g = F.logsigmoid(torch.randn(B, T, H, K, device='cuda'))
        beta = torch.rand(B, T, H, device='cuda').bfloat16()
        for name, mod in modules.items():
            layout = mod.chunk_layout(B, T, None)
            gk = mod.chunk_kda_fwd_log_decay(g, layout)
            keep = name in ('no_wy', 'scores_only')
            fn = functools.partial(mod.chunk_kda_fwd_intra, q, k, v, gk, beta, layout, store_inverse=keep)
            try:
                fn()
            except Exception as error:  # noqa: BLE001
                print(f'{name}: {type(error).__name__}: {str(error)[:200]}', flush=True)
                continue
            ms = do_bench(fn, warmup=25, rep=200, return_mode='median')
            best = mod.chunk_kda_fwd_kernel_intra.best_config
            print(f'{B}x{T}x{H}x{K}x{V} {name:16s} {ms:7.3f} ms  {best}', flush=True)


main()
