# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The pull request every CI test acts on: on the fake GitHub (`bot`), or as a merge request on the fake GitLab
(`lab`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mrbot.ci import event as ci_event
from mrbot.forges import connect
from tests.mrbot.ci.fakerunner import BODY, HEADER, PROJECT, PYPROJECT, Bot, _job_run_by
from tests.mrbot.forges.fakeforge import BACKOFF, PROJECT_TOKEN, FakeGitHub, FakeGitLab


@pytest.fixture
def bot(repo, tmp_path_factory, monkeypatch) -> Iterator[Bot]:
    with FakeGitHub(PROJECT) as server:
        # the workflow's files (payloads, outputs, artifacts) live outside the checkout, as on a runner
        yield Bot(repo, server, tmp_path_factory.mktemp('runner'), monkeypatch)


@pytest.fixture
def lab(repo, monkeypatch):
    """The same change as a GitLab merge request, with the pipeline's predefined variables."""
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
