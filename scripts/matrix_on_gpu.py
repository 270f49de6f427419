# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Check a CPU compilation matrix against a real GPU: every cell of one target compiled and loaded there.

Usage, on a machine with the GPU of the matrix's target:
    python scripts/matrix_on_gpu.py MATRIX.json [--target sm_90] [--jobs 16] > agreement.txt

MATRIX.json is what `mrbot compile --json` wrote on a CPU machine. Each cell's launch is compiled here through
Triton's own `triton.compile` for the GPU in this machine (cubin and all), in worker processes, then loaded in this
process, where the driver refuses a kernel whose shared memory is over the device's limit and reports its registers.
The CPU's verdict (ok, over the shared-memory limit, compile error) and its shared-memory figure must match the GPU's;
every mismatch is printed, then one line of counts. Exit 0 when all agree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _compile(cell: dict) -> tuple[str, object, dict | None]:
    """Compile one cell for this machine's GPU: ('ok', cubin, metadata) or ('error', first line, None)."""
    import triton
    from triton.backends.compiler import GPUTarget

    from mrbot.compile import worker

    launch = cell['launch']
    try:
        jit = worker._kernel(launch)
        target = GPUTarget('cuda', int(cell['target'].removeprefix('sm_')), 32)
        options = {k: tuple(v) if isinstance(v, list) else v for k, v in launch['options'].items()}
        kernel = triton.compile(worker._source(jit, launch), target=target, options=options)
        return 'ok', kernel.asm['cubin'], kernel.metadata._asdict()
    except Exception as error:  # the verdict of this cell
        return 'error', str(error).strip().splitlines()[-1][:200] if str(error).strip() else type(error).__name__, None


def _load(cubin: bytes, metadata: dict) -> tuple[str, int | None]:
    """Load a compiled kernel on the GPU as Triton's launcher does; ('ok', registers) or ('over', None)."""
    from triton.runtime import driver

    device = driver.active.get_current_device()
    limit = driver.active.utils.get_device_properties(device)['max_shared_mem']
    if metadata['shared'] > limit:
        return 'over', None
    _, _, registers, _, _ = driver.active.utils.load_binary(metadata['name'], cubin, metadata['shared'], device)
    return 'ok', registers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('matrix')
    parser.add_argument('--target', default='sm_90')
    parser.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    os.environ['TRITON_INTERPRET'] = '0'
    matrix = json.loads(Path(args.matrix).read_text())
    cells = [cell for cell in matrix['cells'] if cell['target'] == args.target]
    with ProcessPoolExecutor(args.jobs) as pool:
        compiled = list(pool.map(_compile, cells, chunksize=4))
    counts = {'agree': 0, 'disagree': 0}
    for cell, (status, payload, metadata) in zip(cells, compiled, strict=True):
        cpu = 'error' if cell['status'] != 'ok' else 'over' if cell['shared'] > cell['shared_limit'] else 'ok'
        gpu, registers, shared = status, None, None
        if status == 'ok':
            shared = metadata['shared']
            gpu, registers = _load(payload, metadata)
        same = cpu == gpu and (shared is None or shared == cell['shared'])
        if cell['registers'] is not None and registers is not None:
            same = same and registers == cell['registers']
        counts['agree' if same else 'disagree'] += 1
        if not same:
            print(f"DISAGREE {cell['kernel']} {cell['specialization']}: cpu {cpu} shared={cell['shared']} "
                  f"registers={cell['registers']} {cell['error'][:120]}; gpu {gpu} shared={shared} registers={registers} "
                  f"{payload if status == 'error' else ''}")
    import torch
    from triton.runtime import driver

    limit = driver.active.utils.get_device_properties(driver.active.get_current_device())['max_shared_mem']
    print(f"{len(cells)} cells of {args.target} on {torch.cuda.get_device_name(0)} (shared memory per block {limit:,}, "
          f"the matrix's {cells[0]['shared_limit']:,}): {counts['agree']} agree, {counts['disagree']} disagree "
          '(verdict ok/over/error, shared memory, and registers where the CPU ran ptxas)')
    return 0 if counts['disagree'] == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
