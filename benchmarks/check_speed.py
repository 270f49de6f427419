# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Wall time of `mrbot check` on a typical one-kernel change and on a 100-file change of this repository.

Usage: python benchmarks/check_speed.py [--repeat 7]

Each scenario runs in a fresh local clone, as a subprocess (interpreter start, imports, git and ruff included), and
reports the median, min and max of the repeats.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MRBOT = [sys.executable, '-m', 'mrbot.cli']
KERNEL = 'fla/ops/simple_gla/chunk.py'
NEW_HELPER = '''

@triton.jit
def chunk_scaled_decay(g, o_row, m_t, i_h, H: tl.constexpr, BT: tl.constexpr, SCALE: tl.constexpr):
    """Cumulative log decay of each row, scaled: a helper a kernel change might add."""
    b_g, b_g_last = chunk_log_decay(g, o_row, m_t, i_h, H, BT)
    # [BT]
    b_scaled = b_g * SCALE
    return b_scaled, b_g_last * SCALE
'''


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(['git', '-c', 'user.name=bench', '-c', 'user.email=bench@example.com', *args], cwd=cwd,
                   check=True, capture_output=True)


def _time(cwd: Path, argv: list[str], repeat: int) -> tuple[list[float], dict]:
    """Wall times of `repeat` runs, and the last run's report."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([*MRBOT, 'check', *argv, '--format', 'json'], cwd=cwd, capture_output=True, text=True)
        samples.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f'mrbot check failed: {done.stderr.strip()}')
    return samples, json.loads(done.stdout)


def _one_kernel_change(clone: Path) -> list[str]:
    """An uncommitted edit of one kernel file and its test, checked against HEAD from the working tree."""
    kernel = clone / KERNEL
    kernel.write_text(kernel.read_text() + NEW_HELPER)
    test = clone / 'tests/ops/test_simple_gla.py'
    test.write_text(test.read_text().replace("id='T13-shorter-than-chunk'", "id='T13-below-one-chunk'"))
    return ['--base', 'HEAD', '--title', '[Simple GLA] Add a scaled decay helper']


def _hundred_file_change(clone: Path) -> list[str]:
    """One commit adding 100 Python files copied from this repository, checked between two commits."""
    sources = sorted(p for p in (clone / 'fla').rglob('*.py')) + sorted((clone / 'mrbot').rglob('*.py'))
    for i in range(100):
        source = sources[i % len(sources)]
        target = clone / 'generated' / f'module_{i:03d}.py'
        target.parent.mkdir(exist_ok=True)
        shutil.copy(source, target)
    _git(clone, 'add', '-A')
    _git(clone, 'commit', '-q', '-m', '[Misc] Add 100 modules')
    return ['--base', 'HEAD~1', '--head', 'HEAD']


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=7)
    args = parser.parse_args()
    print(f'{"scenario":<22} {"files":>5} {"findings":>8} {"median s":>9} {"min s":>7} {"max s":>7}')
    for name, scenario in (('one kernel change', _one_kernel_change), ('100-file change', _hundred_file_change)):
        with tempfile.TemporaryDirectory(prefix='mrbot-speed-') as scratch:
            clone = Path(scratch) / 'repo'
            subprocess.run(['git', 'clone', '-q', '--local', str(ROOT), str(clone)], check=True)
            argv = scenario(clone)
            samples, report = _time(clone, argv, args.repeat)
            revisions = [argv[argv.index(flag) + 1] for flag in ('--base', '--head') if flag in argv]
            files = subprocess.run(['git', 'diff', '--name-only', *revisions], cwd=clone, capture_output=True, text=True,
                                   check=True).stdout.split()
        print(f'{name:<22} {len(files):>5} {len(report["findings"]):>8} {statistics.median(samples):9.3f} '
              f'{min(samples):7.3f} {max(samples):7.3f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
