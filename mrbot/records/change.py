# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""A change: its files with their hunks and texts, its commits, the whole change set."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from mrbot.records.source import PROSE, altered_names, new_functions, parse_versions, rebound_constants, same_code


@dataclass(frozen=True)
class Hunk:
    """One region of a diff with no context lines: the lines it removed from the base and added to the head."""

    old_start: int
    old_lines: tuple[str, ...]
    new_start: int
    new_lines: tuple[str, ...]




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
        """Whether the file's code differs from the base: False for prose (Markdown, reStructuredText) and for a modified
        Python file whose syntax trees are equal without docstrings and error messages and up to renamed local
        variables (the change touched comments, docstrings, messages, layout or the names of locals)."""
        if self.path.endswith(PROSE):
            return False
        if self.status != 'modified' or not self.path.endswith('.py') or self.text is None or self.base_text is None:
            return True
        return not same_code(self.base_text, self.text)

    @cached_property
    def altered_names(self) -> frozenset[str] | None:
        """For a modified Python file, the module-level names the change alters (see `altered_names`); None when the
        whole file counts: added, deleted, renamed, unread, or altered beyond its names."""
        if self.status != 'modified' or not self.path.endswith('.py') or self.text is None or self.base_text is None:
            return None
        return altered_names(self.base_text, self.text, self.trees)

    @cached_property
    def trees(self) -> tuple[ast.Module, ast.Module] | None:
        """The base's and the head's syntax trees of a modified Python file, parsed once; None where either is
        missing or does not parse."""
        if self.status != 'modified' or not self.path.endswith('.py') or self.text is None or self.base_text is None:
            return None
        return parse_versions(self.base_text, self.text)

    @cached_property
    def rebound_constants(self) -> frozenset[str]:
        """Module-level names of a modified Python file whose binding the change alters, where every such name is
        bound, in each version that has it, by one constant assignment and nothing else changed; empty otherwise."""
        if self.status != 'modified' or not self.path.endswith('.py') or self.text is None or self.base_text is None:
            return frozenset()
        return rebound_constants(self.base_text, self.text, self.added_lines, lambda: self.trees)

    @cached_property
    def new_functions(self) -> frozenset[str]:
        """Module-level functions of a modified Python file that its base did not have, undecorated or memoized only:
        defining one runs nothing but the `def`."""
        if self.status != 'modified' or not self.path.endswith('.py') or self.text is None or self.base_text is None:
            return frozenset()
        return new_functions(self.text, self.added_lines, lambda: self.trees)


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    body: str


@dataclass(frozen=True)
class ChangeSet:
    """Everything the checks see: the files of base..head, the commits in between, and the PR title and body.

    `head` is None when the head is the working tree. `title_source` and `body_source` say where those came from:
    'flag', 'forge', 'commit' or None when unknown. `rules_at` is the commit whose configuration (ruff's) grades the
    change: the tip of the branch it targets where a forge names one (a change branched from an old commit escapes
    no rule added since), else `base`.
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
    rules_at: str = ''

    def __post_init__(self) -> None:
        if not self.rules_at:
            object.__setattr__(self, 'rules_at', self.base)

    @property
    def paths(self) -> list[str]:
        """Every path the change touches: both sides of a rename."""
        return sorted({path for file in self.files for path in (file.path, file.old_path) if path})

    @cached_property
    def _by_path(self) -> dict[str, ChangedFile]:
        return {f.path: f for f in self.files}

    def file(self, path: str) -> ChangedFile | None:
        return self._by_path.get(path)
