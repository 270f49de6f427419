# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot demo`: `mrbot prepare` on a bundled example change (a simple GLA kernel tweak and a new test case), applied
in a temporary clone of this repository, printing the PR body it writes."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from mrbot import git, prepare
from mrbot.records import MrbotError
from mrbot.repo.workspace import Workspace
from mrbot.rules import check_rule_ids

SOURCE = Path(__file__).resolve().parents[1]
CHANGE = SOURCE / 'examples' / 'demo-change.patch'
BRANCH = 'demo/simple-gla-stages'
TITLE = '[Simple GLA] Try unpipelined configs in the chunk autotune space'
# What a newcomer does after the demo, printed below the body it ends with.
NEXT = '''
mrbot demo: above is the pull request body `mrbot prepare` wrote for the example change (its evidence record went
with the temporary clone). On a branch of your own:
  mrbot check        the change against CONTRIBUTING.md, on the lines it adds
  mrbot test         the tests the change reaches (--list says which, and why)
  mrbot prepare      all of it and the body, in .mrbot/pr_body.md (--open opens the pull request)
  mrbot help         every command; docs/ci.md sets the bot up in CI'''
# The example commit's author, so the demo works where git has no identity configured.
IDENTITY = ('-c', 'user.name=mrbot demo', '-c', 'user.email=demo@mrbot.invalid')


def _clone(folder: Path) -> tuple[Path, str]:
    """A clone of this repository's HEAD with the example change committed on a branch; returns it and its base."""
    try:
        source = git.repo_root(SOURCE)
    except MrbotError:
        raise MrbotError(f'{SOURCE}: the demo clones this repository, but it is not a git checkout') from None
    clone = folder / 'repo'
    git.run_git(folder, 'clone', '--quiet', '--no-hardlinks', str(source), str(clone))
    base = git.resolve(clone, 'HEAD')
    git.run_git(clone, 'checkout', '--quiet', '-b', BRANCH)
    git.run_git(clone, 'apply', str(CHANGE))
    git.run_git(clone, *IDENTITY, 'commit', '--quiet', '-am', TITLE)
    return clone, base


def run(args: argparse.Namespace) -> int:
    folder = Path(tempfile.mkdtemp(prefix='mrbot-demo-'))
    try:
        clone, base = _clone(folder)
        print(f'mrbot demo: a temporary clone of this repository (removed when the demo ends), with the example change '
              f'committed on {BRANCH}:\n  {TITLE}\n  ({CHANGE.relative_to(SOURCE)}: one more autotune config, one '
              f'more test case)\nrunning mrbot prepare --base {base[:12]} there\n', file=sys.stderr, flush=True)
        workspace = Workspace.load(clone)
        check_rule_ids(workspace.config)
        record = prepare.prepare(prepare.PrepareOptions(), workspace, base)
        print(prepare.render_body(record, clone, workspace.config), end='')
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    failed = record.failed_steps
    if failed:
        print(f"mrbot demo: step(s) {', '.join(failed)} did not pass; the body above says why", file=sys.stderr)
    print(NEXT, file=sys.stderr)
    return 1 if failed else 0
