# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Fingerprint the sm_90 code of kernels, compiled here without a GPU, to show that a refactor compiles to the same code.

Usage: mrbot compile --targets sm_90 --json launches.json PATHS; python scripts/ptx_fingerprint.py launches.json > before.txt;
(change the code); python scripts/ptx_fingerprint.py launches.json | diff before.txt -

The launches are those of the report's cells that `mrbot compile` took through ptxas (each code path at its smallest and
largest blocks), compiled again from the working tree's source. Each line is one kernel under one specialization and a
hash of its PTX instructions with register names, labels and debug sections removed and the instructions sorted: a
refactor that leaves every hash unchanged compiles to the same instructions, so GPU evidence gathered before it still
describes the code after it.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import make_backend

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mrbot.compile.worker import kernel_of, source_of  # noqa: E402

HOPPER = GPUTarget('cuda', 90, 32)


def fingerprint(ptx: str) -> str:
    code = re.split(r'\.section\s+\.debug', ptx)[0]
    lines = (line.strip() for line in code.splitlines())
    lines = (line for line in lines if line and not line.startswith(('.loc', '.file', '//')))
    lines = (re.sub(r'\$L__\w+', 'L', line) for line in lines if not re.fullmatch(r'\$L__\w+:', line))
    return hashlib.sha1('\n'.join(sorted(re.sub(r'%[a-z]+\d+', '%R', line) for line in lines)).encode()).hexdigest()[:12]


def main(report: str) -> int:
    data = json.loads(Path(report).read_text())
    # `mrbot compile --json FILE` writes the matrix alone; `--format json` the report with the matrix under `compile`
    cells = data.get('compile', data)['cells']
    seen = set()
    for cell in cells:
        if cell['target'] != 'sm_90' or cell['depth'] != 'sass' or (cell['kernel'], cell['specialization']) in seen:
            continue
        seen.add((cell['kernel'], cell['specialization']))
        launch = cell['launch']
        options = make_backend(HOPPER).parse_options(
            {k: tuple(v) if isinstance(v, list) else v for k, v in launch['options'].items()})
        compiled = triton.compile(source_of(kernel_of(launch), launch), target=HOPPER, options=options.__dict__)
        print(cell['kernel'], cell['specialization'], fingerprint(compiled.asm['ptx']), flush=True)
    return 0


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit('usage: python scripts/ptx_fingerprint.py REPORT.json (from mrbot compile --targets sm_90 --json)')
    sys.exit(main(sys.argv[1]))
