# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The check of a pull or merge request's diff, as an artifact: comment body, check run and job summary."""

from __future__ import annotations

from mrbot import git
from mrbot.check import evaluate
from mrbot.output import format_report, summary
from mrbot.records.findings import CheckReport
from mrbot.repo.workspace import Workspace
from mrbot.rules import all_rules, check_rule_ids

# A finding's severity as a check-run annotation level.
SEVERITY_LEVELS = {'error': 'failure', 'warning': 'warning', 'note': 'notice'}


def check_report(workspace: Workspace, base: str, head: str, title: str | None, body: str | None) -> dict:
    """`mrbot check` on head against `base`, the tip of the branch it targets, as the artifact of a report.

    It runs none of the pull request's code, so its kernels are not compiled here (`mrbot compile` runs their tests):
    that belongs with the tests, in a job whose result the pull request's code can decide (docs/ci.md).
    """
    check_rule_ids(workspace.config)
    root = workspace.root
    # the diff from where the change branched, graded by the configuration of the tip it is to merge into
    change = git.changeset(root, git.merge_base(root, base, head), head, title, body, 'forge', 'forge',
                           max_bytes=workspace.config.max_file_bytes, rules_at=base)
    rules = all_rules()
    report: CheckReport = evaluate(change, workspace, rules)
    markdown = format_report(report, 'markdown', rules)
    annotations = [{'path': f.path, 'line': f.line, 'level': SEVERITY_LEVELS[f.severity],
                    'message': f.message + (f' Fix: {f.hint}' if f.hint else ''), 'title': f.rule}
                   for f in report.findings if f.path and f.line]
    errors = sum(f.severity == 'error' for f in report.findings)
    return {'body': markdown, 'errors': errors, 'findings': len(report.findings),
            'check': {'conclusion': 'failure' if errors else 'success', 'title': summary(report),
                      'summary': markdown, 'annotations': annotations}}

