# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The GPU job, `mrbot action run`: on a runner of its class it runs the command it was authorized for and leaves the
result comment, and it runs no commit but the authorized one."""

from __future__ import annotations

import json
import re

import pytest

from mrbot.ci import job
from mrbot.ci.artifacts import ARTIFACT
from mrbot.ci.grammar import Command
from mrbot.cli import main
from mrbot.testing import Gpu
from tests.mrbot.ci.fakerunner import PROJECT


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
    # the comment this run answers, as GitHub hands the job its payload
    payload = bot.tmp / 'event.json'
    payload.write_text(json.dumps({'action': 'created', 'comment': {'user': {'login': 'alice'}}}))
    for name, value in {'MRBOT_COMMAND': kind, 'MRBOT_SHA': bot.head, 'MRBOT_RUNNER': 'hopper',
                        'MRBOT_PR': str(bot.number), 'MRBOT_ARGS': json.dumps(args), 'GITHUB_RUN_ID': '88',
                        'GITHUB_EVENT_PATH': str(payload), 'GITHUB_REPOSITORY': PROJECT,
                        'GITHUB_SERVER_URL': 'https://github.example'}.items():
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


@pytest.mark.parametrize('payload', [{'comment': {'user': {'login': 'alice`) and @everyone'}}},
                                     {'comment': {'user': {'login': ['alice']}}}, {'pull_request': {}}, None])
def test_the_result_names_no_one_where_the_payload_names_no_github_login(bot, monkeypatch, payload):
    # a variable of the runner's own is not who asked either: only the payload's comment author is
    monkeypatch.setenv('MRBOT_USER', 'mallory')
    if payload is not None:
        (bot.tmp / 'event.json').write_text(json.dumps(payload))
        monkeypatch.setenv('GITHUB_EVENT_PATH', str(bot.tmp / 'event.json'))
    body = _job_for_the_base(bot, monkeypatch)
    assert 'Asked by a maintainer with `/test --on hopper`' in body and '@' not in body


def _job_for_the_base(bot, monkeypatch) -> str:
    """The result of a `/test` job authorized for the base commit while the checkout is at the head."""
    for name, value in {'MRBOT_COMMAND': 'test', 'MRBOT_SHA': bot.base, 'MRBOT_RUNNER': 'hopper',
                        'MRBOT_PR': str(bot.number), 'MRBOT_ARGS': json.dumps({'tests': [], 'k': None, 'sha': None})}.items():
        monkeypatch.setenv(name, value)
    folder = bot.tmp / 'result'
    assert main(['action', 'run', '--out', str(folder)]) == 1
    return json.loads((folder / ARTIFACT).read_text())['body']


def test_gpu_job_refuses_a_checkout_other_than_the_authorized_sha(bot, monkeypatch):
    body = _job_for_the_base(bot, monkeypatch)
    assert f'the checkout is at {bot.head[:12]}, but the command was authorized for {bot.base[:12]}' in body
