# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The poster, through `mrbot action` on GitHub's webhooks and the fake GitHub: which artifacts of a run it takes,
what it decides from the report's own commit, how it posts the results of commands and frees their queue, and how
much it writes for one run."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from mrbot.ci import grammar
from mrbot.ci.artifacts import ARTIFACT, MAX_ARTIFACTS
from mrbot.cli import main
from mrbot.config import Config
from tests.mrbot.ci.fakerunner import BODY, PROJECT
from tests.mrbot.forges.fakeforge import created_at


def test_a_fork_pr_leaves_an_artifact_that_the_poster_checks_and_posts(bot):
    fork = 'mallory/Hello-World'
    # the same commit as the PR from this repository's branch, which is closed: its head is the fork's alone
    bot.server.pulls[bot.number]['state'] = 'closed'
    bot.number = bot.server.open_pull('topic', title='[Ops] Add shift', body=BODY, head_repo=fork)
    bot.server.branches[f'{fork}:topic'] = bot.head
    folder = bot.tmp / 'artifact'
    payload = bot.pull_request_payload()
    payload['pull_request']['head']['repo'] = {'full_name': fork, 'fork': True}
    code, _, _ = bot.act('pull_request', payload, '--artifact', str(folder))
    assert code == 0 and bot.server.comments_on(bot.number) == [] and bot.server.check_runs == []
    # GitHub lists no pull request in the workflow_run of a fork's run
    code, _, summary = bot.act('workflow_run', bot.workflow_run_payload(9001, bot.head, [], head_repo=fork),
                               '--artifact', str(folder))
    assert code == 0 and len(bot.server.comments_on(bot.number)) == 1 and len(bot.server.check_runs) == 1
    assert 'HDR001' in summary


def test_the_poster_rejects_a_forged_pr_number(bot, capsys):
    victim = bot.server.open_pull('main', title='[Docs] Someone else')
    folder = bot.tmp / 'artifact'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    artifact = json.loads((folder / ARTIFACT).read_text())
    (folder / ARTIFACT).write_text(json.dumps({**artifact, 'pr': victim, 'body': 'LGTM, merge it'}))
    capsys.readouterr()
    # the triggering run lists no PR (as for a fork), so only the PR's own head branch can vouch for the number
    code, _, _ = bot.act('workflow_run', bot.workflow_run_payload(9002, bot.head, []), '--artifact', str(folder))
    assert code == 2
    assert capsys.readouterr().err.strip() == (f'mrbot action: error: artifact rejected: #{victim} comes from '
                                               f'{PROJECT}:main, but the run checked {PROJECT}:topic')
    assert bot.server.comments_on(victim) == [] and bot.server.check_runs == []


def test_a_report_for_another_pr_with_the_same_head_is_rejected(bot, capsys):
    bot.server.branches['copy'] = bot.head
    victim = bot.server.open_pull('copy', title='[Docs] Someone else')
    folder = bot.tmp / 'artifact'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    artifact = json.loads((folder / ARTIFACT).read_text())
    (folder / ARTIFACT).write_text(json.dumps({**artifact, 'pr': victim}))
    capsys.readouterr()
    assert bot.act('workflow_run', bot.workflow_run_payload(9003, bot.head, []), '--artifact', str(folder))[0] == 2
    assert f'#{victim} comes from {PROJECT}:copy, but the run checked {PROJECT}:topic' in capsys.readouterr().err
    assert bot.server.comments_on(victim) == []


def test_the_check_a_report_publishes_is_ours_and_a_run_posts_one_artifact_per_purpose(bot, capsys):
    folder = bot.tmp / 'artifact'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    artifact = json.loads((folder / ARTIFACT).read_text())
    # the PR's own run wrote the artifact: it may name any check, such as one that branch protection requires
    (folder / ARTIFACT).write_text(json.dumps({**artifact, 'check': {**artifact['check'], 'name': 'required'}}))
    payload = bot.workflow_run_payload(9200, bot.head, [bot.number])
    assert bot.act('workflow_run', payload, '--artifact', str(folder))[0] == 0
    assert [run['name'] for run in bot.server.check_runs] == ['mrbot check']
    # the same report twenty times over would be twenty check runs and comment edits on the shared token
    many = bot.tmp / 'many'
    for number in range(20):
        (many / f'copy{number}').mkdir(parents=True)
        (many / f'copy{number}' / ARTIFACT).write_text(json.dumps(artifact))
    def edits() -> int:
        return sum(method == 'PATCH' and '/issues/comments/' in path for method, path in bot.server.requests)

    before, requests = edits(), len(bot.server.requests)
    capsys.readouterr()
    payload = bot.workflow_run_payload(9201, bot.head, [bot.number])
    assert bot.act('workflow_run', payload, '--artifact', str(many))[0] == 2
    assert (f'a pull_request run leaves one {ARTIFACT} at the top of its artifact, not 20 in subfolders'
            in capsys.readouterr().err)
    # refused before the forge is read: each copy would have cost reads on the repository's token
    assert len(bot.server.check_runs) == 1 and edits() == before and len(bot.server.requests) == requests


def test_a_marker_smuggled_in_a_title_is_defused_and_a_pr_run_cannot_post_a_result(bot, capsys):
    forged = grammar.marker('accepted', None, run='9100', user='mallory', at='2026-12-03T00:00:00+00:00', sha=bot.head,
                            command='bench', runners=['hopper'])
    payload = bot.pull_request_payload()
    payload['pull_request']['title'] = forged
    bot.act('pull_request', payload)
    [(_, report)] = bot.server.comments_on(bot.number)
    assert grammar.markers([report], 'accepted', None) == [] and '<\u2060!-- mrbot:accepted' in report
    # the PR's own run leaves a "result" with a green check run: the poster refuses it
    folder = bot.tmp / 'fake-result'
    folder.mkdir()
    (folder / ARTIFACT).write_text(json.dumps({
        'schema': 1, 'kind': 'result', 'pr': bot.number, 'sha': bot.head, 'run': '9100', 'purpose': 'bench-hopper',
        'body': '12 faster, 0 slower', 'check': None}))
    capsys.readouterr()
    assert bot.act('workflow_run', bot.workflow_run_payload(9100, bot.head, [bot.number]), '--artifact', str(folder))[0] == 2
    assert 'a pull_request run may not leave a result' in capsys.readouterr().err
    assert len(bot.server.comments_on(bot.number)) == 1


def test_only_a_report_may_publish_a_check_run(bot, capsys):
    bot.act('issue_comment', bot.comment_payload('/bench scale'), run_id=77)
    folder = bot.tmp / 'result'
    folder.mkdir()
    check = {'conclusion': 'success', 'title': 'all good', 'summary': '', 'annotations': []}
    (folder / ARTIFACT).write_text(json.dumps({
        'schema': 1, 'kind': 'result', 'pr': bot.number, 'sha': bot.head, 'run': '77', 'purpose': 'bench-hopper',
        'body': 'fine', 'check': check}))
    capsys.readouterr()
    assert bot.act('workflow_run', bot.command_run(77), '--artifact', str(folder))[0] == 2
    assert 'only the report of a pull_request run may publish a check run' in capsys.readouterr().err
    assert bot.server.check_runs == []


def test_a_report_on_a_commit_that_heads_another_open_pr_is_its_comment_and_a_failing_check(bot, capsys):
    # N9: a fork's PR whose head is the victim's head commit: rejecting the report whole let anyone silence every later
    # report of the victim's PR; a check on the commit shows on both PRs, so neither PR's own check may stand there
    fork = 'mallory/Hello-World'
    bot.server.branches[f'{fork}:topic'] = bot.head
    victim = bot.number
    copycat = bot.server.open_pull('topic', title='[Docs] Add shift', body=BODY, head_repo=fork)
    folder = bot.tmp / 'artifact'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    capsys.readouterr()
    code, _, _ = bot.act('workflow_run', bot.workflow_run_payload(9002, bot.head, [victim]), '--artifact', str(folder))
    shared = f'{bot.head[:12]} is the head of #{victim} and #{copycat}'
    assert code == 0 and f'no check run of the report on #{victim}: {shared}' in capsys.readouterr().err
    [(_, report)] = bot.server.comments_on(victim)
    assert 'HDR001' in report and f'_No check run of this report: {shared}._' in report
    [run] = bot.server.check_runs
    assert (run['name'], run['conclusion'], run['output']['title']) == (
        'mrbot check', 'failure', 'Several open pull requests share this commit')
    assert run['annotations'] == [] and bot.server.comments_on(copycat) == []


def test_a_pr_that_changes_the_workflows_gets_its_report_but_no_check_run(bot, capsys):
    bot.server.commit_files[bot.head] = ['pkg/shift.py', '.github/workflows/mrbot-pr.yml']
    folder = bot.tmp / 'artifact'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    capsys.readouterr()
    code, _, _ = bot.act('workflow_run', bot.workflow_run_payload(9003, bot.head, [bot.number]), '--artifact', str(folder))
    assert code == 0 and 'no check run of the report on #1: it changes files under .github/' in capsys.readouterr().err
    assert bot.server.check_runs == [] and len(bot.server.comments_on(bot.number)) == 1


def test_a_pr_with_more_files_than_github_compares_gets_its_report_but_no_check_run(bot, capsys):
    # the workflow change sorts after the 300 files a comparison lists: it cannot be ruled out, so no check is published
    bot.server.commit_files[bot.head] = [f'.a{i:03d}' for i in range(300)] + ['.github/workflows/mrbot-pr.yml']
    folder = bot.tmp / 'artifact'
    bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(folder))
    capsys.readouterr()
    code, _, _ = bot.act('workflow_run', bot.workflow_run_payload(9004, bot.head, [bot.number]), '--artifact', str(folder))
    assert code == 0 and 'no check run of the report on #1: the files it changes cannot all be read' in (
        capsys.readouterr().err)
    assert bot.server.check_runs == [] and len(bot.server.comments_on(bot.number)) == 1


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


def test_gpu_job_result_is_posted_only_for_the_run_that_was_accepted(bot, monkeypatch):
    bot.act('issue_comment', bot.comment_payload('/bench scale'), run_id=4242)
    folder = bot.tmp / 'result'
    for name, value in {'MRBOT_COMMAND': 'bench', 'MRBOT_SHA': bot.head, 'MRBOT_RUNNER': 'hopper',
                        'MRBOT_PR': str(bot.number), 'GITHUB_RUN_ID': '4242',
                        'MRBOT_ARGS': json.dumps({'ops': ['scale'], 'modes': [], 'shapes': [], 'rounds': 10,
                                                  'base': 'main', 'sha': None})}.items():
        monkeypatch.setenv(name, value)
    # this machine has no GPU: the job refuses to pretend it is a hopper runner, and says so in its result
    assert main(['action', 'run', '--out', str(folder)]) == 1
    artifact = json.loads((folder / ARTIFACT).read_text())
    assert artifact['purpose'] == 'bench-hopper' and artifact['run'] == '4242'
    assert 'this runner has no GPU, but class hopper needs sm_90' in artifact['body']
    forged = bot.tmp / 'forged'
    forged.mkdir()
    (forged / ARTIFACT).write_text(json.dumps({**artifact, 'run': '4243'}))
    assert bot.act('workflow_run', bot.command_run(4243), '--artifact', str(forged))[0] == 2
    code, _, _ = bot.act('workflow_run', bot.command_run(4242), '--artifact', str(folder))
    assert code == 0
    bodies = [body for _, body in bot.server.comments_on(bot.number)]
    assert '### mrbot bench on hopper' in bodies[-1]
    # the job is done where it was queued: in the accepted reply of its run
    [accepted] = [body for body in bodies if grammar.markers([body], 'accepted', bot.seal)]
    assert grammar.markers([accepted], 'done', bot.seal) == [{'run': '4242'}]


def test_results_of_several_runner_classes_are_posted_each_and_a_stranger_among_them_is_named(bot, monkeypatch):
    bot.act('issue_comment', bot.comment_payload('/test --on hopper blackwell'), run_id=31)
    downloaded = bot.tmp / 'downloaded'
    for runner in ('hopper', 'blackwell'):
        folder = downloaded / f'mrbot-result-{runner}'
        folder.mkdir(parents=True)
        body = f'### mrbot test on {runner}\n\nall green\n'
        (folder / ARTIFACT).write_text(json.dumps({'schema': 1, 'kind': 'result', 'pr': bot.number, 'sha': bot.head,
                                                          'run': '31', 'purpose': f'test-{runner}', 'body': body,
                                                          'check': None}))
    stranger = downloaded / 'mrbot-result-ampere'
    stranger.mkdir()
    (stranger / ARTIFACT).write_text(json.dumps({'schema': 1, 'kind': 'result', 'pr': bot.number, 'sha': bot.head,
                                                        'run': '31', 'purpose': 'test-ampere', 'body': 'all green',
                                                        'check': None}))
    code, _, _ = bot.act('workflow_run', bot.command_run(31), '--artifact', str(downloaded))
    assert code == 2
    posted = [body for _, body in bot.server.comments_on(bot.number) if body.startswith('<!-- mrbot:test-')]
    assert [body.splitlines()[1] for body in posted] == ['### mrbot test on blackwell', '### mrbot test on hopper']


def test_a_job_that_left_no_result_gets_its_note_and_leaves_the_queue(bot):
    downloaded = bot.tmp / 'downloaded'
    bot.act('issue_comment', bot.comment_payload('/bench scale --on hopper blackwell'), '--artifact',
            str(downloaded / 'mrbot-accepted'), run_id=64)
    assert sorted(p.parent.name for p in downloaded.rglob(ARTIFACT)) == ['accepted-blackwell', 'accepted-hopper']
    # the hopper job finished; the blackwell job was cancelled before it wrote anything
    (downloaded / 'mrbot-result-hopper').mkdir()
    body = '### mrbot bench on hopper\n\nall rows same\n'
    (downloaded / 'mrbot-result-hopper' / ARTIFACT).write_text(json.dumps(
        {'schema': 1, 'kind': 'result', 'pr': bot.number, 'sha': bot.head, 'run': '64', 'purpose': 'bench-hopper',
         'body': body, 'check': None}))
    listings = bot.server.count('GET', f'/issues/{bot.number}/comments')
    code, _, _ = bot.act('workflow_run', bot.command_run(64), '--artifact', str(downloaded))
    assert code == 0
    # two artifacts checked against the PR's comments, read once, which also find the accepted reply to mark done;
    # then each sticky comment looks for its own
    assert bot.server.count('GET', f'/issues/{bot.number}/comments') - listings == 3
    posted = {body.splitlines()[0]: body for _, body in bot.server.comments_on(bot.number)
              if body.startswith('<!-- mrbot:bench-')}
    assert 'all rows same' in posted['<!-- mrbot:bench-hopper -->']
    assert '**The job ended without leaving a result**' in posted['<!-- mrbot:bench-blackwell -->']
    bodies = [body for _, body in bot.server.comments_on(bot.number)]
    assert grammar.markers(bodies, 'done', bot.seal) == [{'run': '64'}]
    # nothing is queued any more: even a limit of one queued job lets the next command through
    bodies = [body for _, body in bot.server.comments_on(bot.number)]
    now = datetime.datetime.now(datetime.timezone.utc)
    assert grammar.authorize('bob', 'MEMBER', 'write', bodies, now, Config(command_queue_limit=1),
                             seal=bot.seal).allowed
    undone = [body.replace(grammar.marker('done', bot.seal, run='64'), '') for body in bodies]
    assert not grammar.authorize('bob', 'MEMBER', 'write', undone, now, Config(command_queue_limit=1),
                                 seal=bot.seal).allowed


def test_finished_jobs_stay_finished_when_later_results_replace_the_result_comment(bot):
    # three ordinary /bench runs, each by its own user (the cooldown is per user), each leaving its result
    bot.server.collaborators.update(carol=('write', 'write'), dave=('write', 'write'))
    for run, user in ((71, 'alice'), (72, 'olivia'), (73, 'carol')):
        folder = bot.tmp / f'run{run}'
        _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/bench scale', login=user), '--artifact',
                                str(folder / 'mrbot-accepted'), run_id=run)
        assert outputs['authorized'] == 'true', bot.server.comments_on(bot.number)[-1][1]
        (folder / 'mrbot-result-hopper').mkdir()
        (folder / 'mrbot-result-hopper' / ARTIFACT).write_text(json.dumps(
            {'schema': 1, 'kind': 'result', 'pr': bot.number, 'sha': bot.head, 'run': str(run),
             'purpose': 'bench-hopper', 'body': f'### mrbot bench on hopper\n\nrun {run}\n', 'check': None}))
        assert bot.act('workflow_run', bot.command_run(run), '--artifact', str(folder))[0] == 0
    # one result comment, holding the last result only; the queue is still empty, so a fourth command runs
    [result] = [body for _, body in bot.server.comments_on(bot.number) if body.startswith('<!-- mrbot:bench-hopper')]
    assert 'run 73' in result and 'run 72' not in result
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/bench scale', login='dave'), run_id=74)
    assert outputs['authorized'] == 'true', bot.server.comments_on(bot.number)[-1][1]


def test_a_result_longer_than_a_comment_is_posted_cut_with_a_pointer_and_whole_in_the_job_summary(bot):
    folder = bot.tmp / 'run75'
    bot.act('issue_comment', bot.comment_payload('/test'), '--artifact', str(folder / 'mrbot-accepted'), run_id=75)
    failure = '### mrbot test on hopper\n\n```\n' + 'E   AssertionError: tensors differ\n' * 2_100 + '```\n'
    (folder / 'mrbot-result-hopper').mkdir()
    (folder / 'mrbot-result-hopper' / ARTIFACT).write_text(json.dumps(
        {'schema': 1, 'kind': 'result', 'pr': bot.number, 'sha': bot.head, 'run': '75', 'purpose': 'test-hopper',
         'body': failure, 'check': None}))
    code, _, job_summary = bot.act('workflow_run', bot.command_run(75), '--artifact', str(folder))
    assert code == 0 and len(failure) > 70_000
    [(_, posted)] = [c for c in bot.server.comments_on(bot.number) if c[1].startswith('<!-- mrbot:test-hopper')]
    assert len(posted) <= 65_536 and posted.rstrip().endswith('._') and '/actions/runs/' in posted.splitlines()[-1]
    assert failure in job_summary
    # and the job is done, so the next command is not held in the queue by this one
    assert {'run': '75'} in grammar.markers([body for _, body in bot.server.comments_on(bot.number)], 'done',
                                            bot.seal)


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


def test_an_artifact_too_deep_to_parse_loses_no_other_result_and_frees_the_queue(bot, capsys):
    bot.act('issue_comment', bot.comment_payload('/bench scale --on hopper blackwell'), run_id=501)
    downloaded = bot.tmp / 'downloaded'
    for runner in ('hopper', 'blackwell'):
        folder = downloaded / f'mrbot-result-{runner}'
        folder.mkdir(parents=True)
        (folder / ARTIFACT).write_text(json.dumps({'schema': 1, 'kind': 'result', 'pr': bot.number, 'sha': bot.head,
                                                   'run': '501', 'purpose': f'bench-{runner}',
                                                   'body': f'{runner} numbers', 'check': None}))
    # PR code on hopper's runner drops a file beside its result
    (downloaded / 'mrbot-result-hopper' / 'x').mkdir()
    (downloaded / 'mrbot-result-hopper' / 'x' / ARTIFACT).write_text('[' * 100_000)
    capsys.readouterr()
    code, _, _ = bot.act('workflow_run', bot.command_run(501), '--artifact', str(downloaded))
    assert code == 2 and 'x/mrbot-artifact.json: expected the JSON artifact of an mrbot run (RecursionError)' in (
        capsys.readouterr().err)
    bodies = [body for _, body in bot.server.comments_on(bot.number)]
    assert any('blackwell numbers' in body for body in bodies) and any('hopper numbers' in body for body in bodies)
    assert [marker['run'] for marker in grammar.markers(bodies, 'done', bot.seal)] == ['501']


def test_a_result_the_forge_refuses_still_frees_the_queue(bot, capsys):
    bot.act('issue_comment', bot.comment_payload('/test --on hopper'), run_id=502)
    folder = bot.tmp / 'downloaded' / 'mrbot-result-hopper'
    folder.mkdir(parents=True)
    (folder / ARTIFACT).write_text(json.dumps({'schema': 1, 'kind': 'result', 'pr': bot.number, 'sha': bot.head,
                                               'run': '502', 'purpose': 'test-hopper', 'body': 'green', 'check': None}))
    bot.server.fail('POST', f'/issues/{bot.number}/comments', 422, times=1, message='Validation Failed')
    code, _, _ = bot.act('workflow_run', bot.command_run(502), '--artifact', str(folder.parent))
    assert code == 2 and 'test-hopper' in capsys.readouterr().err
    bodies = [body for _, body in bot.server.comments_on(bot.number)]
    assert [m['run'] for m in grammar.markers(bodies, 'done', bot.seal)] == ['502']


# A pull request of the repository other than the fixture's, named by an artifact its run did not answer.
OTHER_PR = 4321


def _beside_a_result(kind: str, folder: Path, result: dict) -> str:
    """What a GPU job's code may write beside its result: an artifact for another PR, or more files than a command
    leaves; the refusal each earns."""
    if kind == 'another-pr':
        (folder / 'other').mkdir()
        (folder / 'other' / ARTIFACT).write_text(json.dumps({**result, 'body': 'junk', 'pr': OTHER_PR}))
        return f"it names #{OTHER_PR}, but the run answers #{result['pr']}"
    for number in range(MAX_ARTIFACTS):
        (folder / f'copy{number}').mkdir()
        (folder / f'copy{number}' / ARTIFACT).write_text('{}')
    return f'artifacts, where a command leaves at most {MAX_ARTIFACTS}'


@pytest.mark.parametrize('kind', ['another-pr', 'many-files'])
def test_what_a_job_writes_beside_its_result_is_refused_alone(bot, capsys, kind):
    # reading another PR, or many files, would cost the token's quota; refusing the whole run would lose the other
    # runner's result and hold the PR's queue: the files are refused alone, and the rest posts and frees the queue
    downloaded = bot.tmp / 'downloaded'
    bot.act('issue_comment', bot.comment_payload('/bench scale --on hopper blackwell'), '--artifact',
            str(downloaded / 'mrbot-accepted'), run_id=601)
    result = {'schema': 1, 'kind': 'result', 'sha': bot.head, 'run': '601', 'check': None, 'pr': bot.number}
    for runner in ('hopper', 'blackwell'):
        (downloaded / f'mrbot-result-{runner}').mkdir(parents=True)
        (downloaded / f'mrbot-result-{runner}' / ARTIFACT).write_text(json.dumps(
            {**result, 'purpose': f'bench-{runner}', 'body': f'{runner} numbers'}))
    refusal = _beside_a_result(kind, downloaded / 'mrbot-result-hopper', {**result, 'purpose': 'bench-hopper'})
    requests = len(bot.server.requests)
    capsys.readouterr()
    assert bot.act('workflow_run', bot.command_run(601), '--artifact', str(downloaded))[0] == 2
    assert refusal in capsys.readouterr().err
    bodies = [body for _, body in bot.server.comments_on(bot.number)]
    assert any('hopper numbers' in body for body in bodies) and any('blackwell numbers' in body for body in bodies)
    assert [marker['run'] for marker in grammar.markers(bodies, 'done', bot.seal)] == ['601']
    assert not [path for _, path in bot.server.requests[requests:] if f'/{OTHER_PR}' in path]
