# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""mrbot installed in another repository, as its maintainers would: `mrbot init --ci github` there, then the check
of `mrbot PR` on each of its newest commits, each made a pull request onto its parent with mrbot installed.

Usage: python scripts/upstream_action.py REPO --action OWNER/NAME@COMMIT [--last N] [--path fla/] --out DIR

REPO is left as it is: the work is done in a clone under DIR. For each commit C (newest first, no merges, touching
PATH), the base is C's parent plus one commit holding what `mrbot init --ci github` wrote there, and the head is C
picked onto it; the `pull_request` payload is GitHub's published example with those commits, C's title and body.
A pull request's body is not in git: the body is the repository's template with the commit message as its first
section and every other section saying so, so that the body rule speaks only of a template it cannot read.
The check runs as the action's `check` step runs it (`mrbot action --artifact DIR/N`); what a maintainer would see is
the report in that artifact. Prints a table: commit, init seconds, check seconds, errors, findings.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checks.pr import template_sections  # noqa: E402
from tests.mrbot.webhooks import example  # noqa: E402

PROJECT = 'fla-org/flash-linear-attention'


def git(repo: Path, *args: str) -> str:
    return subprocess.run(['git', '-c', 'user.name=mrbot init', '-c', 'user.email=init@localhost', *args], cwd=repo,
                          capture_output=True, text=True, check=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('repo', type=Path)
    parser.add_argument('--action', required=True)
    parser.add_argument('--last', type=int, default=5)
    parser.add_argument('--path', default='fla/')
    parser.add_argument('--out', type=Path, required=True)
    args = parser.parse_args()
    clone = args.out / 'repo'
    if not clone.exists():
        subprocess.run(['git', 'clone', '-q', str(args.repo.resolve()), str(clone)], check=True)
    commits = git(clone, 'log', '--no-merges', f'-{args.last}', '--format=%H', 'origin/HEAD', '--', args.path).split()
    mrbot = [sys.executable, '-m', 'mrbot.cli']
    print('| commit | init s | check s | errors | findings |\n| --- | --- | --- | --- | --- |')
    for number, commit in enumerate(commits, 1):
        git(clone, 'checkout', '-q', '-f', '-B', 'main', f'{commit}^')
        start = time.monotonic()
        done = subprocess.run([*mrbot, 'init', '--ci', 'github', '--action', args.action], cwd=clone,
                              capture_output=True, text=True)
        init_seconds = time.monotonic() - start
        if done.returncode != 0:
            print(f'| `{commit[:10]}` | init failed: {done.stderr.strip()} | | | |')
            continue
        (args.out / f'init-{number}.log').write_text(done.stderr)
        git(clone, 'add', '-A')
        git(clone, 'commit', '-q', '-m', '[CI] Run mrbot on pull requests')
        base = git(clone, 'rev-parse', 'HEAD')
        git(clone, 'checkout', '-q', '-B', 'topic')
        picked = subprocess.run(['git', '-c', 'user.name=x', '-c', 'user.email=x@y', 'cherry-pick', commit], cwd=clone,
                                capture_output=True, text=True)
        if picked.returncode != 0:
            git(clone, 'cherry-pick', '--abort')
            print(f'| `{commit[:10]}` | {init_seconds:.1f} | does not apply onto its parent with mrbot | | |')
            continue
        head = git(clone, 'rev-parse', 'HEAD')
        title, _, message = git(clone, 'log', '-1', '--format=%B', commit).partition('\n')
        template = clone / '.github' / 'pull_request_template.md'
        sections = template_sections(template.read_text()) if template.is_file() else ('Summary',)
        body = '\n\n'.join(f'## {name}\n\n' + (message.strip() or title if not index else
                                                  'Not in git: the pull request body of this commit is not kept.')
                           for index, name in enumerate(sections))
        payload = example('pull_request', 'opened')
        payload['repository'].update(full_name=PROJECT, default_branch='main')
        payload['pull_request'].update(number=number, title=title, body=body, draft=False)
        payload['pull_request']['base'].update(sha=base, ref='main')
        payload['pull_request']['head'].update(sha=head, ref='topic')
        step = args.out / f'step-{number}'
        step.mkdir(exist_ok=True)
        (step / 'event.json').write_text(json.dumps(payload))
        environ = {**os.environ, 'GITHUB_EVENT_NAME': 'pull_request', 'GITHUB_EVENT_PATH': str(step / 'event.json'),
                   'GITHUB_REPOSITORY': PROJECT, 'GITHUB_RUN_ID': str(7000 + number),
                   'GITHUB_OUTPUT': str(step / 'output'), 'GITHUB_STEP_SUMMARY': str(step / 'summary')}
        start = time.monotonic()
        done = subprocess.run([*mrbot, 'action', '--artifact', str(args.out / f'artifact-{number}')], cwd=clone,
                              env=environ, capture_output=True, text=True)
        check_seconds = time.monotonic() - start
        (step / 'log').write_text(done.stdout + done.stderr)
        outputs = dict(line.split('=', 1) for line in (step / 'output').read_text().splitlines()) \
            if (step / 'output').exists() else {}
        print(f"| `{commit[:10]}` {title[:60]} | {init_seconds:.1f} | {check_seconds:.1f} | "
              f"{outputs.get('errors', f'exit {done.returncode}')} | {outputs.get('findings', '')} |", flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
