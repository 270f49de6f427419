# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The answer to a command, through `mrbot action` on GitHub's webhooks and the fake GitHub: which commit an unpinned
command runs, and which of the bot's markers count."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator

import pytest

from tests.mrbot.forges.fakeforge import OPENED, FakeGitHub, created_at
from tests.mrbot.test_action import PROJECT, Bot


@pytest.fixture
def bot(repo, tmp_path_factory, monkeypatch) -> Iterator[Bot]:
    with FakeGitHub(PROJECT) as server:
        yield Bot(repo, server, tmp_path_factory.mktemp('runner'), monkeypatch)


def test_an_unpinned_command_never_runs_a_commit_pushed_back_after_it_while_github_starts_no_pull_request_run(bot):
    # N1: GitHub starts no pull_request run while a PR has a merge conflict ("Events that trigger workflows"), so a
    # commit pushed back then was dated by its own older run, and an unpinned command ran it though it came after
    planted = bot.repo.commit({'pkg/shift.py': 'def shift(x):\n    return x + 2\n'}, '[Ops] Planted')
    bot.server.push(bot.number, planted, OPENED + datetime.timedelta(minutes=10))
    bot.server.pulls[bot.number]['conflict'] = True
    reviewed = bot.repo.commit({'pkg/shift.py': 'def shift(x):\n    return x + 3\n'}, '[Ops] Reviewed')
    bot.server.push(bot.number, reviewed, OPENED + datetime.timedelta(minutes=20))
    payload = bot.comment_payload('/bench scale')
    bot.server.push(bot.number, planted, created_at(payload['comment']['id']) + datetime.timedelta(seconds=30))
    _, outputs, _ = bot.act('issue_comment', payload)
    assert outputs['authorized'] == 'false' and outputs['sha'] == ''
    reply = bot.server.comments_on(bot.number)[-1][1]
    assert f'the head of #{bot.number} became {planted[:12]} at 2026-12-03T04:00:30+00:00, after the command' in reply
    # the command to copy runs exactly the commit it names, once someone has looked at it
    assert f'To run `{planted[:12]}` once you have looked at it, comment:' in reply
    pinned = reply.split('```\n')[1].split('\n')[0]
    assert pinned == f'/bench scale --on hopper --rounds 10 --sha {planted}'
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload(pinned, login='olivia'))
    assert outputs['authorized'] == 'true' and outputs['sha'] == planted


def test_a_push_github_records_no_run_for_is_still_a_push_after_the_command(bot):
    # a push made with a workflow's token starts no workflow, the head record included ("Triggering a workflow from a
    # workflow"): a fork's own workflow pushed the reviewed commit and, after the comment, the planted one back
    planted = bot.repo.commit({'pkg/shift.py': 'def shift(x):\n    return x + 2\n'}, '[Ops] Planted')
    bot.server.push(bot.number, planted, OPENED + datetime.timedelta(minutes=10))
    reviewed = bot.repo.commit({'pkg/shift.py': 'def shift(x):\n    return x + 3\n'}, '[Ops] Reviewed')
    bot.server.push(bot.number, reviewed, OPENED + datetime.timedelta(minutes=20), by_workflow=True)
    payload = bot.comment_payload('/bench scale')
    asked = created_at(payload['comment']['id'])
    bot.server.push(bot.number, planted, asked + datetime.timedelta(seconds=30), by_workflow=True)
    _, outputs, _ = bot.act('issue_comment', payload)
    assert outputs['authorized'] == 'false'
    reply = bot.server.comments_on(bot.number)[-1][1]
    assert f'#{bot.number} changed at 2026-12-03T04:00:30+00:00, after the command was given' in reply
    assert f'```\n/bench scale --on hopper --rounds 10 --sha {planted}\n```' in reply


def test_with_no_record_of_the_push_the_reply_gives_the_pinned_command_to_copy(bot):
    bot.server.workflows.discard('mrbot-head.yml')
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/test'))
    assert outputs['authorized'] == 'false'
    reply = bot.server.comments_on(bot.number)[-1][1]
    assert f'there is no record of when {bot.head[:12]} became the head of #{bot.number}' in reply
    assert f'```\n/test --on hopper --sha {bot.head}\n```' in reply


def test_markers_another_workflow_echoes_from_a_pr_count_for_nothing(bot):
    # N7: every workflow's token comments as github-actions[bot]; one that echoes a PR's text could fill the PR's
    # queue (or free it, or vouch for a result) with markers the bot never wrote
    at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')
    forged = ''.join(f'<!-- mrbot:accepted {json.dumps(fields, sort_keys=True)} -->\n' for fields in (
        {'at': at, 'command': 'bench', 'run': str(run), 'runners': ['hopper'], 'sha': bot.head, 'user': 'mallory'}
        for run in (1, 2, 3)))
    bot.server.add_comment(bot.number, f'Thanks for the PR! It says:\n\n{forged}', login='github-actions[bot]',
                           type='Bot')
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/bench scale'))
    assert outputs['authorized'] == 'true', bot.server.comments_on(bot.number)[-1][1]


def test_without_the_signing_key_no_command_is_taken_and_the_reply_says_why(bot):
    payload = bot.comment_payload('/bench scale')
    bot.signing_key = ''
    _, outputs, _ = bot.act('issue_comment', payload)
    assert outputs['authorized'] == 'false'
    assert bot.server.comments_on(bot.number)[-1][1] == (
        'Not running commands here yet: the repository secret MRBOT_SIGNING_KEY that signs what mrbot keeps in its '
        'replies is not set (docs/ci.md, "The signing key").')
    assert [reaction[1] for reaction in bot.server.reactions] == ['-1']


def test_a_usage_error_quotes_what_was_written_as_code_so_no_link_of_it_renders(bot):
    from markdown_it import MarkdownIt

    bot.act('issue_comment', bot.comment_payload('/bench [Approved,see](https://evil.example/ok)'))
    reply = bot.server.comments_on(bot.number)[-1][1]
    assert "unknown op '[Approved,see](https://evil.example/ok)'" in reply
    tokens = MarkdownIt('commonmark').parse(reply)
    links = [child for token in tokens for child in token.children or () if child.type == 'link_open']
    assert links == []
    # a backtick in what was written closes no code span early
    bot.act('issue_comment', bot.comment_payload('/bench `[x](https://evil.example)`'))
    reply = bot.server.comments_on(bot.number)[-1][1]
    assert "the character '`' is not allowed in a command" in reply
    assert [child for token in MarkdownIt('commonmark').parse(reply) for child in token.children or ()
            if child.type == 'link_open'] == []


def test_help_is_answered_to_those_who_may_give_commands_alone(bot):
    bot.server.collaborators['rita'] = ('read', 'read')
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/mrbot help', login='rita', association='COLLABORATOR'))
    assert outputs['authorized'] == 'false'
    assert bot.server.comments_on(bot.number)[-1][1] == ('Not running `/mrbot help`: @rita has read permission; commands '
                                                         'need write access.')


def test_a_malformed_command_is_quoted_back_to_those_who_may_give_commands_alone(bot):
    bot.server.collaborators['rita'] = ('read', 'read')
    bot.act('issue_comment', bot.comment_payload('/bench nothing-like-an-op', login='rita', association='COLLABORATOR'))
    assert bot.server.comments_on(bot.number)[-1][1] == ('Not running that command: @rita has read permission; commands '
                                                         'need write access.')
