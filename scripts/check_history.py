# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Run `mrbot check` over every commit of a repository against its parent and audit what it reports.

Usage: python scripts/check_history.py [REPO] [--last N] [--path PATH] [--findings FILE] [--derive-settings]

`--findings` writes every finding, one JSON object a line, with the commit it was made on. `--derive-settings` checks
each commit with the settings `mrbot init` derives from the repository at that commit (its header, title tags, the
exemptions and house rules its guides state then), as a repository that had installed mrbot then would have been
checked; without it, with the settings `mrbot --config`, MRBOT_CONFIG or the pyproject give.

The checkout is moved to each commit in turn, so rules that read the rest of the repository (the tests, the import
graph) see it as the commit left it, and moved back to where it was at the end. Every finding must belong to its
commit: the commit as a whole (its message, or a rule about the whole change such as
a missing test), a file the commit added, or a line the commit added.
A finding on a line or file the commit did not add is counted as "not introduced"; the script exits 1 if any is.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mrbot import git  # noqa: E402
from mrbot.check import evaluate  # noqa: E402
from mrbot.config import parse_config  # noqa: E402
from mrbot.init import derive, render  # noqa: E402
from mrbot.records.change import ChangeSet  # noqa: E402
from mrbot.records.findings import Finding  # noqa: E402
from mrbot.repo.workspace import Workspace  # noqa: E402
from mrbot.rules import all_rules  # noqa: E402


def _git(root: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(['git', *args], cwd=root, capture_output=True, text=True, check=check).stdout.strip()


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
    parser.add_argument('--findings', type=Path, help='write every finding here as JSON lines')
    parser.add_argument('--derive-settings', action='store_true',
                        help="check each commit with the settings `mrbot init` derives from it")
    args = parser.parse_args()
    root = git.repo_root(Path(args.repo).resolve())
    if _git(root, 'status', '--porcelain', '--untracked-files=no'):
        raise SystemExit(f'{root}: the checkout has changes; the script moves it from commit to commit')
    rules = all_rules()
    scopes = {r.id: r.scope for r in rules}
    shas = _git(root, 'rev-list', '--reverse', '--no-merges', 'HEAD', '--', args.path or '.').split()
    shas = shas[-args.last:] if args.last else shas
    start = _git(root, 'symbolic-ref', '--quiet', '--short', 'HEAD', check=False) or _git(root, 'rev-parse', 'HEAD')
    counts, strays, failing, started = Counter(), [], [], time.perf_counter()
    findings = args.findings.open('w', encoding='utf-8') if args.findings else None
    try:
        for sha in shas:
            parent = subprocess.run(['git', 'rev-parse', '--verify', '--quiet', f'{sha}^'], cwd=root,
                                    capture_output=True, text=True).stdout.strip()
            if not parent:
                continue
            _git(root, 'checkout', '--quiet', '--detach', sha)
            workspace = Workspace.load(root)
            if args.derive_settings:
                workspace = Workspace(root, parse_config(render(derive(root, workspace.config)), 'mrbot init'))
            change = git.changeset(root, parent, sha, max_bytes=workspace.config.max_file_bytes)
            report = evaluate(change, workspace, rules)
            if any(finding.severity == 'error' for finding in report.findings):
                failing.append(sha[:10])
            for finding in report.findings:
                counts[finding.rule] += 1
                where = f'{finding.path}:{finding.line}' if finding.path else 'commit message'
                print(f'{sha[:10]} {finding.severity:<7} {finding.rule:<14} {where} {finding.message[:100]}')
                if findings:
                    findings.write(json.dumps({'commit': sha, **finding.to_json()}) + '\n')
                if not introduced(change, finding, scopes[finding.rule.split(':')[0]]):
                    strays.append((sha, finding))
    finally:
        _git(root, 'checkout', '--quiet', start)
        if findings:
            findings.close()
    elapsed = time.perf_counter() - started
    print(f'{len(shas)} commits in {elapsed:.1f} s; {sum(counts.values())} findings '
          f'({", ".join(f"{rule} {n}" for rule, n in counts.most_common()) or "none"}); '
          f'{len(strays)} not introduced by their commit; {len(failing)} with an error: {" ".join(failing) or "none"}')
    for sha, finding in strays:
        print(f'  not introduced: {sha[:10]} {finding.rule} {finding.path}:{finding.line}')
    return 1 if strays else 0


if __name__ == '__main__':
    sys.exit(main())
