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


def test_a_result_naming_a_run_that_is_no_run_id_is_refused_on_one_line(bot, capsys):
    # PR code on the GPU runner writes the artifact: its text must not reach the poster's log as a workflow command
    bot.act('issue_comment', bot.comment_payload('/test'), run_id=9407)
    folder = bot.tmp / 'downloaded' / 'mrbot-result-hopper'
    folder.mkdir(parents=True)
    (folder / ARTIFACT).write_text(json.dumps({'schema': 1, 'kind': 'result', 'pr': bot.number, 'sha': bot.head,
                                               'run': '9407\n::error title=mrbot::Approved', 'purpose': 'test-hopper',
                                               'body': 'green', 'check': None}))
    capsys.readouterr()
    assert bot.act('workflow_run', bot.command_run(9407), '--artifact', str(folder.parent))[0] == 2
    captured = capsys.readouterr()
    assert 'run must be the id of the run that left it' in captured.err
    assert not any(line.startswith('::') for line in (captured.out + captured.err).splitlines())


def test_the_reason_a_check_run_is_withheld_comes_before_a_body_that_could_fold_it_away(bot):
    bot.server.commit_files[bot.head] = ['.github/workflows/mrbot-pr.yml']
    folder = bot.tmp / 'artifact'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    artifact = json.loads((folder / ARTIFACT).read_text())
    # the PR rewrote its own workflow, and so wrote its own report: ending in a <details> that nothing closes
    (folder / ARTIFACT).write_text(json.dumps({**artifact, 'body': 'All green.\n\n<details>\n\n'}))
    assert bot.act('workflow_run', bot.workflow_run_payload(9408, bot.head, [bot.number]), '--artifact',
                   str(folder))[0] == 0
    [(_, report)] = bot.server.comments_on(bot.number)
    assert report.splitlines()[1].startswith('_No check run of this report: it changes files under .github/')


def test_a_branch_asked_into_two_bases_fails_its_check_naming_both_whoever_opened_them(bot, capsys):
    # a check run shows on every PR its commit heads, graded with one PR's base, title and settings: one author's
    # backport into `release` would otherwise stand green on main's grading, or a PR into main on release's
    copy = bot.server.open_pull('topic', title='[Misc] Into release', body='')
    bot.server.branches['release'] = bot.base
    bot.server.pulls[copy]['base'] = 'release'
    folder, other = bot.tmp / 'artifact', bot.tmp / 'other'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    assert bot.act('workflow_run', bot.workflow_run_payload(9409, bot.head, [bot.number]), '--artifact',
                   str(folder))[0] == 0
    payload = bot.pull_request_payload(title='[Misc] Into release', body='')
    payload['number'] = payload['pull_request']['number'] = copy
    payload['pull_request']['base']['ref'] = 'release'
    bot.act('pull_request', payload, '--artifact', str(other))
    capsys.readouterr()
    assert bot.act('workflow_run', bot.workflow_run_payload(9410, bot.head, [copy]), '--artifact', str(other))[0] == 0
    assert (f'no check run of the report on #{copy}: {bot.head[:12]} is the head of #{copy} and #{bot.number}'
            in capsys.readouterr().err)
    assert [(run['conclusion'], run['output']['title']) for run in bot.server.check_runs] == [
        ('failure', 'Several open pull requests share this commit')] * 2


def test_a_copy_into_the_default_branch_does_not_carry_the_check_of_a_pr_into_another_base(bot):
    # the victim asks into `release` and fails its own check; a stranger's PR of the victim's branch into main, titled
    # as they like, must not become the only check on the victim's head
    bot.head = bot.repo.commit({'pkg/shift.py': bot.repo.HEADER + 'def shift(x):\n    return x + 1\n'}, '[Ops] Header')
    bot.server.branches['topic'] = bot.head
    bot.server.branches['release'] = bot.base
    victim = bot.number
    bot.server.pulls[victim].update(base='release', title='shift things')
    copy = bot.server.open_pull('topic', title='[Ops] Add shift', body=bot.pull_request_payload()['pull_request']['body'])
    mine, theirs = bot.tmp / 'victim', bot.tmp / 'copy'
    payload = bot.pull_request_payload(title='shift things')
    payload['pull_request']['base']['ref'] = 'release'
    bot.act('pull_request', payload, '--artifact', str(mine))
    assert bot.act('workflow_run', bot.workflow_run_payload(9501, bot.head, [victim]), '--artifact', str(mine))[0] == 0
    payload = bot.pull_request_payload()
    payload['number'] = payload['pull_request']['number'] = copy
    bot.act('pull_request', payload, '--artifact', str(theirs))
    assert bot.act('workflow_run', bot.workflow_run_payload(9502, bot.head, [copy]), '--artifact', str(theirs))[0] == 0
    assert [(run['head_sha'] == bot.head, run['conclusion'], run['output']['title']) for run in bot.server.check_runs] == [
        (True, 'failure', 'Several open pull requests share this commit')] * 2


def test_a_check_published_while_the_pr_was_edited_is_taken_back(bot):
    # the poster reads the PR, then posts: an edit in between (its window seen, or widened with comments to read) left
    # the check graded with the old title as the last word, for as long as the edit's run waited for approval
    folder = bot.tmp / 'artifact'
    bot.head = bot.repo.commit({'pkg/shift.py': bot.repo.HEADER + 'def shift(x):\n    return x + 1\n'}, '[Ops] Header')
    bot.server.branches['topic'] = bot.head
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    bot.server.after('POST', '/check-runs', lambda: bot.server.pulls[bot.number].update(title='shift things'))
    assert bot.act('workflow_run', bot.workflow_run_payload(9411, bot.head, [bot.number]), '--artifact',
                   str(folder))[0] == 0
    assert [(run['conclusion'], run['output']['title']) for run in bot.server.check_runs] == [
        ('success', '1 warning'), ('failure', 'The pull request changed while it was checked')]
