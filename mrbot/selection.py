# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Dependent-test selection: which test files can notice a change, found through the repository's import graph
(`mrbot.repo.graph`).

A test is selected when a changed file is reachable from it; the chain of files that connects them is its reason. A
package `__init__` run on the way passes on a change to itself, not to what it imports. Packaging and configured
global paths select the full suite, and data files select the tests of the modules configured to read them.
"""

from __future__ import annotations

import ast
import fnmatch
import json
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path

from mrbot.config import Config
from mrbot.records import MrbotError
from mrbot.records.change import ChangedFile, ChangeSet
from mrbot.records.testruns import SelectedTest, Selection
from mrbot.repo.graph import Graph
from mrbot.repo.index import imported_module, matches_segments, module_name, package_of, test_files_of
from mrbot.repo.workspace import Workspace
from mrbot.words import plural


def _matches(path: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


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
                                              ('global path', matches_segments(path, config.global_paths)))
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
    return any(graph.index[graph.by_module[module]].runs_code for module in imported[0] ^ imported[1])


def imported_at_import(path: str, tree: ast.Module, graph: Graph) -> set[str]:
    """The repository's modules that module-level statements of `tree` import (submodules named by `from` too)."""
    modules, statements = set(), list(tree.body)
    while statements:
        statement = statements.pop()
        if isinstance(statement, ast.Import):
            modules.update(alias.name for alias in statement.names)
        elif isinstance(statement, ast.ImportFrom):
            module = imported_module(package_of(path), statement)
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
