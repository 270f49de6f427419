# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Progress of the long steps (test files, benchmark rounds) on stderr, where it never mixes with the results on stdout.

On a terminal it is a live bar with the totals so far, each finished item printed above it; where stderr is no
terminal, or CI is set, one plain line per finished item instead; under `-q` nothing.
"""

from __future__ import annotations

import os
import sys
import threading
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bar
from rich.text import Text


def live() -> bool:
    """Whether progress may redraw itself: stderr is a terminal and no CI (which logs every redraw) is set."""
    return sys.stderr.isatty() and os.environ.get('CI', '').lower() not in ('true', '1')


class Progress:
    """The progress of one step of `total` items (files, rounds), each reported once as it finishes, from any thread.

    Use it as a context manager: the bar shows while the step runs and is gone when it ends.
    """

    def __init__(self, title: str, total: int, quiet: bool = False) -> None:
        self.title = title
        self.total = total
        self.quiet = quiet
        self.done = 0
        self._lock = threading.Lock()
        self._bar: Bar | None = None

    def __enter__(self) -> Progress:
        if not self.quiet and live():
            self._bar = Bar(SpinnerColumn(), TextColumn('{task.description}'), BarColumn(), MofNCompleteColumn(),
                            TextColumn('{task.fields[totals]}'), TimeElapsedColumn(),
                            console=Console(stderr=True), transient=True)
            self._bar.add_task(self.title, total=self.total, totals='')
            self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def finished(self, line: str, totals: str = '') -> None:
        """One item finished: `line` says which and how it went; `totals` sums up the items so far, on the bar."""
        with self._lock:
            self.done += 1
            if self.quiet:
                return
            self._print(line)
            if self._bar is not None:
                self._bar.update(self._bar.task_ids[0], advance=1, totals=totals)

    def _print(self, line: str) -> None:
        if self._bar is not None:
            # Text, not markup: a test id such as `test_x[bf16]` would read as a style
            self._bar.console.print(Text(line))
        else:
            print(line, file=sys.stderr, flush=True)


def say(line: str, quiet: bool = False) -> None:
    """A line on stderr about what a command does now, unless quiet."""
    if not quiet:
        print(line, file=sys.stderr, flush=True)
