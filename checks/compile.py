# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Findings of the compilation matrix: kernels that do not compile, overrun shared memory or spill, for a target.

These rules read the `CompileMatrix` that `mrbot compile` (and `mrbot check`, `mrbot prepare`) built for the change;
they see nothing when no matrix was built. Each finding stands for every specialization that shares it, and names
one of them, the count, and a test or benchmark row that launched it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING

from mrbot.rules import Context, Violation, rule

if TYPE_CHECKING:
    from mrbot.compile.matrix import Cell


def _groups(context: Context, keep: Callable[[Cell], bool], key: Callable[[Cell], Hashable]) -> Iterator[list[Cell]]:
    """The matrix's cells that `keep` selects, grouped by `key` in matrix order."""
    matrix = context.compile_matrix
    if matrix is None:
        return
    groups: dict[Hashable, list[Cell]] = defaultdict(list)
    for cell in matrix.cells:
        if keep(cell):
            groups[key(cell)].append(cell)
    yield from groups.values()


def _of(cells: list[Cell], context: Context, example: Cell | None = None) -> str:
    """`3 of 4 specializations, e.g. K=128, ... (launched by tests/ops/test_x.py::test_y)`: how many of the kernel's
    cells for the same targets `cells` are, and one of them (`example`, else the first)."""
    first = example or cells[0]
    targets = {cell.target for cell in cells}
    total = sum(cell.launch.kernel == first.launch.kernel and cell.launch.path == first.launch.path
                and cell.target in targets for cell in context.compile_matrix.cells)
    origin = f' (launched by {first.launch.origins[0]})' if first.launch.origins else ''
    return f'{len(cells)} of {total} specializations, e.g. {first.launch.describe()}{origin}'


def _targets(cells: list[Cell]) -> str:
    return ' and '.join(dict.fromkeys(cell.target.name for cell in cells))


def _inside(path: str) -> bool:
    return bool(path) and not path.startswith(('/', '..'))


@rule('CMP001', 'Kernel does not compile for a target', 'error',
      'change the kernel until it compiles for every target in [tool.mrbot] compile-targets; `mrbot compile` reruns '
      'only what changed', scope='file')
def does_not_compile(context: Context) -> Iterator[Violation]:
    """Checks that every specialization of every kernel the change reaches compiles, for every configured target, with
    Triton's own compiler for that target; mrbot compiles them on the CPU, so no GPU is needed.

    The specializations are the ones the tests and benchmark rows launch (pointer dtypes, integer widths, compile-time
    values, each autotune config). A finding names the compiler's first line and the source line it points at: a
    type error in the kernel's code (a loop-carried variable that changes type), a pass that fails for one
    architecture, a compiler that aborts (reported with what it printed), or a compile that does not finish within
    `mrbot compile --timeout`. The Triton interpreter, which runs the tests without a GPU, checks none of this. A
    module that declares the targets its kernels are written for (`TARGETS = ('sm_90',)`) is compiled for those only;
    the other targets are not available for it, which is no finding.

    A kernel that does not compile for a GPU fails every test and every user on it, even when all tests passed under
    the interpreter.

    Example: `i_nh, i_hv, _, i_v = program_place(...)` then, inside a loop, `o_chunk, _ = state_block_offsets(...)`:
    `_` is carried by the loop as an int32 and re-assigned a mask.

    Instead: a name of its own for each value (`o_chunk, m_chunk = ...`), so each loop-carried variable keeps its type.
    """
    failed = ('error', 'crashed', 'timeout')
    # one finding per kernel and problem, whatever the shapes in the message and however many targets share it
    for cells in _groups(context, lambda c: c.result.status in failed,
                         lambda c: (c.launch.path, c.launch.kernel, c.result.status, c.result.error_path,
                                    c.result.error_line, re.sub(r'\d+', '#', c.result.error))):
        cell = cells[0]
        result = cell.result
        path, line = (result.error_path, result.error_line) if _inside(result.error_path) else (cell.launch.path,
                                                                                                  cell.launch.line)
        verb = 'did not finish compiling' if result.status == 'timeout' else 'does not compile'
        yield Violation(path, line, f'{cell.launch.kernel} ({cell.launch.path}:{cell.launch.line}) {verb} for '
                                    f'{_targets(cells)} with Triton {context.compile_matrix.triton}: {result.error}; '
                                    f'{_of(cells, context)}')


@rule('CMP002', "Shared memory over the target's per-block limit", 'error',
      'shrink the blocks or the pipelining stages for this target, or prune the autotune configs that cannot fit '
      "(an early_config_prune that reads the target's limit)", scope='file')
def shared_memory_over_limit(context: Context) -> Iterator[Violation]:
    """Checks that no specialization of a kernel the change reaches asks for more shared memory per block than the
    target allows (227 KiB on sm_90 and sm_100, 99 KiB on sm_86, sm_89 and sm_120), autotune configs included.

    The figure is the one Triton's compiler allocates for that target, the one the GPU compares with its limit at the
    first launch.

    On the GPU the launch fails with `OutOfResources: shared memory`; inside an autotuner the config is dropped while
    timing, so the search space is silently smaller than the one written down, or every config fails and so does the
    op. A config that cannot fit is a finding even when others fit.

    Example: a state pass with `BK = 128, BV = 64` in float32 and `num_stages=3` at K = V = 128.

    Instead: choose the blocks from the head size and the target's budget (smaller `BV`, fewer stages), and keep only
    the autotune configs that fit.
    """
    for cells in _groups(context, lambda c: c.over_shared_limit, lambda c: (c.launch.path, c.launch.kernel,
                                                                             c.target.name)):
        worst = max(cells, key=lambda c: c.result.shared or 0)
        yield Violation(cells[0].launch.path, cells[0].launch.line,
                        f'{worst.launch.kernel} asks for {worst.result.shared:,} bytes of shared memory per block on '
                        f'{worst.target.name}, over its {worst.target.shared_limit:,}: {_of(cells, context, worst)}')


@rule('CMP003', 'Register spills', 'note',
      'look at the spilling specialization with a profiler: fewer live values (smaller blocks, fewer stages), or '
      'more warps, usually remove the spills', scope='file')
def register_spills(context: Context) -> Iterator[Violation]:
    """Reports specializations whose registers spill to local memory, as ptxas counts them for the target.

    Only the cells compiled through ptxas have the figure: by default the benchmarked launches on the first target;
    `mrbot compile --depth sass` compiles every cell that far.

    A spill stores a register to local memory and loads it back, a memory round trip inside the kernel's loop; it is
    often what keeps a kernel from its roofline. It is a note, to look at, not an error.

    Example: a `[64, 128]` float32 block per warp group plus its pipelined copies in a kernel with 4 warps.

    Instead: smaller blocks per program, or `num_warps=8`, and check the spill count again.
    """
    for cells in _groups(context, lambda c: bool(c.result.spills), lambda c: (c.launch.path, c.launch.kernel,
                                                                               c.target.name)):
        worst = max(cells, key=lambda c: c.result.spills or 0)
        yield Violation(worst.launch.path, worst.launch.line,
                        f'{worst.launch.kernel} spills {worst.result.spills:,} bytes (stores and loads) on '
                        f'{worst.target.name} with {worst.result.registers} registers per thread, at '
                        f'{worst.launch.describe()}; {len(cells)} of the specializations compiled through ptxas spill')


@rule('CMP004', 'Kernel that no test or benchmark launches', 'warning',
      'add a test (or a benchmark shape) that calls the op this kernel serves', scope='file')
def not_launched(context: Context) -> Iterator[Violation]:
    """Reports kernels of the files the change reaches that none of the captured tests and benchmark rows launched,
    so that nothing compiled them.

    mrbot compiles the specializations that code actually launches. A kernel no test launches is compiled by no one
    before it reaches a GPU, and tested by no one either.

    Example: a new backward kernel whose op's tests never call `.backward()`.

    Instead: a test that runs the path through the kernel.
    """
    matrix = context.compile_matrix
    for kernel in matrix.unlaunched if matrix is not None else ():
        yield Violation(kernel.path, kernel.line, f'{kernel.name} was launched by none of the tests and benchmark rows '
                                                  'that reach it, so it was not compiled')
