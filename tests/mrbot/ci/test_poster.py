# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The poster, through `mrbot action` on GitHub's webhooks and the fake GitHub: what it decides from the report's own
commit, and how much it writes for one run."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator

import pytest

from mrbot.ci.artifacts import ARTIFACT
from tests.mrbot.forges.fakeforge import FakeGitHub, created_at
from tests.mrbot.test_action import PROJECT, Bot


@pytest.fixture
def bot(repo, tmp_path_factory, monkeypatch) -> Iterator[Bot]:
    with FakeGitHub(PROJECT) as server:
        yield Bot(repo, server, tmp_path_factory.mktemp('runner'), monkeypatch)


def test_whether_a_report_may_publish_a_check_run_is_decided_from_its_commit_not_from_a_later_push(bot, capsys):
    # N2: the report's commit rewrites the workflow that wrote it; a push right after the poster read the PR (a
    # decoy artifact or two make that window as long as one likes) left the PR's files without .github/, and the
    # poster published a green check on the workflow-rewriting commit
    bot.server.commit_files[bot.head] = ['pkg/shift.py', '.github/workflows/mrbot-pr.yml']
    folder = bot.tmp / 'artifact'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    later = bot.repo.commit({'pkg/shift.py': 'def shift(x):\n    return x + 1\n'}, '[Ops] Later')
    bot.server.commit_files[later] = ['pkg/shift.py']
    bot.server.after('GET', f'/pulls/{bot.number}',
                     lambda: bot.server.push(bot.number, later, created_at(1) + datetime.timedelta(minutes=1)))
    capsys.readouterr()
    code, _, _ = bot.act('workflow_run', bot.workflow_run_payload(9400, bot.head, [bot.number]), '--artifact',
                         str(folder))
    assert code == 0 and bot.server.branches['topic'] == later
    assert bot.server.check_runs == []
    assert 'it changes files under .github/, where the workflow that wrote this report lives' in capsys.readouterr().err


def test_one_report_is_one_check_run_write_with_the_most_severe_annotations_and_the_rest_in_the_comment(bot):
    # N6: annotations went out 50 a request, so one ordinary report cost a handful of check-run writes with the
    # repository's token, and every push or title edit as many again
    folder = bot.tmp / 'artifact'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    artifact = json.loads((folder / ARTIFACT).read_text())
    levels = ['notice'] * 120 + ['warning'] * 60 + ['failure'] * 10
    artifact['check']['annotations'] = [{'path': 'pkg/shift.py', 'line': 1, 'level': level, 'message': f'{level} {i}',
                                         'title': 'X'} for i, level in enumerate(levels)]
    (folder / ARTIFACT).write_text(json.dumps(artifact))
    code, _, _ = bot.act('workflow_run', bot.workflow_run_payload(9401, bot.head, [bot.number]), '--artifact',
                         str(folder))
    assert code == 0
    assert (bot.server.count('POST', '/check-runs'), sum(method == 'PATCH' and '/check-runs/' in path
                                                         for method, path in bot.server.requests)) == (1, 0)
    [run] = bot.server.check_runs
    assert [a['annotation_level'] for a in run['annotations']] == ['failure'] * 10 + ['warning'] * 40
    assert run['output']['summary'].startswith('_50 of 190 findings are annotated on the diff, the most severe first; '
                                               'the comment on the pull request lists them all._')


def test_a_report_on_a_commit_its_pr_has_moved_on_from_is_passed_over_not_refused(bot, capsys):
    # no concurrency group cancels an older check any more (N10): its report arrives after a newer push, and is news
    # to nobody
    folder = bot.tmp / 'artifact'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    newer = bot.repo.commit({'pkg/shift.py': 'def shift(x):\n    return x + 4\n'}, '[Ops] Newer')
    bot.server.push(bot.number, newer, created_at(1))
    capsys.readouterr()
    code, _, _ = bot.act('workflow_run', bot.workflow_run_payload(9402, bot.head, [bot.number]), '--artifact',
                         str(folder))
    assert code == 0 and bot.server.comments_on(bot.number) == [] and bot.server.check_runs == []
    assert (f'not posted: the report on #{bot.number} is of {bot.head[:12]}, and its head has moved on to '
            f'{newer[:12]}') in capsys.readouterr().err


def test_a_report_graded_with_an_earlier_title_is_passed_over_whenever_its_poster_runs(bot, capsys):
    # two edits seconds apart are two runs, and with no concurrency group the first one's poster may finish last: a
    # report graded as `[Docs]` must not stand as the check of a PR titled `[Perf]`
    early, late = bot.tmp / 'early', bot.tmp / 'late'
    bot.act('pull_request', bot.pull_request_payload('edited', title='[Docs] Add shift'), '--artifact', str(early))
    bot.server.pulls[bot.number]['title'] = '[Perf] Add shift, 3x'
    bot.act('pull_request', bot.pull_request_payload('edited', title='[Perf] Add shift, 3x'), '--artifact', str(late))
    assert bot.act('workflow_run', bot.workflow_run_payload(9403, bot.head, [bot.number]), '--artifact',
                   str(late))[0] == 0
    capsys.readouterr()
    assert bot.act('workflow_run', bot.workflow_run_payload(9404, bot.head, [bot.number]), '--artifact',
                   str(early))[0] == 0
    assert f'not posted: the report on #{bot.number} was graded with another title than the PR has now' in (
        capsys.readouterr().err)
    assert len(bot.server.check_runs) == 1
    [(_, report)] = bot.server.comments_on(bot.number)
    assert '[Docs]' not in report


def test_a_green_check_of_one_pr_gives_way_to_a_failing_one_once_another_pr_shares_its_commit(bot, capsys):
    # a check belongs to the commit: the one a `[Docs]` PR published would stand for a `[Perf]` PR opened later with
    # the same head, whose own report fails; and a closed PR's report publishes nothing over the open one's
    folder = bot.tmp / 'first'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    first = bot.number
    assert bot.act('workflow_run', bot.workflow_run_payload(9405, bot.head, [first]), '--artifact', str(folder))[0] == 0
    bot.server.branches['copy'] = bot.head
    bot.number = bot.server.open_pull('copy', title='[Perf] Shift, 3x', body='')
    later = bot.tmp / 'later'
    payload = bot.pull_request_payload(title='[Perf] Shift, 3x', body='')
    payload['pull_request']['head']['ref'] = 'copy'
    bot.act('pull_request', payload, '--artifact', str(later))
    run = bot.workflow_run_payload(9406, bot.head, [bot.number])
    run['workflow_run']['head_branch'] = 'copy'
    assert bot.act('workflow_run', run, '--artifact', str(later))[0] == 0
    assert [(r['conclusion'], r['output']['title']) for r in bot.server.check_runs][-1] == (
        'failure', 'Several open pull requests share this commit')
    bot.server.pulls[bot.number]['state'] = 'closed'
    capsys.readouterr()
    assert bot.act('workflow_run', run, '--artifact', str(later))[0] == 0
    assert f'no check run of the report on #{bot.number}: #{bot.number} is closed' in capsys.readouterr().err
    assert len(bot.server.check_runs) == 2
