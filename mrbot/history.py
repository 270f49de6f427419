# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot history`: the timings the store holds, per op, mode and shape, as sparklines or a plot; and the trend a PR
body or a /bench comment shows of an op on the base branch."""

from __future__ import annotations

import argparse
from collections.abc import Collection, Sequence
from pathlib import Path

from mrbot import git
from mrbot.records import MrbotError
from mrbot.store import Store, Timing

BARS = '▁▂▃▄▅▆▇█'
PLOT_SUFFIXES = ('.png', '.svg')
DEFAULT_LAST = 12


def sparkline(values: Sequence[float]) -> str:
    """One bar per value, scaled between the smallest and the largest; a flat line when they are equal."""
    low, high = min(values), max(values)
    if high == low:
        return BARS[0] * len(values)
    return ''.join(BARS[round((v - low) / (high - low) * (len(BARS) - 1))] for v in values)


def _series(timings: list[Timing]) -> dict[tuple[str, str], list[Timing]]:
    """The timings grouped by (op, mode and shape), each group in the order it was recorded."""
    groups: dict[tuple[str, str], list[Timing]] = {}
    for timing in timings:
        groups.setdefault((timing.op, timing.series), []).append(timing)
    return groups


def trends(store: Store, op: str, gpu: str, shas: Collection[str] | None = None, last: int = DEFAULT_LAST
           ) -> dict[str, str]:
    """`mode shape -> 'sparkline median ms'` of `op`'s recorded `mrbot bench` medians on `gpu`, oldest first, at most
    `last` each: of the commits `shas` (the base branch's) when given. Interpreter timings are a trend of nothing."""
    groups = _series([t for t in store.timings(op) if t.source == 'bench' and t.evidence and t.gpu == gpu
                      and (shas is None or t.sha in shas)])
    return {series: f'{sparkline([t.median_ms for t in points[-last:]])} {points[-1].median_ms:.4f} ms'
            for (_, series), points in groups.items()}


def table(timings: list[Timing], last: int) -> str:
    lines = [f"{'op':<22} {'mode and shape':<34} {'points':>6} {'last ms':>9}  trend (last {last}, oldest first)"]
    for (op, series), points in _series(timings).items():
        shown = points[-last:]
        mark = '' if all(t.evidence for t in shown) else '  (some not evidence: interpreter)'
        lines.append(f'{op:<22} {series:<34} {len(points):>6} {points[-1].median_ms:>9.4f}  '
                     f'{sparkline([t.median_ms for t in shown])}{mark}')
    return '\n'.join(lines) + '\n'


def plot(timings: list[Timing], target: Path) -> None:
    """One panel per op: a line per mode and shape over the points in the order recorded, labelled by try or commit.
    Each line's SVG id is `op: mode shape`, so that a reader (or a test) finds each series."""
    try:
        import matplotlib
    except ImportError:
        raise MrbotError("--plot needs matplotlib: pip install 'mrbot[plot]'") from None
    matplotlib.use('Agg')
    from matplotlib import pyplot

    # text stays text in an SVG, so that the axes and the legend can be read back
    matplotlib.rcParams['svg.fonttype'] = 'none'
    groups = _series(timings)
    ops = list(dict.fromkeys(op for op, _ in groups))
    figure, axes = pyplot.subplots(len(ops), 1, figsize=(9, 3.6 * len(ops)), squeeze=False)
    for panel, op in zip(axes[:, 0], ops, strict=True):
        labels = list(dict.fromkeys(t.label for t in timings if t.op == op))
        for (series_op, series), points in groups.items():
            if series_op != op:
                continue
            (line,) = panel.plot([labels.index(t.label) for t in points], [t.median_ms for t in points], marker='o',
                                 label=series)
            line.set_gid(f'{op}: {series}')
        panel.set_title(op)
        panel.set_xlabel('try or commit, in the order recorded')
        panel.set_ylabel('median time (ms)')
        panel.set_xticks(range(len(labels)), labels, rotation=30, ha='right', fontsize=8)
        panel.legend(fontsize=8)
        panel.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(target)
    pyplot.close(figure)


def run(args: argparse.Namespace) -> int:
    if args.last < 1:
        raise MrbotError(f'--last must be at least 1, got {args.last}')
    if args.plot and Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:
        raise MrbotError(f"--plot {args.plot}: expected a file ending in {' or '.join(PLOT_SUFFIXES)}")
    store = Store.open(git.repo_root(Path.cwd()), create=False)
    if store is None:
        raise MrbotError('no history here yet: `mrbot loop` and `mrbot bench --record` write it')
    with store:
        timings = store.timings(args.op)
    if not timings:
        raise MrbotError(f"the history holds no timings{f' of {args.op}' if args.op else ''}")
    print(table(timings, args.last), end='')
    if args.plot:
        target = Path(args.plot)
        if not target.parent.is_dir():
            raise MrbotError(f'--plot {args.plot}: the folder {target.parent} does not exist')
        plot(timings, target)
        print(f'plot: {target}')
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--op', help='only this op')
    parser.add_argument('--last', type=int, default=DEFAULT_LAST, help='points in each sparkline (default: 12)')
    parser.add_argument('--plot', metavar='FILE', help='also draw the timings into FILE (.png or .svg; needs matplotlib)')
