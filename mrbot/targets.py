# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The NVIDIA targets `mrbot compile` knows, by the name `[tool.mrbot] compile-targets` and `--targets` use, and the
targets a kernel module declares it is written for."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from mrbot.records import MrbotError


@dataclass(frozen=True)
class Target:
    """An NVIDIA architecture a kernel must compile for, and the most shared memory one block may use on it."""

    name: str
    arch: int
    shared_limit: int


# Opt-in shared memory per block, from CUDA's table of compute capabilities.
TARGETS = {target.name: target for target in (
    Target('sm_80', 80, 166_912), Target('sm_86', 86, 101_376), Target('sm_89', 89, 101_376),
    Target('sm_90', 90, 232_448), Target('sm_100', 100, 232_448), Target('sm_103', 103, 232_448),
    Target('sm_120', 120, 101_376),
)}
DEFAULT_TARGETS = ('sm_90', 'sm_100')
# The module-level name by which a kernel module declares the only targets it is written for.
DECLARATION = 'TARGETS'


def parse_targets(names: Iterable[str], where: str) -> tuple[Target, ...]:
    """Targets by name (`sm_90`), in the order given, each once; an unknown name is one error listing the known."""
    targets = []
    for name in names:
        target = TARGETS.get(name.strip())
        if target is None:
            raise MrbotError(f"{where}: unknown target {name!r}; expected some of {', '.join(TARGETS)}")
        if target not in targets:
            targets.append(target)
    if not targets:
        raise MrbotError(f"{where}: expected at least one target of {', '.join(TARGETS)}")
    return tuple(targets)


def declared_targets(text: str, where: str) -> tuple[str, ...] | None:
    """The targets a kernel module declares it is written for, `TARGETS = ('sm_90',)` at its top level, or None when it
    declares none (it is then written for every target) or does not parse.

    The module is read, not imported: the value must be a literal tuple or list of known target names, and anything
    else is one error naming the file, since a mistyped declaration would silently take targets away.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for statement in tree.body:
        value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, 'target', None)]
        if value is None or not any(isinstance(t, ast.Name) and t.id == DECLARATION for t in targets):
            continue
        names = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
        if names is None or not all(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in names):
            raise MrbotError(f"{where}:{statement.lineno}: {DECLARATION} declares the targets the module's kernels are "
                             f"written for: a tuple of target names such as ('sm_90',), got {ast.unparse(value)}")
        return tuple(t.name for t in parse_targets([n.value for n in names], f'{where}:{statement.lineno}: '
                                                                                f'{DECLARATION}'))
    return None
