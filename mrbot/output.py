# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""A check report in the formats people and tools read: text, json, markdown, sarif and GitHub workflow commands."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from collections import Counter
from itertools import groupby
from typing import TYPE_CHECKING, TextIO

from mrbot.records.change import ChangeSet
from mrbot.records.findings import CheckReport, Finding
from mrbot.render import render
from mrbot.rules import Rule
from mrbot.words import plural

if TYPE_CHECKING:
    from rich.console import Console

_SARIF_LEVEL = {'error': 'error', 'warning': 'warning', 'note': 'note'}
_GITHUB_LEVEL = {'error': 'error', 'warning': 'warning', 'note': 'notice'}
_STYLE = {'error': 'bold red', 'warning': 'yellow', 'note': 'cyan'}


def wants_color(stream: TextIO) -> bool:
    """Color on `stream`: never with NO_COLOR set, always with FORCE_COLOR (`mrbot --color` sets one of them), else on
    a terminal."""
    if os.environ.get('NO_COLOR'):
        return False
    return bool(os.environ.get('FORCE_COLOR')) or stream.isatty()


def where(finding: Finding) -> str:
    if not finding.path:
        return 'pull request'
    return f'{finding.path}:{finding.line}' if finding.line else finding.path


def summary(report: CheckReport) -> str:
    counts = Counter(f.severity for f in report.findings)
    parts = [plural(counts[s], s) for s in ('error', 'warning', 'note') if counts[s]]
    return ', '.join(parts) if parts else 'no findings'


def _console(buffer: io.StringIO) -> Console:
    from rich.console import Console

    color = wants_color(sys.stdout)
    # a terminal's width; in a log or a pipe no wrapping at all, as soft_wrap leaves long lines whole
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 160
    return Console(file=buffer, force_terminal=color, color_system='auto' if color else None, width=width,
                   highlight=False, soft_wrap=True)


def format_findings(report: CheckReport) -> str:
    """The findings of `report` as text, without its summary: what `mrbot check` shows before the compile ends."""
    buffer = io.StringIO()
    _print_findings(_console(buffer), report.changeset, report.findings)
    return buffer.getvalue()


def _print_findings(console: Console, change: ChangeSet, findings: tuple[Finding, ...]) -> None:
    from rich.markup import escape

    for path, group in groupby(findings, key=lambda f: f.path):
        console.print(f'[bold]{escape(path or "pull request")}[/bold]')
        source = change.file(path)
        lines = (source.text or '').splitlines() if source else []
        for f in group:
            place = f'{f.line}:{f.column + 1}' if f.line else '-'
            console.print(f'  {place:>7}  [{_STYLE[f.severity]}]{f.severity:<7}[/] {f.rule:<9} {escape(f.message)}')
            if 0 < f.line <= len(lines):
                text = lines[f.line - 1]
                column = f.column or len(text) - len(text.lstrip())
                console.print(f'  {f.line:>7} | {escape(text)}')
                console.print(f'  {"":>7} | {" " * column}[{_STYLE[f.severity]}]^[/]')
            if f.hint:
                console.print(f'  {"":>7}   [dim]fix: {escape(f.hint)}[/dim]')


def _text(report: CheckReport, shown: tuple[Finding, ...]) -> str:
    from rich.markup import escape

    buffer = io.StringIO()
    console = _console(buffer)
    change = report.changeset
    _print_findings(console, change, tuple(f for f in report.findings if f not in shown))
    head = change.head[:12] if change.head else 'working tree'
    line = f"{summary(report)} in {plural(len(change.files), 'changed file')} ({change.base[:12]}..{head})"
    if report.suppressed:
        line += f'; {len(report.suppressed)} suppressed inline: ' + ', '.join(
            f'{f.rule} at {where(f)}' for f in report.suppressed)
    console.print(line)
    for note in change.notes:
        console.print(f'[dim]note: {escape(note)}[/dim]')
    return buffer.getvalue()


def _markdown(report: CheckReport) -> str:
    return render(
        'report.md.j2', findings=report.findings, suppressed=report.suppressed, notes=report.changeset.notes,
        files=len(report.changeset.files), summary=summary(report), where=where, head=report.changeset.head,
        base=report.changeset.base,
        by_path=[(path, list(group)) for path, group in groupby(report.findings, key=lambda f: f.path)],
        icons={'error': '❌', 'warning': '⚠️', 'note': 'ℹ️'},
    )


def _sarif(report: CheckReport, rules: list[Rule]) -> str:
    documented = {r.id: r for r in rules}
    used = sorted({f.rule for f in report.findings})
    descriptors = []
    for rule_id in used:
        rule = documented.get(rule_id) or documented.get(rule_id.split(':')[0])
        descriptors.append({
            'id': rule_id,
            'name': rule.title if rule else rule_id,
            'shortDescription': {'text': rule.title if rule else rule_id},
            'fullDescription': {'text': rule.rationale if rule else rule_id},
            'help': {'text': rule.hint if rule else ''},
        })
    results = []
    for f in report.findings:
        result = {'ruleId': f.rule, 'ruleIndex': used.index(f.rule), 'level': _SARIF_LEVEL[f.severity],
                  'message': {'text': f.message}}
        if f.path:
            location = {'artifactLocation': {'uri': f.path}}
            if f.line:
                location['region'] = {'startLine': f.line, 'startColumn': f.column + 1}
            result['locations'] = [{'physicalLocation': location}]
        results.append(result)
    sarif = {
        '$schema': 'https://json.schemastore.org/sarif-2.1.0.json',
        'version': '2.1.0',
        'runs': [{'tool': {'driver': {'name': 'mrbot', 'rules': descriptors}}, 'results': results}],
    }
    return json.dumps(sarif, indent=2) + '\n'


def _escape_data(text: str) -> str:
    return text.replace('%', '%25').replace('\r', '%0D').replace('\n', '%0A')


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(':', '%3A').replace(',', '%2C')


def _github(report: CheckReport) -> str:
    lines = []
    for f in report.findings:
        properties = [f'title={_escape_property(f.rule)}']
        if f.path:
            properties.insert(0, f'file={_escape_property(f.path)}')
            if f.line:
                properties[1:1] = [f'line={f.line}', f'col={f.column + 1}']
        message = f'{f.message} (fix: {f.hint})' if f.hint else f.message
        lines.append(f'::{_GITHUB_LEVEL[f.severity]} {",".join(properties)}::{_escape_data(message)}')
    lines.append(f'mrbot check: {summary(report)}')
    return '\n'.join(lines) + '\n'


def format_report(report: CheckReport, fmt: str, rules: list[Rule], shown: tuple[Finding, ...] = ()) -> str:
    """`report` in format `fmt`; in text, the findings already `shown` are left out, and the summary counts them."""
    if fmt == 'json':
        return json.dumps(report.to_json(), indent=2) + '\n'
    if fmt == 'markdown':
        return _markdown(report)
    if fmt == 'sarif':
        return _sarif(report, rules)
    if fmt == 'github':
        return _github(report)
    return _text(report, shown)
