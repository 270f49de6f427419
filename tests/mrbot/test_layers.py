# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The layers of docs/architecture.md, as `make lint` checks them: the tree keeps them, and an import going up fails."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _lint(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).with_name('lint-imports')), '--no-cache'], cwd=tree,
                          env={'PYTHONPATH': str(tree), 'PATH': '/usr/bin:/bin'}, capture_output=True, text=True)


def test_the_tree_keeps_its_layers_and_an_import_going_up_fails_the_lint(tmp_path):
    for package in ('mrbot', 'checks'):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(ROOT / 'pyproject.toml', tmp_path)
    kept = _lint(tmp_path)
    assert kept.returncode == 0, kept.stdout[-3000:]
    # the records, at the ground floor, reaching for the command line at the top
    with open(tmp_path / 'mrbot' / 'records' / 'bench.py', 'a') as records:
        records.write('\nfrom mrbot import cli  # noqa: E402,F401\n')
    # and the repository's model, under the stages, reaching for the selection that reads it
    with open(tmp_path / 'mrbot' / 'repo' / 'graph.py', 'a') as graph:
        graph.write('\nfrom mrbot import selection  # noqa: E402,F401\n')
    broken = _lint(tmp_path)
    assert broken.returncode == 1
    assert 'mrbot.records is not allowed to import mrbot.cli' in broken.stdout
    assert '- mrbot.records.bench -> mrbot.cli (l.' in broken.stdout
    assert 'mrbot.repo is not allowed to import mrbot.selection' in broken.stdout
    assert '- mrbot.repo.graph -> mrbot.selection (l.' in broken.stdout
