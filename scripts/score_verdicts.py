# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Score a `check_history.py --findings` run against judges' verdict files: false findings per rule, false errors, and
the commits that fail on false errors only.

Usage: python scripts/score_verdicts.py FINDINGS VERDICTS [VERDICTS ...]

A verdict file holds findings, one JSON object a line, each with `verdict` ("true" or "false") and `reason`. A finding
takes the verdict of the same commit, rule, path and line, and of the same message where one file judged several on
that line; later files win over earlier ones for the same message (a re-judging). A finding no verdict covers is
counted as unjudged, and the script exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

Key = tuple[str, str, str, int]


def _lines(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as error:
        raise SystemExit(f'{path}: cannot read it as JSON lines ({error})') from None


def _key(finding: dict) -> Key:
    return finding['commit'], finding['rule'], finding['path'], finding['line']


def verdicts(files: list[Path]) -> dict[Key, dict[str, str]]:
    """(commit, rule, path, line) -> message -> verdict; the first message judged on a line also under ''."""
    judged: dict[Key, dict[str, str]] = defaultdict(dict)
    for path in files:
        for finding in _lines(path):
            if finding.get('verdict') not in ('true', 'false'):
                raise SystemExit(f"{path}: a verdict must be 'true' or 'false', got {finding.get('verdict')!r}")
            on_line = judged[_key(finding)]
            on_line.setdefault('', finding['verdict'])
            on_line[finding['message']] = finding['verdict']
    return judged


def verdict(finding: dict, judged: dict[Key, dict[str, str]]) -> str:
    on_line = judged.get(_key(finding), {})
    return on_line.get(finding['message'], on_line.get('', 'unjudged'))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('findings', type=Path)
    parser.add_argument('verdicts', type=Path, nargs='+')
    args = parser.parse_args(argv)
    judged = verdicts(args.verdicts)
    findings = _lines(args.findings)
    per_rule: dict[tuple[str, str], Counter] = defaultdict(Counter)
    errors_by_commit: dict[str, Counter] = defaultdict(Counter)
    for finding in findings:
        said = verdict(finding, judged)
        per_rule[finding['rule'], finding['severity']][said] += 1
        if finding['severity'] == 'error':
            errors_by_commit[finding['commit']][said] += 1
    total = sum(per_rule.values(), Counter())
    errors = sum((count for (_, severity), count in per_rule.items() if severity == 'error'), Counter())
    print(f"{len(findings)} findings: {total['false']} false ({total['false'] / max(len(findings), 1):.1%}), "
          f"{total['unjudged']} unjudged; {sum(errors.values())} errors: {errors['false']} false "
          f"({errors['false'] / max(sum(errors.values()), 1):.1%})")
    for (rule, severity), count in sorted(per_rule.items(), key=lambda item: -sum(item[1].values())):
        print(f"  {rule:<15} {severity:<8} {count['true']:>5} true {count['false']:>4} false"
              + (f" {count['unjudged']:>4} unjudged" if count['unjudged'] else ''))
    failing = [commit for commit, count in errors_by_commit.items() if count['true'] == 0]
    print(f'{len(errors_by_commit)} commits fail; on false or unjudged errors only: '
          + (', '.join(commit[:10] for commit in failing) or 'none'))
    return 1 if total['unjudged'] else 0


if __name__ == '__main__':
    sys.exit(main())
