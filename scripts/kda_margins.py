# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""How close one case of `tests/ops/test_kda.py` comes to its tolerances over many seeds, in one process.

Usage: python scripts/kda_margins.py CASE_ID [SEEDS]   (e.g. chunk-aligned-safe-bf16 200)

For each compared quantity, the worst error over the seeds as a share of the suite's tolerance (the test passes below
1), and the seeds that failed, with what failed. A test that fails once in many runs on a GPU, and never under the
interpreter, is either a share close to 1 or a value that is not the arithmetic's: this tells which.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fla.ops.kda import chunk_kda  # noqa: E402
from fla.ops.kda.naive import naive_recurrent_kda  # noqa: E402
from fla.utils import device, relative_rms_error  # noqa: E402
from tests.ops import test_kda as suite  # noqa: E402


def main(case_id: str, seeds: int) -> int:
    cases = {param.id: param.values[0] for param in suite.CASES + suite.EXTREME_CASES + suite.VARLEN_CASES}
    if case_id not in cases:
        print(f'kda_margins: no case {case_id!r}; expected one of {", ".join(cases)}', file=sys.stderr)
        return 2
    case = cases[case_id]
    tolerance = suite.TOLERANCE[case.dtype]
    worst: dict[str, float] = {}
    failed = []
    for seed in range(seeds):
        torch.manual_seed(seed)
        args = case.arguments()
        count = case.B if case.offsets is None else len(case.offsets) - 1
        do = torch.randn(case.B, case.T, case.HV, case.V, device=device)
        dht = torch.randn(count, case.HV, case.K, case.V, device=device)
        ref = suite._run(naive_recurrent_kda, args, do, dht)
        out = suite._run(chunk_kda, args, do, dht)
        sizes = suite._gate_term_sizes(args, do, dht) if case.gate != 'pre' else {}
        for name in ref:
            if not torch.isfinite(out[name]).all():
                failed.append(f'seed {seed}: {name} not finite at {torch.nonzero(~torch.isfinite(out[name]))[:3].tolist()}')
                continue
            share = relative_rms_error(ref[name], out[name], sizes.get(name)) / tolerance.get(name, tolerance['default'])
            worst[name] = max(worst.get(name, 0.0), share)
            if share > 1:
                failed.append(f'seed {seed}: {name} at {share:.2f} of its tolerance')
    print(f'{case_id} on {device}, {seeds} seeds, worst share of the tolerance: '
          + ', '.join(f'{name} {share:.2f}' for name, share in worst.items()))
    print('\n'.join(failed) if failed else 'no seed failed')
    return 0


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='the worst error share of one KDA test case over many seeds')
    parser.add_argument('case', help="a case id of tests/ops/test_kda.py's dense, extreme or packed cases")
    parser.add_argument('seeds', nargs='?', type=int, default=50, help='how many seeds (default: 50)')
    arguments = parser.parse_args()
    sys.exit(main(arguments.case, arguments.seeds))
