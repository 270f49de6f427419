# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Run `mrbot check` over every commit of a repository against its parent and audit what it reports.

Usage: python scripts/check_history.py [REPO] [--last N] [--path PATH]

Every finding must belong to its commit: the commit as a whole (its message, or a rule about the whole change such as
a missing test), a file the commit added, or a line the commit added.
A finding on a line or file the commit did not add is counted as "not introduced"; the script exits 1 if any is.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mrbot import git  # noqa: E402
from mrbot.check import evaluate  # noqa: E402
from mrbot.records import ChangeSet, Finding  # noqa: E402
from mrbot.rules import all_rules  # noqa: E402
from mrbot.workspace import Workspace  # noqa: E402


def introduced(change: ChangeSet, finding: Finding, scope: str) -> bool:
    """Whether the finding is about the commit itself, a file it added, or a line it added."""
    if scope == 'change' or not finding.path:
        return True
    if finding.path.endswith('/'):
        return any(f.path.startswith(finding.path) for f in change.files)
    changed = change.file(finding.path)
    if changed is None:
        return False
    if changed.status == 'added' or finding.line == 0:
        return True
    return any(line in changed.added_lines for line in finding.anchors or (finding.line,))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('repo', nargs='?', default='.')
    parser.add_argument('--last', type=int, help='only the newest N commits')
    parser.add_argument('--path', help='only commits that touch this path, e.g. fla/')
    args = parser.parse_args()
    root = git.repo_root(Path(args.repo).resolve())
    workspace, rules = Workspace.load(root), all_rules()
    config = workspace.config
    scopes = {r.id: r.scope for r in rules}
    shas = subprocess.run(['git', 'rev-list', '--reverse', '--no-merges', 'HEAD', '--', args.path or '.'], cwd=root,
                          capture_output=True, text=True, check=True).stdout.split()
    shas = shas[-args.last:] if args.last else shas
    counts, strays, failing, started = Counter(), [], [], time.perf_counter()
    for sha in shas:
        parent = subprocess.run(['git', 'rev-parse', '--verify', '--quiet', f'{sha}^'], cwd=root, capture_output=True,
                                text=True).stdout.strip()
        if not parent:
            continue
        change = git.changeset(root, parent, sha, max_bytes=config.max_file_bytes)
        report = evaluate(change, workspace, rules)
        if any(finding.severity == 'error' for finding in report.findings):
            failing.append(sha[:10])
        for finding in report.findings:
            counts[finding.rule] += 1
            where = f'{finding.path}:{finding.line}' if finding.path else 'commit message'
            print(f'{sha[:10]} {finding.severity:<7} {finding.rule:<14} {where} {finding.message[:100]}')
            if not introduced(change, finding, scopes[finding.rule.split(':')[0]]):
                strays.append((sha, finding))
    elapsed = time.perf_counter() - started
    print(f'{len(shas)} commits in {elapsed:.1f} s; {sum(counts.values())} findings '
          f'({", ".join(f"{rule} {n}" for rule, n in counts.most_common()) or "none"}); '
          f'{len(strays)} not introduced by their commit; {len(failing)} with an error: {" ".join(failing) or "none"}')
    for sha, finding in strays:
        print(f'  not introduced: {sha[:10]} {finding.rule} {finding.path}:{finding.line}')
    return 1 if strays else 0


if __name__ == '__main__':
    sys.exit(main())
