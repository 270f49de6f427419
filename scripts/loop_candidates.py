# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The candidates of the recorded GPU loop on chunk_simple_gla (scripts/gpu_loop.sh), each one edit of the checkout.

Usage: python scripts/loop_candidates.py slower|neutral|configs
"""

import sys
from pathlib import Path

CHUNK = 'fla/ops/simple_gla/chunk.py'
FORWARD = "@triton.jit(do_not_specialize=['T'])\ndef chunk_simple_gla_fwd_kernel("
STATE = '    # [BK, BV]\n    b_h = tl.zeros([BK, BV], dtype=tl.float32)\n    if USE_INITIAL_STATE:\n        b_h += tl.load(h0'
CONFIG = '    config = kernels.launch_config(K, V, q.dtype, False)\n'
# name -> (file, text, replacement): deliberately slower, neutral, and an attempt at a real improvement
EDITS = {
    'slower': ('fla/ops/simple_gla/function.py', CONFIG, CONFIG + '    q = q.clone()\n'),
    'neutral': (CHUNK, STATE, STATE.replace('# [BK, BV]', "# [BK, BV]: the running state of this program's block")),
    'configs': (CHUNK, '@autotune(CHUNK_CONFIGS, key=CHUNK_KEY)\n' + FORWARD,
                '@autotune([triton.Config({}, num_warps=w, num_stages=s) for w in (2, 4, 8) for s in (2, 3, 4)], '
                'key=CHUNK_KEY)\n' + FORWARD),
}
path, old, new = EDITS[sys.argv[1]]
text = Path(path).read_text()
if text.count(old) != 1:
    sys.exit(f'{path}: the text to replace for {sys.argv[1]} is not there once; the kernel changed since')
Path(path).write_text(text.replace(old, new))
