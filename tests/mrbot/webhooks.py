# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The community's example webhook payloads of api.github.com (npm `@octokit/webhooks-examples`, which `make test`
installs): what `mrbot action` reads in a GitHub workflow, as GitHub sends it."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = (Path(__file__).resolve().parents[2] / 'node_modules' / '@octokit' / 'webhooks-examples' / 'api.github.com'
            / 'index.json')
# The events `mrbot action` acts on; the workflows trigger it on no other.
HANDLED = ('pull_request', 'issue_comment', 'workflow_run')


@functools.cache
def _index() -> dict[str, list[dict[str, Any]]]:
    if not EXAMPLES.is_file():
        pytest.fail(f'{EXAMPLES.relative_to(EXAMPLES.parents[4])} is missing: the action tests read the published '
                    'webhook examples; run `make test`, or `npm ci` first', pytrace=False)
    return {event['name']: event['examples'] for event in json.loads(EXAMPLES.read_text(encoding='utf-8'))}


def examples(event: str) -> list[dict[str, Any]]:
    """Every published example of `event`, each a fresh copy."""
    return copy.deepcopy(_index()[event])


def example(event: str, action: str, having: str | None = None) -> dict[str, Any]:
    """The first published example of `event` with this action (whose event object has a non-empty field `having`),
    as a fresh copy."""
    for payload in examples(event):
        if payload.get('action') == action and (having is None or payload.get(event, {}).get(having)):
            return payload
    raise LookupError(f'@octokit/webhooks-examples has no {event}.{action} example'
                      + (f' with {event}.{having}' if having else ''))
