# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The findings of the rules on a change, and the report of a check."""

from __future__ import annotations

from dataclasses import dataclass, field

from mrbot.records.change import ChangeSet

SEVERITIES = ('error', 'warning', 'note')


@dataclass(frozen=True)
class Finding:
    """One broken rule at one place; `line` 0 means the whole file, and a path of '' the PR itself. `column` counts
    from 0 here, and from 1 wherever it is shown or written (text, JSON, SARIF, GitHub annotations), as editors do."""

    rule: str
    severity: str
    path: str
    line: int
    message: str
    hint: str = ''
    column: int = 0
    # Lines any of which must be added by the change for a line-scoped rule to report this finding.
    anchors: tuple[int, ...] = field(default=(), compare=False)

    def to_json(self) -> dict:
        return {'rule': self.rule, 'severity': self.severity, 'path': self.path, 'line': self.line,
                'column': self.column + 1 if self.line else 0, 'message': self.message, 'hint': self.hint}


@dataclass(frozen=True)
class CheckReport:
    """The outcome of checking one change: what to report, what inline comments suppressed, and what was skipped."""

    changeset: ChangeSet
    findings: tuple[Finding, ...]
    suppressed: tuple[Finding, ...] = ()

    @property
    def has_errors(self) -> bool:
        return any(f.severity == 'error' for f in self.findings)

    def to_json(self) -> dict:
        return {
            'schema': 1,
            'base': self.changeset.base,
            'head': self.changeset.head or 'WORKTREE',
            'findings': [f.to_json() for f in self.findings],
            'suppressed': [f.to_json() for f in self.suppressed],
            'notes': list(self.changeset.notes),
        }
