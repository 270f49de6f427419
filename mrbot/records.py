# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The plain records that flow between mrbot's stages: a change in, findings out."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

SEVERITIES = ('error', 'warning', 'note')


class MrbotError(Exception):
    """A problem the user can act on (bad arguments, not a repository, bad configuration): one line, exit code 2."""


@dataclass(frozen=True)
class Hunk:
    """One region of a diff with no context lines: the lines it removed from the base and added to the head."""

    old_start: int
    old_lines: tuple[str, ...]
    new_start: int
    new_lines: tuple[str, ...]


def _code_tree(text: str) -> str | None:
    """The syntax tree of `text` without docstrings (comments never reach it), or None when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, 'body', None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


@dataclass(frozen=True)
class ChangedFile:
    """A file the change touches; `text` and `base_text` are None where the content is not read (see `skipped`)."""

    path: str
    status: str
    old_path: str | None = None
    added_lines: frozenset[int] = frozenset()
    hunks: tuple[Hunk, ...] = ()
    text: str | None = None
    base_text: str | None = None
    size: int = 0
    binary: bool = False
    skipped: str | None = None

    @property
    def changes_code(self) -> bool:
        """Whether the file's code differs from the base: False only for a modified Python file whose syntax trees,
        without docstrings, are equal (the change touched comments, docstrings or layout)."""
        if self.status != 'modified' or not self.path.endswith('.py') or self.text is None or self.base_text is None:
            return True
        trees = [_code_tree(text) for text in (self.text, self.base_text)]
        return None in trees or trees[0] != trees[1]


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    body: str


@dataclass(frozen=True)
class ChangeSet:
    """Everything the checks see: the files of base..head, the commits in between, and the PR title and body.

    `head` is None when the head is the working tree. `title_source` and `body_source` say where those came from:
    'flag', 'forge', 'commit' or None when unknown.
    """

    root: Path
    base: str
    head: str | None
    files: tuple[ChangedFile, ...]
    commits: tuple[Commit, ...] = ()
    title: str | None = None
    body: str | None = None
    title_source: str | None = None
    body_source: str | None = None
    perf: bool = False
    notes: tuple[str, ...] = ()

    @cached_property
    def _by_path(self) -> dict[str, ChangedFile]:
        return {f.path: f for f in self.files}

    def file(self, path: str) -> ChangedFile | None:
        return self._by_path.get(path)


@dataclass(frozen=True)
class Finding:
    """One broken rule at one place; `line` 0 means the whole file, and a path of '' the PR itself."""

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
                'column': self.column, 'message': self.message, 'hint': self.hint}


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


@dataclass(frozen=True)
class SelectedTest:
    """A test file to run and why: the chain of files from it to a changed file, the changed file last."""

    test: str
    because: tuple[str, ...]


@dataclass(frozen=True)
class Selection:
    """The tests a change needs. `unselected` lists changed Python files under a source root that no test reaches."""

    changed: tuple[str, ...]
    tests: tuple[SelectedTest, ...]
    full_suite: bool = False
    unselected: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {'schema': 1, 'selected': [{'test': t.test, 'because': list(t.because)} for t in self.tests],
                'full_suite': self.full_suite, 'changed': list(self.changed), 'unselected': list(self.unselected)}


@dataclass(frozen=True)
class TestFailure:
    """One failing test: its pytest node id and the first lines of its error."""

    test: str
    message: str


@dataclass(frozen=True)
class FileRun:
    """One test file: its pytest process, the fresh processes that ran the tests after a crash, and the retry of the
    failures, if any. `crashed` are the tests that first reported a sticky device error; `restarted` is how many of
    the tests after them passed in a fresh process (counted in `passed` too)."""

    file: str
    command: tuple[str, ...]
    dispatch: str
    duration: float
    passed: int
    failed: int
    skipped: int
    flaky: int
    failures: tuple[TestFailure, ...] = ()
    note: str = ''
    crashed: tuple[TestFailure, ...] = ()
    restarted: int = 0

    @property
    def ok(self) -> bool:
        return self.failed == 0 and not self.crashed and not self.note


@dataclass(frozen=True)
class TestRun:
    """The evidence of `mrbot test`: where it ran, what it ran and why, and each file's outcome."""

    device: str
    files: tuple[FileRun, ...]
    selection: Selection | None = None
    smoke: bool = False

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files)

    def to_json(self) -> dict:
        return {
            'schema': 1,
            'device': self.device,
            'smoke': self.smoke,
            'selection': self.selection.to_json() if self.selection else None,
            'files': [{'file': f.file, 'command': list(f.command), 'dispatch': f.dispatch,
                       'duration_s': round(f.duration, 3), 'passed': f.passed, 'failed': f.failed,
                       'skipped': f.skipped, 'flaky': f.flaky,
                       'failures': [{'test': x.test, 'message': x.message} for x in f.failures], 'note': f.note,
                       'crashed': [{'test': x.test, 'message': x.message} for x in f.crashed],
                       'restarted': f.restarted}
                      for f in self.files],
        }
