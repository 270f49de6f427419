# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The runner's side of the CI tests: a repository with a pull request from `topic`, the step that runs `mrbot action`
there as a workflow would (on the fake GitHub), and the GitLab job's token of whoever runs it."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

from mrbot.ci import event as ci_event
from mrbot.ci import grammar
from mrbot.cli import main
from mrbot.forges import connect
from tests.mrbot import webhooks
from tests.mrbot.forges.fakeforge import ACTIONS_TOKEN, BACKOFF, FakeGitHub, created_at

# What the GitHub jobs holding a write token install; they run the bot from the default branch's checkout.
TOKEN_JOBS = Path(__file__).resolve().parents[3] / '.ci' / 'token-jobs.txt'
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
    def seal(self) -> grammar.Seal:
        """What proves the bot's markers on the PR."""
        return grammar.Seal.of(SIGNING_KEY.encode(), 'github', PROJECT, self.number)

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


def _job_run_by(server, monkeypatch, user: str) -> None:
    """Run this pipeline's job as `user`: GitLab records who ran a job, and GITLAB_USER_LOGIN only says so."""
    monkeypatch.setenv('GITLAB_USER_LOGIN', user)
    monkeypatch.setenv('CI_JOB_TOKEN', server.start_job(user, os.environ['CI_COMMIT_SHA'],
                                                        f"refs/merge-requests/{os.environ['CI_MERGE_REQUEST_IID']}/head"))
