# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Dependent-test selection: which test files can notice a change, found through the repository's import graph.

Every Python file of the repository is indexed: its imports anywhere in the file (conditional and function-local ones
included, relative ones resolved), `importlib.import_module` / `__import__` / `pytest.importorskip` calls with literal
names or literal package prefixes, and `@dispatch('<op>')` decorators, which load `<package>.ops.<op>.backends` at run
time and call the backends whose classes have a method named like the dispatched function. What a backend class's
methods import is reached through those functions and through whoever imports the class, not through the registry that
only registers it. A test file also depends on every `conftest.py` above it. A test is selected when a changed file is
reachable from it; the chain of files that connects them is its reason. Packaging and configured global paths select
the full suite, and data files select the tests of the modules configured to read them.

A name imported from a package (`from fla import chunk_kda`) is followed through the package's re-exports to the
module that defines it, so an aggregator `__init__.py` links a test to the names it uses, not to everything it
imports; the `__init__` files run on the way still pass on changes to themselves. A plain `import pkg`, a star import
and a dynamic import depend on the whole package, as Python does.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import hashlib
import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from mrbot import git
from mrbot.config import Config, state_dir, write_whole
from mrbot.records import MrbotError
from mrbot.records.change import ChangedFile, ChangeSet
from mrbot.records.source import only_binds
from mrbot.records.testruns import SelectedTest, Selection
from mrbot.words import plural

if TYPE_CHECKING:
    from mrbot.workspace import Workspace

CACHE_VERSION = 11
CACHE_PATH = Path('.mrbot') / 'cache' / 'selection-index.json'


def module_name(path: str) -> str:
    """`fla/ops/x/chunk.py` -> `fla.ops.x.chunk`; a package's `__init__.py` names the package."""
    parts = path[:-3].split('/')
    if parts[-1] == '__init__':
        parts = parts[:-1]
    return '.'.join(parts)


def _package(path: str) -> str:
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


def parse_file(path: str, text: str) -> dict:
    """What selection needs from one file: imports `[module, [names]]`, dynamic imports, dispatched operations, and
    the Triton JIT functions it defines as `[name, line of def, [names it calls]]` (for `mrbot compile`)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {'imports': [], 'dynamic': [], 'dispatch': [], 'kernels': [], 'dispatched': [], 'methods': [],
                'aliased': [], 'method_imports': {}, 'error': True}
    imports, dynamic, dispatch, kernels, dispatched, methods, aliased = [], [], [], [], [], [], []
    # what a backend class's method imports runs only when that method does
    method_of, method_imports = _backend_method_imports(path, tree), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(is_jit(d) for d in node.decorator_list):
            calls = sorted({_called(call) for call in ast.walk(node) if isinstance(call, ast.Call)} - {''})
            kernels.append([node.name, node.lineno, calls])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(d, ast.Call) and _called(d) == 'dispatch' for d in node.decorator_list):
            dispatched.append(node.name)
        elif isinstance(node, ast.ClassDef) and '/backends/' in f'/{path}':
            methods.extend(n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            entries = ([[alias.name, []] for alias in node.names] if isinstance(node, ast.Import)
                       else [[imported_module(_package(path), node), [alias.name for alias in node.names]]])
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
                    # f'checks.{name}': any module of that package
                    dynamic.append(_literal(first.values[0]))
            elif name == 'dispatch' and _literal(first):
                explicit = next((_literal(k.value) for k in node.keywords if k.arg == 'module'), None)
                dispatch.append([_literal(first), explicit])
    return {'imports': imports, 'dynamic': dynamic, 'dispatch': dispatch, 'kernels': kernels,
            'runs_code': _runs_code(tree.body), 'dispatched': dispatched, 'methods': methods, 'aliased': aliased,
            'method_imports': method_imports}


def _backends_package(path: str) -> str:
    """`fla/ops/common/backends/npu/__init__.py` -> `fla/ops/common/backends/`."""
    return path[:f'/{path}'.index('/backends/') + len('backends/')]


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


def load_index(root: Path) -> dict[str, dict]:
    """Parsed facts of every Python file, re-parsing only files whose content changed since the cached index.

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
    cached = files if isinstance(files, dict) and stored.get('digest') == _digest(files) else {}
    index, stale = {}, False
    for path in python_files(root):
        data = (root / path).read_bytes()
        digest = hashlib.sha1(data).hexdigest()
        entry = cached.get(path)
        if entry is None or entry.get('hash') != digest:
            entry = {'hash': digest, **parse_file(path, data.decode('utf-8', errors='replace'))}
            stale = True
        index[path] = entry
    if cache_file is not None and (stale or len(index) != len(cached)):
        # a cache that cannot be kept costs the next run time, never this one its result
        with contextlib.suppress(OSError):
            write_whole(cache_file, json.dumps({'version': CACHE_VERSION, 'digest': _digest(index), 'files': index}))
    return index


def _digest(files: dict) -> str:
    return hashlib.sha1(json.dumps(files, sort_keys=True).encode()).hexdigest()


@dataclass
class Graph:
    """The repository's Python files (`index`, their parsed facts) and what each depends on; `label[(a, b)]` names
    what `a` imports from `b`.

    An edge in `shallow` is a package `__init__.py` that importing runs on the way (`a/__init__.py` for `import a.b`,
    or the package a name was re-exported from): a change to that file reaches the importer, what the `__init__`
    itself imports does not. `names[(a, b)]` are the only module-level names of `b` that `a` takes (by name, or
    through re-exports); an edge without an entry takes the whole module (`import b`, a star or dynamic import).
    """

    index: dict[str, dict] = field(default_factory=dict)
    depends: dict[str, set[str]] = field(default_factory=dict)
    label: dict[tuple[str, str], str] = field(default_factory=dict)
    # module name -> files importing it, including names no file defines (a deleted module's importers)
    importers: dict[str, set[str]] = field(default_factory=dict)
    shallow: set[tuple[str, str]] = field(default_factory=set)
    names: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    _whole: set[tuple[str, str]] = field(default_factory=set)

    def add(self, source: str, target: str, label: str = '', shallow: bool = False,
            names: Iterable[str] | None = None) -> None:
        if target == source:
            return
        edge = (source, target)
        known = target in self.depends.get(source, ())
        self.depends.setdefault(source, set()).add(target)
        if label and edge not in self.label:
            self.label[edge] = label
        if shallow and not known:
            self.shallow.add(edge)
        elif not shallow:
            self.shallow.discard(edge)
        if names is None:
            self._whole.add(edge)
            self.names.pop(edge, None)
        elif edge not in self._whole:
            self.names.setdefault(edge, set()).update(names)

    @cached_property
    def by_module(self) -> dict[str, str]:
        return {module_name(path): path for path in self.index}

    @cached_property
    def dependents(self) -> dict[str, set[str]]:
        """The reverse of `depends`: the files that depend on each file."""
        reverse: dict[str, set[str]] = {}
        for source, targets in self.depends.items():
            for target in targets:
                reverse.setdefault(target, set()).add(source)
        return reverse


def implementation(graph: Graph, path: str) -> set[str]:
    """The files that code defined in `path` runs: `path` and what it imports, directly or not, except the package
    `__init__.py` files that importing runs on the way."""
    seen, stack = {path}, [path]
    while stack:
        source = stack.pop()
        for target in graph.depends.get(source, ()):
            if target not in seen and (source, target) not in graph.shallow:
                seen.add(target)
                stack.append(target)
    return seen


def definition_chain(index: dict[str, dict], by_module: dict[str, str], module: str, name: str) -> list[str]:
    """The file of `module`, then each file it re-exports `name` from; the last one defines it (or imports it from
    outside the repository)."""
    chain = [by_module[module]] if module in by_module else []
    while chain:
        source = next((by_module[imported] for imported, names in index[chain[-1]]['imports']
                       if name in names and imported in by_module), None)
        if source is None or source in chain:
            break
        chain.append(source)
    return chain


def build_graph(index: dict[str, dict], config: Config) -> Graph:
    graph = Graph(index)
    by_module = graph.by_module

    @cache
    def module_files(module: str) -> list[str]:
        """The file of `module` and the `__init__.py` of each package above it, as far as they exist."""
        parts = module.split('.')
        return [by_module[m] for m in ('.'.join(parts[:i]) for i in range(1, len(parts) + 1)) if m in by_module]

    def on_the_way(path: str, file: str, names: Iterable[str] | None = ()) -> None:
        """A package `__init__` that importing runs: only its own changes matter, unless it runs code of its own;
        of its names, the importer takes `names`."""
        graph.add(path, file, shallow=not index[file].get('runs_code', True), names=names)

    def depend(path: str, module: str, label: str, names: Iterable[str] | None, holds_top: bool = False) -> None:
        """`path` uses `module` itself (the `names` of it, None for all): its file, and the packages above it that
        importing it runs on the way (all of each where the importer holds the top package, as `import a.b` does)."""
        target = by_module.get(module)
        for file in module_files(module):
            if file == target:
                graph.add(path, file, label, names=names)
            else:
                on_the_way(path, file, None if holds_top else ())

    def take(path: str, module: str, names: list[str], aliased: Iterable[str]) -> None:
        """`path` imports `names` of `module` (none: the module itself)."""
        label = ','.join(names[:2]) + (',...' if len(names) > 2 else '')
        target = by_module.get(module)
        taken = None if not names or '*' in names else names
        if target is None or not target.endswith('__init__.py') or taken is None:
            # `import a.b` binds `a`, through which any name of the packages on the way can be reached
            depend(path, module, label, taken, holds_top=not names and module not in aliased)
            return
        # a name from a package: the module that defines it, through the package's re-exports
        for parent in module_files(module):
            on_the_way(path, parent, names if parent == target else ())
        for name in names:
            submodule = f'{module}.{name}'
            if submodule in by_module:
                graph.importers.setdefault(submodule, set()).add(path)
                depend(path, submodule, name, None)
                continue
            chain = definition_chain(index, by_module, module, name)
            for file in chain[1:-1]:
                on_the_way(path, file, [name])
            depend(path, module_name(chain[-1]), name, [name])

    dispatched = {name for facts in index.values() for name in facts.get('dispatched', ())}
    # what the methods of a file's backend classes that dispatch calls by name import: [module, names] by file
    served: dict[str, list] = {}
    for path, facts in index.items():
        for module, names in facts['imports']:
            graph.importers.setdefault(module, set()).add(path)
            take(path, module, names, facts.get('aliased', ()))
        for method, imports in facts.get('method_imports', {}).items():
            for module, names in imports:
                graph.importers.setdefault(module, set()).add(path)
                if method in dispatched or method.removesuffix('_verifier') in dispatched:
                    served.setdefault(path, []).append([module, names])
                else:
                    # `is_available` and the like run for every dispatched call
                    take(path, module, names, facts.get('aliased', ()))
        for dynamic in facts['dynamic']:
            if dynamic.endswith('.'):
                for module, target in by_module.items():
                    if module.startswith(dynamic):
                        graph.add(path, target, 'import_module')
            for target in module_files(dynamic.rstrip('.')):
                graph.add(path, target, 'import_module')

    def serve(path: str, package: str) -> None:
        for server, imports in served.items():
            if _backends_package(server) == package:
                for module, names in imports:
                    take(path, module, names, index[server].get('aliased', ()))

    # who imports from a backends package (a backend class, or the registry holding them) may call any of their
    # methods; a registry under `backends/` only registers them, and dispatch calls them by name (below)
    for path, targets in list(graph.depends.items()):
        if '/backends/' not in f'/{path}':
            for package in {_backends_package(target) for target in targets
                            if '/backends/' in f'/{target}' and (path, target) not in graph.shallow}:
                serve(path, package)
    for path, facts in index.items():
        for operation, explicit in facts['dispatch']:
            top = module_name(path).split('.')[0]
            # an operation named after a package (upstream's 'modules') keeps its backends there
            backends = explicit or next((candidate for candidate in (f'{top}.ops.{operation}.backends',
                                                                     f'{top}.{operation}.backends')
                                         if candidate in by_module), f'{top}.ops.{operation}.backends')
            # dispatch imports the backends package, which registers its backends (a namespace package: all of it)
            registry = by_module.get(backends)
            for module, target in by_module.items():
                if target == registry or (registry is None and module.startswith(backends + '.')):
                    graph.add(path, target, f"dispatch('{operation}')")
    # a backend class with a method named like a dispatched function may serve it, whichever op registered the
    # backend: linked by name, with every backend of its package as upstream's selector links them, since a missed
    # test costs more than an extra one
    servers: dict[str, set[str]] = {}
    for path, facts in index.items():
        for method in facts.get('methods', ()):
            servers.setdefault(method, set()).add(path)
    for path, facts in index.items():
        for function in facts.get('dispatched', ()):
            for server in servers.get(function, ()):
                graph.add(path, server, f'backend {function}')
                serve(path, _backends_package(server))
    for test in test_files_of(index, config):
        folders = test.split('/')[:-1]
        for depth in range(len(folders), -1, -1):
            conftest = '/'.join([*folders[:depth], 'conftest.py'])
            if conftest in index:
                graph.add(test, conftest, 'conftest')
    return graph


def is_test_file(path: str, config: Config) -> bool:
    name = path.rsplit('/', 1)[-1]
    return (config.is_test(path) and name.endswith('.py') and (name.startswith('test_') or name.endswith('_test.py'))
            and not _matches_segments(path, config.exclude_tests))


def test_files_of(index: Iterable[str], config: Config) -> list[str]:
    return sorted(p for p in index if is_test_file(p, config))


def _matches(path: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


def _matches_segments(path: str, patterns: Iterable[str]) -> bool:
    """Whether `path` matches a pattern segment by segment: `*` stays inside one folder or name, `**` spans any."""

    def match(parts: list[str], pattern: list[str]) -> bool:
        if not pattern:
            return not parts
        if pattern[0] == '**':
            return any(match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
        return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and match(parts[1:], pattern[1:])

    return any(match(path.split('/'), pattern.split('/')) for pattern in patterns)


def _chains(graph: Graph, seeds: dict[str, str], tests: set[str],
            altered: Mapping[str, frozenset[str]] | None = None) -> dict[str, tuple[str, ...]]:
    """Shortest chain from each reachable test to a seed; `seeds` maps each seed file to a note shown after it, and
    `altered` the seeds whose change is confined to some module-level names to those names: such a seed reaches only
    the files that take one of them, or the whole module."""
    altered = altered or {}
    parent: dict[str, str | None] = dict.fromkeys(seeds)
    queue = deque(seeds)
    while queue:
        node = queue.popleft()
        for dependent in sorted(graph.dependents.get(node, ())):
            # a package run on the way passes on a change to itself, not to what it imports
            if (dependent, node) in graph.shallow and parent[node] is not None:
                continue
            taken = graph.names.get((dependent, node))
            if parent[node] is None and node in altered and taken is not None and not taken & altered[node]:
                continue
            if dependent not in parent:
                parent[dependent] = node
                queue.append(dependent)
    found = {}
    for test in tests:
        if test not in parent:
            continue
        chain, node = [], test
        while parent[node] is not None:
            step = parent[node]
            label = graph.label.get((node, step))
            note = seeds[step] if parent[step] is None else ''
            chain.append(f"{step}{':' + label if label else ''}{note}")
            node = step
        found[test] = tuple(chain) if chain else (f'{test}{seeds[test]}',)
    return found


def select(workspace: Workspace, changed: Iterable[str],
           altered: Mapping[str, frozenset[str]] | None = None) -> Selection:
    """The test files that depend on the changed paths (repository-relative), each with its reason chain; `altered`
    confines the change of some paths to module-level names (`ChangeSet.altered_names`), whose importers of other
    names it then does not reach."""
    graph, config = workspace.graph, workspace.config
    changed = sorted(set(changed))
    altered = altered or {}
    tests = set(test_files_of(graph.index, config))
    full_reason = next((f'{path} (full suite: {kind})' for path in changed
                        for kind, matches in (('packaging or CI', _matches(path, config.full_suite_paths)),
                                              ('global path', _matches_segments(path, config.global_paths)))
                        if matches), None)
    if full_reason:
        return Selection(tuple(changed), tuple(SelectedTest(t, (full_reason,)) for t in sorted(tests)), full_suite=True)

    seeds_of = {path: change_seeds(path, graph, config) for path in changed}
    seeds = {seed: reason for path_seeds in seeds_of.values() for seed, reason in path_seeds.items()}
    chains = _chains(graph, seeds, tests, altered)
    for path in altered:
        if path.endswith('/__init__.py') and path in seeds_of and not _chains(graph, seeds_of[path], tests, altered):
            # no test takes an altered name, yet every importer runs the `__init__`: the nearest one shows whether it
            # still imports
            reaching = _chains(graph, seeds_of[path], tests)
            if reaching:
                nearest = min(reaching, key=lambda test: (len(reaching[test]), test))
                chains.setdefault(nearest, (*reaching[nearest][:-1], f'{reaching[nearest][-1]} (runs it on the way)'))
    selected = tuple(SelectedTest(test, chains[test]) for test in sorted(chains))
    unselected = tuple(path for path in changed if path.endswith('.py') and config.is_source(path)
                       and not _chains(graph, seeds_of[path], tests, {} if path.endswith('/__init__.py') else altered))
    return Selection(tuple(changed), selected, unselected=unselected)


def select_change(workspace: Workspace, change: ChangeSet) -> Selection:
    """`select` for the paths of `change`, a file confined to the module-level names its change alters where no other
    name of it can notice the change (`confined_names`)."""
    altered = {file.path: names for file in change.files
               if (names := confined_names(file, workspace.graph)) is not None}
    return select(workspace, change.paths, altered)


def confined_names(file: ChangedFile, graph: Graph) -> frozenset[str] | None:
    """The names a file's change is confined to, for selection; None when the whole file counts.

    A package `__init__.py` is run on the way by every importer of its package, so a new re-export would otherwise
    select them all; a module that only gains new functions changes nothing its other names do until something calls
    them; a module that only rebinds constants (`BT = 64` to `BT = 128`) changes the names that read them, in the
    module or through an import, and no other. Any other change of a module counts whole, a change of its comments
    too, as upstream's selector assumes: a module's names share its state, which a function may change for all of them.
    """
    if file.path.endswith('/__init__.py'):
        names = file.altered_names
        return names if names is not None and not _imports_code(file, graph) else None
    # the cheap tests first: most changes add no function and rebind no constant, and comparing definitions costs more
    if file.rebound_constants:
        return file.altered_names
    if not file.new_functions:
        return None
    names = file.altered_names
    return names if names and names <= file.new_functions else None


def _imports_code(file: ChangedFile, graph: Graph) -> bool:
    """Whether a package `__init__`'s change starts or stops importing, at import time, a module that does more than
    define names (`from . import _patch`, a package that registers models): that acts on every importer."""
    if file.trees is None:
        return True
    imported = [imported_at_import(file.path, tree, graph) for tree in file.trees]
    return any(graph.index[graph.by_module[module]].get('runs_code', True) for module in imported[0] ^ imported[1])


def imported_at_import(path: str, tree: ast.Module, graph: Graph) -> set[str]:
    """The repository's modules that module-level statements of `tree` import (submodules named by `from` too)."""
    modules, statements = set(), list(tree.body)
    while statements:
        statement = statements.pop()
        if isinstance(statement, ast.Import):
            modules.update(alias.name for alias in statement.names)
        elif isinstance(statement, ast.ImportFrom):
            module = imported_module(_package(path), statement)
            modules.update([module, *(f'{module}.{alias.name}' for alias in statement.names)])
        elif isinstance(statement, (ast.If, ast.Try)):
            statements += [*statement.body, *statement.orelse, *getattr(statement, 'finalbody', []),
                           *(inner for handler in getattr(statement, 'handlers', []) for inner in handler.body)]
    return {module for module in modules if module in graph.by_module}


def dependency_chains(graph: Graph, sources: Iterable[str], targets: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each of `targets` that imports one of `sources`, directly or not, its shortest chain back to that source."""
    seeds = {source: '' for source in sources if source in graph.index}
    return _chains(graph, seeds, set(targets) - set(seeds))


def change_seeds(path: str, graph: Graph, config: Config) -> dict[str, str]:
    """The indexed files a changed path affects directly, each with a note on how (empty for the path itself)."""
    seeds = {path: ''} if path in graph.index else {}
    if path not in graph.index and path.endswith('.py'):
        # deleted or not indexed: whatever imported it is affected
        for importer in graph.importers.get(module_name(path), ()):
            seeds[importer] = f' (imports {path})'
    for pattern, readers in config.data_files.items():
        if fnmatch.fnmatchcase(path, pattern):
            seeds.update({reader: f' (reads {path})' for reader in readers if reader in graph.index})
    return seeds


def expand_paths(root: Path, cwd: Path, arguments: Iterable[str]) -> list[str]:
    """Repository-relative files for command-line paths (files or directories, relative to `cwd`)."""
    files = []
    for argument in arguments:
        target = (cwd / argument).resolve()
        try:
            relative = target.relative_to(root.resolve())
        except ValueError:
            raise MrbotError(f'{argument}: outside the repository {root}') from None
        if target.is_dir():
            files.extend(p.relative_to(root.resolve()).as_posix() for p in sorted(target.rglob('*'))
                         if p.is_file() and '__pycache__' not in p.parts)
        else:
            # a path that no longer exists still names what imported it
            files.append(relative.as_posix())
    return files


def format_selection(selection: Selection, fmt: str) -> str:
    if fmt == 'json':
        return json.dumps(selection.to_json(), indent=2) + '\n'
    lines = []
    if selection.full_suite:
        lines.append(f'full suite: {selection.tests[0].because[0] if selection.tests else "no tests found"}')
    for test in selection.tests:
        lines.append(test.test if selection.full_suite else f"{test.test} <- {' <- '.join(test.because)}")
    for path in selection.unselected:
        lines.append(f'no test reaches {path}')
    lines.append(f"{plural(len(selection.tests), 'test file')} selected for {plural(len(selection.changed), 'changed file')}")
    return '\n'.join(lines) + '\n'
