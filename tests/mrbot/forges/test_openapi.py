# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The GitHub fake holds its traffic to GitHub's REST description: what GitHub would not send or accept fails a test."""

from __future__ import annotations

import json

import pytest

from mrbot.forges import connect
from tests.mrbot.forges import openapi
from tests.mrbot.forges.fakeforge import BACKOFF, BOT_TOKEN, FakeGitHub

COMMENT = '/repos/octo/kernels/issues/comments/7'


@pytest.fixture(scope='module')
def description() -> openapi.Description:
    return openapi.description()


def _comment(description: openapi.Description, **user: object) -> dict:
    """A comment as GitHub answers an edit of it, every field it always sends filled in."""
    return description.complete('PATCH', COMMENT, 200, {'id': 7, 'body': 'hi', 'user': {'login': 'alice', **user}})


def test_a_complete_answer_and_a_documented_request_pass(description):
    exchange = openapi.Exchange('PATCH', COMMENT, {}, json.dumps({'body': 'hi'}).encode(), 200, _comment(description))
    assert description.violations(exchange) == []


def test_a_field_github_does_not_send_is_named(description):
    # the kind of field our GitLab fake once carried and GitLab never sends: a `bot` flag on the author
    exchange = openapi.Exchange('PATCH', COMMENT, {}, b'{"body": "hi"}', 200, _comment(description, bot=True))
    assert description.violations(exchange) == [f'PATCH {COMMENT}: answer 200: user.bot: not in the description']


def test_a_field_of_the_wrong_type_is_named(description):
    answer = {**_comment(description), 'id': 'seven'}
    [violation] = description.violations(openapi.Exchange('PATCH', COMMENT, {}, b'{"body": "hi"}', 200, answer))
    assert violation.startswith(f'PATCH {COMMENT}: answer 200: id: ') and "'seven'" in violation


def test_a_request_field_github_ignores_is_named(description):
    exchange = openapi.Exchange('PATCH', COMMENT, {}, b'{"body": "hi", "sticky": true}', None)
    assert description.violations(exchange) == [f'PATCH {COMMENT}: request: sticky: not in the description']


def test_a_request_without_a_required_field_is_named(description):
    violations = description.violations(openapi.Exchange('PATCH', COMMENT, {}, b'{"text": "hi"}', None))
    assert f"PATCH {COMMENT}: request: body: 'body' is a required property" in violations
    assert f'PATCH {COMMENT}: request: text: not in the description' in violations


def test_an_operation_github_does_not_have_is_named(description):
    exchange = openapi.Exchange('DELETE', '/repos/octo/kernels/pulls/1', {}, b'', 204, None)
    assert description.violations(exchange) == ['DELETE /repos/octo/kernels/pulls/1: the description documents no '
                                                'such operation']


def test_a_status_the_operation_does_not_document_is_named(description):
    [violation] = description.violations(openapi.Exchange('PATCH', COMMENT, {}, b'{"body": "hi"}', 409,
                                                          {'message': 'Conflict'}))
    assert violation.startswith(f'PATCH {COMMENT}: answer 409: ')


def test_the_fake_fails_the_test_that_sees_it_answer_an_undocumented_field(monkeypatch):
    described = FakeGitHub._comment_json
    monkeypatch.setattr(FakeGitHub, '_comment_json', lambda self, comment: {**described(self, comment), 'sticky': True})
    with pytest.raises(AssertionError, match=r'POST /repos/octo/kernels/issues/1/comments: answer 201: sticky: not in '
                                             r'the description'), FakeGitHub() as server:
        server.branches['feature'] = 'f' * 40
        number = server.open_pull('feature')
        forge = connect('github', server.project, url=server.url, token=BOT_TOKEN, environ={}, backoff=BACKOFF)
        forge.post_comment(number, 'hello')
