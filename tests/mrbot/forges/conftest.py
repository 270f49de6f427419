# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""A fresh fake GitHub and GitLab on loopback for each test, and the adapters connected to them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mrbot.forges import Forge, connect
from tests.mrbot.forges.fakeforge import BACKOFF, BOT_TOKEN, FakeGitHub, FakeGitLab


@pytest.fixture
def github_server() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def gitlab_server() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


@pytest.fixture
def github(github_server: FakeGitHub) -> Forge:
    return connect('github', github_server.project, url=github_server.url, token=BOT_TOKEN, environ={}, backoff=BACKOFF)


@pytest.fixture
def gitlab(gitlab_server: FakeGitLab) -> Forge:
    return connect('gitlab', gitlab_server.project, url=gitlab_server.url, token=BOT_TOKEN, environ={}, backoff=BACKOFF)
