# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What CI says happened, and the step outputs and summary it reads back."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mrbot.ci.grammar import Seal
from mrbot.forges import Forge, connect, utc_timestamp
from mrbot.records import MrbotError
from mrbot.records.reading import JsonObject

# a GitHub login: letters, digits and inner hyphens, 39 at most; an app's account ends in [bot]
LOGIN = re.compile(r'[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?(?:\[bot\])?')


class Ended(Exception):
    """Nothing for the bot to do with this event; the message says why."""


@dataclass(frozen=True)
class Event:
    """What CI says happened, and where to write outputs; `payload` is the webhook payload (GitHub) or {} (GitLab).
    `signing_key` signs and proves the bot's markers (MRBOT_SIGNING_KEY), None where none is set."""

    name: str
    payload: dict
    repository: str
    run_id: str
    run_url: str
    output: Path | None
    step_summary: Path | None
    signing_key: bytes | None = None

    def seal(self, forge: str, number: int) -> Seal | None:
        """The seal of the bot's markers on request `number`, or None without a signing key."""
        return Seal.of(self.signing_key, forge, self.repository, number)

    def fields(self) -> JsonObject:
        """The payload read field by field: a field no forge sends that way is one error naming it."""
        return JsonObject(self.payload, 'the webhook payload')


def writable(variable: str, value: str | None) -> Path | None:
    """The file a CI variable names for the step to append to, checked before any work, whose result it would lose."""
    if not value:
        return None
    path = Path(value)
    try:
        with path.open('a', encoding='utf-8'):
            pass
    except OSError as error:
        raise MrbotError(f'{variable}={value}: cannot append to it ({error.strerror}); expected the file the CI runner '
                         'gives the step') from None
    return path


def _payload_field(environ: Mapping[str, str], *keys: str) -> object:
    """A field of the GitHub run's webhook payload, None where the payload or the field is missing."""
    try:
        with open(environ.get('GITHUB_EVENT_PATH', ''), encoding='utf-8') as payload:
            value = json.load(payload)
        for key in keys:
            value = value.get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return value


def base_branches(targets: tuple[str, ...], environ: Mapping[str, str]) -> tuple[str, ...]:
    """Where a GitHub job looks for the base of its checkout: the settings' `targets`, then the repository's default
    branch as GitHub's payload names it (a clone has it as `origin/NAME`; a repository whose default is not `main`
    has no `origin/main`). GitLab's jobs take the target from GitLab's API: whoever runs a job sets its variables."""
    default = _payload_field(environ, 'repository', 'default_branch')
    # a branch name that git takes as a revision, never as an option
    named = [f'origin/{default}', default] if isinstance(default, str) and re.fullmatch(r'[\w.][\w./-]*', default) else []
    return tuple(dict.fromkeys([*targets, *named]))


def commenter(environ: Mapping[str, str]) -> str:
    """The login of whoever wrote the comment that started this GitHub run; '' for another event, or a login of a form
    GitHub does not give out."""
    login = _payload_field(environ, 'comment', 'user', 'login')
    return login if isinstance(login, str) and LOGIN.fullmatch(login) else ''


def open_forge(kind: str, project: str, environ: Mapping[str, str]) -> Forge:
    """The forge of the event, with the token CI gives (the one place the CI code connects, which tests redirect)."""
    return connect(kind, project, environ=environ)


def write_outputs(event: Event, values: dict[str, str]) -> None:
    if event.output is None:
        return
    with event.output.open('a', encoding='utf-8') as out:
        for key, value in values.items():
            out.write(f'{key}={value}\n')


def write_summary(event: Event, text: str) -> None:
    if event.step_summary is not None:
        with event.step_summary.open('a', encoding='utf-8') as out:
            out.write(text.rstrip('\n') + '\n')


def payload_time(value: object) -> str:
    """A payload's time as `utc_timestamp` writes it; one that is not a time reads as the earliest possible, so that
    any push counts as after it."""
    try:
        return utc_timestamp(value) if isinstance(value, str) else ''
    except ValueError:
        return ''
