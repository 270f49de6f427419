# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The answer to a command, through `mrbot action` on GitHub's webhooks and the fake GitHub: who may give one, which
commit it runs, and which of the bot's markers count."""

from __future__ import annotations

import datetime
import json
import types

import pytest

from mrbot.ci import github, grammar
from mrbot.config import Config
from tests.mrbot.forges.fakeforge import OPENED, created_at


def test_a_member_command_is_accepted_at_the_current_head(bot):
    code, outputs, _ = bot.act('issue_comment', bot.comment_payload('/bench scale --modes fwd'), run_id=555)
    assert code == 0
    assert outputs['authorized'] == 'true' and outputs['command'] == 'bench' and outputs['sha'] == bot.head
    assert outputs['runner'] == 'hopper' and json.loads(outputs['labels']) == ['self-hosted', 'linux', 'x64', 'gpu', 'sm90']
    assert json.loads(outputs['args']) == {'ops': ['scale'], 'modes': ['fwd'], 'shapes': [], 'rounds': 10,
                                           'base': 'main', 'sha': None}
    assert json.loads(outputs['matrix']) == [{'runner': 'hopper', 'labels': json.loads(outputs['labels'])}]
    reply = bot.server.comments_on(bot.number)[-1][1]
    assert reply.startswith(f'Accepted from @alice: mrbot bench on scale --modes fwd, 10 rounds, against main, on hopper '
                            f'at `{bot.head[:10]}`')
    [accepted] = grammar.markers([reply], 'accepted', bot.seal)
    assert accepted['run'] == '555' and accepted['sha'] == bot.head
    assert [r[1] for r in bot.server.reactions] == ['eyes']


def test_an_outsiders_command_is_refused_and_starts_no_job(bot):
    code, outputs, _ = bot.act('issue_comment', bot.comment_payload('/bench scale', login='mallory',
                                                                    association='CONTRIBUTOR'))
    assert code == 0 and outputs['authorized'] == 'false' and outputs['sha'] == '' and outputs['matrix'] == '[]'
    assert bot.server.comments_on(bot.number)[-1][1] == ('Not running `/bench scale --on hopper --rounds 10`: @mallory '
                                                         'is not a member or collaborator of this repository '
                                                         '(contributor).')
    assert [r[1] for r in bot.server.reactions] == ['-1']


def test_a_member_without_write_access_is_refused(bot):
    bot.server.collaborators['rita'] = ('read', 'read')
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/test', login='rita', association='COLLABORATOR'))
    assert outputs['authorized'] == 'false'
    assert 'has read permission; commands need write access' in bot.server.comments_on(bot.number)[-1][1]


@pytest.mark.parametrize('text', ['/bench scale; curl x | sh', '/bench $(curl x | sh)', '/test `id`',
                                  '/bench scale\ncurl x | sh', '/bench ' + 'scale ' * 80])
def test_injection_attempts_are_usage_errors(bot, text):
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload(text))
    assert outputs['authorized'] == 'false' and outputs['command'] == ''
    reply = bot.server.comments_on(bot.number)[-1][1]
    assert reply.startswith('@alice ') and '/bench [OP ...]' in reply
    assert [r[1] for r in bot.server.reactions] == ['confused']


def test_help_answers_with_the_usage(bot):
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/mrbot help'))
    assert outputs['command'] == 'help' and outputs['authorized'] == 'true'
    assert grammar.USAGE in bot.server.comments_on(bot.number)[-1][1]


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


def test_without_the_signing_key_no_command_is_taken_and_the_reply_says_why(bot):
    payload = bot.comment_payload('/bench scale')
    bot.signing_key = ''
    _, outputs, _ = bot.act('issue_comment', payload)
    assert outputs['authorized'] == 'false'
    assert bot.server.comments_on(bot.number)[-1][1] == (
        'Not running commands here yet: the repository secret MRBOT_SIGNING_KEY that signs what mrbot keeps in its '
        'replies is not set (docs/ci.md, "The signing key").')
    assert [reaction[1] for reaction in bot.server.reactions] == ['-1']


def test_a_command_pinned_to_a_sha_is_refused_once_the_head_moved(bot):
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload(f'/bench scale --sha {bot.base}'))
    assert outputs['authorized'] == 'false'
    assert f'the head of #{bot.number} is now {bot.head[:12]}, not {bot.base}' in bot.server.comments_on(bot.number)[-1][1]
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload(f'/bench scale --sha {bot.head}', login='olivia',
                                                                 association='OWNER'))
    assert outputs['authorized'] == 'true' and outputs['sha'] == bot.head


def test_a_pin_is_the_whole_commit_id_so_a_later_commit_sharing_its_prefix_cannot_stand_for_it(bot):
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload(f'/bench scale --sha {bot.head[:7]}'))
    assert outputs['authorized'] == 'false'
    assert f'--sha {bot.head[:7]}: expected the whole commit id' in bot.server.comments_on(bot.number)[-1][1]


def test_an_unpinned_command_does_not_run_a_head_pushed_after_it_was_given(bot):
    reviewed = bot.head
    payload = bot.comment_payload('/bench scale')
    asked = created_at(payload['comment']['id'])
    pushed = bot.repo.commit({'pkg/shift.py': 'def shift(x):\n    return x - 1\n'}, '[Ops] After the comment')
    bot.server.push(bot.number, pushed, asked + datetime.timedelta(seconds=30))
    _, outputs, _ = bot.act('issue_comment', payload)
    assert outputs['authorized'] == 'false'
    assert (f'the head of #{bot.number} became {pushed[:12]} at 2026-12-03T04:') in bot.server.comments_on(bot.number)[-1][1]
    # pushing the reviewed commit back after the comment is a push after it too
    bot.server.push(bot.number, reviewed, asked + datetime.timedelta(minutes=1))
    assert bot.act('issue_comment', payload)[1]['authorized'] == 'false'
    # a pin to the commit the commenter names runs it, whenever it was pushed
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload(f'/bench scale --sha {reviewed}', login='olivia'))
    assert outputs['authorized'] == 'true' and outputs['sha'] == reviewed


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


def test_an_edit_of_the_pr_after_the_comment_cannot_be_told_from_an_unrecorded_push(bot):
    payload = bot.comment_payload('/bench scale')
    bot.server.edit(bot.number, created_at(payload['comment']['id']) + datetime.timedelta(seconds=30))
    _, outputs, _ = bot.act('issue_comment', payload)
    assert outputs['authorized'] == 'false'
    assert f'#{bot.number} changed at 2026-12-03T04:00:30+00:00, after the command' in (
        bot.server.comments_on(bot.number)[-1][1])


def test_with_no_record_of_the_push_only_a_pinned_command_runs(bot):
    bot.server.runs.clear()
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/bench scale'))
    assert outputs['authorized'] == 'false'
    assert f'there is no record of when {bot.head[:12]} became the head' in bot.server.comments_on(bot.number)[-1][1]
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload(f'/bench scale --sha {bot.head}', login='olivia'))
    assert outputs['authorized'] == 'true'


def test_with_no_record_of_the_push_the_reply_gives_the_pinned_command_to_copy(bot):
    bot.server.workflows.discard('mrbot-head.yml')
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/test'))
    assert outputs['authorized'] == 'false'
    reply = bot.server.comments_on(bot.number)[-1][1]
    assert f'there is no record of when {bot.head[:12]} became the head of #{bot.number}' in reply
    assert f'```\n/test --on hopper --sha {bot.head}\n```' in reply


def test_of_two_commands_answered_at_once_the_later_yields(bot, monkeypatch):
    # both authorize jobs read the comments before either posted: each sees no acceptance
    monkeypatch.setattr(github, 'bot_bodies', lambda notes: [])
    _, first, _ = bot.act('issue_comment', bot.comment_payload('/bench scale'), run_id=701)
    _, second, _ = bot.act('issue_comment', bot.comment_payload('/bench scale'), run_id=702)
    assert (first['authorized'], second['authorized']) == ('true', 'false')
    replies = [body for author, body in bot.server.comments_on(bot.number) if author == 'github-actions[bot]']
    assert replies[0].startswith('Accepted from @alice') and replies[1].startswith('Not running `/bench scale')
    assert 'try again in' in replies[1] and grammar.markers(replies[1:], 'accepted', bot.seal) == []
    # the accepted marker it replaced stays in the edit history: a copy of it finds its run done
    assert [m['run'] for m in grammar.markers(replies[1:], 'done', bot.seal)] == ['702']


def test_of_two_commands_at_once_the_one_that_started_first_and_replied_last_yields(bot, monkeypatch):
    # the first job to start is the last to reply: the other's marker is dated after this job's start, and is counted
    monkeypatch.setattr(github, 'bot_bodies', lambda notes: [])
    start = datetime.datetime.now(datetime.timezone.utc)
    clock = types.SimpleNamespace(datetime=types.SimpleNamespace(now=lambda tz=None: start), timezone=datetime.timezone)
    monkeypatch.setattr(github, 'datetime', clock)
    clock.datetime.now = lambda tz=None: start + datetime.timedelta(seconds=5)
    _, first, _ = bot.act('issue_comment', bot.comment_payload('/bench scale --on hopper blackwell'), run_id=701)
    clock.datetime.now = lambda tz=None: start
    _, second, _ = bot.act('issue_comment', bot.comment_payload('/bench scale --on hopper blackwell'), run_id=702)
    assert (first['authorized'], second['authorized']) == ('true', 'false')


def test_an_accepted_reply_that_cannot_be_settled_becomes_a_refusal_that_holds_no_queue(bot):
    # the replies cannot be read again after the accepted one is posted (the API errs, its quota spent): nothing runs,
    # so nothing may stay queued for the hours a job may take
    number = bot.number
    bot.server.after('POST', f'/issues/{number}/comments',
                     lambda: bot.server.fail('GET', f'/issues/{number}/comments', 500, times=20))
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/bench scale --on hopper blackwell'), run_id=901)
    [reply] = [body for author, body in bot.server.comments_on(number) if author == 'github-actions[bot]']
    assert outputs['authorized'] == 'false' and reply.startswith('Not running `/bench scale --on hopper blackwell ')
    now = datetime.datetime.now(datetime.timezone.utc)
    assert grammar.authorize('bob', 'MEMBER', 'write', [reply], now, Config(), jobs=2, seal=bot.seal).allowed


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
