# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The import index: what each Python file of the repository imports, dispatches and defines, parsed once and cached.

Every Python file is indexed: its imports anywhere in the file (conditional and function-local ones included, relative
ones resolved), `importlib.import_module` / `__import__` / `pytest.importorskip` calls with literal names or literal
package prefixes, or with an entry of a module-level table of names (`import_module(COMMANDS[name])`: each of its
values), `@dispatch('<op>')` decorators and the functions they decorate, the methods of backend classes and what each
imports, and the Triton JIT functions it defines. `mrbot.repo.graph` builds the import graph from it.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from mrbot import git
from mrbot.config import Config, state_dir, write_whole
from mrbot.records import MrbotError
from mrbot.records.reading import JsonObject
from mrbot.records.source import only_binds, type_checking_only

CACHE_VERSION = 15
CACHE_PATH = Path('.mrbot') / 'cache' / 'selection-index.json'


class Imported(NamedTuple):
    """One imported module and the names taken from it (none: the module itself, `*`: a star import)."""

    module: str
    names: tuple[str, ...]


class Dispatch(NamedTuple):
    """A `@dispatch('<op>')` decorator, with the backends module it names explicitly (`module=`), if any."""

    operation: str
    module: str | None


class JitFunction(NamedTuple):
    """A Triton JIT function a file defines: its name, the line of its `def`, and the names it calls."""

    name: str
    line: int
    calls: tuple[str, ...]


@dataclass(frozen=True)
class FileFacts:
    """What selection, compilation and the checks need from one Python file; a file that does not parse has none of
    them and counts as running code when imported.

    `imports` are the module-level and function-level imports, except those under `if TYPE_CHECKING:`, which never
    run, and those inside the methods of a backend class (under a `backends/` folder), which are in `method_imports`
    by method, since they run only when that method does;
    `dynamic` are literal names given to `import_module` and the like, or patterns of module names where a part of the
    name is computed (`*` for each formatted value of an f-string);
    `dispatched` the functions decorated with `@dispatch`, `methods` the methods of backend classes, `aliased` the
    modules imported with `import a.b as c`; `runs_code` whether module-level statements do more than bind names.
    """

    imports: tuple[Imported, ...] = ()
    dynamic: tuple[str, ...] = ()
    dispatch: tuple[Dispatch, ...] = ()
    kernels: tuple[JitFunction, ...] = ()
    runs_code: bool = True
    dispatched: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    aliased: tuple[str, ...] = ()
    method_imports: dict[str, tuple[Imported, ...]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {'imports': _imports_json(self.imports), 'dynamic': list(self.dynamic),
                'dispatch': [[d.operation, d.module] for d in self.dispatch],
                'kernels': [[k.name, k.line, list(k.calls)] for k in self.kernels], 'runs_code': self.runs_code,
                'dispatched': list(self.dispatched), 'methods': list(self.methods), 'aliased': list(self.aliased),
                'method_imports': {method: _imports_json(imports) for method, imports in self.method_imports.items()}}

    @classmethod
    def from_json(cls, fields: JsonObject) -> FileFacts:
        dispatch = []
        for index, entry in enumerate(fields.sequence('dispatch')):
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                    and (entry[1] is None or isinstance(entry[1], str))):
                raise fields.error(f"{fields.at('dispatch')}[{index}]", '[operation, module or null]', entry)
            dispatch.append(Dispatch(*entry))
        kernels = []
        for index, entry in enumerate(fields.sequence('kernels')):
            if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                    and isinstance(entry[1], int) and not isinstance(entry[1], bool) and _are_texts(entry[2])):
                raise fields.error(f"{fields.at('kernels')}[{index}]", '[name, line, [names it calls]]', entry)
            kernels.append(JitFunction(entry[0], entry[1], tuple(entry[2])))
        methods = fields.object('method_imports')
        return cls(imports=_imports(fields, 'imports'), dynamic=fields.texts('dynamic'), dispatch=tuple(dispatch),
                   kernels=tuple(kernels), runs_code=fields.flag('runs_code'), dispatched=fields.texts('dispatched'),
                   methods=fields.texts('methods'), aliased=fields.texts('aliased'),
                   method_imports={method: _imports(methods, method) for method in methods.data})


def _imports_json(imports: Iterable[Imported]) -> list:
    return [[imported.module, list(imported.names)] for imported in imports]


def _are_texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _imports(fields: JsonObject, key: str) -> tuple[Imported, ...]:
    imports = []
    for index, entry in enumerate(fields.sequence(key)):
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and _are_texts(entry[1])):
            raise fields.error(f'{fields.at(key)}[{index}]', '[module, [names]]', entry)
        imports.append(Imported(entry[0], tuple(entry[1])))
    return tuple(imports)


def module_name(path: str) -> str:
    """`fla/ops/x/chunk.py` -> `fla.ops.x.chunk`; a package's `__init__.py` names the package."""
    parts = path[:-3].split('/')
    if parts[-1] == '__init__':
        parts = parts[:-1]
    return '.'.join(parts)


def package_of(path: str) -> str:
    """The package a module's relative imports start from."""
    name = module_name(path)
    return name if path.endswith('/__init__.py') else name.rpartition('.')[0]


def imported_module(package: str, node: ast.ImportFrom) -> str:
    """The module a `from ... import` names, relative imports resolved from `package`, the importing module's package
    (the module itself for an `__init__.py`)."""
    if not node.level:
        return node.module or ''
    base = package.split('.') if package else []
    base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
    return '.'.join([*base, node.module] if node.module else base)


def is_jit(decorator: ast.expr) -> bool:
    """`@triton.jit`, `@jit`, `@triton.jit(...)` or `@jit(...)`."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ''
    return name == 'jit'


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ''


def parse_file(path: str, text: str) -> FileFacts:
    """The facts of one file, `path` being where it sits in the repository."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return FileFacts()
    imports, dynamic, dispatch, kernels, dispatched, methods, aliased = [], [], [], [], [], [], []
    tables = _module_tables(tree)
    # an import under `if TYPE_CHECKING:` never runs; only a type checker reads it
    typing_only = {id(node) for block in ast.walk(tree) if type_checking_only(block)
                   for statement in block.body for node in ast.walk(statement)}
    # what a backend class's method imports runs only when that method does
    method_of, method_imports = _backend_method_imports(path, tree), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(is_jit(d) for d in node.decorator_list):
            calls = sorted({_called(call) for call in ast.walk(node) if isinstance(call, ast.Call)} - {''})
            kernels.append(JitFunction(node.name, node.lineno, tuple(calls)))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(d, ast.Call) and _called(d) == 'dispatch' for d in node.decorator_list):
            dispatched.append(node.name)
        elif isinstance(node, ast.ClassDef) and '/backends/' in f'/{path}':
            methods.extend(n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in typing_only:
            entries = ([Imported(alias.name, ()) for alias in node.names] if isinstance(node, ast.Import)
                       else [Imported(imported_module(package_of(path), node), tuple(alias.name for alias in node.names))])
            method = method_of.get(id(node))
            (imports if method is None else method_imports.setdefault(method, [])).extend(entries)
            if isinstance(node, ast.Import):
                aliased.extend(alias.name for alias in node.names if alias.asname)
        elif isinstance(node, ast.Call) and node.args:
            name, first = _called(node), node.args[0]
            if name in ('import_module', '__import__', 'importorskip'):
                if _literal(first):
                    dynamic.append(_literal(first))
                elif isinstance(first, ast.JoinedStr) and first.values and (_literal(first.values[0]) or '').endswith('.'):
                    # f'checks.{name}': any module of that package; f'fla.ops.{op}.backends': any backends package
                    dynamic.append(''.join(_literal(part) or '*' for part in first.values))
                elif isinstance(first, ast.Subscript) and isinstance(first.value, ast.Name):
                    # COMMANDS[name]: any module the table names
                    dynamic.extend(tables.get(first.value.id, ()))
            elif name == 'dispatch' and _literal(first):
                explicit = next((_literal(k.value) for k in node.keywords if k.arg == 'module'), None)
                dispatch.append(Dispatch(_literal(first), explicit))
    return FileFacts(tuple(imports), tuple(dynamic), tuple(dispatch), tuple(kernels), _runs_code(tree.body),
                     tuple(dispatched), tuple(methods), tuple(aliased),
                     {method: tuple(entries) for method, entries in method_imports.items()})


def _module_tables(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """The module-level names bound to a dict, list or tuple whose values are all string literals, with those values.
    Only such a table indexed in the import call itself is followed: a name handed on through a variable or a function
    (a registry's fallback, a wrapper that imports optional packages) may be any module, and following every string of
    the file made upstream's package `__init__` reach the whole library."""
    tables = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if isinstance(value, ast.Dict):
            items = value.values
        elif isinstance(value, (ast.List, ast.Tuple)):
            items = value.elts
        else:
            continue
        names = [_literal(item) for item in items]
        if names and all(names):
            tables.update({target.id: tuple(names) for target in targets if isinstance(target, ast.Name)})
    return tables


def _backend_method_imports(path: str, tree: ast.Module) -> dict[int, str]:
    """In a file under a `backends/` folder, the import statements inside each class's methods (by `id`), with the
    name of the method."""
    if '/backends/' not in f'/{path}':
        return {}
    return {id(inner): method.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            for method in node.body if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
            for inner in ast.walk(method) if isinstance(inner, (ast.Import, ast.ImportFrom))}


def _runs_code(body: list[ast.stmt]) -> bool:
    """Whether module-level statements do more than import, define and assign names (`AutoModel.register(...)` in a
    package `__init__` registers what it imports for every importer, so that `__init__` cannot be run on the way)."""
    return not all(only_binds(statement) for statement in body)


def python_files(root: Path) -> list[str]:
    """Tracked and untracked, not ignored, Python files of the repository."""
    return sorted({path for path in git.listed_files(root, '*.py') if (root / path).is_file()})


def load_index(root: Path) -> dict[str, FileFacts]:
    """The facts of every Python file by path, re-parsing only files whose content changed since the cached index.

    The cache is mrbot's own: `state_dir` refuses a `.mrbot/` that a commit supplies before anything in it is read,
    so a change cannot hand the selection an index of its making.
    """
    try:
        cache_file: Path | None = state_dir(root, *CACHE_PATH.parent.parts[1:]) / CACHE_PATH.name
    except OSError:
        # a checkout mrbot cannot write to: the index is built, not kept
        cache_file = None
    try:
        stored = json.loads(cache_file.read_text()) if cache_file is not None else None
    except (OSError, ValueError, RecursionError):
        stored = None
    # the index holds what it held when written, or none of it is believed: an edited or half-written cache is rebuilt
    files = stored.get('files') if isinstance(stored, dict) and stored.get('version') == CACHE_VERSION else None
    cached = _read_cached(files) if isinstance(files, dict) and stored.get('digest') == _digest(files) else {}
    index, written, stale = {}, {}, False
    for path in python_files(root):
        data = (root / path).read_bytes()
        digest = hashlib.sha1(data).hexdigest()
        hashed, facts = cached.get(path, ('', None))
        if facts is None or hashed != digest:
            facts = parse_file(path, data.decode('utf-8', errors='replace'))
            stale = True
        index[path], written[path] = facts, {'hash': digest, **facts.to_json()}
    if cache_file is not None and (stale or len(index) != len(cached)):
        # a cache that cannot be kept costs the next run time, never this one its result
        with contextlib.suppress(OSError):
            write_whole(cache_file, json.dumps({'version': CACHE_VERSION, 'digest': _digest(written), 'files': written}))
    return index


def _read_cached(files: dict) -> dict[str, tuple[str, FileFacts]]:
    """Each cached file's content hash and facts; none of them when one entry is not what the index writes."""
    cached = {}
    for path, entry in files.items():
        if not isinstance(entry, dict):
            return {}
        fields = JsonObject(entry, str(CACHE_PATH), path)
        try:
            cached[path] = (fields.text('hash'), FileFacts.from_json(fields))
        except MrbotError:
            return {}
    return cached


def _digest(files: dict) -> str:
    return hashlib.sha1(json.dumps(files, sort_keys=True).encode()).hexdigest()


def is_test_file(path: str, config: Config) -> bool:
    name = path.rsplit('/', 1)[-1]
    return (config.is_test(path) and name.endswith('.py') and (name.startswith('test_') or name.endswith('_test.py'))
            and not matches_segments(path, config.exclude_tests))


def test_files_of(index: Iterable[str], config: Config) -> list[str]:
    return sorted(p for p in index if is_test_file(p, config))


def matches_segments(path: str, patterns: Iterable[str]) -> bool:
    """Whether `path` matches a pattern segment by segment: `*` stays inside one folder or name, `**` spans any."""

    def match(parts: list[str], pattern: list[str]) -> bool:
        if not pattern:
            return not parts
        if pattern[0] == '**':
            return any(match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
        return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and match(parts[1:], pattern[1:])

    return any(match(path.split('/'), pattern.split('/')) for pattern in patterns)
