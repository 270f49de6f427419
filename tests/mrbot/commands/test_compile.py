# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The face of `mrbot compile`: what it prints for a change that reaches no kernel."""

from __future__ import annotations

from mrbot.cli import main
from tests.mrbot.compile.test_stage import library as library


def test_a_change_that_reaches_no_kernel_compiles_nothing(library, capsys):
    library.commit({}, '[Test] Kernels')
    library.write({'README.md': 'words\n'})
    assert main(['compile']) == 0
    assert 'no kernel is reached by the change' in capsys.readouterr().out
