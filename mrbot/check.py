# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot check`: run the rule pack over a change and report what the change breaks."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mrbot import git
from mrbot.config import OFF, Config
from mrbot.output import format_report
from mrbot.records import ChangeSet, CheckReport, Finding, MrbotError
from mrbot.rules import Context, Rule, all_rules
from mrbot.workspace import Workspace

if TYPE_CHECKING:
    from mrbot.compile.matrix import CompileMatrix

_SUPPRESSION = re.compile(r'#\s*mrbot:\s*ignore\[([^\]]*)\]')


def _on_added_line(change: ChangeSet, finding: Finding) -> bool:
    changed = change.file(finding.path)
    return changed is not None and any(line in changed.added_lines for line in finding.anchors or (finding.line,))


def _suppressed(context: Context, finding: Finding) -> bool:
    source = context.source(finding.path) if finding.path and finding.line else None
    match = _SUPPRESSION.search(source.line(finding.line)) if source else None
    if match is None:
        return False
    ids = {part.strip().upper() for part in match.group(1).split(',')}
    return finding.rule in ids or finding.rule.split(':')[0] in ids


def evaluate(change: ChangeSet, workspace: Workspace, rules: list[Rule],
             matrix: CompileMatrix | None = None) -> CheckReport:
    """Run `rules` over `change` (and the compilation `matrix` of the kernels it reaches, when built) in `workspace`:
    configured severities applied, line-scoped findings kept on added lines only."""
    config = workspace.config
    context = Context(change, workspace, matrix)
    findings, suppressed = [], []
    for rule in rules:
        for violation in rule.check(context):
            rule_id = f'{rule.id}:{violation.code}' if violation.code else rule.id
            severity = config.severity(rule_id, violation.path, violation.severity or rule.severity)
            if severity == OFF:
                continue
            finding = Finding(rule_id, severity, violation.path, violation.line, violation.message, rule.hint,
                              violation.column, violation.anchors)
            if rule.scope == 'lines' and not _on_added_line(change, finding):
                continue
            (suppressed if _suppressed(context, finding) else findings).append(finding)
    order = {'error': 0, 'warning': 1, 'note': 2}
    findings.sort(key=lambda f: (f.path, f.line, order[f.severity], f.rule))
    return CheckReport(change, tuple(findings), tuple(suppressed))


def _pull_request_text() -> tuple[str | None, str | None]:
    """The PR/MR title and body when running in GitHub Actions on a pull request, or in a GitLab merge request pipeline."""
    event_path = os.environ.get('GITHUB_EVENT_PATH')
    if event_path and os.path.isfile(event_path):
        try:
            with open(event_path, encoding='utf-8') as f:
                pull_request = json.load(f).get('pull_request') or {}
        except (OSError, ValueError):
            pull_request = {}
        if pull_request:
            return pull_request.get('title'), pull_request.get('body') or ''
    if 'CI_MERGE_REQUEST_IID' in os.environ:
        return os.environ.get('CI_MERGE_REQUEST_TITLE'), os.environ.get('CI_MERGE_REQUEST_DESCRIPTION', '')
    return None, None


def collect_change(args: argparse.Namespace, root: Path, config: Config) -> ChangeSet:
    base, head = git.revisions(root, args.base, args.head, config.target_branches)
    title, title_source = (args.title, 'flag') if args.title is not None else (None, None)
    body, body_source = None, None
    if args.body_file is not None:
        try:
            body = sys.stdin.read() if args.body_file == '-' else Path(args.body_file).read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError) as exc:
            raise MrbotError(f'--body-file {args.body_file}: cannot read it ({exc.__class__.__name__}: {exc})') from None
        body_source = 'flag'
    if title is None or body is None:
        forge_title, forge_body = _pull_request_text()
        if title is None and forge_title is not None:
            title, title_source = forge_title, 'forge'
        if body is None and forge_body is not None:
            body, body_source = forge_body, 'forge'
    return git.changeset(root, base, head, title, body, title_source, body_source, args.perf, config.max_file_bytes)


def _apply_fixes(report: CheckReport, rules: list[Rule], config: Config) -> int:
    """Rewrite working-tree files for findings whose rule has a safe fix; return how many files changed."""
    fixes = {r.id: r.fix for r in rules if r.fix is not None}
    fixed = set()
    for finding in report.findings:
        fix = fixes.get(finding.rule)
        if fix is None or finding.path in fixed:
            continue
        path = report.changeset.root / finding.path
        text = path.read_text(encoding='utf-8')
        if (new := fix(text, config)) != text:
            path.write_text(new, encoding='utf-8')
            fixed.add(finding.path)
    return len(fixed)


def _checked(args: argparse.Namespace, workspace: Workspace, rules: list[Rule]) -> CheckReport:
    """The report on the change, with the compilation matrix of the kernels it reaches unless --no-compile."""
    change = collect_change(args, workspace.root, workspace.config)
    matrix = None
    if args.head is not None:
        change = dataclasses.replace(change, notes=(*change.notes, 'kernels not compiled: mrbot compiles the working '
                                                                   'tree, and --head names another revision'))
    elif not args.no_compile:
        from mrbot.compile.command import compile_change

        matrix = compile_change(workspace, [f.path for f in change.files])
    return evaluate(change, workspace, rules, matrix)


def run(args: argparse.Namespace) -> int:
    workspace = Workspace.load(git.repo_root(Path.cwd()))
    rules = all_rules()
    if args.fix and args.head:
        raise MrbotError('--fix rewrites the working tree, so it cannot be combined with --head')
    report = _checked(args, workspace, rules)
    # the fixes rewrite license headers, comments that leave the import graph as it was
    if args.fix and _apply_fixes(report, rules, workspace.config):
        report = _checked(args, workspace, rules)
    print(format_report(report, args.format, rules), end='')
    return 1 if report.has_errors else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--base', help='base revision (default: merge base of HEAD with the target branch)')
    parser.add_argument('--head', help='head revision (default: the working tree, uncommitted work included)')
    parser.add_argument('--title', help='the PR title (default: from the CI event, else the single commit subject)')
    parser.add_argument('--body-file', help="file holding the PR body, '-' for standard input")
    parser.add_argument('--perf', action='store_true', help='treat the change as a performance change')
    parser.add_argument('--format', choices=['text', 'json', 'markdown', 'sarif', 'github'], default='text')
    parser.add_argument('--fix', action='store_true', help='apply safe fixes (license headers) to the working tree')
    parser.add_argument('--no-compile', action='store_true',
                        help='skip compiling the kernels the change reaches (the CMP rules; see mrbot compile)')
