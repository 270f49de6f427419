# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Compare `mrbot test --list` with upstream flash-linear-attention's own test selector, commit by commit.

Usage: python scripts/compare_selection.py UPSTREAM_CHECKOUT [--commits 20] [--repeat 5] [--path fla/ops]
                                          [--settings preset.toml]

For each of the newest commits touching `--path` (default `fla/ops`), the checkout is moved to the commit, both
selectors get the commit's changed files, and the script checks that ours selects every test upstream's does and
never nothing. Both
are timed as whole processes: upstream's `scripts/find_dependent_tests.py`, ours cold (index cache deleted first) and
warm. `--settings` appends a `[tool.mrbot]` table (what `mrbot init` writes) to the checkout's pyproject.toml at each
commit, restored before the next. The checkout is moved back to where it was at the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

MRBOT = [sys.executable, '-m', 'mrbot.cli']


def _git(checkout: Path, *args: str) -> str:
    return subprocess.run(['git', *args], cwd=checkout, capture_output=True, text=True, check=True).stdout.strip()


def _timed(command: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])}... failed: {done.stderr.strip()[-300:]}")
    return elapsed, done.stdout


def _upstream(checkout: Path, changed: list[str]) -> tuple[float, set[str]]:
    elapsed, out = _timed([sys.executable, 'scripts/find_dependent_tests.py', *changed], checkout)
    root = checkout.resolve()
    return elapsed, {Path(p).resolve().relative_to(root).as_posix() if Path(p).is_absolute() else p for p in out.split()}


def _ours(checkout: Path, sha: str, cold: bool) -> tuple[float, set[str]]:
    if cold:
        shutil.rmtree(checkout / '.mrbot' / 'cache', ignore_errors=True)
    elapsed, out = _timed([*MRBOT, 'test', '--list', '--format', 'json', '--base', f'{sha}^', '--head', sha], checkout)
    return elapsed, {t['test'] for t in json.loads(out)['selected']}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('checkout', type=Path)
    parser.add_argument('--commits', type=int, default=20)
    parser.add_argument('--repeat', type=int, default=5)
    parser.add_argument('--path', default='fla/ops', help='only commits touching this path (default: fla/ops)')
    parser.add_argument('--settings', type=Path, help='a [tool.mrbot] table to append to pyproject.toml at each commit')
    args = parser.parse_args()
    settings = args.settings.read_text(encoding='utf-8') if args.settings else ''
    checkout = args.checkout.resolve()
    start_ref = _git(checkout, 'rev-parse', 'HEAD')
    shas = _git(checkout, 'log', '--format=%H', '--no-merges', '-n', str(args.commits), '--', args.path).split()
    print(f'{"commit":<10} {"files":>5} {"upstream":>8} {"ours":>5} {"superset":>8} {"upstream s":>10} '
          f'{"ours cold s":>11} {"ours warm s":>11} {"warm speed-up":>13}')
    failures, speedups, sizes = 0, [], []
    try:
        for sha in shas:
            _git(checkout, 'checkout', '-q', sha)
            changed = _git(checkout, 'diff', '--name-only', f'{sha}^', sha).split()
            if settings:
                with (checkout / 'pyproject.toml').open('a', encoding='utf-8') as pyproject:
                    pyproject.write('\n' + settings)
            upstream_times, ours_cold, ours_warm = [], [], []
            for _ in range(args.repeat):
                elapsed, theirs = _upstream(checkout, changed)
                upstream_times.append(elapsed)
                elapsed, _ = _ours(checkout, sha, cold=True)
                ours_cold.append(elapsed)
                elapsed, ours = _ours(checkout, sha, cold=False)
                ours_warm.append(elapsed)
            ok = theirs <= ours and bool(ours)
            failures += not ok
            upstream_s, cold_s, warm_s = (statistics.median(t) for t in (upstream_times, ours_cold, ours_warm))
            speedups.append(upstream_s / warm_s)
            sizes.append((len(theirs), len(ours)))
            print(f'{sha[:10]} {len(changed):>5} {len(theirs):>8} {len(ours):>5} {"yes" if ok else "NO":>8} '
                  f'{upstream_s:>10.3f} {cold_s:>11.3f} {warm_s:>11.3f} {upstream_s / warm_s:>12.1f}x', flush=True)
            if not ok:
                print(f'  missing: {sorted(theirs - ours)}' if theirs - ours else '  ours is empty')
            if settings:
                _git(checkout, 'checkout', '-q', '--', 'pyproject.toml')
    finally:
        if settings:
            _git(checkout, 'checkout', '-q', '--', 'pyproject.toml')
        _git(checkout, 'checkout', '-q', start_ref)
    print(f'{len(shas)} commits; {len(shas) - failures} with ours a non-empty superset of upstream\'s; '
          f'median warm speed-up {statistics.median(speedups):.1f}x; median selection upstream '
          f'{statistics.median(t for t, _ in sizes):g}, ours {statistics.median(o for _, o in sizes):g} test files')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
