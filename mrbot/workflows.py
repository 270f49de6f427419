# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The CI files `mrbot init --ci` writes into another repository, pinned to the mrbot they come from.

On GitHub they are this repository's own `.github/workflows/mrbot-*.yml`, which call the root `action.yml` from a
checkout of the bot; elsewhere the same jobs call the action by its repository and full commit instead, so one set of
workflows serves both. On GitLab it is an include of `templates/mrbot/template.yml` at that commit.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from mrbot.git import run_git
from mrbot.records import MrbotError

_SOURCE = Path(__file__).resolve().parents[1]
# The workflows beside the package in a checkout of mrbot, else where the wheel installs them.
WORKFLOWS = next((folder for folder in (_SOURCE / '.github' / 'workflows', Path(sys.prefix) / 'share' / 'mrbot' /
                  'workflows') if folder.is_dir()), _SOURCE / '.github' / 'workflows')
_REPOSITORY = re.compile(r'[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}')
_COMMIT = re.compile(r'[0-9a-f]{40}')
_GITHUB_URL = re.compile(r'(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)(?P<repository>[^/]+/[^/]+?)'
                         r'(?:\.git)?/?')
# The steps that check the bot out of this repository itself; a caller elsewhere names the action by its commit.
_BOT_CHECKOUT = re.compile(r'^      - name: Check out the bot\b.*?(?=^      - name: )', re.M | re.S)
_LOCAL_ACTION = re.compile(r'^ {8}# [^\n]*\n {8}uses: \./(?:bot)? # zizmor: ignore\[self-repository\]$', re.M)
_LICENSE_HEADER = re.compile(r'\A(?:# Copyright[^\n]*\n# SPDX-License-Identifier:[^\n]*\n\n)')


@dataclass(frozen=True)
class ActionRef:
    """The mrbot a caller pins: its GitHub repository ('owner/name') and full commit."""

    repository: str
    commit: str

    def __str__(self) -> str:
        return f'{self.repository}@{self.commit}'


@dataclass(frozen=True)
class CiFile:
    """A file `mrbot init --ci` writes: its path in the repository and its text."""

    path: str
    text: str


def parse_action_ref(text: str) -> ActionRef:
    """`OWNER/NAME@COMMIT` as given to `--action`; anything else is one error saying what was expected."""
    repository, _, commit = text.partition('@')
    if not _REPOSITORY.fullmatch(repository) or not _COMMIT.fullmatch(commit):
        raise MrbotError(f'--action {text!r}: expected OWNER/NAME@COMMIT with the full 40-character commit id in '
                         'lowercase, e.g. octo/mrbot@' + '0' * 40)
    return ActionRef(repository, commit)


def installed_ref() -> ActionRef | None:
    """The repository and commit this mrbot was installed from: what pip recorded for an install from a GitHub commit
    (`direct_url.json`), else the checkout it runs from where that checkout is clean; None where neither says."""
    try:
        recorded = metadata.distribution('mrbot').read_text('direct_url.json')
    except metadata.PackageNotFoundError:
        recorded = None
    if recorded:
        try:
            source = json.loads(recorded)
        except ValueError:
            source = {}
        url, vcs = source.get('url', ''), source.get('vcs_info') or {}
        found = _GITHUB_URL.fullmatch(url) if isinstance(url, str) and isinstance(vcs, dict) else None
        if found and _REPOSITORY.fullmatch(found['repository']) and vcs.get('vcs') == 'git' \
                and _COMMIT.fullmatch(str(vcs.get('commit_id', ''))):
            return ActionRef(found['repository'], vcs['commit_id'])
    return _checkout_ref(_SOURCE)


def _checkout_ref(folder: Path) -> ActionRef | None:
    def git_output(*args: str) -> str:
        try:
            return run_git(folder, *args).decode().strip()
        except MrbotError:
            return ''

    if not (folder / '.git').exists() or git_output('status', '--porcelain', '--untracked-files=no'):
        return None
    found = _GITHUB_URL.fullmatch(git_output('remote', 'get-url', 'origin'))
    commit = git_output('rev-parse', 'HEAD')
    # only a commit the repository itself holds: GitHub also resolves `uses:` to a commit of a pull request or a fork
    # of it, which would run a stranger's action with the workflows' token
    published = git_output('branch', '--remotes', '--contains', 'HEAD') or git_output('tag', '--contains', 'HEAD')
    if not (found and _REPOSITORY.fullmatch(found['repository']) and _COMMIT.fullmatch(commit) and published):
        return None
    return ActionRef(found['repository'], commit)


def github_workflows(action: ActionRef, version: str) -> tuple[CiFile, ...]:
    """This repository's mrbot workflows as callers of `action`: the bot's checkouts dropped, the action named by its
    commit, and a first line saying where they come from."""
    files = []
    for source in sorted(WORKFLOWS.glob('mrbot-*.yml')):
        text = _LICENSE_HEADER.sub('', source.read_text(encoding='utf-8'))
        text = _BOT_CHECKOUT.sub('', text)
        text = _LOCAL_ACTION.sub(f'        uses: {action} # mrbot {version}', text)
        if re.search(r'uses:\s*["\']?\.{1,2}/', text):
            raise MrbotError(f'{source}: a step still uses a local action after pinning it to {action}: '
                             'expected every local action to be the bot checked out by a "Check out the bot" step')
        header = f'# Written by `mrbot init --ci github` (mrbot {version}, {action}); its docs/ci.md explains the jobs.\n'
        files.append(CiFile(f'.github/workflows/{source.name}', header + text))
    if not files:
        raise MrbotError(f'{WORKFLOWS}: no mrbot-*.yml workflows; expected them beside the mrbot package or under '
                         f'{Path(sys.prefix) / "share" / "mrbot"}: reinstall mrbot')
    return tuple(files)


def gitlab_pipeline(action: ActionRef, version: str) -> tuple[CiFile, ...]:
    """A `.gitlab-ci.yml` that includes mrbot's GitLab template at `action`'s commit, with the input that installs mrbot
    from that commit."""
    template = f'https://raw.githubusercontent.com/{action.repository}/{action.commit}/templates/mrbot/template.yml'
    text = (f'# Written by `mrbot init --ci gitlab` (mrbot {version}, {action}); its docs/ci.md explains the jobs.\n'
            'include:\n'
            f'  - remote: {template}\n'
            '    inputs:\n'
            f'      pip-spec: "mrbot[kernels] @ git+https://github.com/{action.repository}@{action.commit}"\n')
    return (CiFile('.gitlab-ci.yml', text),)
