# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What one out-of-bounds kernel does to a GPU test run: plain pytest, then mrbot's runner, on the same file.

Usage: python scripts/sticky_error_demo.py

Writes a test file to a scratch folder: an ordinary GPU test, a kernel that stores gigabytes past its 16-float
tensor, then 20 ordinary GPU tests. Under plain pytest the CUDA context is poisoned and every later test fails; mrbot's
runner (`execute`, which `mrbot test` and the bench gate call) names the first test that reported the error and runs
the rest again in a fresh process.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mrbot.commands.test import format_run  # noqa: E402
from mrbot.records.testruns import TestRun  # noqa: E402
from mrbot.testing import device_label, execute  # noqa: E402

STICKY_TESTS = '''
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def store_far(x, stride):
    tl.store(x + tl.program_id(0).to(tl.int64) * stride, 1.0)


def test_before():
    assert torch.ones(4, device='cuda').sum().item() == 4


def test_out_of_bounds():
    x = torch.zeros(16, device='cuda')
    store_far[(1024,)](x, 1 << 30)
    torch.cuda.synchronize()


@pytest.mark.parametrize('n', range(20))
def test_after(n):
    assert torch.full((n + 1,), 2.0, device='cuda').sum().item() == 2 * (n + 1)
'''


def main() -> int:
    if not device_label().startswith('compiled'):
        print('scripts/sticky_error_demo.py: no CUDA GPU here; the demonstration needs one', file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix='sticky-') as scratch:
        (Path(scratch) / 'test_sticky.py').write_text(STICKY_TESTS)
        plain = subprocess.run([sys.executable, '-m', 'pytest', 'test_sticky.py', '-q', '-p', 'no:cacheprovider'],
                               cwd=scratch, capture_output=True, text=True)
        print('plain pytest:', plain.stdout.strip().splitlines()[-1])
        runs = execute(['test_sticky.py'], Path(scratch), jobs=1, timeout=300, dispatch='off', interpret=False)
        print(format_run(TestRun(device_label(), tuple(runs))), end='')
    return 0


if __name__ == '__main__':
    sys.exit(main())
