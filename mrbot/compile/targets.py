# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The NVIDIA targets `mrbot compile` knows, by the name `[tool.mrbot] compile-targets` and `--targets` use."""

from __future__ import annotations

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
