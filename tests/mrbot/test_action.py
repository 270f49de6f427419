# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot action` driven by GitHub's published webhook payloads against a fake GitHub on loopback, through PyGithub."""

from __future__ import annotations

import copy
import datetime
import json
import os
import re
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mrbot import commands
from mrbot.ci import event as ci_event
from mrbot.ci import github, job
from mrbot.ci import gitlab as ci_gitlab
from mrbot.ci.artifacts import ARTIFACT, MAX_ARTIFACTS, write_artifact
from mrbot.cli import main
from mrbot.commands import Command
from mrbot.config import Config
from mrbot.forges import connect
from mrbot.records import MrbotError
from mrbot.testing import Gpu
from tests.mrbot import webhooks
from tests.mrbot.forges.fakeforge import ACTIONS_TOKEN, BACKOFF, FakeGitHub, created_at

# What the GitHub jobs holding a write token install; they run the bot from the default branch's checkout.
TOKEN_JOBS = Path(__file__).resolve().parents[2] / '.ci' / 'token-jobs.txt'
# `mrbot action` in a process where every installed distribution that TOKEN_JOBS does not pin cannot be imported.
PINNED_ONLY = '''
import importlib.abc, importlib.metadata, re, sys

def canonical(name):
    return re.sub(r'[-_.]+', '-', name).lower()

pinned = {canonical(m.group(1)) for m in re.finditer(r'^([A-Za-z0-9_.-]+)(?:\\[[^]]*\\])?==', open(sys.argv[1]).read(), re.M)}
absent = {module for module, dists in importlib.metadata.packages_distributions().items()
          if not any(canonical(d) in pinned | {'mrbot'} for d in dists)}

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in absent:
            raise ModuleNotFoundError(f'{name}: not in .ci/token-jobs.txt', name=name)

sys.meta_path.insert(0, Absent())
from mrbot.ci import event
from mrbot.cli import main
from mrbot.forges import connect

url, token = sys.argv[2:4]
event.open_forge = lambda kind, project, environ: connect(kind, project, url=url, token=token, environ={}, backoff=0.01)
sys.exit(main(sys.argv[4:]))
'''
PROJECT = 'Codertocat/Hello-World'
# The repository secret MRBOT_SIGNING_KEY of the workflows that sign and read the bot's markers.
SIGNING_KEY = 'a signing key only the bot knows'
HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'
PYPROJECT = '''[tool.mrbot]
source-roots = ["pkg"]

[tool.mrbot.bench.ops.scale]
callable = "pkg.scale:scale"
gate = "tests/test_scale.py"

[tool.mrbot.bench.ops.scale.inputs]
x = { shape = ["B", "D"], dtype = "float32" }

[tool.mrbot.bench.ops.scale.shapes]
small = { B = 2, D = 4 }
'''
GATE = HEADER + '''import torch

from pkg.scale import scale


def test_scale():
    assert scale(torch.ones(2)).tolist() == [2.0, 2.0]
'''
BODY = '## Summary\n\nScale.\n\n## Test plan\n\nRan it.\n\n## Benchmark\n\nNone.\n\n## Breaking changes\n\nNone.\n'


class Bot:
    """A repository with a PR from `topic`, the fake GitHub that hosts it, and a way to run `mrbot action` there."""

    def __init__(self, repo, server: FakeGitHub, tmp: Path, monkeypatch) -> None:
        self.repo, self.server, self.tmp, self.monkeypatch = repo, server, tmp, monkeypatch
        self.base = repo.commit({'pyproject.toml': PYPROJECT, 'pkg/__init__.py': HEADER,
                                 'pkg/scale.py': HEADER + 'def scale(x):\n    return x * 2\n', 'tests/test_scale.py': GATE},
                                '[Ops] Base')
        repo.git('checkout', '-q', '-b', 'topic')
        # no license header: one HDR001 error on line 1 of the new file
        self.head = repo.commit({'pkg/shift.py': 'def shift(x):\n    return x + 1\n'}, '[Ops] Add shift')
        server.branches.update(main=self.base, topic=self.head)
        self.number = server.open_pull('topic', title='[Ops] Add shift', body=BODY)
        server.collaborators.update(alice=('write', 'write'), olivia=('admin', 'admin'))
        monkeypatch.chdir(repo.root)
        # the adapters' default pauses between writes are PyGithub's (1 s); a test has no rate limit to respect
        monkeypatch.setattr(ci_event, 'open_forge', lambda kind, project, environ: connect(
            kind, project, url=server.url, token=ACTIONS_TOKEN, environ={}, backoff=BACKOFF))
        self.runs = 0
        # what the workflows pass as MRBOT_SIGNING_KEY
        self.signing_key = SIGNING_KEY

    @property
    def seal(self) -> commands.Seal:
        """What proves the bot's markers on the PR."""
        return commands.Seal.of(SIGNING_KEY.encode(), 'github', PROJECT, self.number)

    def pull_request_payload(self, action_name: str = 'opened', **changes) -> dict:
        payload = webhooks.example('pull_request', 'opened')
        payload['action'] = action_name
        payload['number'] = self.number
        pull = payload['pull_request']
        pull.update({'number': self.number, 'title': '[Ops] Add shift', 'body': BODY, 'draft': False, **changes})
        pull['base']['sha'], pull['head']['sha'] = self.base, self.head
        pull['base']['ref'], pull['head']['ref'] = 'main', 'topic'
        return payload

    def comment_payload(self, body: str | None, login: str = 'alice', association: str = 'MEMBER',
                        user_type: str = 'User', action_name: str = 'created', on_pull: bool = True) -> dict:
        payload = webhooks.example('issue_comment', 'created')
        payload['action'] = action_name
        payload['issue']['number'] = self.number
        if on_pull:
            payload['issue']['pull_request'] = {'url': f'https://api.github.com/repos/{PROJECT}/pulls/{self.number}'}
        comment = payload['comment']
        comment['id'] = self.server.add_comment(self.number, body or '', login=login, type=user_type)
        # written when the fake says it was, after the PR's head was pushed
        comment.update(body=body, author_association=association,
                       created_at=created_at(comment['id']).isoformat(timespec='seconds').replace('+00:00', 'Z'))
        comment['user'].update(login=login, type=user_type)
        return payload

    def workflow_run_payload(self, run_id: int, head_sha: str, pulls: list[int], event: str = 'pull_request',
                             head_repo: str = PROJECT) -> dict:
        """The `workflow_run` of a finished `mrbot PR` run (`event` pull_request) or `mrbot command` run (issue_comment,
        whose head is the default branch)."""
        payload = webhooks.example('workflow_run', 'completed', having='pull_requests')
        payload['repository']['default_branch'] = 'main'
        run = payload['workflow_run']
        run.update(id=run_id, head_sha=head_sha, event=event, head_branch='topic' if event == 'pull_request' else 'main',
                   head_repository={'full_name': head_repo})
        template = run['pull_requests'][0]
        run['pull_requests'] = [{**copy.deepcopy(template), 'number': n} for n in pulls]
        return payload

    def command_run(self, run_id: int) -> dict:
        """The `workflow_run` of a finished `mrbot command` run: triggered by a comment, so on the default branch."""
        return self.workflow_run_payload(run_id, self.base, [], 'issue_comment')

    def act(self, event: str, payload: dict, *argv: str, run_id: int = 7000,
            pinned_only: bool = False) -> tuple[int, dict[str, str], str]:
        """Run `mrbot action` as a workflow step would; returns the exit code, the step outputs and the job summary.
        `pinned_only` runs it in a process that can import nothing installed beyond TOKEN_JOBS."""
        self.runs += 1
        step = self.tmp / f'step{self.runs}'
        step.mkdir()
        (step / 'event.json').write_text(json.dumps(payload))
        environ = {'GITHUB_EVENT_NAME': event, 'GITHUB_EVENT_PATH': str(step / 'event.json'),
                   'GITHUB_REPOSITORY': PROJECT, 'GITHUB_RUN_ID': str(run_id), 'GITHUB_SERVER_URL': 'https://github.example',
                   'GITHUB_OUTPUT': str(step / 'output'), 'GITHUB_STEP_SUMMARY': str(step / 'summary'),
                   'MRBOT_SIGNING_KEY': self.signing_key}
        for name, value in environ.items():
            self.monkeypatch.setenv(name, value)
        if pinned_only:
            done = subprocess.run([sys.executable, '-c', PINNED_ONLY, str(TOKEN_JOBS), self.server.url, ACTIONS_TOKEN,
                                   'action', *argv], capture_output=True, text=True)
            assert 'Traceback' not in done.stderr, done.stderr
            code = done.returncode
        else:
            code = main(['action', *argv])
        outputs = dict(line.split('=', 1) for line in (step / 'output').read_text().splitlines()) \
            if (step / 'output').exists() else {}
        summary = (step / 'summary').read_text() if (step / 'summary').exists() else ''
        return code, outputs, summary


@pytest.fixture
def bot(repo, tmp_path_factory, monkeypatch) -> Iterator[Bot]:
    with FakeGitHub(PROJECT) as server:
        # the workflow's files (payloads, outputs, artifacts) live outside the checkout, as on a runner
        yield Bot(repo, server, tmp_path_factory.mktemp('runner'), monkeypatch)


def test_report_is_one_comment_edited_in_place_and_a_check_run_each_time(bot):
    code, outputs, summary = bot.act('pull_request', bot.pull_request_payload())
    # HDR001 on the new file's first line, and SEL001 (no test reaches it), which has no line to annotate
    assert code == 0 and outputs == {'pr': str(bot.number), 'errors': '1', 'findings': '2'}
    comments = bot.server.comments_on(bot.number)
    assert len(comments) == 1 and comments[0][0] == 'github-actions[bot]'
    assert 'HDR001' in comments[0][1] and 'pkg/shift.py:1' in comments[0][1]
    assert '### mrbot check' in summary
    [run] = bot.server.check_runs
    assert run['head_sha'] == bot.head and run['conclusion'] == 'failure' and run['name'] == 'mrbot check'
    assert [(a['path'], a['start_line'], a['annotation_level']) for a in run['annotations']] == [
        ('pkg/shift.py', 1, 'failure')]
    # the author fixes the header and pushes: the same comment is edited, never a second one
    bot.head = bot.repo.commit({'pkg/shift.py': HEADER + 'def shift(x):\n    return x + 1\n'}, '[Ops] Header')
    bot.server.branches['topic'] = bot.head
    code, outputs, _ = bot.act('pull_request', bot.pull_request_payload('synchronize'))
    assert code == 0 and outputs['errors'] == '0'
    comments = bot.server.comments_on(bot.number)
    assert len(comments) == 1 and '**1 warning** in 1 changed file.' in comments[0][1] and 'HDR001' not in comments[0][1]
    assert [r['conclusion'] for r in bot.server.check_runs] == ['failure', 'success']


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


def test_a_report_notifies_nobody_and_carries_no_html_of_the_pr(bot):
    bot.head = bot.repo.commit({'pkg/@octocat <b>x</b>.py': 'x = 1\n'}, '[Ops] More')
    bot.server.branches['topic'] = bot.head
    payload = bot.pull_request_payload(title='@octo-org/everyone [Ops] Add shift')
    payload['pull_request']['head']['sha'] = bot.head
    bot.act('pull_request', payload)
    [(_, report)] = bot.server.comments_on(bot.number)
    assert '@octo-org' not in report and '@\u2060octo-org/everyone' in report
    assert '<b>' not in report and '@octocat' not in report


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
    [accepted] = commands.markers([reply], 'accepted', bot.seal)
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
    assert commands.USAGE in bot.server.comments_on(bot.number)[-1][1]


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


@pytest.mark.parametrize(('event', 'garble', 'message'), [
    ('pull_request', lambda p: p['pull_request'].update(number='x'),
     'pull_request.number: expected a whole number, got the string "x"'),
    ('pull_request', lambda p: p['pull_request'].update(title=5), 'pull_request.title: expected a string, got 5'),
    ('pull_request', lambda p: p['pull_request'].update(body={'a': 1}),
     'pull_request.body: expected a string or null, got an object'),
    ('pull_request', lambda p: p['pull_request'].update(body=['a']),
     'pull_request.body: expected a string or null, got a list'),
    ('pull_request', lambda p: p['pull_request'].pop('head'), 'pull_request.head: missing, expected an object'),
    ('issue_comment', lambda p: p['comment'].update(user='alice'), 'comment.user: expected an object, got the string "alice"'),
    ('issue_comment', lambda p: p['comment'].update(body=7), 'comment.body: expected a string or null, got 7'),
    ('issue_comment', lambda p: p['issue'].update(number=True), 'issue.number: expected a whole number, got true'),
    ('workflow_run', lambda p: p['workflow_run'].update(head_repository='x/y'),
     'workflow_run.head_repository: expected an object or null, got the string "x/y"'),
    ('workflow_run', lambda p: p.pop('workflow_run'), 'workflow_run: missing, expected an object'),
])
def test_a_payload_no_forge_sends_is_one_line_and_exit_2(bot, capsys, event, garble, message):
    payload = {'pull_request': bot.pull_request_payload, 'issue_comment': lambda: bot.comment_payload('/test'),
               'workflow_run': lambda: bot.workflow_run_payload(9300, bot.head, [bot.number])}[event]()
    garble(payload)
    code, _, _ = bot.act(event, payload, *(['--artifact', str(bot.tmp)] if event == 'workflow_run' else []))
    err = capsys.readouterr().err
    assert code == 2 and f'the webhook payload: {message}' in err and len(err.strip().splitlines()) == 1
    assert [author for author, _ in bot.server.comments_on(bot.number) if author != 'alice'] == []


def test_an_output_file_the_step_cannot_write_is_refused_before_the_work(bot, capsys, monkeypatch):
    payload = bot.pull_request_payload()
    bot.act('pull_request', payload)
    before = bot.server.comments_on(bot.number)
    step = bot.tmp / 'garbled'
    step.mkdir()
    (step / 'event.json').write_text(json.dumps(payload))
    for name, value in {'GITHUB_EVENT_NAME': 'pull_request', 'GITHUB_EVENT_PATH': str(step / 'event.json'),
                        'GITHUB_OUTPUT': '/nonexistent/output'}.items():
        monkeypatch.setenv(name, value)
    assert main(['action']) == 2
    assert 'GITHUB_OUTPUT=/nonexistent/output: cannot append to it' in capsys.readouterr().err
    assert bot.server.comments_on(bot.number) == before


def test_gpu_job_result_is_posted_only_for_the_run_that_was_accepted(bot, monkeypatch):
    bot.act('issue_comment', bot.comment_payload('/bench scale'), run_id=4242)
    folder = bot.tmp / 'result'
    for name, value in {'MRBOT_COMMAND': 'bench', 'MRBOT_SHA': bot.head, 'MRBOT_RUNNER': 'hopper',
                        'MRBOT_PR': str(bot.number), 'MRBOT_USER': 'alice', 'GITHUB_RUN_ID': '4242',
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
    [accepted] = [body for body in bodies if commands.markers([body], 'accepted', bot.seal)]
    assert commands.markers([accepted], 'done', bot.seal) == [{'run': '4242'}]


def test_the_jobs_holding_a_write_token_run_on_the_hash_pinned_set_alone(bot, monkeypatch):
    # authorize: parse, authorize and answer a command, leave the note for a job that leaves no result
    accepted = bot.tmp / 'downloaded' / 'mrbot-accepted'
    code, outputs, _ = bot.act('issue_comment', bot.comment_payload('/bench scale'), '--artifact', str(accepted),
                               run_id=61, pinned_only=True)
    assert code == 0 and outputs['authorized'] == 'true' and outputs['command'] == 'bench'
    # post: the note of a job that left nothing, then a result, each onto the PR and its queue
    code, _, _ = bot.act('workflow_run', bot.command_run(61), '--artifact', str(accepted.parent), pinned_only=True)
    assert code == 0
    bodies = [body for _, body in bot.server.comments_on(bot.number)]
    assert '**The job ended without leaving a result**' in bodies[-1]
    assert commands.markers([body for body in bodies if commands.markers([body], 'accepted', bot.seal)], 'done',
                            bot.seal) == [
        {'run': '61'}]
    # every line pins one version by its hashes, as `pip install --require-hashes` demands
    requirements = re.sub(r'\\\n\s*', ' ', TOKEN_JOBS.read_text())
    pins = [line for line in requirements.splitlines() if line.strip() and not line.lstrip().startswith('#')]
    assert pins and all(re.match(r'[A-Za-z0-9_.\[\]-]+==\S+( +--hash=sha256:[0-9a-f]{64})+( +#.*)?$', pin)
                        for pin in pins)


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
    assert {'run': '75'} in commands.markers([body for _, body in bot.server.comments_on(bot.number)], 'done',
                                             bot.seal)


def test_gpu_job_refuses_a_checkout_other_than_the_authorized_sha(bot, monkeypatch):
    for name, value in {'MRBOT_COMMAND': 'test', 'MRBOT_SHA': bot.base, 'MRBOT_RUNNER': 'hopper',
                        'MRBOT_PR': str(bot.number), 'MRBOT_ARGS': json.dumps({'tests': [], 'k': None, 'sha': None})}.items():
        monkeypatch.setenv(name, value)
    folder = bot.tmp / 'result'
    assert main(['action', 'run', '--out', str(folder)]) == 1
    body = json.loads((folder / ARTIFACT).read_text())['body']
    assert f'the checkout is at {bot.head[:12]}, but the command was authorized for {bot.base[:12]}' in body


def test_a_pr_cannot_switch_a_rule_off_for_itself(bot):
    quieter = PYPROJECT.replace('[tool.mrbot]\n', '[tool.mrbot]\nrules = { HDR001 = "off" }\n')
    bot.head = bot.repo.commit({'pyproject.toml': quieter}, '[Ops] Quieter')
    bot.server.branches['topic'] = bot.head
    _, outputs, _ = bot.act('pull_request', bot.pull_request_payload('synchronize'))
    assert outputs['errors'] == '1' and 'HDR001' in bot.server.comments_on(bot.number)[0][1]


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
    assert [marker['run'] for marker in commands.markers(bodies, 'done', bot.seal)] == ['501']


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
    assert [m['run'] for m in commands.markers(bodies, 'done', bot.seal)] == ['502']


@pytest.fixture
def lab(repo, monkeypatch):
    """The same change as a GitLab merge request, with the pipeline's predefined variables."""
    from tests.mrbot.forges.fakeforge import PROJECT_TOKEN, FakeGitLab

    base = repo.commit({'pyproject.toml': PYPROJECT, 'pkg/__init__.py': HEADER}, '[Ops] Base')
    repo.git('checkout', '-q', '-b', 'topic')
    head = repo.commit({'pkg/shift.py': 'def shift(x):\n    return x + 1\n'}, '[Ops] Add shift')
    with FakeGitLab() as server:
        server.branches.update(main=base, topic=head)
        iid = server.open_merge_request('topic', title='[Ops] Add shift', description=BODY)
        server.members['alice'] = 30
        monkeypatch.chdir(repo.root)
        monkeypatch.setattr(ci_event, 'open_forge', lambda kind, project, environ: connect(
            kind, project, url=server.url, token=PROJECT_TOKEN, environ={}, backoff=BACKOFF))
        for name, value in {'CI_PROJECT_PATH': server.project, 'CI_COMMIT_SHA': head, 'CI_MERGE_REQUEST_IID': str(iid),
                            'CI_MERGE_REQUEST_DIFF_BASE_SHA': base, 'CI_MERGE_REQUEST_TITLE': '[Ops] Add shift',
                            'CI_MERGE_REQUEST_DESCRIPTION': BODY, 'CI_PIPELINE_ID': '77',
                            'CI_PIPELINE_URL': 'https://gitlab.example/lab/kernels/fla/-/pipelines/77'}.items():
            monkeypatch.setenv(name, value)
        _job_run_by(server, monkeypatch, 'alice')
        yield server, iid, head


def _job_run_by(server, monkeypatch, user: str) -> None:
    """Run this pipeline's job as `user`: GitLab records who ran a job, and GITLAB_USER_LOGIN only says so."""
    monkeypatch.setenv('GITLAB_USER_LOGIN', user)
    monkeypatch.setenv('CI_JOB_TOKEN', server.start_job(user, os.environ['CI_COMMIT_SHA'],
                                                        f"refs/merge-requests/{os.environ['CI_MERGE_REQUEST_IID']}/head"))


@pytest.mark.parametrize(('unset', 'changes', 'code', 'message'), [
    (['CI_PROJECT_PATH'], {}, 2, 'CI_PROJECT_PATH is not set: mrbot action --forge gitlab runs in a GitLab CI job'),
    (['CI_JOB_TOKEN', 'CI_COMMIT_SHA'], {}, 2, 'CI_COMMIT_SHA, CI_JOB_TOKEN not set'),
    ([], {'CI_MERGE_REQUEST_IID': 'abc'}, 2, "CI_MERGE_REQUEST_IID 'abc': expected the number of a merge request"),
    (['CI_MERGE_REQUEST_IID'], {}, 0, 'mrbot acts in merge request pipelines only'),
])
def test_a_gitlab_job_without_its_variables_says_which(lab, monkeypatch, capsys, unset, changes, code, message):
    server, iid, _ = lab
    for name in unset:
        monkeypatch.delenv(name)
    for name, value in changes.items():
        monkeypatch.setenv(name, value)
    assert main(['action', '--forge', 'gitlab']) == code
    captured = capsys.readouterr()
    assert message in (captured.err if code else captured.out) and server.notes_on(iid) == []


def test_gitlab_pipeline_posts_the_report_note_and_a_commit_status(lab):
    server, iid, head = lab
    assert main(['action', '--forge', 'gitlab']) == 0
    assert main(['action', '--forge', 'gitlab']) == 0
    [(_, note)] = server.notes_on(iid)
    assert 'HDR001' in note
    assert [(s['sha'], s['status'], s['name']) for s in server.statuses] == [(head, 'failed', 'mrbot check')] * 2


def test_gitlab_command_is_authorized_by_access_level(lab, monkeypatch):
    server, iid, _ = lab
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    _job_run_by(server, monkeypatch, 'reader')
    server.members['reader'] = 20
    assert main(['action', '--forge', 'gitlab']) == 0
    assert server.notes_on(iid)[-1][1] == ('Not running `/test --on hopper`: @reader has read permission; commands need '
                                           'write access.')
    _job_run_by(server, monkeypatch, 'alice')
    # a Developer may; this runner has no GPU, so the job fails loudly and the note says why
    assert main(['action', '--forge', 'gitlab']) == 1
    accepted, result = server.notes_on(iid)[-2][1], server.notes_on(iid)[-1][1]
    assert accepted.startswith('Accepted from @alice: mrbot test on ') and commands.markers([accepted], 'accepted', None)
    assert 'this runner has no GPU, but class hopper needs sm_90' in result
    # the run is the job as GitLab tells it: the pipeline's id and page are shared, and variables its runner may set
    assert '[the run](https://gitlab.example/lab/kernels/fla/-/jobs/9002)' in result
    assert commands.markers([server.notes_on(iid)[-2][1]], 'done', None) == [{'run': '9002'}]
    # a second request within the cooldown is refused, as on GitHub
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert 'started a job' in server.notes_on(iid)[-1][1] and 'try again in' in server.notes_on(iid)[-1][1]


def test_a_gitlab_command_is_answered_as_on_github_closed_refused_note_reacted_bench_base_from_the_target(
        lab, monkeypatch):
    server, iid, _ = lab
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    _job_run_by(server, monkeypatch, 'alice')
    note = server.add_note(iid, '/bench --on hopper', author='alice')
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(note))
    server.merge_requests[iid]['state'] = 'closed'
    assert main(['action', '--forge', 'gitlab']) == 0
    assert server.notes_on(iid)[-1][1] == f'Not running `/bench --on hopper --rounds 10`: !{iid} is closed.'
    assert [(award[0], award[1]) for award in server.awards] == [(note, 'thumbsdown')]
    server.merge_requests[iid]['state'] = 'opened'
    # this runner has no GPU: the job fails after accepting, which is what this test needs
    assert main(['action', '--forge', 'gitlab']) == 1
    accepted = server.notes_on(iid)[-2][1]
    assert accepted.startswith('Accepted from @alice: mrbot bench ') and ', against main, ' in accepted
    assert [(award[0], award[1]) for award in server.awards][-1] == (note, 'eyes')


def test_a_gitlab_command_is_asked_by_a_note_or_by_whoever_ran_the_job_never_by_a_variable(lab, monkeypatch):
    server, iid, _ = lab
    server.members.update(alice=30, bob=30)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    _job_run_by(server, monkeypatch, 'alice')
    # a name in the job's variables is not who asked: alice cannot post as @all, nor leave her cooldown to bob
    monkeypatch.setenv('MRBOT_COMMAND', '/bench --on hopper')
    monkeypatch.setenv('MRBOT_COMMAND_AUTHOR', 'all')
    assert main(['action', '--forge', 'gitlab']) == 1
    assert server.notes_on(iid)[-2][1].startswith('Accepted from @alice: ')
    monkeypatch.setenv('MRBOT_COMMAND_AUTHOR', 'bob')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert '@alice started a job' in server.notes_on(iid)[-1][1]
    # a webhook receiver names the note; its author and its first line come from GitLab
    monkeypatch.delenv('MRBOT_COMMAND')
    _job_run_by(server, monkeypatch, 'receiver')
    server.members['receiver'] = 30
    note = server.add_note(iid, '/test --on hopper\nplease', author='bob')
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(note))
    assert main(['action', '--forge', 'gitlab']) == 1
    assert server.notes_on(iid)[-2][1].startswith('Accepted from @bob: mrbot test on ')
    # once
    _job_run_by(server, monkeypatch, 'receiver')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert server.notes_on(iid)[-1][1] == (f'Not running `/test --on hopper`: note {note} has been run already on '
                                           'hopper; a new note asks again.')
    # a note given before the pipeline's commit was pushed does not run it
    server.members['carol'] = 30
    later = server.add_note(iid, '/test --on hopper', author='carol')
    server.push(iid, server.branches['topic'], created_at(later) + datetime.timedelta(seconds=5))
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(later))
    _job_run_by(server, monkeypatch, 'receiver')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert f'the head of !{iid} became ' in server.notes_on(iid)[-1][1]
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', '1; rm -rf /')
    assert main(['action', '--forge', 'gitlab']) == 2


def test_a_gitlab_job_takes_who_ran_it_and_its_merge_request_from_gitlab_not_from_its_variables(lab, monkeypatch,
                                                                                               capsys):
    server, iid, _ = lab
    server.members.update(mallory=30, olivia=40)
    victim = server.open_merge_request('main', title='[Docs] Someone else')
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'mallory')
    # mallory runs the job and sets the variables GitLab's own would have
    monkeypatch.setenv('GITLAB_USER_LOGIN', 'olivia')
    monkeypatch.setenv('CI_MERGE_REQUEST_IID', str(victim))
    assert main(['action', '--forge', 'gitlab']) == 2
    assert f'this job runs for !{iid} at ' in capsys.readouterr().err and server.notes_on(victim) == []
    monkeypatch.setenv('CI_MERGE_REQUEST_IID', str(iid))
    assert main(['action', '--forge', 'gitlab']) == 1
    assert server.notes_on(iid)[-2][1].startswith('Accepted from @mallory: ')


def test_a_gitlab_note_never_runs_a_commit_that_is_no_longer_the_head(lab, monkeypatch, repo):
    server, iid, old = lab
    server.members.update(olivia=40, mallory=30)
    new = repo.commit({'pkg/shift.py': HEADER + 'def shift(x):\n    return x + 2\n'}, '[Ops] Reviewed head')
    note = server.add_note(iid, '/test --on hopper', author='olivia')
    server.push(iid, new, created_at(note) - datetime.timedelta(seconds=30))
    # mallory runs the job of the pipeline of the old head, naming the note olivia wrote for the new one
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(note))
    _job_run_by(server, monkeypatch, 'mallory')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert server.notes_on(iid)[-1][1] == (f'Not running `/test --on hopper`: this pipeline is of {old[:10]}, but the '
                                           f'head of !{iid} is {new[:10]}; run the job of its newest pipeline.')


def test_a_gitlab_note_for_two_classes_runs_once_on_each(lab, monkeypatch):
    server, iid, _ = lab
    note = server.add_note(iid, '/test --on hopper blackwell', author='alice')
    monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(note))
    for runner in ('hopper', 'blackwell', 'hopper'):
        monkeypatch.setenv('MRBOT_RUNNER', runner)
        _job_run_by(server, monkeypatch, 'alice')
        main(['action', '--forge', 'gitlab'])
    replies = [body.splitlines()[0] for author, body in server.notes_on(iid) if author == 'project_7_bot'
               and not body.startswith('<!--')]
    assert [reply.split(':')[0] for reply in replies] == ['Accepted from @alice', 'Accepted from @alice',
                                                          'Not running `/test --on hopper blackwell`']


def test_of_two_commands_answered_at_once_the_later_yields(bot, monkeypatch):
    # both authorize jobs read the comments before either posted: each sees no acceptance
    monkeypatch.setattr(github, 'bot_bodies', lambda notes: [])
    _, first, _ = bot.act('issue_comment', bot.comment_payload('/bench scale'), run_id=701)
    _, second, _ = bot.act('issue_comment', bot.comment_payload('/bench scale'), run_id=702)
    assert (first['authorized'], second['authorized']) == ('true', 'false')
    replies = [body for author, body in bot.server.comments_on(bot.number) if author == 'github-actions[bot]']
    assert replies[0].startswith('Accepted from @alice') and replies[1].startswith('Not running `/bench scale')
    assert 'try again in' in replies[1] and commands.markers(replies[1:], 'accepted', bot.seal) == []
    # the accepted marker it replaced stays in the edit history: a copy of it finds its run done
    assert [m['run'] for m in commands.markers(replies[1:], 'done', bot.seal)] == ['702']


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


@pytest.mark.parametrize(('kind', 'args', 'expected'), [
    ('bench', {'ops': ['scale'], 'modes': ['fwd'], 'shapes': [], 'rounds': 3, 'base': 'main', 'sha': None},
     [r'\| scale \| fwd \| small \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+-[\d.]+ \| (same|noisy) \(not evidence',
      r'\*\*0 faster and 0 slower of 1 row\.\*\*', r'Correctness gate: passed',
      r'Command: `mrbot bench --op scale --modes fwd --base [0-9a-f]{12} --rounds 3`']),
    ('test', {'tests': ['tests/test_scale.py'], 'k': 'scale', 'sha': None},
     [r'1 passed, 0 failed, 0 skipped, 0 flaky', r'\| `tests/test_scale.py` \| 1 \| 0 \| 0 \| 0 \|']),
])
def test_gpu_job_on_a_runner_of_its_class_leaves_the_result_comment(bot, monkeypatch, kind, args, expected):
    # stands in for an H200: the capability probe is the only part of the job that needs the hardware
    monkeypatch.setattr(job, 'local_gpu', lambda: Gpu('NVIDIA H200', (9, 0), 141 * 2**30))
    for name, value in {'MRBOT_COMMAND': kind, 'MRBOT_SHA': bot.head, 'MRBOT_RUNNER': 'hopper', 'MRBOT_USER': 'alice',
                        'MRBOT_PR': str(bot.number), 'MRBOT_ARGS': json.dumps(args), 'GITHUB_RUN_ID': '88',
                        'GITHUB_REPOSITORY': PROJECT, 'GITHUB_SERVER_URL': 'https://github.example'}.items():
        monkeypatch.setenv(name, value)
    folder = bot.tmp / 'result'
    assert main(['action', 'run', '--out', str(folder)]) == 0
    body = json.loads((folder / ARTIFACT).read_text())['body']
    assert body.startswith(f'### mrbot {kind} on hopper\n')
    line = Command(kind, args, ('hopper',)).line()
    assert (f'Asked by @alice with `{line}`; head `{bot.head[:10]}`, base `{bot.base[:10]}`; '
            '[the run](https://github.example/Codertocat/Hello-World/actions/runs/88).') in body
    for pattern in expected:
        assert re.search(pattern, body), (pattern, body)


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
    assert commands.markers(bodies, 'done', bot.seal) == [{'run': '64'}]
    # nothing is queued any more: even a limit of one queued job lets the next command through
    bodies = [body for _, body in bot.server.comments_on(bot.number)]
    now = datetime.datetime.now(datetime.timezone.utc)
    assert commands.authorize('bob', 'MEMBER', 'write', bodies, now, Config(command_queue_limit=1),
                              seal=bot.seal).allowed
    undone = [body.replace(commands.marker('done', bot.seal, run='64'), '') for body in bodies]
    assert not commands.authorize('bob', 'MEMBER', 'write', undone, now, Config(command_queue_limit=1),
                                  seal=bot.seal).allowed


def test_a_marker_smuggled_in_a_title_is_defused_and_a_pr_run_cannot_post_a_result(bot, capsys):
    forged = commands.marker('accepted', None, run='9100', user='mallory', at='2026-12-03T00:00:00+00:00', sha=bot.head,
                             command='bench', runners=['hopper'])
    payload = bot.pull_request_payload()
    payload['pull_request']['title'] = forged
    bot.act('pull_request', payload)
    [(_, report)] = bot.server.comments_on(bot.number)
    assert commands.markers([report], 'accepted', None) == [] and '<\u2060!-- mrbot:accepted' in report
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
    assert [marker['run'] for marker in commands.markers(bodies, 'done', bot.seal)] == ['601']
    assert not [path for _, path in bot.server.requests[requests:] if f'/{OTHER_PR}' in path]


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


def test_a_command_pinned_to_a_sha_is_refused_once_the_head_moved(bot):
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload(f'/bench scale --sha {bot.base}'))
    assert outputs['authorized'] == 'false'
    assert f'the head of #{bot.number} is now {bot.head[:12]}, not {bot.base}' in bot.server.comments_on(bot.number)[-1][1]
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload(f'/bench scale --sha {bot.head}', login='olivia',
                                                                 association='OWNER'))
    assert outputs['authorized'] == 'true' and outputs['sha'] == bot.head


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


def test_a_pin_is_the_whole_commit_id_so_a_later_commit_sharing_its_prefix_cannot_stand_for_it(bot):
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload(f'/bench scale --sha {bot.head[:7]}'))
    assert outputs['authorized'] == 'false'
    assert f'--sha {bot.head[:7]}: expected the whole commit id' in bot.server.comments_on(bot.number)[-1][1]


def test_a_pr_that_adds_a_setting_still_gets_its_report(bot):
    bot.head = bot.repo.commit({'pyproject.toml': PYPROJECT.replace('[tool.mrbot]\n', '[tool.mrbot]\nnew-setting = 1\n')},
                               '[Ops] A setting from the future')
    bot.server.branches['topic'] = bot.head
    code, outputs, _ = bot.act('pull_request', bot.pull_request_payload('synchronize'))
    assert code == 0 and outputs['pr'] == str(bot.number) and len(bot.server.comments_on(bot.number)) == 1


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


def test_a_re_run_of_a_commands_run_runs_nothing(bot, monkeypatch):
    # a re-run keeps the run id that the first attempt's done marker names: its jobs would count in no queue, and a
    # re-run of the GPU job alone would pass authorize by altogether
    monkeypatch.setenv('GITHUB_RUN_ATTEMPT', '2')
    code, outputs, _ = bot.act('issue_comment', bot.comment_payload(f'/bench scale --sha {bot.head}'), run_id=801)
    replies = [body for author, body in bot.server.comments_on(bot.number) if author == 'github-actions[bot]']
    assert (code, outputs.get('authorized'), replies) == (0, None, [])
    workflow = (Path(__file__).resolve().parents[2] / '.github/workflows/mrbot-command.yml').read_text()
    assert '&& github.run_attempt == 1' in workflow.split('\n  gpu:')[1].split('strategy:')[0]


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
    assert commands.authorize('bob', 'MEMBER', 'write', [reply], now, Config(), jobs=2, seal=bot.seal).allowed


def test_gitlab_a_refusal_marks_done_its_own_job_and_no_other_of_the_pipeline(lab, monkeypatch):
    # the jobs of one pipeline share its id: a done marker naming the pipeline freed every running job of it
    server, iid, _ = lab
    server.members.update(alice=30, bob=30, carol=30)
    monkeypatch.setattr(ci_gitlab, 'run_job', _still_running)
    # the GPU jobs are under way: none has got as far as marking itself done
    monkeypatch.setattr(ci_gitlab, 'with_done', lambda body, run, seal: body)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'bob')
    assert main(['action', '--forge', 'gitlab']) == 2
    # two of alice's jobs answered at once, each reading the notes before the other posted
    real = ci_gitlab.bot_bodies
    monkeypatch.setattr(ci_gitlab, 'bot_bodies', lambda notes: real(notes)[:1])
    _job_run_by(server, monkeypatch, 'alice')
    monkeypatch.setenv('MRBOT_RUNNER', 'blackwell')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on blackwell')
    assert main(['action', '--forge', 'gitlab']) == 2
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    bodies = [body for author, body in server.notes_on(iid) if author == 'project_7_bot']
    assert bodies[-1].startswith('Not running')
    # bob's job and alice's first are still running: the default limit of 2 leaves room for no third
    now = datetime.datetime.now(datetime.timezone.utc)
    assert not commands.authorize('carol', 'MEMBER', 'write', bodies, now, Config(), seal=None).allowed


def test_gitlab_the_run_linked_is_the_job_as_gitlab_tells_it_not_the_variables_of_its_runner(lab, monkeypatch):
    # whoever runs a manual job sets its variables: a pipeline URL carrying a quick action and a marker of its own
    server, iid, _ = lab
    monkeypatch.setattr(ci_gitlab, 'run_job', _still_running)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    forged = commands.marker('accepted', None, run='1', user='victim', at=datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec='seconds'), sha='0' * 40, command='test', runners=['hopper', 'x'])
    monkeypatch.setenv('CI_PIPELINE_URL', f'https://x)\n/approve\n{forged}\n[x](https://x')
    _job_run_by(server, monkeypatch, 'alice')
    main(['action', '--forge', 'gitlab'])
    [accepted] = [body for author, body in server.notes_on(iid) if author == 'project_7_bot']
    assert '/approve' not in accepted and '/-/jobs/' in accepted
    assert [m['user'] for m in commands.markers([accepted], 'accepted', None)] == ['alice']


def _still_running(*args, **kwargs):
    # the GPU job is under way: nothing marks it done before it ends
    raise MrbotError('still running')


def test_gitlab_a_report_grades_the_title_gitlab_has_not_one_the_runner_of_a_job_sets(lab, monkeypatch, repo):
    # a Developer may play a job with variables of their choosing: a title that passes, on an MR whose title fails
    server, iid, _ = lab
    server.merge_requests[iid]['title'] = 'add shift'
    monkeypatch.setenv('CI_MERGE_REQUEST_TITLE', '[Ops] Add shift')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    [(_, note)] = server.notes_on(iid)
    assert 'MR-TITLE' in note and server.statuses[-1]['status'] == 'failed'


def test_gitlab_a_job_whose_result_cannot_be_posted_is_marked_done_all_the_same(lab, monkeypatch):
    # the merge request's code ran as the job's user and left the artifact as it liked: the job is over all the same
    server, iid, _ = lab

    def garbled(root, config, environ, folder, run_url):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ARTIFACT).write_text('{')
        return 0

    monkeypatch.setattr(ci_gitlab, 'run_job', garbled)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 2
    bodies = [body for author, body in server.notes_on(iid) if author == 'project_7_bot']
    assert [m['run'] for m in commands.markers(bodies, 'done', None)] == [
        m['run'] for m in commands.markers(bodies, 'accepted', None)]


def test_gitlab_one_job_token_answers_one_command(lab, monkeypatch):
    # whoever runs a job may hand its token to other jobs: each would run under the one job's run, and one done marker
    # would free them all
    server, iid, _ = lab
    server.members.update(bob=30, carol=30, dave=30)
    monkeypatch.setattr(ci_gitlab, 'run_job', _still_running)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    _job_run_by(server, monkeypatch, 'bob')
    for author in ('carol', 'dave'):
        monkeypatch.setenv('MRBOT_COMMAND_NOTE', str(server.add_note(iid, '/test --on hopper', author=author)))
        main(['action', '--forge', 'gitlab'])
    bodies = [body for author, body in server.notes_on(iid) if author == 'project_7_bot']
    assert len(commands.markers(bodies, 'accepted', None)) == 1


@pytest.mark.parametrize('project', ['mallory/scratch', 'mallory/lab/kernels/fla'],
                         ids=['another', 'one-whose-path-ends-with-this-ones'])
def test_gitlab_a_job_of_another_project_is_not_this_ones(lab, monkeypatch, project):
    server, iid, _ = lab
    real = server._job

    def foreign(request):
        answer = real(request)
        answer.body['web_url'] = f"https://gitlab.example/{project}/-/jobs/{answer.body['id']}"
        return answer

    server.entities[foreign] = server.entities[real]
    monkeypatch.setattr(server, '_routes', [(m, p, foreign if a == real else a) for m, p, a in server._routes])
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 2
    assert server.notes_on(iid) == []


def _a_good_head_then_a_bad_one(lab, repo) -> tuple[str, str, Callable[[], None]]:
    """A clean commit pushed to the merge request, and a failing one after it with what pushes it (not yet called)."""
    server, iid, _ = lab
    at = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
    good = repo.commit({'pkg/shift.py': HEADER + 'def shift(x):\n    return x + 1\n'}, '[Ops] Add shift')
    server.push(iid, good, at)
    server.branches['keep'] = good
    bad = repo.commit({'pkg/bad.py': 'x = 1\n'}, '[Ops] Add bad')
    return good, bad, lambda: server.push(iid, bad, at + datetime.timedelta(minutes=5))


def test_gitlab_a_report_on_a_head_the_mr_has_moved_on_from_is_not_posted(lab, monkeypatch, repo):
    # a retried mrbot-check of an older pipeline, or a slow one, would put the older commit's report in the note
    server, iid, _ = lab
    good, bad, push_bad = _a_good_head_then_a_bad_one(lab, repo)
    push_bad()
    monkeypatch.setenv('CI_COMMIT_SHA', bad)
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    current = server.notes_on(iid)[-1][1]
    monkeypatch.setenv('CI_COMMIT_SHA', good)
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert 'HDR001' in current and server.notes_on(iid)[-1][1] == current


def test_gitlab_a_report_whose_head_moved_while_it_was_checked_is_not_posted(lab, monkeypatch, repo, capsys):
    # the ninth review: a push while the check runs, and the new head's own pipeline posts first
    server, iid, _ = lab
    good, bad, push_bad = _a_good_head_then_a_bad_one(lab, repo)
    check = ci_gitlab.check_report

    def check_while_pushed(workspace, target, sha, title, body):
        report = check(workspace, target, sha, title, body)
        push_bad()
        return report

    monkeypatch.setattr(ci_gitlab, 'check_report', check_while_pushed)
    monkeypatch.setenv('CI_COMMIT_SHA', good)
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 0
    assert f'!{iid} moved on from {good[:12]} to {bad[:12]} while it was checked' in capsys.readouterr().out
    assert server.notes_on(iid) == [] and server.statuses == []


def test_a_gitlab_command_job_posts_only_its_own_result(lab, monkeypatch):
    # the ninth review: the merge request's code writes the artifact, and may write another MR's report with a check
    server, iid, _ = lab
    other = server.open_merge_request('main', title='[Ops] Other', description='x')

    def forged(root, config, environ, folder, run_url):
        write_artifact(folder, {'schema': 1, 'kind': 'report', 'pr': other, 'sha': server.branches['main'],
                                'purpose': 'report', 'body': 'All clear.',
                                'graded': {'title': '[Ops] Other', 'body': 'x', 'base': 'main'},
                                'check': {'conclusion': 'success', 'title': 'ok', 'summary': 'ok', 'annotations': []}})
        return 0

    monkeypatch.setattr(ci_gitlab, 'run_job', forged)
    monkeypatch.setattr(ci_gitlab, 'require_kernel_stack', lambda why: None)
    monkeypatch.setenv('MRBOT_RUNNER', 'hopper')
    monkeypatch.setenv('MRBOT_COMMAND', '/test --on hopper')
    _job_run_by(server, monkeypatch, 'alice')
    assert main(['action', '--forge', 'gitlab']) == 2
    assert server.notes_on(other) == [] and server.statuses == []
