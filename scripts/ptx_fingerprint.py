# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Fingerprint the sm_90 code of every simple GLA kernel, compiled here without a GPU.

Usage: python scripts/ptx_fingerprint.py > before.txt; (change the code); python scripts/ptx_fingerprint.py | diff before.txt -

Each line is one kernel under one specialization and a hash of its PTX instructions with register names, labels and
debug sections removed and the instructions sorted: a refactor that leaves every hash unchanged compiles to the same
instructions, so GPU evidence gathered before it still describes the code after it.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import sys
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fla.ops.simple_gla.chunk import CHUNK_KERNELS  # noqa: E402
from fla.ops.simple_gla.fused_recurrent import RECURRENT_KERNELS  # noqa: E402

POINTER_TYPES = {
    'q': '*bf16', 'k': '*bf16', 'v': '*bf16', 'do': '*bf16', 'o': '*bf16', 'dq': '*bf16', 'dk': '*bf16', 'dv': '*bf16',
    'g': '*fp32', 'dg': '*fp32', 'q_dot_dq': '*fp32', 'h0': '*fp32', 'ht': '*fp32', 'dht': '*fp32', 'dh0': '*fp32',
    'cu_seqlens': '*i32', 'scale': 'fp32', 'T': 'i32',
}
HOPPER = GPUTarget('cuda', 90, 32)


def specializations(chunked: bool):
    base = {'H': 16, 'K': 128, 'V': 128, 'USE_INITIAL_STATE': True, 'STORE_FINAL_STATE': True,
            'USE_FINAL_STATE_GRADIENT': True}
    base.update({'BT': 64, 'BK': 128, 'BV': 64, 'NK': 1, 'NV': 2, 'DOT_PRECISION': 'tf32'} if chunked else
                {'BK': 64, 'BV': 64, 'NK': 2, 'NV': 2})
    for use_g, varlen in itertools.product((True, False), repeat=2):
        yield {**base, 'USE_G': use_g, 'IS_VARLEN': varlen}


def fingerprint(ptx: str) -> str:
    code = re.split(r'\.section\s+\.debug', ptx)[0]
    lines = (line.strip() for line in code.splitlines())
    lines = (line for line in lines if line and not line.startswith(('.loc', '.file', '//')))
    lines = (re.sub(r'\$L__\w+', 'L', line) for line in lines if not re.fullmatch(r'\$L__\w+:', line))
    return hashlib.sha1('\n'.join(sorted(re.sub(r'%[a-z]+\d+', '%R', line) for line in lines)).encode()).hexdigest()[:12]


def main() -> int:
    for kernels, chunked in ((CHUNK_KERNELS, True), (RECURRENT_KERNELS, False)):
        for autotuned in (kernels.fwd, kernels.bwd_dq, kernels.bwd_dkvg):
            kernel = autotuned.fn
            for spec in specializations(chunked):
                constants = {name: value for name, value in spec.items() if name in kernel.arg_names}
                signature = {name: 'constexpr' if name in constants else POINTER_TYPES[name] for name in kernel.arg_names}
                source = ASTSource(fn=kernel, signature=signature,
                                   constexprs={(kernel.arg_names.index(n),): v for n, v in constants.items()})
                compiled = triton.compile(source, target=HOPPER, options={'num_warps': 4, 'num_stages': 2})
                print(kernel.__name__, f"USE_G={spec['USE_G']}", f"IS_VARLEN={spec['IS_VARLEN']}",
                      fingerprint(compiled.asm['ptx']), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
