# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot demo` explains the bot and shows the library's kernel agreeing with its reference here."""

import re

from mrbot.cli import build_parser
from mrbot.demo import run


def test_demo_describes_the_job_and_reports_a_small_kernel_error(capsys):
    assert run(build_parser().parse_args(['demo'])) == 0
    out = capsys.readouterr().out
    assert 'check' in out and 'bench' in out and 'PR body' in out
    error = re.search(r'max abs error against the naive recurrence: (\S+)', out)
    assert error is not None, out
    assert float(error.group(1)) < 1e-4
