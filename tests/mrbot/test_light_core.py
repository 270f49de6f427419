# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The light core: check, rules, help and `mrbot action` run where torch, triton and numpy cannot be imported (a
`pip install mrbot` without the `kernels` extra); the commands that need the kernel stack say so in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# the repository, payloads and fake GitHub that drive `mrbot action` in its own tests
from tests.mrbot.ci import fakerunner
from tests.mrbot.forges.fakeforge import ACTIONS_TOKEN, BACKOFF, FakeGitHub

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'
# `mrbot ARGV` in a process where importing torch, triton or numpy fails as it does where they are not installed; a
# forge URL, when given, is the GitHub that `mrbot action` talks to.
LIGHT_CORE = '''
import importlib.abc, sys

class KernelStackAbsent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in ('torch', 'triton', 'numpy'):
            raise ModuleNotFoundError(f'No module named {name!r} (the light core)', name=name)

sys.meta_path.insert(0, KernelStackAbsent())
from mrbot.ci import event
from mrbot.cli import main
from mrbot.forges import connect

url, token, backoff = sys.argv[1:4]
if url:
    event.open_forge = lambda kind, project, environ: connect(kind, project, url=url, token=token, environ={},
                                                              backoff=float(backoff))
sys.exit(main(sys.argv[4:]))
'''


def run_light(argv: list[str], cwd: Path, forge_url: str = '') -> subprocess.CompletedProcess:
    """`mrbot ARGV` run in `cwd` without the kernel stack; a crash fails the test, whatever the exit code."""
    done = subprocess.run([sys.executable, '-c', LIGHT_CORE, forge_url, ACTIONS_TOKEN, str(BACKOFF), *argv], cwd=cwd,
                          capture_output=True, text=True)
    assert 'Traceback' not in done.stderr and 'internal error' not in done.stderr, done.stderr
    return done


@pytest.fixture
def topic(repo):
    """A repository on a topic branch whose one commit adds a module without its license header."""
    repo.commit({'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\n', 'pkg/__init__.py': HEADER}, '[Ops] Base')
    repo.git('checkout', '-q', '-b', 'topic')
    repo.commit({'pkg/shift.py': 'def shift(x):\n    return x + 1\n'}, '[Ops] Add shift')
    return repo


def test_check_reports_the_change_and_says_the_kernels_were_not_compiled(topic):
    done = run_light(['check', '--format', 'json'], topic.root)
    report = json.loads(done.stdout)
    findings = [(f['rule'], f['path'], f['line']) for f in report['findings']]
    assert done.returncode == 1 and ('HDR001', 'pkg/shift.py', 1) in findings
    # the report itself says what it could not judge
    assert ("kernels not compiled, CMP rules skipped: torch and triton not installed (pip install 'mrbot[kernels]')"
            in report['notes']) and done.stderr == ''


def test_rules_and_help_need_no_kernel_stack(topic):
    rules = run_light(['rules', 'TRI002'], topic.root)
    assert rules.returncode == 0 and 'severity: error' in rules.stdout
    usage = run_light(['--help'], topic.root)
    assert usage.returncode == 0 and 'mrbot help check' in usage.stdout


def test_gitlab_action_loads_without_kernel_stack(topic, monkeypatch):
    monkeypatch.delenv('CI_PROJECT_PATH', raising=False)
    done = run_light(['action', '--forge', 'gitlab'], topic.root)
    assert (done.returncode, done.stderr) == (2, 'mrbot action: error: CI_PROJECT_PATH is not set: mrbot action --forge '
                                                 'gitlab runs in a GitLab CI job\n')


def test_compile_names_the_extra_it_needs(topic):
    done = run_light(['compile', '--all'], topic.root)
    assert (done.returncode, done.stderr) == (2, "mrbot compile: error: mrbot compile needs torch and triton (torch and "
                                                 "triton not installed): pip install 'mrbot[kernels]'\n")


def test_action_reports_a_pull_request(repo, tmp_path_factory, monkeypatch):
    with FakeGitHub(fakerunner.PROJECT) as server:
        bot = fakerunner.Bot(repo, server, tmp_path_factory.mktemp('runner'), monkeypatch)
        # the workflow step, run where the kernel stack is not installed
        monkeypatch.setattr(fakerunner, 'main', lambda argv: run_light(argv, repo.root, server.url).returncode)
        code, outputs, summary = bot.act('pull_request', bot.pull_request_payload())
        assert code == 0 and outputs == {'pr': str(bot.number), 'errors': '1', 'findings': '2'}
        [(author, body)] = server.comments_on(bot.number)
        assert author == 'github-actions[bot]' and 'HDR001' in body and '### mrbot check' in summary
        [run] = server.check_runs
        assert (run['head_sha'], run['conclusion']) == (bot.head, 'failure')
