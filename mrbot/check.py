# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot check`: run the rule pack over a change and report what the change breaks."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from mrbot import git
from mrbot.config import OFF, Config
from mrbot.output import format_findings, format_report
from mrbot.records import MrbotError
from mrbot.records.change import ChangeSet
from mrbot.records.findings import CheckReport, Finding
from mrbot.records.testruns import Selection
from mrbot.repo.workspace import Workspace
from mrbot.rules import Context, Rule, all_rules, check_rule_ids, is_compile_rule
from mrbot.stack import missing_kernel_stack
from mrbot.words import plural

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


def evaluate(change: ChangeSet, workspace: Workspace, rules: list[Rule], matrix: CompileMatrix | None = None,
             selection: Selection | None = None) -> CheckReport:
    """Run `rules` over `change` (and the compilation `matrix` of the kernels it reaches, when built, and the tests
    that select it, when found already) in `workspace`: configured severities applied, line-scoped findings kept on
    added lines only."""
    config = workspace.config
    context = Context(change, workspace, matrix, selection)
    findings, suppressed = [], []
    for rule in rules:
        for violation in rule.check(context):
            rule_id = f'{rule.id}:{violation.code}' if violation.code else rule.id
            # a rule off unless a repository turns it on stays off whatever its findings say
            default = rule.severity if rule.severity == OFF else violation.severity or rule.severity
            severity = config.severity(rule_id, violation.path, default)
            if severity == OFF:
                continue
            finding = Finding(rule_id, severity, violation.path, violation.line, violation.message, rule.hint,
                              violation.column, violation.anchors)
            if rule.scope == 'lines' and not _on_added_line(change, finding):
                continue
            (suppressed if _suppressed(context, finding) else findings).append(finding)
    return CheckReport(change, _ordered(findings), tuple(suppressed))


def _ordered(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    order = {'error': 0, 'warning': 1, 'note': 2}
    return tuple(sorted(findings, key=lambda f: (f.path, f.line, order[f.severity], f.rule)))


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


def _repository_paths(root: Path, names: list[str]) -> list[str]:
    """The named files as paths from the repository root, each once, in the order given."""
    paths = []
    for name in names:
        absolute = Path(os.path.abspath(name))
        if not absolute.is_file():
            raise MrbotError(f'{git.printable(name)}: no such file; expected the path of a file in this repository')
        try:
            paths.append(absolute.relative_to(root).as_posix())
        except ValueError:
            raise MrbotError(f'{git.printable(name)}: outside the repository {root}; expected a file inside it') from None
    return list(dict.fromkeys(paths))


def collect_change(args: argparse.Namespace, root: Path, config: Config) -> ChangeSet:
    if args.files:
        named = [flag for flag, value in (('--base', args.base), ('--head', args.head), ('--title', args.title),
                                          ('--body-file', args.body_file)) if value is not None]
        if named:
            raise MrbotError(f'{named[0]} describes a change, but FILE arguments check files whole: pass one or the other')
        return git.whole_files(root, _repository_paths(root, args.files), config.max_file_bytes)
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


@dataclasses.dataclass(frozen=True)
class FileFix:
    """The safe fixes of one working-tree file: its text before and after, and the rules whose fixes changed it."""

    path: str
    before: str
    after: str
    rules: tuple[Rule, ...]

    def diff(self) -> str:
        """The fix as a unified diff against the file."""
        lines = difflib.unified_diff(self.before.splitlines(keepends=True), self.after.splitlines(keepends=True),
                                     f'a/{self.path}', f'b/{self.path}')
        return ''.join(line if line.endswith('\n') else f'{line}\n\\ No newline at end of file\n' for line in lines)


def planned_fixes(report: CheckReport, rules: list[Rule], config: Config) -> list[FileFix]:
    """The safe fixes for the report's findings, each file's rules applied in turn to its text."""
    fixable = {r.id: r for r in rules if r.fix is not None}
    wanted: dict[str, list[Rule]] = {}
    for finding in report.findings:
        if (rule := fixable.get(finding.rule)) is not None and rule not in wanted.setdefault(finding.path, []):
            wanted[finding.path].append(rule)
    fixes = []
    for path, chosen in wanted.items():
        changed = report.changeset.file(path)
        if changed is None or changed.text is None:
            continue
        text, applied = changed.text, []
        for rule in chosen:
            if (fixed := rule.fix(text, config)) != text:
                text = fixed
                applied.append(rule)
        if applied:
            fixes.append(FileFix(path, changed.text, text, tuple(applied)))
    return fixes


def _checked(args: argparse.Namespace, workspace: Workspace, rules: list[Rule],
             early: Callable[[CheckReport], None] | None = None) -> CheckReport:
    """The report on the change, with the compilation matrix of the kernels it reaches unless --no-compile; `early`
    gets the report of the rules that need no compiling before the compile starts."""
    change = collect_change(args, workspace.root, workspace.config)
    if args.head is not None:
        change = dataclasses.replace(change, notes=(*change.notes, 'kernels not compiled: mrbot compiles the working '
                                                                   'tree, and --head names another revision'))
    elif missing_kernel_stack() and not args.no_compile:
        change = dataclasses.replace(change, notes=(*change.notes, f"kernels not compiled, CMP rules skipped: "
                                                                   f"{' and '.join(missing_kernel_stack())} not "
                                                                   "installed (pip install 'mrbot[kernels]')"))
    elif not args.no_compile:
        from mrbot.compile.matrix import QUICK
        from mrbot.compile.stage import compile_change

        # the rules run while the kernels compile: the compile waits on its processes, the rules need the interpreter
        judged: list[CheckReport | BaseException] = []

        def judge() -> None:
            try:
                report = evaluate(change, workspace, [r for r in rules if not is_compile_rule(r)])
                if early:
                    early(report)
            # raised again by the main thread, which owns the error boundary
            except BaseException as error:
                judged.append(error)
                return
            judged.append(report)

        workspace.graph  # noqa: B018 - built once here, not by both threads at once
        judging = threading.Thread(target=judge, daemon=True)
        judging.start()
        try:
            matrix = compile_change(workspace, [f.path for f in change.files], depth=QUICK)
        finally:
            judging.join()
        (fast,) = judged
        if isinstance(fast, BaseException):
            raise fast
        if matrix.deferred:
            change = dataclasses.replace(change, notes=(*change.notes, f"{plural(matrix.deferred, 'specialization')} "
                                                                       'not compiled since the kernel changed, left to '
                                                                       '`mrbot compile`, which compiles every one: this '
                                                                       "check compiled each code path's smallest and "
                                                                       'largest blocks'))
        compiled = evaluate(change, workspace, [r for r in rules if is_compile_rule(r)], matrix)
        return CheckReport(change, _ordered(fast.findings + compiled.findings), fast.suppressed + compiled.suppressed)
    return evaluate(change, workspace, rules)


def run(args: argparse.Namespace) -> int:
    workspace = Workspace.load(git.repo_root(Path.cwd()))
    check_rule_ids(workspace.config)
    # named files have no pull request around them, so the rules that judge one do not run
    rules = [r for r in all_rules() if not args.files or r.scope != 'change']
    if (args.fix or args.diff) and args.head:
        raise MrbotError(f"{'--fix' if args.fix else '--diff'} works on the working tree, so it cannot be combined with "
                         '--head')
    shown: list[Finding] = []

    def show_early(report: CheckReport) -> None:
        # the fast rules' findings while the kernels compile: a contributor reads them in a second, not after the compile
        print(git.printable(format_findings(report)), end='', flush=True)
        shown.extend(report.findings)

    streams = args.format == 'text' and not (args.fix or args.diff)
    report = _checked(args, workspace, rules, show_early if streams else None)
    fixes = planned_fixes(report, rules, workspace.config) if args.fix or args.diff else []
    if args.diff:
        print(git.printable(''.join(fix.diff() for fix in fixes)), end='')
        return 1 if fixes else 0
    for fix in fixes:
        (workspace.root / fix.path).write_text(fix.after, encoding='utf-8', newline='')
        for rule in fix.rules:
            print(git.printable(f'{fix.path}: fixed {rule.id} ({rule.title})'), file=sys.stderr)
    # the fixes rewrite license headers, comments that leave the import graph as it was
    if fixes:
        report = _checked(args, workspace, rules)
    print(git.printable(format_report(report, args.format, rules, shown=tuple(shown))), end='')
    return 1 if report.has_errors else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('files', nargs='*', metavar='FILE',
                        help='check these files whole instead of the change (the pre-commit hook passes them)')
    parser.add_argument('--base', help='base revision (default: merge base of HEAD with the target branch)')
    parser.add_argument('--head', help='head revision (default: the working tree, uncommitted work included)')
    parser.add_argument('--title', help='the PR title (default: from the CI event, else the single commit subject)')
    parser.add_argument('--body-file', help="file holding the PR body, '-' for standard input")
    parser.add_argument('--perf', action='store_true', help='treat the change as a performance change')
    parser.add_argument('--format', choices=['text', 'json', 'markdown', 'sarif', 'github'], default='text')
    fixing = parser.add_mutually_exclusive_group()
    fixing.add_argument('--fix', action='store_true',
                        help='apply safe fixes (license headers) to the working tree and say what each fixed')
    fixing.add_argument('--diff', action='store_true',
                        help='print the safe fixes as a unified diff instead of writing them; exit 1 when there is one')
    parser.add_argument('--no-compile', action='store_true',
                        help='skip compiling the kernels the change reaches (the CMP rules; see mrbot compile)')
