# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Scratch: the error each intermediate adds when stored in bf16, against the float32 naive recurrence (interpreter)."""
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import fla.ops.kda.chunk_bwd as bwd  # noqa: E402
import fla.ops.kda.chunk_fwd as fwd  # noqa: E402
from fla.ops.kda import chunk_kda  # noqa: E402
from fla.ops.kda.naive import naive_recurrent_kda  # noqa: E402
from tests.ops.test_kda import TOLERANCE, Case, _run  # noqa: E402

ROUNDED = set()
ORIGINAL = {name: getattr(fwd, name) for name in ('chunk_kda_fwd_intra', 'chunk_kda_fwd_wy', 'chunk_kda_fwd_h')}
ORIGINAL['chunk_kda_bwd_dh'] = bwd.chunk_kda_bwd_dh
ORIGINAL['chunk_kda_bwd_wy'] = bwd.chunk_kda_bwd_wy


def r(name, x):
    return x.bfloat16().float() if name in ROUNDED and x is not None else x


def intra(*a, **k):
    w, u, aqk, m = ORIGINAL['chunk_kda_fwd_intra'](*a, **k)
    return r('w', w), r('u', u), r('aqk', aqk), r('M', m)


def wy(*a, **k):
    w, u = ORIGINAL['chunk_kda_fwd_wy'](*a, **k)
    return r('w', w), r('u', u)


def state(*a, **k):
    h, v_new, ht = ORIGINAL['chunk_kda_fwd_h'](*a, **k)
    return r('h', h), r('v_new', v_new), ht


def dstate(*a, **k):
    dh, dh0, dv_new = ORIGINAL['chunk_kda_bwd_dh'](*a, **k)
    return r('dh', dh), dh0, r('dv_new', dv_new)


def bwy(*a, **k):
    dv, dk, dg, dbeta, dA = ORIGINAL['chunk_kda_bwd_wy'](*a, **k)
    return dv, dk, dg, dbeta, r('dA', dA)


for module in (fwd, bwd):
    for name, fn in (('chunk_kda_fwd_intra', intra), ('chunk_kda_fwd_wy', wy), ('chunk_kda_fwd_h', state)):
        if hasattr(module, name):
            setattr(module, name, fn)
bwd.chunk_kda_bwd_dh = dstate
bwd.chunk_kda_bwd_wy = bwy

CASES = {
    'T130-gva-V48': Case(T=130, H=1, HV=2, K=32, V=48, dtype=torch.bfloat16),
    'in-kernel-gva-l2': Case(T=70, H=2, HV=4, gate='in-kernel', l2norm=True, beta_sigmoid=True, dtype=torch.bfloat16),
    'safe-aligned-varlen': Case(T=190, offsets=(0, 64, 100, 190), gate='safe', dtype=torch.bfloat16),
    'no-decay-T256-K64': Case(T=256, K=64, V=64, gate='pre', g_scale=0.0, g_shift=-1e-4, dtype=torch.bfloat16),
    'safe-T384-K64-l2': Case(B=2, T=384, H=2, HV=2, K=64, V=64, gate='safe', l2norm=True, dtype=torch.bfloat16),
    'long-decay-T256': Case(T=256, K=64, V=64, gate='pre', g_shift=-5.0, dtype=torch.bfloat16),
}
VARIANTS = [set(), {'w', 'u'}, {'aqk'}, {'M'}, {'h'}, {'v_new'}, {'dh'}, {'dv_new'}, {'dA'},
            {'w', 'u', 'aqk', 'h', 'v_new'}, {'w', 'u', 'aqk', 'M', 'h', 'v_new', 'dh', 'dv_new', 'dA'}]


def rel(ref, tri):
    ref, tri = ref.double(), tri.double()
    return ((ref - tri).pow(2).mean().sqrt() / ref.pow(2).mean().sqrt().clamp_min(1e-30)).item()


for case_name, case in CASES.items():
    torch.manual_seed(0)
    args = case.arguments()
    N = case.B if case.offsets is None else len(case.offsets) - 1
    do = torch.randn(case.B, case.T, case.HV, case.V)
    dht = torch.randn(N, case.HV, case.K, case.V)
    ref = _run(naive_recurrent_kda, args, do, dht)
    for variant in VARIANTS:
        ROUNDED.clear()
        ROUNDED.update(variant)
        tri = _run(chunk_kda, args, do, dht)
        errors = {name: rel(ref[name], tri[name]) for name in ref}
        tol = TOLERANCE[torch.bfloat16]
        worst = max(errors[n] / tol.get(n, tol['default']) for n in errors)
        label = '+'.join(sorted(variant)) or 'fp32'
        print(f'{case_name:20s} {label:40s} worst/tol {worst:5.3f} ' +
              ' '.join(f'{n} {e:.2e}' for n, e in errors.items()), flush=True)
