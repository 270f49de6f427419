# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Which kernels a change reaches, and what must run to see them launched: the tests and benchmark rows to capture.

A kernel is a `@triton.jit` function that no other JIT function calls (those are device helpers, compiled into their
callers). A change reaches the kernels of every file it changes and of every file that imports a changed file,
directly or not, through the import graph of `mrbot.repo.graph`; a change to packaging or to a configured global path
reaches them all. The launches come from the tests that selection picks for the change and from the benchmark rows
of the ops whose code it changes. A kernel module may declare the only targets its kernels are written for
(`TARGETS = ('sm_90',)`, see `mrbot/targets.py`); the plan carries those declarations.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mrbot.bench.specs import touched_ops
from mrbot.compile.launches import bench_rows
from mrbot.config import Config
from mrbot.records.compiles import Kernel
from mrbot.records.testruns import Selection
from mrbot.repo.graph import Graph
from mrbot.repo.index import FileFacts, test_files_of
from mrbot.repo.ops import OpSpec
from mrbot.repo.workspace import Workspace
from mrbot.selection import dependency_chains, select
from mrbot.targets import DECLARATION, declared_targets


@dataclass(frozen=True)
class CompilePlan:
    """The kernels to compile, what to run to capture their launches, and the targets each kernel file that declares
    them is written for (`(path, ('sm_90',))`)."""

    kernels: tuple[Kernel, ...]
    tests: tuple[str, ...]
    rows: tuple[dict, ...]
    whole: bool
    declared: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # each kernel file with the repository's files it imports, directly or not: whose jit functions its kernels may call
    imports: tuple[tuple[str, frozenset[str]], ...] = ()

    @property
    def files(self) -> frozenset[str]:
        return frozenset(kernel.path for kernel in self.kernels)


def kernels_of(index: dict[str, FileFacts], config: Config) -> list[Kernel]:
    """Every launchable kernel under the source roots, in file order."""
    helpers = {called for facts in index.values() for _, _, calls in facts.kernels for called in calls}
    return [Kernel(path, name, line) for path, facts in sorted(index.items()) if config.is_source(path)
            for name, line, _ in facts.kernels if name not in helpers]


def plan_compile(workspace: Workspace, changed: list[str] | None, selection: Selection | None = None,
                 timed: list[OpSpec] | None = None) -> CompilePlan:
    """What `mrbot compile` does for the `changed` paths (repository-relative), or for the whole repository (None);
    `selection` and `timed`: the change's tests and the ops it times, where a caller has found them already."""
    graph, config = workspace.graph, workspace.config
    kernels = kernels_of(graph.index, config)
    if changed is None:
        tests = _launching(graph, kernels, test_files_of(graph.index, config))
        return CompilePlan(tuple(kernels), tests, tuple(bench_rows(workspace.specs)), whole=True,
                           declared=declarations(workspace.root, kernels), imports=_imports(graph, kernels))
    selection = selection or select(workspace, changed)
    if selection.full_suite:
        reached = {kernel.path for kernel in kernels}
    else:
        files = {kernel.path for kernel in kernels}
        reached = (files & set(changed)) | set(dependency_chains(graph, changed, files))
    kernels = [kernel for kernel in kernels if kernel.path in reached]
    if not kernels:
        return CompilePlan((), (), (), whole=False)
    rows = bench_rows(touched_ops(workspace, changed, gates=False) if timed is None else timed)
    tests = _launching(graph, kernels, [t.test for t in selection.tests])
    return CompilePlan(tuple(kernels), tests, tuple(rows), whole=False, declared=declarations(workspace.root, kernels),
                       imports=_imports(graph, kernels))


def _imports(graph: Graph, kernels: list[Kernel]) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each kernel file with every repository file it imports, directly or not, itself included."""
    found = []
    for path in sorted({kernel.path for kernel in kernels}):
        reached, todo = {path}, [path]
        while todo:
            for target in graph.depends.get(todo.pop(), ()):
                if target not in reached:
                    reached.add(target)
                    todo.append(target)
        found.append((path, frozenset(reached)))
    return tuple(found)


def declarations(root: Path, kernels: list[Kernel]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`(path, targets)` of each file of `kernels` that declares the targets it is written for, in path order."""
    found = []
    for path in sorted({kernel.path for kernel in kernels}):
        try:
            text = (root / path).read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError):
            continue
        targets = declared_targets(text, path) if DECLARATION in text else None
        if targets is not None:
            found.append((path, targets))
    return tuple(found)


def _launching(graph: Graph, kernels: list[Kernel], tests: list[str]) -> tuple[str, ...]:
    """The test files that import a file of `kernels`, directly or not: the others cannot launch them."""
    reaching = dependency_chains(graph, {kernel.path for kernel in kernels}, tests)
    return tuple(test for test in tests if test in reaching)
