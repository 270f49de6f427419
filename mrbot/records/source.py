# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What a change does to a Python source: its syntax trees without docstrings, and the names whose code it
alters."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from functools import cached_property

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


def type_checking_only(node: ast.AST) -> bool:
    """Whether `node` is an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) block, whose body never runs."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == 'TYPE_CHECKING') or (
        isinstance(test, ast.Attribute) and test.attr == 'TYPE_CHECKING')


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


def same_code(base_text: str, text: str) -> bool:
    """Whether two versions of a Python file have equal syntax trees without docstrings and error messages and up to
    renamed local variables; False where either does not parse."""
    trees = [_code(version) for version in (text, base_text)]
    return None not in trees and ast.dump(trees[0]) == ast.dump(trees[1])


def rebound_constants(base_text: str, text: str, added_lines: frozenset[int],
                      trees: Callable[[], tuple[ast.Module, ast.Module] | None]) -> frozenset[str]:
    """Module-level names whose binding the change from `base_text` to `text` alters, where every such name is bound,
    in each version that has it, by one constant assignment (see `_constant`) and nothing else changed; empty
    otherwise. `trees` parses both versions, only where the added lines can hold such an assignment."""
    lines = text.splitlines()
    # the cheap test first: an altered constant puts an added line inside a top-level assignment
    if not any(_TOP_LEVEL_ASSIGNMENT.match(_statement_start(lines, n)) for n in added_lines if n <= len(lines)):
        return frozenset()
    parsed = trees()
    if parsed is None:
        return frozenset()
    (old, old_effects, _), (new, new_effects, _) = (
        _definitions(tree, version, False) for tree, version in zip(parsed, (base_text, text), strict=True))
    rebound = {name for name in old.keys() | new.keys() if old.get(name) != new.get(name)}
    bindings = [version.get(name, []) for name in rebound for version in (old, new)]
    constant = all(len(binding) <= 1 and all(isinstance(entry, _Statement) and _constant(entry.statement)
                                             for entry in binding) for binding in bindings)
    return frozenset(rebound) if constant and old_effects == new_effects else frozenset()


def new_functions(text: str, added_lines: frozenset[int],
                  trees: Callable[[], tuple[ast.Module, ast.Module] | None]) -> frozenset[str]:
    """Module-level functions of `text` that its base did not have, undecorated or memoized only: defining one runs
    nothing but the `def`. `trees` parses both versions, only where an added line starts a module-level `def`."""
    lines = text.splitlines()
    # parsing costs more than reading the added lines, which hold any new module-level `def`
    if not any(lines[n - 1].startswith(('def ', 'async def ')) for n in added_lines if n <= len(lines)):
        return frozenset()
    parsed = trees()
    if parsed is None:
        return frozenset()
    base, head = parsed
    known = {name for statement in base.body for name in _bound(statement)}
    return frozenset(node.name for node in head.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and _inert_def(node) and node.name not in known)
