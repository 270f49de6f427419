# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""A throwaway git repository for the bot's tests, and the `repo` fixture that hands one to a test."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mrbot import git
from mrbot.check import evaluate
from mrbot.repo.workspace import Workspace
from mrbot.rules import all_rules


class Repo:
    """A throwaway git repository for checking changes: commit a base, write a head, run rules over the difference."""

    HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'

    def __init__(self, root: Path) -> None:
        self.root = root
        self.git('init', '-q', '-b', 'main')

    def git(self, *args: str) -> str:
        done = subprocess.run(['git', '-c', 'user.name=Test', '-c', 'user.email=test@example.com', *args],
                              cwd=self.root, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    def write(self, files: dict[str, str | bytes | None]) -> None:
        """Write files into the working tree; None deletes one."""
        for path, content in files.items():
            target = self.root / path
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding='utf-8')

    def commit(self, files: dict[str, str | bytes | None], message: str = '[Test] Change') -> str:
        self.write(files)
        self.git('add', '-A')
        self.git('commit', '-q', '--allow-empty', '-m', message)
        return self.git('rev-parse', 'HEAD')

    def check(self, *rule_ids: str, base: str = 'HEAD', head: str | None = None, title: str | None = None,
              body: str | None = None, perf: bool = False, matrix=None):
        """Run the named rules (all when none are named) over base..head (the working tree by default), with the
        compilation `matrix` when one is given."""
        rules = [r for r in all_rules() if not rule_ids or r.id in rule_ids]
        assert not rule_ids or len(rules) == len(rule_ids), f'unknown rule among {rule_ids}'
        change = git.changeset(self.root, git.resolve(self.root, base), git.resolve(self.root, head) if head else None,
                               title, body, 'flag' if title is not None else None,
                               'flag' if body is not None else None, perf)
        return evaluate(change, Workspace.load(self.root), rules, matrix)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """An empty git repository on branch main; CI variables that would supply a PR title are cleared."""
    for name in ('GITHUB_EVENT_PATH', 'CI_MERGE_REQUEST_IID'):
        monkeypatch.delenv(name, raising=False)
    return Repo(tmp_path)
