# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The plain records that flow between mrbot's stages: a change in, findings out, and the bench records, read back
from JSON with every field checked."""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

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


# Files that document and never run.
PROSE = ('.md', '.rst')


def _code(text: str) -> ast.Module | None:
    """The syntax tree of `text` without docstrings (comments never reach it), error messages, or the names of each
    function's local variables (numbered in order of appearance), or None when it does not parse: what runs when
    nothing fails, which none of those change."""
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
        # an error's message is prose: it runs only when something already failed
        if isinstance(node, ast.Assert) and node.msg is not None:
            node.msg = ast.Constant('')
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func,
                                                                                         (ast.Name, ast.Attribute)):
            node.exc.args = [_without_text(argument) for argument in node.exc.args]
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    nested = {id(inner) for function in functions for inner in ast.walk(function) if inner is not function}
    for function in functions:
        if id(function) not in nested:
            _number_locals(function)
    return tree


def _without_text(argument: ast.expr) -> ast.expr:
    """An exception's message argument with its literal text blanked: a string, or an f-string that only formats
    names and attributes (one that calls something still counts as code)."""
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return ast.Constant('')
    if isinstance(argument, ast.JoinedStr) and all(
            isinstance(part, ast.Constant) or isinstance(part, ast.FormattedValue)
            and all(isinstance(n, (ast.Name, ast.Attribute, ast.Load)) for n in ast.walk(part.value))
            for part in argument.values):
        return ast.JoinedStr([part for part in argument.values if isinstance(part, ast.FormattedValue)])
    return argument


# Nodes that open a scope of their own inside a function.
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
           ast.GeneratorExp)


def _number_locals(function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Rename the variables a function's body assigns (not its parameters, globals or nonlocals) to `.0`, `.1`, ... in
    order of appearance; a function with a scope inside it (a function, class, lambda or comprehension, where the same
    name may mean another variable) or that reaches its own namespace (`locals`, `eval`, `exec`, `vars`, `dir`) is
    left as written."""
    nodes = [node for statement in function.body for node in ast.walk(statement)]
    if any(isinstance(node, _SCOPES) or isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
           and node.func.id in ('locals', 'eval', 'exec', 'vars', 'dir') for node in nodes):
        return
    arguments = function.args
    kept = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg,
                            arguments.kwarg] if a is not None}
    kept |= {name for node in nodes if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
    stored = [node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)]
    numbers = {name: f'.{i}' for i, name in enumerate(dict.fromkeys(n for n in stored if n not in kept))}
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in numbers:
            node.id = numbers[node.id]


def _bound(statement: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds, through `if`, `try`, `with` and `for` blocks."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split('.')[0] for alias in statement.names}
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        blocks = [statement.body, statement.orelse] if isinstance(statement, (ast.For, ast.AsyncFor)) else []
        return names | {name for block in blocks for inner in block for name in _bound(inner)}
    blocks = [getattr(statement, key, []) for key in ('body', 'orelse', 'finalbody')]
    blocks += [handler.body for handler in getattr(statement, 'handlers', [])]
    return {name for block in blocks if isinstance(block, list) for inner in block for name in _bound(inner)}


def only_binds(statement: ast.stmt) -> bool:
    """Whether a top-level statement does nothing at import time but bind names: a definition, a named import, an
    assignment to names, or `if`/`try` blocks of those. Assigning to an attribute or an item (`os.environ[...]`), a
    star import, a loop or a call changes what others see, so it is the whole module's change."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)):
        return True
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return all(alias.name != '*' for alias in statement.names)
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Starred, ast.Store, ast.Load))
                   for t in targets for n in ast.walk(t))
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Constant)
    if isinstance(statement, (ast.If, ast.Try)):
        blocks = [statement.body, statement.orelse, getattr(statement, 'finalbody', [])]
        blocks += [handler.body for handler in getattr(statement, 'handlers', [])]
        return all(only_binds(inner) for block in blocks for inner in block)
    return False


class _Statement:
    """A top-level statement that equals another when their source lines are the same or, failing that (a comment,
    a re-wrapped line), their syntax trees: dumping every statement of a large module costs more than reading it."""

    def __init__(self, statement: ast.stmt, lines: list[str]) -> None:
        first = min([statement.lineno, *(d.lineno for d in getattr(statement, 'decorator_list', []))])
        self.statement, self.text = statement, '\n'.join(lines[first - 1:statement.end_lineno])

    @cached_property
    def dump(self) -> str:
        return ast.dump(self.statement)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Statement) and (self.text == other.text or self.dump == other.dump)

    __hash__ = None


def _definitions(tree: ast.Module, text: str, reading: bool) -> tuple[dict[str, list], list, dict[str, set[str]]]:
    """Each module-level name with the statements binding it, the statements that do more (see `only_binds`), and,
    when `reading`, the names each name's statements read (under `''`, what those other statements read)."""
    lines = text.splitlines()
    binding: dict[str, list] = {}
    effects: list[_Statement] = []
    reads: dict[str, set[str]] = {}
    for statement in tree.body:
        if not only_binds(statement):
            effects.append(_Statement(statement, lines))
            # what runs at import time reads these, so a change to one of them acts on every importer
            if reading:
                reads.setdefault('', set()).update(n.id for n in ast.walk(statement) if isinstance(n, ast.Name))
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            # one import statement binds each of its names apart: adding a name to it alters that name only
            source = f'{statement.level}:{statement.module}' if isinstance(statement, ast.ImportFrom) else ''
            for alias in statement.names:
                name = (alias.asname or alias.name).split('.')[0]
                binding.setdefault(name, []).append(f'import {source} {alias.name} as {alias.asname}')
            continue
        names, dump = _bound(statement), _Statement(statement, lines)
        if not names:
            effects.append(dump)
        used = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)} if reading else set()
        for name in names:
            binding.setdefault(name, []).append(dump)
            reads.setdefault(name, set()).update(used - {name})
    return binding, effects, reads


def _memoizer(decorator: ast.expr) -> bool:
    """`@cache`, `@lru_cache`, `@lru_cache(maxsize=...)` with constant arguments, or `@functools.cache`: a decorator
    that registers nothing."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ''
    arguments = [*decorator.args, *(k.value for k in decorator.keywords)] if isinstance(decorator, ast.Call) else []
    return name in ('cache', 'lru_cache') and all(isinstance(a, ast.Constant) for a in arguments)


def _inert_def(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether defining the function runs nothing: memoizing decorators only, and no call in its defaults or
    annotations, which `def` evaluates."""
    evaluated = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None), node.returns,
                 *(a.annotation for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs])]
    return all(_memoizer(d) for d in node.decorator_list) and not any(
        isinstance(inner, (ast.Call, ast.NamedExpr)) for part in evaluated if part is not None for inner in ast.walk(part))


_TOP_LEVEL_ASSIGNMENT = re.compile(r'[A-Za-z_][\w, ]*(?::[^=]*)?=(?!=)')


def _constant(statement: ast.stmt) -> bool:
    """Whether a top-level statement binds names to a value computed without a call (`BT = 64`, `SIZES = (16, 32)`,
    `DTYPE = torch.float16`): rebinding it changes what reads it, and nothing else."""
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        return False
    names = all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Load, ast.Store))
                for target in targets for n in ast.walk(target))
    return names and not any(isinstance(n, (ast.Call, ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom))
                             for n in ast.walk(value))


def _statement_start(lines: list[str], number: int) -> str:
    """The line that starts the top-level statement holding line `number` (1-based): the nearest one at column 0."""
    return next((line for line in reversed(lines[:number]) if line[:1].strip() and not line.startswith('#')), '')


def parse_versions(base_text: str, text: str) -> tuple[ast.Module, ast.Module] | None:
    """The syntax trees of two versions of a Python file, or None when one does not parse."""
    try:
        return ast.parse(base_text), ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def altered_names(base_text: str, text: str, trees: tuple[ast.Module, ast.Module] | None) -> frozenset[str] | None:
    """The module-level names whose code or docstring differs between two versions of a Python file, with every name
    whose code reads an altered one; None when the change is not confined to names (a statement that binds nothing,
    such as a registration call, changed) or a version does not parse."""
    # docstrings stay: `__doc__` is a value at run time, which a comment is not
    if trees is None:
        return None
    (old, old_effects, _), (new, new_effects, reads) = (_definitions(tree, version, reading)
                                                        for tree, version, reading in zip(trees, (base_text, text),
                                                                                          (False, True), strict=True))
    if old_effects != new_effects:
        return None
    altered = {name for name in old.keys() | new.keys() if old.get(name) != new.get(name)}
    # a module's `__getattr__` answers for every name it does not bind
    if '__getattr__' in altered:
        return None
    grown = True
    while grown:
        reached = {name for name, used in reads.items() if used & altered} - altered
        altered |= reached
        grown = bool(reached)
    if '' in altered:
        return None
    # statements reordered, nothing else: module-level order can matter, so the whole file counts
    order = [[_Statement(statement, version.splitlines()) for statement in tree.body]
             for tree, version in zip(trees, (base_text, text), strict=True)]
    return frozenset(altered) if altered or order[0] == order[1] else None


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
        trees = [_code(text) for text in (self.text, self.base_text)]
        return None in trees or ast.dump(trees[0]) != ast.dump(trees[1])

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
        bound, in each version that has it, by one constant assignment (see `_constant`) and nothing else changed;
        empty otherwise."""
        if self.status != 'modified' or not self.path.endswith('.py') or self.text is None or self.base_text is None:
            return frozenset()
        lines = self.text.splitlines()
        # the cheap test first: an altered constant puts an added line inside a top-level assignment
        if not any(_TOP_LEVEL_ASSIGNMENT.match(_statement_start(lines, n)) for n in self.added_lines if n <= len(lines)):
            return frozenset()
        if self.trees is None:
            return frozenset()
        (old, old_effects, _), (new, new_effects, _) = (
            _definitions(tree, version, False) for tree, version in zip(self.trees, (self.base_text, self.text), strict=True))
        rebound = {name for name in old.keys() | new.keys() if old.get(name) != new.get(name)}
        bindings = [version.get(name, []) for name in rebound for version in (old, new)]
        constant = all(len(binding) <= 1 and all(isinstance(entry, _Statement) and _constant(entry.statement)
                                                 for entry in binding) for binding in bindings)
        return frozenset(rebound) if constant and old_effects == new_effects else frozenset()

    @cached_property
    def new_functions(self) -> frozenset[str]:
        """Module-level functions of a modified Python file that its base did not have, undecorated or memoized only:
        defining one runs nothing but the `def`."""
        if self.status != 'modified' or not self.path.endswith('.py') or self.text is None or self.base_text is None:
            return frozenset()
        lines = self.text.splitlines()
        # parsing costs more than reading the added lines, which hold any new module-level `def`
        if not any(lines[n - 1].startswith(('def ', 'async def ')) for n in self.added_lines if n <= len(lines)):
            return frozenset()
        if self.trees is None:
            return frozenset()
        base, head = self.trees
        known = {name for statement in base.body for name in _bound(statement)}
        return frozenset(node.name for node in head.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                         and _inert_def(node) and node.name not in known)


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


# The value of a field a record cannot do without: reading a record without it is an error.
_REQUIRED = object()


def _shown(value: object) -> str:
    """A JSON value as an error names it: `null`, `true`, `0`, `the string "fast"`, `a list`, `an object`."""
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return f'the string {json.dumps(value if len(value) <= 40 else value[:37] + "...")}'
    return 'a list' if isinstance(value, list) else 'an object'


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class JsonObject:
    """A JSON object being read into a record, and where it sits (`B.json`, `rows[2]`): each field is read with its
    type checked, so a malformed file is one error naming the file and the field, never a KeyError later."""

    data: dict
    source: str
    path: str = ''

    @classmethod
    def parse(cls, text: str, source: str, what: str) -> JsonObject:
        """The JSON object in `text`, the contents of `source`, which should hold `what` (`a bench record`)."""
        try:
            data = json.loads(text)
        except ValueError as error:
            raise MrbotError(f'{source}: not JSON ({error}); expected a JSON object ({what})') from None
        if not isinstance(data, dict):
            raise MrbotError(f'{source}: expected a JSON object ({what}), got {_shown(data)}')
        return cls(data, source)

    @classmethod
    def load(cls, path: Path, what: str) -> JsonObject:
        """The JSON object in the file `path`, which should hold `what`."""
        try:
            text = path.read_text(encoding='utf-8')
        except OSError as error:
            raise MrbotError(f'{path}: cannot read it ({error.strerror or error}); expected {what}') from None
        except UnicodeDecodeError:
            raise MrbotError(f'{path}: not UTF-8 text; expected {what}') from None
        return cls.parse(text, str(path), what)

    def at(self, key: str) -> str:
        """The path of one of this object's fields, for an error about it: `rows[2].samples_ms`."""
        return f'{self.path}.{key}' if self.path else key

    def error(self, where: str, expected: str, value: object = _REQUIRED) -> MrbotError:
        if value is _REQUIRED:
            return MrbotError(f'{self.source}: {where}: missing, expected {expected}')
        return MrbotError(f'{self.source}: {where}: expected {expected}, got {_shown(value)}')

    def _get(self, key: str, expected: str, accepts: Callable[[object], bool], default: object) -> Any:
        value = self.data.get(key, _REQUIRED)
        if value is _REQUIRED:
            if default is _REQUIRED:
                raise self.error(self.at(key), expected)
            return default
        if not accepts(value):
            raise self.error(self.at(key), expected, value)
        return value

    def text(self, key: str, default: object = _REQUIRED) -> str:
        return self._get(key, 'a string', lambda v: isinstance(v, str), default)

    def optional_text(self, key: str) -> str | None:
        return self._get(key, 'a string or null', lambda v: v is None or isinstance(v, str), None)

    def number(self, key: str, default: object = _REQUIRED) -> float:
        return self._get(key, 'a number', _is_number, default)

    def optional_number(self, key: str) -> float | None:
        return self._get(key, 'a number or null', lambda v: v is None or _is_number(v), None)

    def integer(self, key: str, default: object = _REQUIRED) -> int:
        return self._get(key, 'a whole number', lambda v: isinstance(v, int) and not isinstance(v, bool), default)

    def optional_integer(self, key: str) -> int | None:
        return self._get(key, 'a whole number or null',
                         lambda v: v is None or isinstance(v, int) and not isinstance(v, bool), None)

    def flag(self, key: str, default: object = _REQUIRED) -> bool:
        return self._get(key, 'true or false', lambda v: isinstance(v, bool), default)

    def texts(self, key: str, default: object = _REQUIRED) -> tuple[str, ...]:
        values = self._get(key, 'a list of strings', lambda v: isinstance(v, list), default)
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise self.error(f'{self.at(key)}[{index}]', 'a string', value)
        return tuple(values)

    def times(self, key: str, default: object = _REQUIRED) -> tuple[float, ...]:
        """A list of times in ms: positive numbers."""
        values = self._get(key, 'a list of numbers', lambda v: isinstance(v, list), default)
        for index, value in enumerate(values):
            if not _is_number(value) or value <= 0:
                raise self.error(f'{self.at(key)}[{index}]', 'a positive number of ms', value)
        return tuple(float(v) for v in values)

    def mapping(self, key: str, default: object = _REQUIRED) -> dict:
        """An object kept as the plain JSON it is (a section another stage wrote and reads)."""
        return self._get(key, 'an object', lambda v: isinstance(v, dict), default)

    def optional_mapping(self, key: str) -> dict | None:
        return self._get(key, 'an object or null', lambda v: v is None or isinstance(v, dict), None)

    def sequence(self, key: str, default: object = _REQUIRED) -> list:
        """A list kept as the plain JSON it is."""
        return self._get(key, 'a list', lambda v: isinstance(v, list), default)

    def object(self, key: str) -> JsonObject:
        return JsonObject(self.mapping(key), self.source, self.at(key))

    def optional_object(self, key: str) -> JsonObject | None:
        data = self.optional_mapping(key)
        return None if data is None else JsonObject(data, self.source, self.at(key))

    def objects(self, key: str, default: object = _REQUIRED) -> list[JsonObject]:
        values = self.sequence(key, default)
        for index, value in enumerate(values):
            if not isinstance(value, dict):
                raise self.error(f'{self.at(key)}[{index}]', 'an object', value)
        return [JsonObject(value, self.source, f'{self.at(key)}[{index}]') for index, value in enumerate(values)]

    def schema(self, version: int, what: str) -> int:
        """The record's `schema`, which must be `version`: a record of another version of `what` is not read."""
        return self._get('schema', f'{version} ({what})', lambda v: v == version and not isinstance(v, bool), _REQUIRED)

    def choice(self, key: str, choices: tuple[str, ...], default: object = _REQUIRED) -> str:
        return self._get(key, f"one of {', '.join(choices)}", lambda v: v in choices, default)


BENCH_MODES = ('fwd', 'fwdbwd')
BENCH_DISPATCH = ('off', 'on')
# Variables mrbot itself sets around the gate and the timed sides; `--dispatch` and the device choose them, not `--env`.
RESERVED_VARIABLES = ('FLA_DISABLE_BACKEND_DISPATCH', 'TRITON_INTERPRET', 'TRITON_CACHE_DIR', 'PYTHONPATH')
_VARIABLE = re.compile(r'[A-Za-z_][A-Za-z0-9_]{0,127}')


def parse_environment(assignments: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`--env NAME=VALUE` options as (name, value) pairs, refused when a name is malformed, reserved or given twice."""
    pairs: dict[str, str] = {}
    for assignment in assignments:
        name, equals, value = assignment.partition('=')
        if not equals or not _VARIABLE.fullmatch(name):
            raise MrbotError(f'--env {ascii(assignment[:80])}: expected NAME=VALUE with NAME a variable name')
        if name in RESERVED_VARIABLES or name.startswith('MRBOT_'):
            raise MrbotError(f'--env {name}: mrbot sets this variable itself (use --dispatch for backend dispatch)')
        if len(value) > 1000 or any(not character.isprintable() for character in value):
            raise MrbotError(f'--env {name}: expected a printable value of at most 1000 characters')
        if name in pairs:
            raise MrbotError(f'--env {name}: given twice')
        pairs[name] = value
    return tuple(sorted(pairs.items()))
# A paired comparison's confidence interval needs this many rounds (mrbot.bench.stats.MIN_ROUNDS).
PAIRED_MIN_ROUNDS = 3


def check_workers(requested: int, flag: str) -> None:
    """A count of test processes: 0 means sized for the machine that runs them."""
    if requested < 0:
        raise MrbotError(f'{flag} must be 0 (sized for this machine) or more, got {requested}')


def check_min_effect(value: float) -> None:
    """The smallest change a verdict may call faster or slower is a share of the time, below all of it."""
    if not 0 <= value < 1:
        raise MrbotError(f'--min-effect must be at least 0 and below 1 (a share of the time), got {value:g}')


@dataclass(frozen=True)
class BenchRequest:
    """What `mrbot bench` is asked to time, however it was asked: its command line, `mrbot prepare`, a `/bench`
    comment. Checked when made, so a bad value is refused before any worktree, gate or worker starts.

    `ops` empty means every declared op (or, with `from_diff`, those the change from `base` touches); `shapes` empty
    means each op's default shapes. `command` is the command line recorded with the numbers, to reproduce them.
    """

    ops: tuple[str, ...] = ()
    from_diff: bool = False
    base: str | None = None
    aa: bool = False
    modes: tuple[str, ...] = BENCH_MODES
    shapes: tuple[str, ...] = ()
    rounds: int = 10
    min_effect: float = 0.02
    eager: bool = False
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    dispatch: str = 'off'
    # extra variables for the gate and both timed sides, e.g. a backend's switch: (('FLA_SIMPLE_GLA_GLUON', '1'),)
    environment: tuple[tuple[str, str], ...] = ()
    gate: bool = True
    gate_k: str | None = None
    gate_workers: int = 0
    gate_timeout: float = 1800.0
    ncu: str | None = None
    command: tuple[str, ...] = ()

    @property
    def paired(self) -> bool:
        return self.base is not None or self.aa

    def __post_init__(self) -> None:
        least = PAIRED_MIN_ROUNDS if self.paired else 1
        if self.rounds < least:
            why = ' with --base or --aa (a confidence interval needs them)' if self.paired else ''
            raise MrbotError(f'--rounds must be at least {least}{why}, got {self.rounds}')
        check_min_effect(self.min_effect)
        if not (math.isfinite(self.warmup_ms) and self.warmup_ms >= 0):
            raise MrbotError(f'--warmup-ms must be 0 or more, got {self.warmup_ms:g}')
        if not (math.isfinite(self.rep_ms) and self.rep_ms > 0):
            raise MrbotError(f'--rep-ms must be above 0, got {self.rep_ms:g}')
        check_workers(self.gate_workers, '--gate-workers')
        if not self.gate_timeout > 0:
            raise MrbotError(f'--gate-timeout must be above 0 seconds, got {self.gate_timeout:g}')
        unknown = [mode for mode in self.modes if mode not in BENCH_MODES]
        if unknown:
            raise MrbotError(f"--modes {' '.join(unknown)}: expected one or more of {', '.join(BENCH_MODES)}")
        if not self.modes:
            raise MrbotError(f"no mode to time: expected one or more of {', '.join(BENCH_MODES)}")
        if self.dispatch not in BENCH_DISPATCH:
            raise MrbotError(f"--dispatch {self.dispatch}: expected one of {', '.join(BENCH_DISPATCH)}")
        if self.from_diff and not self.ops and self.base is None:
            raise MrbotError('--from-diff needs --base REF to know the change')


@dataclass(frozen=True)
class Revision:
    """One side of a bench run: the ref as given, its commit, and whether uncommitted changes were timed with it."""

    ref: str
    sha: str | None
    dirty: bool = False

    def to_json(self) -> dict:
        return {'ref': self.ref, 'sha': self.sha, 'dirty': self.dirty}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Revision:
        return cls(fields.text('ref'), fields.optional_text('sha'), fields.flag('dirty', False))


# Where a machine's clocks and driver were read: `sm_clock_start`, `temperature_c_end`, ...
_READ_AT = ('_start', '_end')


@dataclass(frozen=True)
class Machine:
    """What a benchmark number is evidence of: the GPU (or 'cpu'), its class, the software, the clocks at start and
    end, the measured ceilings and the command line. `evidence` is False under the Triton interpreter."""

    gpu: str
    capability: str
    hardware_class: str
    torch: str
    triton: str
    cuda: str | None = None
    python: str = ''
    driver: str = '-'
    multiprocessors: int | None = None
    dispatch: bool = False
    interpreter: bool = False
    evidence: bool = False
    readings: dict[str, str] = field(default_factory=dict)
    ceilings: dict[str, float] | None = None
    command: tuple[str, ...] = ()

    def to_json(self) -> dict:
        out = {'torch': self.torch, 'triton': self.triton, 'cuda': self.cuda, 'python': self.python,
               'dispatch': self.dispatch, 'interpreter': self.interpreter, 'gpu': self.gpu,
               'capability': self.capability}
        if self.multiprocessors is not None:
            out['multiprocessors'] = self.multiprocessors
        return {**out, **self.readings, 'driver': self.driver, 'class': self.hardware_class, 'ceilings': self.ceilings,
                'command': list(self.command), 'evidence': self.evidence}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Machine:
        readings = {key: fields.text(key) for key in fields.data if key.endswith(_READ_AT)}
        ceilings = fields.optional_mapping('ceilings')
        for name, value in (ceilings or {}).items():
            if not _is_number(value):
                raise fields.error(f'{fields.at("ceilings")}.{name}', 'a number', value)
        return cls(gpu=fields.text('gpu'), capability=fields.text('capability'),
                   hardware_class=fields.text('class', '-'), torch=fields.text('torch'), triton=fields.text('triton'),
                   cuda=fields.optional_text('cuda'), python=fields.text('python', ''), driver=fields.text('driver', '-'),
                   multiprocessors=fields.optional_integer('multiprocessors'),
                   dispatch=fields.flag('dispatch', False), interpreter=fields.flag('interpreter', False),
                   evidence=fields.flag('evidence', False), readings=readings, ceilings=ceilings,
                   command=fields.texts('command', ()))

    @property
    def name(self) -> str:
        """The GPU as a reader compares two runs by: `NVIDIA H100 80GB HBM3 (sm_90)`, `cpu`."""
        return f'{self.gpu} ({self.capability})' if self.capability else self.gpu


@dataclass(frozen=True)
class Shape:
    """A benchmark shape: its name and its dimensions (`{'name': 'small', 'B': 4, 'D': 8}` in JSON)."""

    name: str
    dims: dict[str, int | float | str]

    def to_json(self) -> dict:
        return {'name': self.name, **self.dims}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Shape:
        dims = {}
        for key, value in fields.data.items():
            if key != 'name':
                if not (_is_number(value) or isinstance(value, str)):
                    raise fields.error(fields.at(key), 'a number or a string (a dimension)', value)
                dims[key] = value
        return cls(fields.text('name'), dims)


def bench_row_key(op: str, mode: str, shape: Shape) -> str:
    """What the rows of two runs are matched on: op, mode and every shape key."""
    return f'{op}|{mode}|{json.dumps(shape.to_json(), sort_keys=True)}'


# Throughput figures a row may carry: achieved rates and their share of the device's measured ceilings.
THROUGHPUT = ('tbs', 'tflops', 'tbs_of_ceiling', 'tflops_of_ceiling')
VERDICTS = ('faster', 'slower', 'same', 'noisy', 'gate-failed')


@dataclass(frozen=True)
class BenchRow:
    """One op x mode x shape of a bench run. `samples_ms` are one median per round of the timed side (the head in a
    paired run); a paired row adds the base's, the ratio head/base with its 95% interval, and a verdict."""

    op: str
    mode: str
    shape: Shape
    samples_ms: tuple[float, ...]
    median_ms: float = 0.0
    eager_median_ms: float = 0.0
    launch_overhead_ms: float = 0.0
    timing: str = 'none'
    throughput: dict[str, float] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    evidence: bool = False
    base_ms: tuple[float, ...] | None = None
    base_median_ms: float | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: str | None = None
    aa_noise: float | None = None

    @property
    def key(self) -> str:
        return bench_row_key(self.op, self.mode, self.shape)

    def to_json(self) -> dict:
        out = {'op': self.op, 'mode': self.mode, 'shape': self.shape.to_json()}
        if self.base_ms is None:
            out['samples_ms'] = list(self.samples_ms)
        out.update(median_ms=self.median_ms, eager_median_ms=self.eager_median_ms,
                   launch_overhead_ms=self.launch_overhead_ms, timing=self.timing, **self.throughput,
                   flags=list(self.flags), evidence=self.evidence)
        if self.base_ms is not None:
            out.update(base_ms=list(self.base_ms), head_ms=list(self.samples_ms), base_median_ms=self.base_median_ms,
                       head_median_ms=self.median_ms)
            if self.ratio is not None:
                out.update(ratio=self.ratio, ci_low=self.ci_low, ci_high=self.ci_high)
            if self.verdict is not None:
                out['verdict'] = self.verdict
            if self.aa_noise is not None:
                out['aa_noise'] = self.aa_noise
        return out

    @classmethod
    def from_json(cls, fields: JsonObject, paired: bool) -> BenchRow:
        samples = fields.times('head_ms' if paired else 'samples_ms')
        throughput = {key: fields.number(key) for key in THROUGHPUT if key in fields.data}
        row = cls(op=fields.text('op'), mode=fields.text('mode'), shape=Shape.from_json(fields.object('shape')),
                  samples_ms=samples, median_ms=fields.number('median_ms', 0.0),
                  eager_median_ms=fields.number('eager_median_ms', 0.0),
                  launch_overhead_ms=fields.number('launch_overhead_ms', 0.0), timing=fields.text('timing', 'none'),
                  throughput=throughput, flags=fields.texts('flags', ()), evidence=fields.flag('evidence', False))
        if not paired:
            return row
        return replace(row, base_ms=fields.times('base_ms'), base_median_ms=fields.number('base_median_ms', 0.0),
                       ratio=fields.optional_number('ratio'), ci_low=fields.optional_number('ci_low'),
                       ci_high=fields.optional_number('ci_high'), verdict=fields.choice('verdict', VERDICTS, None),
                       aa_noise=fields.optional_number('aa_noise'))


GATE_STATUSES = ('passed', 'failed', 'skipped')


@dataclass(frozen=True)
class Gate:
    """The correctness gate of a bench run: the ops' test files on the head, and whether the change left them and the
    naive references alone (`frozen_ok`). `seconds` is None when the gate did not run."""

    status: str
    test_files: tuple[str, ...] = ()
    frozen_ok: bool = True
    partial: bool = False
    changed_contract: tuple[str, ...] = ()
    seconds: float | None = None
    pytest_args: tuple[str, ...] = ()
    reused: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()

    def to_json(self) -> dict:
        out = {'test_files': list(self.test_files), 'frozen_ok': self.frozen_ok, 'partial': self.partial,
               'changed_contract': list(self.changed_contract), 'status': self.status}
        if self.seconds is not None:
            out.update(seconds=self.seconds, pytest_args=list(self.pytest_args), reused=list(self.reused),
                       failures=list(self.failures))
        return out

    @classmethod
    def from_json(cls, fields: JsonObject) -> Gate:
        return cls(status=fields.choice('status', GATE_STATUSES), test_files=fields.texts('test_files', ()),
                   frozen_ok=fields.flag('frozen_ok', True), partial=fields.flag('partial', False),
                   changed_contract=fields.texts('changed_contract', ()), seconds=fields.optional_number('seconds'),
                   pytest_args=fields.texts('pytest_args', ()), reused=fields.texts('reused', ()),
                   failures=fields.texts('failures', ()))


@dataclass(frozen=True)
class Statistics:
    """How a paired run's verdicts were reached: the minimum effect, the correction across rows, the runner's noise."""

    min_effect: float
    correction: str
    runner_profile: str | None = None

    def to_json(self) -> dict:
        return {'min_effect': self.min_effect, 'correction': self.correction, 'runner_profile': self.runner_profile}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Statistics:
        return cls(fields.number('min_effect'), fields.text('correction'), fields.optional_text('runner_profile'))


BENCH_SCHEMA = 1


@dataclass(frozen=True)
class BenchRun:
    """The record of `mrbot bench`: a paired run (`base` and `head`, with verdicts) or a single-ref run (`ref`), the
    machine it ran on, one row per op x mode x shape, and the gate. `interrupted` says Ctrl-C stopped it after
    `rounds` rounds."""

    machine: Machine
    rows: tuple[BenchRow, ...]
    gate: Gate
    rounds: int = 0
    interrupted: bool = False
    dtypes: dict[str, dict[str, str]] = field(default_factory=dict)
    ref: Revision | None = None
    base: Revision | None = None
    head: Revision | None = None
    statistics: Statistics | None = None
    ncu: dict | None = None

    @property
    def paired(self) -> bool:
        return self.base is not None

    def to_json(self) -> dict:
        out = {'schema': BENCH_SCHEMA, 'machine': self.machine.to_json(), 'rounds': self.rounds,
               'interrupted': self.interrupted, 'dtypes': self.dtypes}
        if self.paired:
            out.update(base=self.base.to_json(), head=self.head.to_json())
            if self.statistics is not None:
                out['statistics'] = self.statistics.to_json()
        else:
            out['ref'] = self.ref.to_json()
        out['gate'] = self.gate.to_json()
        if self.ncu is not None:
            out['ncu'] = self.ncu
        out['rows'] = [row.to_json() for row in self.rows]
        return out

    @classmethod
    def from_json(cls, fields: JsonObject) -> BenchRun:
        fields.schema(BENCH_SCHEMA, 'a record of this mrbot bench')
        paired = 'base' in fields.data
        dtypes = fields.mapping('dtypes', {})
        for op, inputs in dtypes.items():
            if not isinstance(inputs, dict) or not all(isinstance(v, str) for v in inputs.values()):
                raise fields.error(f"{fields.at('dtypes')}.{op}", 'an object of input name to dtype', inputs)
        statistics = fields.optional_object('statistics')
        return cls(machine=Machine.from_json(fields.object('machine')),
                   rows=tuple(BenchRow.from_json(row, paired) for row in fields.objects('rows')),
                   gate=Gate.from_json(fields.object('gate')) if 'gate' in fields.data else Gate('skipped'),
                   rounds=fields.integer('rounds', 0), interrupted=fields.flag('interrupted', False), dtypes=dtypes,
                   ref=None if paired else Revision.from_json(fields.object('ref')),
                   base=Revision.from_json(fields.object('base')) if paired else None,
                   head=Revision.from_json(fields.object('head')) if paired else None,
                   statistics=None if statistics is None else Statistics.from_json(statistics),
                   ncu=fields.optional_mapping('ncu'))

    @classmethod
    def load(cls, path: Path) -> BenchRun:
        return cls.from_json(JsonObject.load(path, 'a bench record of mrbot bench --json'))
