# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The declared ops (`mrbot.repo.ops`) as the bench stage sees them: which ones a change touches, and the list that
`mrbot bench --list` prints.

A change touches an op when the file that defines the op's function, or anything that file imports, changed, or when
the op's gate test changed.
"""

from __future__ import annotations

from mrbot.repo.graph import Graph, definition_chain, implementation
from mrbot.repo.ops import OpSpec
from mrbot.repo.workspace import Workspace
from mrbot.selection import change_seeds


def touched_ops(workspace: Workspace, changed: list[str], gates: bool = True) -> list[OpSpec]:
    """The ops a change of the `changed` paths (repository-relative) can alter, or, with `gates`, whose gate test it
    changes (which alters what their tests prove, but not their speed).

    An op's implementation is the file that defines its function, found through the re-exports of the callable's
    module, and everything that file reaches in the import graph of `mrbot.repo.graph`, except the package
    `__init__.py` files that importing a submodule merely runs on the way: following those would make every op that
    imports anything under `fla.ops` depend on every op that upstream's `fla/ops/__init__.py` re-exports.
    """
    if not workspace.specs or not changed:
        return []
    graph = workspace.graph
    # a deleted module affects its importers, a data file the modules configured to read it
    affected = {seed for path in changed for seed in change_seeds(path, graph, workspace.config)}
    return [spec for spec in workspace.specs if (gates and spec.gate in changed)
            or affected & _implementation(graph, spec)]


def _implementation(graph: Graph, spec: OpSpec) -> set[str]:
    """The files an op's timing depends on: its re-exports, its defining file, and what that file imports."""
    module, _, attribute = spec.callable.partition(':')
    chain = definition_chain(graph.index, graph.by_module, module, attribute)
    return set(chain) | implementation(graph, chain[-1]) if chain else set()


def format_specs(specs: list[OpSpec]) -> str:
    """What `mrbot bench --list` prints: each op's function, modes, gate, and shapes, the default ones starred."""
    if not specs:
        return 'no benchmarkable ops: declare them in [tool.mrbot.bench.ops.<name>] of pyproject.toml\n'
    lines = []
    for spec in specs:
        lines.append(f'{spec.name}: {spec.callable} ({spec.source})')
        lines.append(f"  modes {', '.join(spec.modes)}; varlen {'yes' if spec.varlen else 'no'}; "
                     f"gate {spec.gate or 'none'}")
        width = max((len(name) for name in spec.shapes), default=0)
        for name, dims in spec.shapes.items():
            default = not spec.default_shapes or name in spec.default_shapes
            sizes = ' '.join(f'{dim}={size}' for dim, size in dims.items())
            lines.append(f"  {'*' if default else ' '} {name:<{width}}  {sizes}")
    lines.append(f"{len(specs)} op{'s' if len(specs) != 1 else ''}; * marks the shapes timed by default")
    return '\n'.join(lines) + '\n'
