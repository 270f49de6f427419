# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The load test of `mrbot webhook` with its figures printed: the receiver served by uvicorn on loopback against the
fake GitLab, deliveries from four clients at once, a tenth of them hostile (tests/mrbot/ci/receiver_load.py).

Usage: python scripts/webhook_load.py [DELIVERIES]   (default: 1000; needs the `webhook` and `test` extras)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.mrbot.ci.receiver_load import CLIENTS, WARM_UP, run_load  # noqa: E402


def main() -> int:
    deliveries = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory() as folder:
        figures = run_load(Path(folder), deliveries)
    answers = ', '.join(f'{count} x {status}' for status, count in sorted(figures.answers.items()))
    runs = sorted(set(figures.runs_per_note.values()))
    print(f'{figures.deliveries} deliveries from {CLIENTS} clients ({answers})')
    print(f'after a warm-up of {WARM_UP}: {figures.per_second:.0f} deliveries/s, round trip p50 {figures.p50_ms:.1f} ms, '
          f'p99 {figures.p99_ms:.1f} ms; every note settled {figures.settled_s:.1f} s after the warm-up')
    print(f'{figures.notes} command notes, each run {" or ".join(map(str, runs))} time(s)')
    print(f'resident memory {figures.rss_warm_mb:.1f} MB after the warm-up, {figures.rss_end_mb:.1f} MB at the end')
    return 0


if __name__ == '__main__':
    sys.exit(main())
