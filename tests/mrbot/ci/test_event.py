# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What a CI job reads of its event: where the base of its checkout is."""

from __future__ import annotations

import json

from mrbot.ci.event import base_branches

TARGETS = ('origin/main', 'main')


def test_a_repository_whose_default_branch_is_not_main_finds_its_base_by_the_events_default_branch(tmp_path):
    # a GitHub job's clone of upstream's layout has origin/master and no origin/main
    (tmp_path / 'event.json').write_text(json.dumps({'repository': {'default_branch': 'master'}}))
    assert base_branches(TARGETS, {'GITHUB_EVENT_PATH': str(tmp_path / 'event.json')}) == (
        'origin/main', 'main', 'origin/master', 'master')
    # GitLab's jobs take their target from GitLab's API: whoever runs a job sets its variables, predefined ones too
    assert base_branches(TARGETS, {'CI_MERGE_REQUEST_TARGET_BRANCH_NAME': 'a' * 40, 'CI_DEFAULT_BRANCH': 'x'}) == TARGETS


def test_a_branch_name_git_would_read_as_an_option_or_a_payload_without_one_adds_nothing(tmp_path):
    (tmp_path / 'event.json').write_text(json.dumps({'repository': {'default_branch': '--output=/tmp/x'}}))
    assert base_branches(TARGETS, {'GITHUB_EVENT_PATH': str(tmp_path / 'event.json')}) == TARGETS
    for payload in ('not json', '[]', '{"repository": "x"}'):
        (tmp_path / 'event.json').write_text(payload)
        assert base_branches(TARGETS, {'GITHUB_EVENT_PATH': str(tmp_path / 'event.json')}) == TARGETS
    assert base_branches(TARGETS, {}) == TARGETS
