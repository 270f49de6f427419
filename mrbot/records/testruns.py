# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The tests a change selects and why, and how their files ran."""

from __future__ import annotations

from dataclasses import dataclass

from mrbot.records import MrbotError


def check_workers(requested: int, flag: str) -> None:
    """A count of test processes: 0 means sized for the machine that runs them."""
    if requested < 0:
        raise MrbotError(f'{flag} must be 0 (sized for this machine) or more, got {requested}')


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

    def to_json(self) -> dict:
        return {'test': self.test, 'message': self.message}

    @property
    def first_line(self) -> str:
        return error_first_line(self.message)


def error_first_line(message: str) -> str:
    """A failing test's error in one line: its first, or `failed` where the test left none (the templates' filter
    `first_line`)."""
    return message.splitlines()[0] if message.strip() else 'failed'


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
                       'failures': [x.to_json() for x in f.failures], 'note': f.note,
                       'crashed': [x.to_json() for x in f.crashed],
                       'restarted': f.restarted}
                      for f in self.files],
        }
