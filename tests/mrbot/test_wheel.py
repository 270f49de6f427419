# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""mrbot in a repository that is not its own: the built wheel in a fresh environment, `mrbot init --ci` in a foreign
repository shaped like upstream flash-linear-attention, the action's steps run as a runner runs them against the fake
GitHub, and the GitLab component's jobs and the wheel's note receiver against the fake GitLab."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from mrbot.ci.artifacts import ARTIFACT
from tests.gitrepo import Repo
from tests.mrbot import webhooks
from tests.mrbot.ci.serving import SECRET, deliver, eventually, note_event
from tests.mrbot.forges.fakeforge import ACTIONS_TOKEN, PROJECT_TOKEN, FakeGitHub, FakeGitLab, created_at
from tests.mrbot.test_init import lint_workflows

ROOT = Path(__file__).resolve().parents[2]
PROJECT = 'fla-org/flash-linear-attention'
MRBOT = 'octo/mrbot@' + '5eed' * 10
# upstream's own header and kernel layout, none of it this repository's
HEADER = '# -*- coding: utf-8 -*-\n# Copyright (c) 2023-2025, Songlin Yang, Yu Zhang\n'
KERNEL = HEADER + '''
import torch
import triton
import triton.language as tl


@triton.jit
def double_kernel(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)


def double(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    double_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y
'''
TEST = HEADER + '''
import torch

from fla.ops.double import double


def test_double():
    assert double(torch.ones(3)).tolist() == [2.0, 2.0, 2.0]
'''
BENCH = '''
[tool.mrbot.bench.ops.double]
callable = "fla.ops.double:double"
gate = "tests/ops/test_double.py"

[tool.mrbot.bench.ops.double.inputs]
x = { shape = ["B", "D"], dtype = "float32" }

[tool.mrbot.bench.ops.double.shapes]
small = { B = 2, D = 64 }
'''
BODY = '## Summary\n\nTriple.\n\n## Test plan\n\nRan it.\n\n## Benchmark\n\nNone.\n\n## Breaking changes\n\nNone.\n'


@pytest.fixture(scope='module')
def installed(tmp_path_factory) -> Path:
    """A fresh environment holding mrbot as its wheel installs it, built from this checkout's files; its dependencies
    are this environment's, whose own mrbot (the editable checkout) it cannot see."""
    tmp = tmp_path_factory.mktemp('wheel')
    source = tmp / 'source'
    listed = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split('\0')
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--quiet', '--no-deps', '--no-build-isolation', '-w',
                    str(tmp / 'dist'), str(source)], check=True, capture_output=True, timeout=300)
    [wheel] = (tmp / 'dist').glob('mrbot-*.whl')
    env = tmp / 'env'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(env)], check=True)
    python = env / 'bin' / 'python'
    subprocess.run([sys.executable, '-m', 'pip', '--python', str(python), 'install', '--quiet', '--no-deps', '--no-index',
                    str(wheel)], check=True, capture_output=True, timeout=300)
    purelib = subprocess.run([str(python), '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                             capture_output=True, text=True, check=True).stdout.strip()
    # a path line only: the .pth files of this environment (its editable mrbot among them) are not read from there
    (Path(purelib) / 'dependencies.pth').write_text(sysconfig.get_paths()['purelib'] + '\n')
    return env


ACTION = yaml.safe_load((ROOT / 'action.yml').read_text())


def _step(name: str) -> dict:
    """The step of action.yml called `name`, as a runner reads it."""
    return next(step for step in ACTION['runs']['steps'] if step['name'] == name)


class Runner:
    """Runs action.yml's steps as GitHub's runner does: its `run` under bash, with its `env` and the job's
    variables, in the checkout of the foreign repository."""

    def __init__(self, repo: Repo, server: FakeGitHub, env: Path, tmp: Path) -> None:
        self.repo, self.server, self.env, self.tmp, self.runs = repo, server, env, tmp, 0

    def run(self, name: str, event: str, payload: dict, inputs: dict[str, str], python: Path, run_id: int = 7000,
            **variables: str) -> tuple[int, dict[str, str], str]:
        """The step `name` on `event`; `python` is the interpreter the step finds first on the PATH."""
        self.runs += 1
        folder = self.tmp / f'step{self.runs}'
        folder.mkdir()
        (folder / 'event.json').write_text(json.dumps(payload))
        step = _step(name)
        expressions = {'${{ github.action_path }}': str(self.tmp / 'action'),
                       '${{ runner.temp }}': str(self.tmp)} | {
            f'${{{{ inputs.{key} }}}}': inputs.get(key, str(declared.get('default', '')))
            for key, declared in ACTION['inputs'].items()}
        environ = {'PATH': f'{python.parent}{os.pathsep}{os.environ["PATH"]}', 'HOME': os.environ.get('HOME', '/tmp'),
                   'GITHUB_EVENT_NAME': event, 'GITHUB_EVENT_PATH': str(folder / 'event.json'),
                   'GITHUB_REPOSITORY': PROJECT, 'GITHUB_RUN_ID': str(run_id), 'GITHUB_RUN_ATTEMPT': '1',
                   'GITHUB_SERVER_URL': 'https://github.example', 'GITHUB_API_URL': self.server.url,
                   'GITHUB_OUTPUT': str(folder / 'output'), 'GITHUB_STEP_SUMMARY': str(folder / 'summary'),
                   'GITHUB_ACTION_PATH': str(self.tmp / 'action'), 'RUNNER_TEMP': str(self.tmp), **variables}
        for key, value in step.get('env', {}).items():
            for expression, replacement in expressions.items():
                value = str(value).replace(expression, replacement)
            environ[key] = value
        done = subprocess.run(['bash', '-e', '-c', step['run']], cwd=self.repo.root, env=environ, capture_output=True,
                              text=True, timeout=300)
        assert 'Traceback' not in done.stderr, done.stderr
        outputs = dict(line.split('=', 1) for line in (folder / 'output').read_text().splitlines()) \
            if (folder / 'output').exists() else {}
        return done.returncode, outputs, done.stdout + done.stderr


def test_the_wheel_ships_every_template_and_workflow_and_runs_from_its_own_files(installed):
    python = installed / 'bin' / 'python'
    shown = subprocess.run([str(python), '-I', '-c', 'import mrbot, checks; print(mrbot.__file__, checks.__file__)'],
                           capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(path).is_relative_to(installed) for path in shown)
    share = installed / 'share' / 'mrbot'
    assert sorted(path.relative_to(share / 'templates') for path in (share / 'templates').rglob('*') if path.is_file()) \
        == sorted(path.relative_to(ROOT / 'templates') for path in (ROOT / 'templates').rglob('*') if path.is_file())
    assert sorted(path.name for path in (share / 'workflows').iterdir()) == sorted(
        path.name for path in (ROOT / '.github' / 'workflows').glob('mrbot-*.yml'))


def test_a_foreign_repository_gets_its_ci_from_the_wheel_and_the_action_checks_and_benches_its_pull_request(
        installed, tmp_path):
    mrbot = installed / 'bin' / 'mrbot'
    (tmp_path / 'fla').mkdir()
    repo = Repo(tmp_path / 'fla')
    repo.git('branch', '-m', 'master')
    base = repo.commit({'fla/__init__.py': HEADER, 'fla/ops/__init__.py': HEADER, 'fla/ops/double.py': KERNEL,
                        'tests/ops/test_double.py': TEST, 'pyproject.toml': '[project]\nname = "fla-core"\n'},
                       '[Misc] Base')
    for forge in ('github', 'gitlab'):
        done = subprocess.run([str(mrbot), 'init', '--ci', forge, '--action', MRBOT, '--runner',
                               'hopper=self-hosted,sm90'], cwd=repo.root, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    assert lint_workflows(repo.root / '.github' / 'workflows') == []
    assert 'git+https://github.com/octo/mrbot@' in (repo.root / '.gitlab-ci.yml').read_text()
    # the maintainer commits what init wrote and declares the op /bench times
    repo.write({'pyproject.toml': (repo.root / 'pyproject.toml').read_text() + BENCH})
    base = repo.commit({}, '[CI] mrbot')
    repo.git('checkout', '-q', '-b', 'triple')
    head = repo.commit({'fla/ops/triple.py': 'x = 3\n'}, '[Misc] Add triple')
    # the action's files, where a runner unpacks `uses: octo/mrbot@...`
    action = tmp_path / 'runner' / 'action'
    shutil.copytree(ROOT, action, ignore=shutil.ignore_patterns('.venv', 'node_modules', '.git', '.mrbot', '*.whl'))
    with FakeGitHub(PROJECT) as server:
        server.branches.update(master=base, triple=head)
        number = server.open_pull('triple', title='[Misc] Add triple', body=BODY)
        server.pulls[number]['base'] = 'master'
        server.collaborators.update(alice=('write', 'write'))
        runner = Runner(repo, server, installed, tmp_path / 'runner')
        pull = webhooks.example('pull_request', 'opened')
        pull['number'] = number
        pull['repository']['default_branch'] = 'master'
        pull['pull_request'].update(number=number, title='[Misc] Add triple', body=BODY, draft=False)
        pull['pull_request']['base'].update(sha=base, ref='master')
        pull['pull_request']['head'].update(sha=head, ref='triple')
        # check: the wheel's mrbot, no token; its report waits in the artifact for the poster
        report = tmp_path / 'runner' / 'report'
        code, _, log = runner.run('Check', 'pull_request', pull, {'artifact': str(report)}, installed / 'bin' / 'python')
        assert code == 0 and list(report.iterdir()) and server.comments_on(number) == [], log
        finished = webhooks.example('workflow_run', 'completed', having='pull_requests')
        finished['repository']['default_branch'] = 'master'
        finished['workflow_run'].update(id=7000, head_sha=head, event='pull_request', head_branch='triple',
                                        head_repository={'full_name': PROJECT})
        finished['workflow_run']['pull_requests'] = [{**finished['workflow_run']['pull_requests'][0], 'number': number}]
        repo.git('checkout', '-q', 'master')
        # post: the action's own files on the PATH's Python, with the token
        code, _, log = runner.run('Post', 'workflow_run', finished, {'artifact': str(report), 'history': '',
                                                                     'github-token': ACTIONS_TOKEN, 'signing-key': 'k'},
                                  Path(sys.executable))
        [(author, body)] = server.comments_on(number)
        assert code == 0 and author == 'github-actions[bot]' and 'fla/ops/triple.py' in body, log
        assert [run['head_sha'] for run in server.check_runs] == [head]
        # /bench: authorized by the action, refused honestly on a runner with no GPU, and that result posted
        comment = webhooks.example('issue_comment', 'created')
        comment['issue'].update(number=number, pull_request={'url': f'https://api.github.com/repos/{PROJECT}/pulls/1'})
        comment['comment'].update(id=server.add_comment(number, '/bench double', login='alice'), body='/bench double',
                                  author_association='MEMBER', user={**comment['comment']['user'], 'login': 'alice'})
        comment['comment']['created_at'] = created_at(comment['comment']['id']).isoformat(timespec='seconds').replace(
            '+00:00', 'Z')
        accepted = tmp_path / 'runner' / 'accepted'
        code, outputs, log = runner.run('Authorize', 'issue_comment', comment, {
            'artifact': str(accepted), 'github-token': ACTIONS_TOKEN, 'signing-key': 'k'}, Path(sys.executable),
            run_id=7100)
        assert code == 0 and outputs['authorized'] == 'true' and outputs['command'] == 'bench', log
        (tmp_path / 'runner' / 'venv').symlink_to(installed)
        repo.git('checkout', '-q', head)
        result = tmp_path / 'runner' / 'result'
        code, _, log = runner.run('Run the command', 'issue_comment', comment, {
            'accepted-command': outputs['command'], 'args': outputs['args'], 'sha': outputs['sha'],
            'runner': 'hopper', 'pr': outputs['pr'], 'out': str(result)}, installed / 'bin' / 'python', run_id=7100)
        assert code == 1 and 'this runner has no GPU, but class hopper needs sm_90' in (result / ARTIFACT).read_text(), log
        repo.git('checkout', '-q', 'master')
        code, _, log = runner.run('Post', 'workflow_run', {**finished, 'workflow_run': {
            **finished['workflow_run'], 'id': 7100, 'event': 'issue_comment', 'head_sha': base, 'head_branch': 'master',
            'pull_requests': []}}, {'artifact': str(result), 'history': '', 'github-token': ACTIONS_TOKEN,
                                    'signing-key': 'k'}, Path(sys.executable), run_id=7200)
        assert code == 0, log
        assert '### mrbot bench on hopper' in server.comments_on(number)[-1][1]


COMPONENT_TEXT = (ROOT / 'templates' / 'mrbot' / 'template.yml').read_text()
SPEC, COMPONENT = (yaml.safe_load(part) for part in COMPONENT_TEXT.split('\n---\n', 1))


def _job(name: str) -> dict:
    """A job of the component with what it extends merged in, as GitLab reads it."""
    job = COMPONENT[name]
    parent = _job(job['extends']) if 'extends' in job else {}
    return {**parent, **job, 'variables': {**parent.get('variables', {}), **job.get('variables', {})}}


def _gitlab_job(name: str, repo: Repo, installed: Path, pip_spec: str, tmp: Path, **variables: str
                ) -> subprocess.CompletedProcess:
    """Run job `name` of the component as a GitLab runner does: its inputs written in when the pipeline is made, then
    its script under bash in the checkout, with its variables and the pipeline's. The image's Python has mrbot's
    dependencies (this environment's, on PYTHONPATH), not mrbot; pip installs the wheel without them."""
    assert re.fullmatch(SPEC['spec']['inputs']['pip-spec']['regex'], pip_spec)
    job = _job(name)
    script = '\n'.join(job['script']).replace('$[[ inputs.pip-spec ]]', pip_spec)
    python = Path(sys.base_prefix) / 'bin' / 'python3'
    environ = {'PATH': f'{python.parent}{os.pathsep}{os.environ["PATH"]}', 'HOME': str(tmp), 'TMPDIR': str(tmp),
               'PYTHONPATH': sysconfig.get_paths()['purelib'], 'PIP_NO_DEPS': '1', 'PIP_NO_INDEX': '1',
               **{key: str(value) for key, value in job['variables'].items()}, **variables}
    done = subprocess.run(['bash', '-e', '-c', script], cwd=repo.root, env=environ, capture_output=True, text=True,
                          timeout=300)
    assert 'Traceback' not in done.stderr, done.stderr
    return done


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def test_a_foreign_gitlab_project_includes_the_component_and_its_jobs_and_the_receiver_check_and_bench(
        installed, tmp_path):
    mrbot = installed / 'bin' / 'mrbot'
    (tmp_path / 'fla').mkdir()
    repo = Repo(tmp_path / 'fla')
    base = repo.commit({'fla/__init__.py': HEADER, 'fla/ops/__init__.py': HEADER, 'fla/ops/double.py': KERNEL,
                        'tests/ops/test_double.py': TEST, 'pyproject.toml': '[project]\nname = "fla-core"\n'},
                       '[Misc] Base')
    done = subprocess.run([str(mrbot), 'init', '--ci', 'gitlab', '--action', MRBOT], cwd=repo.root,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    [include] = yaml.safe_load((repo.root / '.gitlab-ci.yml').read_text())['include']
    assert include['remote'].endswith('/templates/mrbot/template.yml') and MRBOT.split('@')[1] in include['remote']
    assert re.fullmatch(SPEC['spec']['inputs']['pip-spec']['regex'], include['inputs']['pip-spec'])
    repo.write({'pyproject.toml': (repo.root / 'pyproject.toml').read_text() + BENCH})
    base = repo.commit({}, '[CI] mrbot')
    repo.git('checkout', '-q', '-b', 'triple')
    head = repo.commit({'fla/ops/triple.py': 'x = 3\n'}, '[Misc] Add triple')
    # the include's mrbot, where this test can install it from: the wheel the fixture built
    [wheel] = (installed.parent / 'dist').glob('mrbot-*.whl')
    with FakeGitLab() as server:
        server.branches.update(main=base, triple=head)
        iid = server.open_merge_request('triple', title='[Misc] Add triple', description=BODY)
        # alice a Developer; the project access token's bot a Maintainer, the role docs/ci.md gives the receiver's token
        server.members.update(alice=30, project_7_bot=40)
        pipeline = {'CI_PROJECT_PATH': server.project, 'CI_SERVER_URL': server.url, 'GITLAB_TOKEN': PROJECT_TOKEN,
                    'CI_PIPELINE_SOURCE': 'merge_request_event', 'CI_COMMIT_SHA': head,
                    'CI_MERGE_REQUEST_IID': str(iid), 'CI_MERGE_REQUEST_DIFF_BASE_SHA': base,
                    'CI_MERGE_REQUEST_TITLE': '[Misc] Add triple', 'CI_MERGE_REQUEST_DESCRIPTION': BODY,
                    'CI_PIPELINE_ID': '100', 'CI_PIPELINE_URL': f'{server.url}/pipelines/100'}
        ref = f'refs/merge-requests/{iid}/head'
        # the merge request pipeline's check job: its report note and a commit status
        done = _gitlab_job('mrbot-check', repo, installed, str(wheel), tmp_path, **pipeline,
                           CI_JOB_TOKEN=server.start_job('alice', head, ref), GITLAB_USER_LOGIN='alice')
        assert done.returncode == 0, done.stdout + done.stderr
        [(author, report)] = server.notes_on(iid)
        assert author == 'project_7_bot' and 'fla/ops/triple.py' in report
        assert [status['sha'] for status in server.statuses] == [head]
        # /bench as a note: the wheel's receiver runs the manual hopper job of the head's pipeline with the note
        server.start_pipeline(iid)
        note = server.add_note(iid, '/bench double --on hopper')
        port = _free_port()
        receiver = subprocess.Popen([str(mrbot), 'webhook'], cwd=tmp_path, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, env={
            'PATH': os.environ['PATH'], 'MRBOT_WEBHOOK_SECRET': SECRET, 'MRBOT_GITLAB_PROJECT': server.project,
            'MRBOT_GITLAB_URL': server.url, 'GITLAB_TOKEN': PROJECT_TOKEN, 'MRBOT_WEBHOOK_PORT': str(port),
            'MRBOT_WEBHOOK_STATE': str(tmp_path / 'notes.sqlite3')})
        try:
            def listening() -> bool:
                with socket.socket() as probe:
                    return probe.connect_ex(('127.0.0.1', port)) == 0

            eventually(listening, 'the receiver to listen', timeout=60)
            event = note_event(note, '/bench double --on hopper', iid=iid, project=server.project)
            assert deliver(port, event).status == 202
            eventually(lambda: server.plays, 'the receiver to run the job', timeout=60)
        finally:
            receiver.terminate()
            log = receiver.communicate(timeout=30)[0]
        [(job, variables, played_by)] = server.plays
        assert server.pipeline_jobs[job]['name'] == 'mrbot-bench-hopper', log
        # the job GitLab runs then: the component's hopper job with the note's id, on a runner with no GPU
        done = _gitlab_job('mrbot-bench-hopper', repo, installed, str(wheel), tmp_path, **pipeline, **variables,
                           CI_JOB_TOKEN=server.start_job(played_by, head, ref), GITLAB_USER_LOGIN=played_by)
        answer = server.notes_on(iid)[-1][1]
        assert 'this runner has no GPU, but class hopper needs sm_90' in answer, done.stdout + done.stderr
