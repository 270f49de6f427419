# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Public signatures a change breaks (from the base's and the head's syntax trees) and the callers still on the old form."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mrbot.records.change import ChangeSet
from mrbot.repo.graph import Graph, definition_chain, implementation
from mrbot.repo.index import is_jit, parse_file


@dataclass(frozen=True)
class Signature:
    """The call surface of one public function, or of a public class through its `__init__`."""

    name: str
    line: int
    text: str
    positional: tuple[str, ...]
    keyword_only: tuple[str, ...]
    required: frozenset[str]
    var_keyword: bool
    # keywords that `**kwargs` takes only to raise on them (`if 'head_first' in kwargs: raise ...`)
    rejected: frozenset[str] = frozenset()


@dataclass(frozen=True)
class BreakingChange:
    """One public name whose old calls may no longer work, what changed, and where the repository still calls it so."""

    path: str
    name: str
    change: str
    old: str
    new: str | None
    callers: tuple[str, ...]

    def to_json(self) -> dict:
        return {'path': self.path, 'name': self.name, 'change': self.change, 'old': self.old, 'new': self.new,
                'callers': list(self.callers)}


def _signature(name: str, node: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> Signature:
    args = node.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    defaults = set(positional[len(positional) - len(args.defaults):]) if args.defaults else set()
    required = {p for p in positional if p not in defaults}
    required |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None}
    if skip_self and positional:
        required.discard(positional[0])
        positional = positional[1:]
    return Signature(name, node.lineno, f'{name}({ast.unparse(args)})', tuple(positional),
                     tuple(a.arg for a in args.kwonlyargs), frozenset(required), args.kwarg is not None,
                     _rejected(node, args.kwarg.arg) if args.kwarg else frozenset())


def _rejected(node: ast.FunctionDef | ast.AsyncFunctionDef, kwargs: str) -> frozenset[str]:
    """The keywords a function raises on when they arrive in its `**kwargs`: `if 'x' in kwargs: raise ...`."""
    found = set()
    for statement in ast.walk(node):
        test = statement.test if isinstance(statement, ast.If) else None
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In) \
                and isinstance(test.left, ast.Constant) and isinstance(test.left.value, str) \
                and isinstance(test.comparators[0], ast.Name) and test.comparators[0].id == kwargs \
                and any(isinstance(inner, ast.Raise) for inner in statement.body):
            found.add(test.left.value)
    return frozenset(found)


def _exported(tree: ast.Module) -> set[str] | None:
    """The names in a literal `__all__`, or None when the module has none."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == '__all__' for t in node.targets):
            try:
                return set(ast.literal_eval(node.value))
            except ValueError:
                return None
    return None


def _bound_by_import(text: str) -> set[str]:
    """Top-level names a module binds by importing them: a function moved elsewhere and re-imported is not removed."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    return {alias.asname or alias.name.split('.')[0] for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names}


def public_signatures(text: str) -> dict[str, Signature]:
    """The module's public functions and classes: top level, no leading underscore, in `__all__` when it has one, not
    Triton kernels."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    exported = _exported(tree)
    found = {}
    for node in tree.body:
        name = getattr(node, 'name', None)
        if name is None or name.startswith('_') or (exported is not None and name not in exported):
            continue
        # Triton kernels are launched by the library, not called by its users
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(is_jit(d) for d in node.decorator_list):
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = _signature(node.name, node, skip_self=False)
        elif isinstance(node, ast.ClassDef):
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == '__init__'), None)
            if init is not None:
                found[node.name] = _signature(node.name, init, skip_self=True)
    return found


def _shifted_by_options(old: Signature, new: Signature, name: str) -> bool:
    """Whether optional `name` moved only because new optional parameters were inserted before it, the old ones
    keeping their order: a call that passes an option by position that far along is not the convention we protect."""
    before_old = [p for p in old.positional[:old.positional.index(name)] if p in new.positional]
    before_new = new.positional[:new.positional.index(name)]
    inserted = [p for p in before_new if p not in old.positional]
    return (name not in old.required | new.required and bool(inserted) and not set(inserted) & new.required
            and [p for p in before_new if p in old.positional] == before_old)


def _differences(old: Signature, new: Signature) -> list[str]:
    changes = []
    for index, name in enumerate(old.positional):
        if name not in new.positional and name not in new.keyword_only and not new.var_keyword:
            changes.append(f'parameter `{name}` removed')
        elif name in new.keyword_only:
            changes.append(f'parameter `{name}` is now keyword-only')
        elif name in new.positional and new.positional.index(name) != index and not _shifted_by_options(old, new, name):
            changes.append(f'parameter `{name}` moved from position {index + 1} to {new.positional.index(name) + 1}')
    for name in old.keyword_only:
        if name not in new.keyword_only and name not in new.positional and not new.var_keyword:
            changes.append(f'parameter `{name}` removed')
    for name in sorted(new.required - old.required):
        known = name in old.positional or name in old.keyword_only
        changes.append(f'parameter `{name}` is now required' if known else f'new required parameter `{name}`')
    for name in sorted(new.rejected - old.rejected):
        if name in old.positional or name in old.keyword_only or old.var_keyword:
            changes.append(f'now raises when `{name}` is passed')
    return changes


def _breaks(call: ast.Call, old: Signature, new: Signature | None) -> bool:
    """Whether a call written for `old` fails or means something else under `new` (None: the name is gone)."""
    if new is None:
        return True
    # a call forwarding `*args` or `**kwargs` passes what its own caller gave: nothing here is on the old form
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    given = {k.arg for k in call.keywords} | set(old.positional[:len(call.args)])
    if given & new.rejected or not new.var_keyword and given - set(new.positional) - set(new.keyword_only):
        return True
    if len(call.args) > len(new.positional) or new.required - given:
        return True
    return any(old.positional[i] != new.positional[i] for i in range(len(call.args)))


def _callers(root: Path, files: Iterable[str], old: Signature, new: Signature | None) -> tuple[str, ...]:
    """`path:line` of each call (or, for a removed name, each import) in the head that the change breaks."""
    found = []
    for path in files:
        try:
            text = (root / path).read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError):
            continue
        if old.name not in text:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, 'attr', None)
                if callee == old.name and _breaks(node, old, new):
                    found.append(f'{path}:{node.lineno}')
            elif new is None and isinstance(node, ast.ImportFrom) and any(a.name == old.name for a in node.names):
                found.append(f'{path}:{node.lineno}')
    return tuple(found)


def exported(graph: Graph, change: ChangeSet, public_roots: Iterable[str]) -> set[tuple[str, str]]:
    """`(defining file, name)` of each name that a package `__init__.py` under `public_roots` re-exports or, for an
    `__init__` the change edits, defines, now or at the base: the library's interface, of which `backends/` are no
    part."""
    roots = tuple(f'{r.rstrip("/")}/' for r in public_roots)
    packages = {path: list(facts.imports) for path, facts in graph.index.items()
                if path.endswith('/__init__.py') and path.startswith(roots) and '/backends/' not in path}
    found = set()
    for file in change.files:
        if file.path in packages and file.base_text is not None:
            packages[file.path] += parse_file(file.path, file.base_text).imports
            # what a package defines in its own `__init__` is its interface too
            found.update((file.path, name) for name in public_signatures(file.base_text))
    for imports in packages.values():
        for module, names in imports:
            for name in names:
                chain = definition_chain(graph.index, graph.by_module, module, name)
                # a module the change deletes is no longer indexed: its path follows from its name
                found.add((chain[-1] if chain else module.replace('.', '/') + '.py', name))
    return found


def breaking_changes(change: ChangeSet, public: set[tuple[str, str]], python_files: list[str]) -> list[BreakingChange]:
    """Each public signature (one that `public` holds, see `exported`) that the change removed or made incompatible,
    with its callers."""
    found = []
    for file in change.files:
        path = file.old_path or file.path
        if not path.endswith('.py') or file.base_text is None:
            continue
        # private modules, and the references that tests compare against, are not the library's interface
        if any(part.startswith('_') and part != '__init__.py' for part in path.split('/')) or path.endswith('/naive.py'):
            continue
        head_text = file.text if file.status != 'deleted' else ''
        new_signatures = public_signatures(head_text or '')
        still_bound = _bound_by_import(head_text or '')
        for name, old in public_signatures(file.base_text).items():
            if (path, name) not in public:
                continue
            new = new_signatures.get(name)
            if new is None:
                if name in still_bound:
                    continue
                found.append(BreakingChange(file.path, name, 'removed', old.text, None,
                                            _callers(change.root, python_files, old, None)))
                continue
            differences = _differences(old, new)
            if differences:
                found.append(BreakingChange(file.path, name, '; '.join(differences), old.text, new.text,
                                            _callers(change.root, python_files, old, new)))
    return found



def reached_ops(graph: Graph, public: set[tuple[str, str]], changed: Iterable[str], source_roots: Iterable[str]) -> list[str]:
    """The public ops (names of `public`, see `exported`, defined under `<source root>/ops/`) whose implementation
    holds a changed file, whether a benchmark names them or not; Triton kernels are not ops."""
    changed = set(changed)
    folders = tuple(f'{root.rstrip("/")}/ops/' for root in source_roots)
    kernels = {(path, name) for path, facts in graph.index.items() for name, _, _ in facts.kernels}
    return sorted({name for path, name in public if path.startswith(folders) and (path, name) not in kernels
                   and path in graph.index and changed & implementation(graph, path)})
