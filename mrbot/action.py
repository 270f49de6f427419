# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot action`: the bot's one entry point in CI, on GitHub Actions and in GitLab pipelines (`mrbot/ci/`).

`mrbot action` acts on the GitHub event of the run, `--forge gitlab` on the merge request pipeline, and `mrbot action
run` is the GPU job after checkout. Whatever is not for the bot ends with one line and exit 0.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from mrbot import git
from mrbot.ci import event as ci_event
from mrbot.ci import github
from mrbot.ci.event import Ended
from mrbot.ci.poster import post_run
from mrbot.config import Config
from mrbot.records import MrbotError


def run(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> int:
    root = git.repo_root(Path.cwd())
    folder = Path(args.artifact) if args.artifact else None
    if args.history and (folder is None or args.step is not None or args.forge == 'gitlab'):
        raise MrbotError('--history FILE goes with --artifact DIR on GitHub: only the poster records the history')
    try:
        if args.step == 'run':
            # the GPU job and GitLab's command job need torch; GitHub's jobs holding a token install no more than
            # .ci/token-jobs.txt, and must not load it
            from mrbot.ci.job import run_job

            if not args.out:
                raise MrbotError('mrbot action run needs --out DIR, where it leaves the result for the poster')
            # the settings of the PR's merge base: a PR's own new settings are not this bot's to read yet
            base, _ = git.revisions(root, None, None, ci_event.base_branches(Config().target_branches, environ))
            config = git.config_at(root, base)
            # the result names who asked: the author of the comment this run answers, as GitHub's payload has it
            asked = {**environ, 'MRBOT_USER': ci_event.commenter(environ)}
            return run_job(root, config, asked, Path(args.out), ci_event.base_branches(config.target_branches, environ))
        if args.forge == 'gitlab':
            from mrbot.ci import gitlab

            return gitlab.act(root, environ, folder)
        if args.step == 'history':
            github.find_history(environ)
            return 0
        if args.history:
            _post_recording(environ, folder, Path(args.history))
        else:
            github.act(root, environ, folder)
    except Ended as reason:
        print(f'mrbot action: nothing to do: {reason}')
    return 0


def _post_recording(environ: Mapping[str, str], folder: Path | None, history: Path) -> None:
    """The poster with its history: the one job that holds a write token and runs no pull-request code records."""
    event = github.github_event(environ)
    if event.name != 'workflow_run':
        raise MrbotError(f'--history: only the poster of a workflow_run event records timings, not a {event.name} job')
    if environ.get('GITHUB_RUN_ATTEMPT', '1') != '1':
        # a re-run posts the same run's results again: their points are in the history once already
        print('mrbot action: a re-run of the poster records no history', file=sys.stderr)
        history = None
    posted = post_run(lambda: ci_event.open_forge('github', event.repository, environ), event, folder, history)
    print(f"mrbot action: posted {', '.join(posted)}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('step', nargs='?', choices=['run', 'history'],
                        help="'run': the GPU job after checkout, running the command the MRBOT_* variables describe; "
                             "'history': the poster's step that finds the benchmark history its own runs keep")
    parser.add_argument('--forge', choices=['github', 'gitlab'], default='github',
                        help='where the pipeline runs (default: github; gitlab reads its predefined CI variables)')
    parser.add_argument('--artifact', metavar='DIR',
                        help='write what would be posted into DIR (fork PRs), or post what DIR holds (workflow_run)')
    parser.add_argument('--out', metavar='DIR', help='with run: where the result for the poster goes')
    parser.add_argument('--history', metavar='FILE',
                        help="with --artifact on a workflow_run: record the base medians of /bench results in the "
                             "history store FILE (made on first use) and end each result with the op's trend")
