# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Progress on stderr: a live bar on a terminal, a plain line per finished item in CI or a pipe, nothing under -q."""

from __future__ import annotations

import sys
import threading

import pytest

from mrbot import progress
from mrbot.progress import Progress, say


def _report(total: int = 2, quiet: bool = False) -> Progress:
    with Progress('tests', total, quiet) as shown:
        threads = [threading.Thread(target=shown.finished, args=(f'[{i}/2] tests/test_{i}.py[bf16] 1 passed',))
                   for i in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return shown


def test_without_a_terminal_each_finished_item_is_one_plain_line_on_stderr(capsys):
    assert _report().done == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    assert sorted(captured.err.splitlines()) == ['[1/2] tests/test_1.py[bf16] 1 passed',
                                                 '[2/2] tests/test_2.py[bf16] 1 passed']


def test_quiet_shows_nothing_but_still_counts(capsys):
    assert _report(quiet=True).done == 2
    say('gate: tests/test_op.py', quiet=True)
    assert capsys.readouterr() == ('', '')


def test_on_a_terminal_the_lines_print_above_the_bar_as_written(monkeypatch, capsys):
    monkeypatch.setattr(progress, 'live', lambda: True)
    _report()
    err = capsys.readouterr().err
    # brackets are text, not rich markup
    assert '[1/2] tests/test_1.py[bf16] 1 passed' in err and '[2/2] tests/test_2.py[bf16] 1 passed' in err


@pytest.mark.parametrize(('terminal', 'ci', 'expected'), [
    (True, None, True), (True, 'true', False), (True, '1', False), (False, None, False), (True, 'false', True)])
def test_live_only_on_a_terminal_outside_ci(monkeypatch, terminal, ci, expected):
    monkeypatch.setattr(sys.stderr, 'isatty', lambda: terminal)
    if ci is None:
        monkeypatch.delenv('CI', raising=False)
    else:
        monkeypatch.setenv('CI', ci)
    assert progress.live() is expected
