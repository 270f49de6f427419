# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The helpers both adapters share: remotes, markers, fitting a body, and finding the token and URL."""

from __future__ import annotations

from datetime import datetime

import pytest

from mrbot.forges import Annotation, connect, fit_body, marker, parse_remote, utc_timestamp
from mrbot.records import MrbotError
from tests.mrbot.forges.fakeforge import BACKOFF, BOT_TOKEN, FakeGitHub, FakeGitLab

URL = 'https://ci.example/runs/7/report.md'
NOTE = f"_Truncated to fit this forge's {{limit}}-character limit; the full text is at {URL}._"


@pytest.mark.parametrize(('remote', 'expected'), [
    ('https://github.com/fla-org/flash-linear-attention.git',
     ('github', 'fla-org/flash-linear-attention', 'https://github.com')),
    ('https://github.com/fla-org/flash-linear-attention/', ('github', 'fla-org/flash-linear-attention',
                                                            'https://github.com')),
    ('https://x-access-token:secret@github.com/octo/kernels', ('github', 'octo/kernels', 'https://github.com')),
    ('git@github.com:octo/kernels.git', ('github', 'octo/kernels', 'https://github.com')),
    ('ssh://git@github.com/octo/kernels', ('github', 'octo/kernels', 'https://github.com')),
    ('https://github.corp.example/octo/kernels.git', ('github', 'octo/kernels', 'https://github.corp.example')),
    ('https://gitlab.com/lab/kernels/fla.git', ('gitlab', 'lab/kernels/fla', 'https://gitlab.com')),
    ('git@gitlab.com:lab/fla.git', ('gitlab', 'lab/fla', 'https://gitlab.com')),
    ('ssh://git@gitlab.corp.example:2222/lab/sub/fla.git', ('gitlab', 'lab/sub/fla', 'https://gitlab.corp.example')),
    ('http://gitlab.local:8080/lab/fla', ('gitlab', 'lab/fla', 'http://gitlab.local:8080')),
])
def test_parse_remote_reads_https_and_ssh_forms(remote, expected):
    assert parse_remote(remote) == expected


@pytest.mark.parametrize('remote', [
    '', 'not a url', '/srv/git/kernels.git', 'file:///srv/git/kernels.git', 'https://github.com/octo',
    'https://github.com/octo/kernels/tree/main', 'git@github.com:octo', 'https://gitlab.com/lab',
    'https://user:secret@github.com/octo',
])
def test_parse_remote_names_the_url_it_cannot_read_and_the_forms_it_can(remote):
    with pytest.raises(MrbotError) as error:
        parse_remote(remote)
    message = str(error.value)
    assert f"'{remote.replace('user:secret@', '')}'" in message
    assert 'git@HOST:OWNER/NAME.git' in message and 'https://HOST/OWNER/NAME' in message
    assert 'secret' not in message


def test_marker_is_a_hidden_html_comment_per_purpose():
    assert marker('report') == '<!-- mrbot:report -->'
    assert marker('bench-hopper') == '<!-- mrbot:bench-hopper -->'


@pytest.mark.parametrize('purpose', ['', 'Report', 'bench hopper', 'bench_hopper', '-x', 'x--y', 'a-->b'])
def test_marker_refuses_a_purpose_that_is_not_dashed_lowercase_words(purpose):
    with pytest.raises(ValueError, match='dash-separated'):
        marker(purpose)


def test_fit_body_leaves_a_body_within_the_limit_alone():
    body = 'a' * 99 + '\n'
    assert fit_body(body, 100, URL) == body
    assert fit_body(body, 101, URL) == body


def test_fit_body_cuts_at_the_last_line_that_leaves_room_for_the_note():
    lines = [f'line {i:02d} ' + 'x' * 40 + '\n' for i in range(20)]
    body = ''.join(lines)
    # Five 49-character lines, a blank line and the note (for any three-digit limit) fill the limit exactly.
    limit = 5 * 49 + 1 + len(NOTE.format(limit=999))
    assert fit_body(body, limit, URL) == ''.join(lines[:5]) + '\n' + NOTE.format(limit=limit)
    assert len(fit_body(body, limit, URL)) == limit
    # One character less and the fifth line no longer fits.
    assert fit_body(body, limit - 1, URL) == ''.join(lines[:4]) + '\n' + NOTE.format(limit=limit - 1)


def test_fit_body_gives_only_the_note_when_the_first_line_is_too_long():
    note = NOTE.format(limit=200)
    assert fit_body('x' * 500 + '\nmore\n', 200, URL) == note


def test_fit_body_closes_a_code_block_the_cut_leaves_open():
    body = '## Benchmark\n````\n' + ''.join(f'row {i}\n' for i in range(50)) + '````\ndone\n'
    fitted = fit_body(body, 200, URL)
    assert len(fitted) <= 200
    head, _, note = fitted.rpartition('\n\n')
    assert head.startswith('## Benchmark\n````\nrow 0\n') and head.endswith('\n````')
    assert note == NOTE.format(limit=200)


def test_fit_body_refuses_a_limit_too_small_for_its_note():
    with pytest.raises(ValueError, match='no room'):
        fit_body('x' * 100, 50, URL)


def test_missing_token_names_the_variables_to_set():
    with pytest.raises(MrbotError, match=r'^no GitHub token: set GITHUB_TOKEN or GH_TOKEN'):
        connect('github', 'octo/kernels', environ={'GITHUB_TOKEN': ''})
    with pytest.raises(MrbotError, match=r'^no GitLab token: set GITLAB_TOKEN'):
        connect('gitlab', 'lab/fla', environ={'GITHUB_TOKEN': BOT_TOKEN})


def test_unknown_forge_is_refused():
    with pytest.raises(MrbotError, match="unknown forge 'gitea': expected github or gitlab"):
        connect('gitea', 'octo/kernels', token=BOT_TOKEN)


@pytest.mark.parametrize('variables', [
    {'GITHUB_TOKEN': BOT_TOKEN, 'GH_TOKEN': 'unknown-token'},
    {'GH_TOKEN': BOT_TOKEN},
])
def test_github_token_and_api_url_come_from_the_environment(github_server: FakeGitHub, variables):
    forge = connect('github', github_server.project, environ={'GITHUB_API_URL': github_server.url, **variables},
                    backoff=BACKOFF)
    assert forge.branch_exists('main')


def test_gitlab_token_and_server_url_come_from_the_environment(gitlab_server: FakeGitLab):
    environ = {'CI_SERVER_URL': gitlab_server.url, 'GITLAB_TOKEN': BOT_TOKEN}
    assert connect('gitlab', gitlab_server.project, environ=environ, backoff=BACKOFF).branch_exists('main')


def test_arguments_win_over_the_environment(github_server: FakeGitHub):
    environ = {'GITHUB_API_URL': 'http://127.0.0.1:9', 'GITHUB_TOKEN': 'unknown-token'}
    forge = connect('github', github_server.project, url=github_server.url, token=BOT_TOKEN, environ=environ,
                    backoff=BACKOFF)
    assert forge.branch_exists('main')


@pytest.mark.parametrize('moment', [
    '2026-12-03T04:00:00Z', '2026-12-03T04:00:00.123Z', '2026-12-03T06:00:00.999+02:00',
    datetime(2026, 12, 3, 4, 0, 0, 500),
])
def test_timestamps_of_both_forges_read_the_same_in_utc_to_the_second(moment):
    assert utc_timestamp(moment) == '2026-12-03T04:00:00+00:00'


def test_an_annotation_refuses_a_level_github_does_not_know():
    with pytest.raises(ValueError, match="annotation level 'error': expected one of notice, warning, failure"):
        Annotation('fla/ops/op.py', 3, 'error', 'finding')
