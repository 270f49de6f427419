# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What compiling the kernels a change reaches found, as the PR body and its checklist read it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kernel:
    """A launchable JIT function: where its `def` is."""

    path: str
    name: str
    line: int


@dataclass(frozen=True)
class KernelTarget:
    """One kernel on one target, over all its specializations: the row entry of the matrix's summary.

    Its verdict is 'error', 'over' (shared memory), 'ok', or 'unavailable' when the kernel's module declares targets
    without this one and none of its cells was compiled.
    """

    cells: int
    failed: int
    over_limit: int
    max_shared: int | None
    shared_limit: int
    # worst spill bytes among the cells ptxas saw; None when none went that far
    max_spills: int | None
    unavailable: int = 0

    @property
    def verdict(self) -> str:
        if self.cells and self.unavailable == self.cells:
            return 'unavailable'
        return 'error' if self.failed else 'over' if self.over_limit else 'ok'

    def to_json(self) -> dict:
        return {'verdict': self.verdict, 'cells': self.cells, 'failed': self.failed, 'over_limit': self.over_limit,
                'max_shared': self.max_shared, 'shared_limit': self.shared_limit, 'max_spills': self.max_spills,
                'unavailable': self.unavailable}


@dataclass(frozen=True)
class KernelCompiles:
    """A kernel's row of the "Compiles for" table: the targets its file is written for (none declared: all) and its
    outcome on each target compiled for, in the run's order of targets."""

    kernel: Kernel
    written_for: tuple[str, ...]
    targets: tuple[tuple[str, KernelTarget], ...]

    @property
    def fails(self) -> bool:
        """Whether it fails to compile or overruns shared memory on some target."""
        return any(target.verdict in ('error', 'over') for _, target in self.targets)

    def to_json(self) -> dict:
        return {'kernel': self.kernel.name, 'path': self.kernel.path, 'line': self.kernel.line,
                'written_for': list(self.written_for), 'targets': {name: t.to_json() for name, t in self.targets}}


@dataclass(frozen=True)
class CompileEvidence:
    """The compile step of `mrbot prepare`: the targets, the kernel files the change reaches, each launched kernel's
    row, and the kernels of those files that nothing launched, which were therefore not compiled."""

    targets: tuple[str, ...]
    reached: tuple[str, ...]
    triton: str
    cells: int
    compiled: int
    seconds: float
    problems: tuple[str, ...]
    kernels: tuple[KernelCompiles, ...]
    unlaunched: tuple[Kernel, ...]

    def to_json(self) -> dict:
        return {'targets': list(self.targets), 'reached': list(self.reached), 'triton': self.triton,
                'cells': self.cells, 'compiled': self.compiled, 'seconds': round(self.seconds, 1),
                'problems': list(self.problems), 'kernels': [k.to_json() for k in self.kernels],
                'unlaunched': [{'kernel': k.name, 'path': k.path, 'line': k.line} for k in self.unlaunched]}
