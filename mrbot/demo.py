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
from mrbot.workspace import Workspace

SOURCE = Path(__file__).resolve().parents[1]
CHANGE = SOURCE / 'examples' / 'demo-change.patch'
BRANCH = 'demo/simple-gla-stages'
TITLE = '[Simple GLA] Try unpipelined configs in the chunk autotune space'
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
        print(f'mrbot demo: a clone of this repository in {clone}, with the example change committed on {BRANCH}:\n'
              f'  {TITLE}\n  ({CHANGE.relative_to(SOURCE)}: one more autotune config, one more test case)\n'
              f'running mrbot prepare --base {base[:12]} there\n', file=sys.stderr, flush=True)
        parser = argparse.ArgumentParser()
        prepare.add_arguments(parser)
        workspace = Workspace.load(clone)
        record = prepare.prepare(parser.parse_args(['--base', base]), workspace, base)
        print(prepare.render_body(record, clone, workspace.config), end='')
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    failed = [s['name'] for s in record['steps'] if s['status'] not in ('done', 'skipped', 'pending')]
    if failed:
        print(f"mrbot demo: step(s) {', '.join(failed)} did not pass; the body above says why", file=sys.stderr)
    return 1 if failed else 0
