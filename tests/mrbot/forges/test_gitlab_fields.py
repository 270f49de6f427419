# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The GitLab fake answers only fields GitLab documents: one it invents fails the test that sees it."""

from __future__ import annotations

import pytest

from mrbot.forges import connect
from tests.mrbot.forges import gitlab_fields
from tests.mrbot.forges.fakeforge import BACKOFF, BOT_TOKEN, FakeGitLab


def test_a_field_no_entity_documents_is_named_with_its_path():
    notes = [{'id': 1, 'body': 'hi', 'author': {'id': 2, 'username': 'alice'}},
             {'id': 2, 'body': 'hi', 'author': {'id': 1, 'username': 'mrbot', 'bot': True}, 'sticky': True}]
    assert list(gitlab_fields.undocumented(notes, gitlab_fields.NOTE)) == ['[1].author.bot', '[1].sticky']


def test_a_note_author_is_a_user_basic_and_the_current_user_is_not():
    # GitLab's /user tells a bot account; a note's author never does, so the bot knows its notes by its user's id
    assert 'bot' in gitlab_fields.CURRENT_USER and 'bot' not in gitlab_fields.NOTE['author']


def test_the_fake_fails_the_test_that_sees_it_answer_an_undocumented_field(monkeypatch):
    described = FakeGitLab._user_basic
    monkeypatch.setattr(FakeGitLab, '_user_basic', lambda self, username: {**described(self, username), 'bot': True})
    with pytest.raises(AssertionError, match=r'GET /api/v4/projects/lab/kernels/fla/merge_requests/1/notes: answer '
                                             r'200: \[0\]\.author\.bot'), FakeGitLab() as server:
        server.branches['feature'] = 'f' * 40
        iid = server.open_merge_request('feature')
        server.add_note(iid, 'hello')
        connect('gitlab', server.project, url=server.url, token=BOT_TOKEN, environ={}, backoff=BACKOFF).comments(iid)
