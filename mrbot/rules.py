# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What a rule is, what it sees, and `mrbot rules [ID]`.

A rule is a function decorated with `@rule(...)` in a module of the `checks` package. It receives a `Context` and
yields `Violation`s; the engine adds the rule's id, severity and hint, applies configuration and suppressions, and
for line-scoped rules keeps only violations on lines the change adds. The function's docstring is the rule's
documentation: what it checks, optionally its details and blind spots, why it matters, `Example:` (a violating
snippet) and `Instead:` (what to write), one paragraph each.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import importlib
import inspect
import io
import pkgutil
import sys
import tokenize
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from mrbot.config import OFF, Config, suggestion
from mrbot.records import MrbotError
from mrbot.records.change import ChangedFile, ChangeSet
from mrbot.records.findings import SEVERITIES
from mrbot.records.testruns import Selection

if TYPE_CHECKING:
    from mrbot.compile.matrix import CompileMatrix
    from mrbot.repo.workspace import Workspace

# Line-scoped rules report only on added lines; file rules on any touched file; change rules on the PR itself.
SCOPES = ('lines', 'file', 'change')


@dataclass(frozen=True)
class Violation:
    """Where a rule is broken.

    `code` refines the rule id (`RUF` with code `E501` reports as `RUF:E501`); `severity` replaces the rule's default
    for this violation unless the configuration sets one; `anchors` are the lines of which one must be added.
    """

    path: str
    line: int
    message: str
    column: int = 0
    anchors: tuple[int, ...] = ()
    code: str = ''
    severity: str | None = None


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: str
    hint: str
    scope: str
    check: Callable[[Context], Iterable[Violation]]
    doc: str
    fix: Callable[[str, Config], str] | None = None

    @property
    def rationale(self) -> str:
        """The paragraph of the docstring that says why the rule matters: the one before `Example:`."""
        paragraphs = [p.strip() for p in self.doc.split('\n\n') if p.strip()]
        example = next((i for i, p in enumerate(paragraphs) if p.startswith('Example:')), len(paragraphs))
        return paragraphs[example - 1] if example > 0 else ''


_REGISTRY: dict[str, Rule] = {}


def rule(
    id: str, title: str, severity: str, hint: str, scope: str = 'lines', fix: Callable[[str, Config], str] | None = None
) -> Callable[[Callable], Callable]:
    """Register the decorated function as rule `id`; a `severity` of 'off' makes it one a repository turns on."""
    if severity not in (*SEVERITIES, OFF) or scope not in SCOPES:
        raise ValueError(f'rule {id}: severity must be one of {(*SEVERITIES, OFF)} and scope one of {SCOPES}')

    def register(check: Callable[[Context], Iterable[Violation]]) -> Callable:
        if id in _REGISTRY:
            raise ValueError(f'rule {id}: registered twice')
        _REGISTRY[id] = Rule(id, title, severity, hint, scope, check, inspect.getdoc(check) or '', fix)
        return check

    return register


def is_compile_rule(rule: Rule) -> bool:
    """Whether `rule` judges the compile matrix (the CMP rules), so that it has findings only after a compile."""
    return rule.id.startswith('CMP')


def all_rules() -> list[Rule]:
    """Every rule of the `checks` package, sorted by id; importing a module of the package registers its rules."""
    import checks

    for module in pkgutil.iter_modules(checks.__path__):
        importlib.import_module(f'checks.{module.name}')
    return sorted(_REGISTRY.values(), key=lambda r: r.id)


def check_rule_ids(config: Config) -> None:
    """Refuse settings that give a severity to a rule id the pack lacks: a near miss (`TRI02`) turns nothing off.

    The settings are read without the rule pack, so every command that evaluates the rules calls this where it reads
    them. A rule is found by its id, or by its family before a colon (`RUF` or `RUF:E501` for ruff's codes).
    """
    tables = [('[tool.mrbot] rules', config.rules),
              *((f'[tool.mrbot] overrides[{i}].rules', override.rules) for i, override in enumerate(config.overrides))]
    # the rule pack is loaded only for settings that name a rule
    if not any(table for _, table in tables):
        return
    ids = [rule.id for rule in all_rules()]
    for where, table in tables:
        for rule in table:
            if rule.split(':')[0] not in ids:
                raise MrbotError(f"{where}.{rule}: unknown rule id{suggestion(rule, ids)} (`mrbot rules` lists them)")


@dataclass
class SourceFile:
    """A changed text file of the head, parsed on demand once for all rules."""

    file: ChangedFile

    @property
    def path(self) -> str:
        return self.file.path

    @property
    def text(self) -> str:
        return self.file.text or ''

    @property
    def added(self) -> frozenset[int]:
        return self.file.added_lines

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def line(self, number: int) -> str:
        return self.lines[number - 1] if 0 < number <= len(self.lines) else ''

    @cached_property
    def tree(self) -> ast.Module | None:
        """The module's AST, or None when it does not parse."""
        try:
            return ast.parse(self.text, filename=self.path)
        except (SyntaxError, ValueError):
            return None

    @cached_property
    def base_tree(self) -> ast.Module | None:
        if self.file.base_text is None:
            return None
        try:
            return ast.parse(self.file.base_text)
        except (SyntaxError, ValueError):
            return None

    @cached_property
    def comments(self) -> list[tuple[int, int, str]]:
        """`(line, column, text)` of every comment token; empty when the file does not tokenize."""
        found = []
        try:
            for token in tokenize.generate_tokens(io.StringIO(self.text).readline):
                if token.type == tokenize.COMMENT:
                    found.append((token.start[0], token.start[1], token.string))
        except (tokenize.TokenError, IndentationError, SyntaxError):
            return []
        return found


@dataclass
class Context:
    """What rules see: the change, the repository (its settings and import graph), the changed files parsed once, the
    compilation matrix of the kernels the change reaches when one was built, and the tests that select the change
    (given by a caller that has them, else found once for every rule that asks)."""

    change: ChangeSet
    workspace: Workspace
    compile_matrix: CompileMatrix | None = None
    selection: Selection | None = None
    _sources: dict[str, SourceFile] = field(default_factory=dict)

    def change_selection(self) -> Selection:
        if self.selection is None:
            from mrbot.selection import select_change

            self.selection = select_change(self.workspace, self.change)
        return self.selection

    @property
    def config(self) -> Config:
        return self.workspace.config

    def sources(self, *patterns: str) -> Iterator[SourceFile]:
        """Changed files of the head with readable text whose path matches any pattern (default: Python files)."""
        patterns = patterns or ('*.py',)
        for file in self.change.files:
            if file.text is not None and any(fnmatch.fnmatchcase(file.path, p) for p in patterns):
                yield self.source(file.path)

    def source(self, path: str) -> SourceFile | None:
        """The changed file at `path` parsed, or None when it is not part of the change or has no readable text."""
        if path not in self._sources:
            file = self.change.file(path)
            if file is None or file.text is None:
                return None
            self._sources[path] = SourceFile(file)
        return self._sources[path]


def dotted_name(node: ast.AST) -> str | None:
    """`a.b.c` for a name or a chain of attributes on a name (`tl.program_id`), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return '.'.join(reversed(parts))


def last_name(node: ast.AST) -> str | None:
    """The last part of a dotted name: `f` for `f` and for `a.b.f`, else None."""
    name = dotted_name(node)
    return name.rsplit('.', 1)[-1] if name else (node.attr if isinstance(node, ast.Attribute) else None)


def describe(rule: Rule) -> str:
    return f'{rule.id}  {rule.title}\nseverity: {rule.severity}; reports on: {rule.scope}\n\n{rule.doc}\n\nFix: {rule.hint}\n'


def run(args: argparse.Namespace) -> int:
    """`mrbot rules [ID ...]`: list the rules with their severity in this repository, those an id prefix names, or
    the documentation of a rule named by its whole id."""
    from pathlib import Path

    from mrbot import git
    from mrbot.config import load_config
    from mrbot.words import plural

    rules = all_rules()
    try:
        root = git.repo_root(Path.cwd())
    except MrbotError:
        root = None
    config = load_config(root) if root is not None else Config()
    check_rule_ids(config)
    chosen = []
    for word in args.ids:
        wanted = word.upper()
        matches = [rule for rule in rules if rule.id.startswith(wanted)]
        if not matches:
            raise MrbotError(f"no rule id is or starts with '{word}'{suggestion(wanted, [r.id for r in rules])} "
                             '(`mrbot rules` lists them)')
        exact = [rule for rule in matches if rule.id == wanted]
        chosen += exact or matches
    if len(args.ids) == 1 and len(chosen) == 1 and chosen[0].id == args.ids[0].upper():
        print(describe(chosen[0]), end='')
        return 0
    shown = list(dict.fromkeys(chosen)) or rules
    width = max(len(rule.id) for rule in shown)
    for rule in shown:
        here = config.severity(rule.id, '', rule.severity)
        changed = f' (default {rule.severity})' if here != rule.severity else ''
        print(f'{rule.id:<{width}}  {here + changed:<22}  {rule.title}')
    if config.overrides:
        print(f"{plural(len(config.overrides), 'path override')} in [[tool.mrbot.overrides]] "
              f"{'changes' if len(config.overrides) == 1 else 'change'} severities for the files it matches "
              '(`mrbot config` shows them)', file=sys.stderr)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('ids', nargs='*', metavar='ID',
                        help='a rule id (TRI001) for its documentation, or an id prefix (TRI) for those it starts')
