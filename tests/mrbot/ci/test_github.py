# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""GitHub Actions steps of `mrbot action` that only GitHub has: finding the benchmark history the poster keeps."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mrbot.ci.github import HISTORY_RUNS
from tests.mrbot.forges.fakeforge import FakeGitHub, created_at
from tests.mrbot.test_action import PROJECT, Bot

POSTER = 'mrbot-post-result.yml'


@pytest.fixture
def bot(repo, tmp_path_factory, monkeypatch) -> Iterator[Bot]:
    with FakeGitHub(PROJECT) as server:
        monkeypatch.setenv('GITHUB_WORKFLOW_REF', f'{PROJECT}/.github/workflows/{POSTER}@refs/heads/main')
        yield Bot(repo, server, tmp_path_factory.mktemp('runner'), monkeypatch)


def _find(bot: Bot) -> dict[str, str]:
    code, outputs, _ = bot.act('workflow_run', bot.command_run(9500), 'history')
    assert code == 0
    return outputs


def test_the_history_is_found_in_the_posters_own_runs_whatever_else_carries_its_name(bot):
    # N8: the history was the newest of the first 100 artifacts named mrbot-history in the whole repository: 100
    # newer ones from fork runs (or from the GPU job's pull-request code) hid it, and the poster started a new one
    kept = bot.server.add_run(POSTER, 'workflow_run', 'success', created_at(1), artifacts=('mrbot-history',))
    for minute in range(2, 152):
        bot.server.add_run('mrbot-pr.yml', 'pull_request', 'success', created_at(minute), artifacts=('mrbot-history',))
    bot.server.add_run('mrbot-command.yml', 'issue_comment', 'success', created_at(160), artifacts=('mrbot-history',))
    # a fork's pull request that rewrote the poster's file runs it on pull_request, never on workflow_run
    bot.server.add_run(POSTER, 'pull_request', 'success', created_at(161), artifacts=('mrbot-history',))
    # a poster run that failed before it could keep the history
    bot.server.add_run(POSTER, 'workflow_run', 'failure', created_at(162))
    assert _find(bot) == {'run': str(kept)}


def test_a_failed_posters_history_counts_and_the_newest_wins(bot):
    bot.server.add_run(POSTER, 'workflow_run', 'success', created_at(1), artifacts=('mrbot-history',))
    newer = bot.server.add_run(POSTER, 'workflow_run', 'failure', created_at(2), artifacts=('mrbot-history',))
    bot.server.add_run(POSTER, 'workflow_run', 'skipped', created_at(3), artifacts=('mrbot-history',))
    assert _find(bot) == {'run': str(newer)}


def test_the_history_starts_over_where_the_posters_last_runs_hold_none(bot):
    # every run of the poster carries the history on: none among its last runs is a history lost (to failed uploads,
    # or to 90 days without a command), which starts over rather than stop being kept
    assert _find(bot) == {'run': ''}
    bot.server.add_run(POSTER, 'workflow_run', 'success', created_at(1), artifacts=('mrbot-history',))
    for minute in range(HISTORY_RUNS):
        bot.server.add_run(POSTER, 'workflow_run', 'success', created_at(minute + 2))
    assert _find(bot) == {'run': ''}

