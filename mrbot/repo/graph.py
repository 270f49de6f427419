# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The import graph: which of the repository's files each file depends on, built from the import index.

A name imported from a package (`from fla import chunk_kda`) is followed through the package's re-exports to the
module that defines it, so an aggregator `__init__.py` links an importer to the names it uses, not to everything it
imports; the `__init__` files run on the way are shallow edges. A plain `import pkg`, a star import and a dynamic
import depend on the whole package, as Python does. `@dispatch('<op>')` links the decorated module to
`<package>.ops.<op>.backends` and to the backends whose classes have a method named like the dispatched function; what
a backend class's methods import is reached through those functions and through whoever imports the class, not
through the registry that only registers it. A test file also depends on every `conftest.py` above it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache, cached_property

from mrbot.config import Config
from mrbot.repo.index import FileFacts, Imported, module_name, test_files_of


def _backends_package(path: str) -> str:
    """`fla/ops/common/backends/npu/__init__.py` -> `fla/ops/common/backends/`."""
    return path[:f'/{path}'.index('/backends/') + len('backends/')]




@dataclass
class Graph:
    """The repository's Python files (`index`, their parsed facts) and what each depends on; `label[(a, b)]` names
    what `a` imports from `b`.

    An edge in `shallow` is a package `__init__.py` that importing runs on the way (`a/__init__.py` for `import a.b`,
    or the package a name was re-exported from): a change to that file reaches the importer, what the `__init__`
    itself imports does not. `names[(a, b)]` are the only module-level names of `b` that `a` takes (by name, or
    through re-exports); an edge without an entry takes the whole module (`import b`, a star or dynamic import).
    """

    index: dict[str, FileFacts] = field(default_factory=dict)
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


def definition_chain(index: dict[str, FileFacts], by_module: dict[str, str], module: str, name: str) -> list[str]:
    """The file of `module`, then each file it re-exports `name` from; the last one defines it (or imports it from
    outside the repository)."""
    chain = [by_module[module]] if module in by_module else []
    while chain:
        source = next((by_module[imported] for imported, names in index[chain[-1]].imports
                       if name in names and imported in by_module), None)
        if source is None or source in chain:
            break
        chain.append(source)
    return chain


def build_graph(index: dict[str, FileFacts], config: Config) -> Graph:
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
        graph.add(path, file, shallow=not index[file].runs_code, names=names)

    def depend(path: str, module: str, label: str, names: Iterable[str] | None, holds_top: bool = False) -> None:
        """`path` uses `module` itself (the `names` of it, None for all): its file, and the packages above it that
        importing it runs on the way (all of each where the importer holds the top package, as `import a.b` does)."""
        target = by_module.get(module)
        for file in module_files(module):
            if file == target:
                graph.add(path, file, label, names=names)
            else:
                on_the_way(path, file, None if holds_top else ())

    def take(path: str, module: str, names: tuple[str, ...], aliased: Iterable[str]) -> None:
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

    dispatched = {name for facts in index.values() for name in facts.dispatched}
    # what the methods of a file's backend classes that dispatch calls by name import: [module, names] by file
    served: dict[str, list[Imported]] = {}
    for path, facts in index.items():
        for module, names in facts.imports:
            graph.importers.setdefault(module, set()).add(path)
            take(path, module, names, facts.aliased)
        for method, imports in facts.method_imports.items():
            for module, names in imports:
                graph.importers.setdefault(module, set()).add(path)
                if method in dispatched or method.removesuffix('_verifier') in dispatched:
                    served.setdefault(path, []).append(Imported(module, names))
                else:
                    # `is_available` and the like run for every dispatched call
                    take(path, module, names, facts.aliased)
        for dynamic in facts.dynamic:
            # importing a module runs the packages above it too
            modules = [module for module in by_module if fnmatch.fnmatchcase(module, dynamic)] if '*' in dynamic else [dynamic]
            for target in dict.fromkeys(target for module in modules for target in module_files(module)):
                graph.add(path, target, 'import_module')

    def serve(path: str, package: str) -> None:
        for server, imports in served.items():
            if _backends_package(server) == package:
                for module, names in imports:
                    take(path, module, names, index[server].aliased)

    # who imports from a backends package (a backend class, or the registry holding them) may call any of their
    # methods; a registry under `backends/` only registers them, and dispatch calls them by name (below)
    for path, targets in list(graph.depends.items()):
        if '/backends/' not in f'/{path}':
            for package in {_backends_package(target) for target in targets
                            if '/backends/' in f'/{target}' and (path, target) not in graph.shallow}:
                serve(path, package)
    for path, facts in index.items():
        for operation, explicit in facts.dispatch:
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
        for method in facts.methods:
            servers.setdefault(method, set()).add(path)
    for path, facts in index.items():
        for function in facts.dispatched:
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


