# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""GitHub Actions: which of GitHub's webhook events `mrbot action` acts on, every published example of them
included, and the step that only GitHub has: finding the benchmark history the poster keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from mrbot.ci import github
from mrbot.ci.github import HISTORY_RUNS
from tests.mrbot import webhooks
from tests.mrbot.ci.fakerunner import PROJECT, Bot
from tests.mrbot.forges.fakeforge import created_at

POSTER = 'mrbot-post-result.yml'


@pytest.fixture
def bot(bot: Bot, monkeypatch) -> Bot:
    # a step of the result poster's workflow, whose own runs keep the history
    monkeypatch.setenv('GITHUB_WORKFLOW_REF', f'{PROJECT}/.github/workflows/{POSTER}@refs/heads/main')
    return bot


@pytest.mark.parametrize(('variant', 'reason'), [
    ({'user_type': 'Bot', 'login': 'dependabot[bot]'}, '@dependabot[bot] is a bot; bots do not give commands'),
    ({'action_name': 'edited'}, 'issue_comment edited: only new comments are read as commands'),
    ({'body': None}, 'the comment is not a command'),
    ({'body': 'Looks good, but please /bench it'}, 'the comment is not a command'),
    ({'on_pull': False}, 'is an issue, not a pull request'),
])
def test_what_is_not_for_the_bot_ends_cleanly(bot, capsys, variant, reason):
    options = {'body': '/bench scale', **variant}
    payload = bot.comment_payload(options.pop('body'), **options)
    before = len(bot.server.comments)
    code, outputs, _ = bot.act('issue_comment', payload)
    assert code == 0 and outputs == {} and len(bot.server.comments) == before
    assert reason in capsys.readouterr().out


def test_a_draft_ends_cleanly(bot, capsys):
    code, _, _ = bot.act('pull_request', bot.pull_request_payload(draft=True))
    assert code == 0 and 'is a draft' in capsys.readouterr().out
    assert bot.server.comments_on(bot.number) == []


def test_a_re_run_of_a_commands_run_runs_nothing(bot, monkeypatch):
    # a re-run keeps the run id that the first attempt's done marker names: its jobs would count in no queue, and a
    # re-run of the GPU job alone would pass authorize by altogether
    monkeypatch.setenv('GITHUB_RUN_ATTEMPT', '2')
    code, outputs, _ = bot.act('issue_comment', bot.comment_payload(f'/bench scale --sha {bot.head}'), run_id=801)
    replies = [body for author, body in bot.server.comments_on(bot.number) if author == 'github-actions[bot]']
    assert (code, outputs.get('authorized'), replies) == (0, None, [])
    workflow = (Path(__file__).resolve().parents[3] / '.github/workflows/mrbot-command.yml').read_text()
    assert '&& github.run_attempt == 1' in workflow.split('\n  gpu:')[1].split('strategy:')[0]


def _ids(event: str) -> list[str]:
    return [f"{payload['action']}-{index}" for index, payload in enumerate(webhooks.examples(event))]


@pytest.mark.parametrize('payload', webhooks.examples('pull_request'), ids=_ids('pull_request'))
def test_every_published_pull_request_example_is_checked_or_passed_over_in_one_line(bot, payload, capsys):
    pull = payload['pull_request']
    # bound to the fake's pull request and this checkout's commits; every other field as GitHub sends it
    payload['number'] = pull['number'] = bot.number
    pull['base']['sha'], pull['head']['sha'] = bot.base, bot.head
    code, outputs, _ = bot.act('pull_request', payload)
    checked = payload['action'] in github.PULL_REQUEST_ACTIONS and not pull['draft']
    assert code == 0
    assert outputs.get('pr') == (str(bot.number) if checked else None)
    assert len(bot.server.comments_on(bot.number)) == checked
    assert ('nothing to do' in capsys.readouterr().out) != checked


@pytest.mark.parametrize('on_pull', [False, True], ids=['as-published', 'a-command-on-the-pull-request'])
@pytest.mark.parametrize('payload', webhooks.examples('issue_comment'), ids=_ids('issue_comment'))
def test_every_published_issue_comment_example_is_answered_or_passed_over(bot, payload, on_pull):
    comment, author = payload['comment'], payload['comment']['user']['login']
    payload['issue']['number'] = bot.number
    bot.server.collaborators[author] = ('write', 'write')
    if on_pull:
        # the published comments are on an issue and give no command: the same comment on the pull request, giving one
        payload['issue']['pull_request'] = {'url': f'https://api.github.com/repos/{PROJECT}/pulls/{bot.number}'}
        comment['body'] = '/test'
    comment['id'] = bot.server.add_comment(bot.number, comment['body'], login=author)
    comment['created_at'] = created_at(comment['id']).isoformat(timespec='seconds').replace('+00:00', 'Z')
    code, outputs, _ = bot.act('issue_comment', payload)
    assert code == 0
    if on_pull and payload['action'] == 'created':
        assert (outputs['authorized'], outputs['command']) == ('true', 'test')
        assert [reaction[0] for reaction in bot.server.reactions] == [comment['id']]
    else:
        assert outputs == {} and bot.server.reactions == []


@pytest.mark.parametrize('payload', webhooks.examples('workflow_run'), ids=_ids('workflow_run'))
def test_every_published_workflow_run_example_posts_only_a_report_its_run_left(bot, payload, capsys):
    folder = bot.tmp / 'report'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    run = payload['workflow_run']
    # the published runs are of workflow_dispatch and repository_dispatch, which do not leave a report
    assert bot.act('workflow_run', payload, '--artifact', str(folder))[0] == 2
    assert f"artifact rejected: a {run['event']} run may not leave a report" in capsys.readouterr().err
    assert bot.server.comments_on(bot.number) == []
    # the same run, had it been this pull request's: every other field as GitHub sends it
    run.update(event='pull_request', head_sha=bot.head, head_branch='topic')
    run['head_repository']['full_name'] = PROJECT
    for listed in run['pull_requests']:
        listed['number'] = bot.number
    assert bot.act('workflow_run', payload, '--artifact', str(folder))[0] == 0
    assert len(bot.server.comments_on(bot.number)) == 1


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
