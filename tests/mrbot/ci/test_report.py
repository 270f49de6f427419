# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The report on a pull or merge request's diff, through `mrbot action`: graded by the configuration of the branch it
targets, however old the commit it branched from."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from mrbot.ci.artifacts import ARTIFACT
from mrbot.cli import main
from tests.mrbot.forges.fakeforge import FakeGitHub, created_at
from tests.mrbot.test_action import PROJECT, PYPROJECT, Bot
from tests.mrbot.test_action import lab as lab

# A ruff rule the base branch takes up after the change branched: a public function wants a docstring.
STRICTER = PYPROJECT + '\n[tool.ruff.lint]\nselect = ["E", "F", "D103"]\n'


@pytest.fixture
def bot(repo, tmp_path_factory, monkeypatch) -> Iterator[Bot]:
    with FakeGitHub(PROJECT) as server:
        yield Bot(repo, server, tmp_path_factory.mktemp('runner'), monkeypatch)


def _advance_main(repo) -> str:
    """A commit on main after the change branched, adding the stricter ruff rule; the branch stays checked out."""
    repo.git('checkout', '-q', 'main')
    tip = repo.commit({'pyproject.toml': STRICTER}, '[Build] Docstrings on public functions')
    repo.git('checkout', '-q', 'topic')
    return tip


def test_a_pr_branched_before_a_ruff_rule_was_added_is_checked_by_it(bot):
    # N4: ruff's configuration came from the merge base, so a pull request branched from an old commit escaped
    # every ruff rule the base branch took up since
    bot.base = bot.server.branches['main'] = _advance_main(bot.repo)
    folder = bot.tmp / 'artifact'
    code, outputs, _ = bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    assert code == 0
    report = json.loads((folder / ARTIFACT).read_text())
    assert 'RUF:D103' in report['body'] and 'pkg/shift.py:1' in report['body']
    assert ('pkg/shift.py', 1, 'RUF:D103') in [(a['path'], a['line'], a['title']) for a in report['check']['annotations']]


def test_a_gitlab_merge_request_is_checked_by_the_target_as_it_was_when_its_head_was_pushed(lab, repo, monkeypatch):
    server, iid, head = lab
    server.branches['main'] = _advance_main(repo)
    # GitLab records the target's tip with each push: the push of this head came after the new rule
    server.push(iid, head, created_at(1))
    assert main(['action', '--forge', 'gitlab']) == 0
    [(_, note)] = server.notes_on(iid)
    assert 'RUF:D103' in note
