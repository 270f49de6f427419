# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The compile stage as others call it: the matrix of the kernels a change reaches, and a GPU's Triton cache warmed
with the launches of some tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mrbot.records import MrbotError
from mrbot.records.testruns import Selection
from mrbot.repo.ops import OpSpec
from mrbot.repo.workspace import Workspace
from mrbot.stack import require_kernel_stack, usable_cores
from mrbot.targets import TARGETS, parse_targets
from mrbot.words import plural

if TYPE_CHECKING:
    from mrbot.compile.matrix import CompileMatrix
    from mrbot.testing import Gpu

DEFAULT_TIMEOUT = 900.0


def compile_change(workspace: Workspace, changed: list[str] | None, targets: str | None = None,
                   depth: str = 'auto', jobs: int = 0, timeout: float = DEFAULT_TIMEOUT,
                   quiet: bool = False, home: Path | None = None, selection: Selection | None = None,
                   timed: list[OpSpec] | None = None, gpu_arch: int | None = None) -> CompileMatrix:
    """The matrix of the kernels the `changed` paths reach (None: every kernel); one of no cells when they reach none.
    `home`: the repository whose caches serve, where the workspace is a worktree of it; `selection` and `timed`: the
    change's tests and the ops it times, where the caller has found them already; `gpu_arch`: this machine's GPU,
    which the tests see while their launches are captured where it is the only target.

    `targets` is a comma-separated list (default: `[tool.mrbot] compile-targets`); progress goes to stderr.
    """
    require_kernel_stack('compiling the kernels')
    import triton

    from mrbot.compile.launches import Capture, GpuRun
    from mrbot.compile.matrix import DEPTHS, QUICK, CompileMatrix, build_matrix
    from mrbot.compile.plan import plan_compile

    config = workspace.config
    chosen = parse_targets(targets.split(','), '--targets') if targets else parse_targets(config.compile_targets,
                                                                                             'compile-targets')
    if depth not in (*DEPTHS, 'auto', QUICK):
        raise MrbotError(f"--depth: expected auto, {QUICK}, {', '.join(DEPTHS)}; got {depth!r}")
    if jobs < 0 or timeout <= 0:
        raise MrbotError(f'--jobs must be 0 (all CPUs) or more and --timeout above 0, got {jobs} and {timeout:g}')
    plan = plan_compile(workspace, changed, selection, timed)
    if not plan.kernels:
        return CompileMatrix(chosen, (), Capture((), (), (), (), 0.0), triton.__version__, 0, 0.0)

    def say(line: str) -> None:
        if not quiet:
            print(f'mrbot compile: {line}', file=sys.stderr, flush=True)

    return build_matrix(workspace.root, plan, chosen, depth, jobs or usable_cores(), timeout,
                        config.compile_test_seconds, say, home=home,
                        gpu_run=GpuRun(gpu_arch) if all(target.arch == gpu_arch for target in chosen) else None)


def warm_kernel_cache(workspace: Workspace, tests: list[str], gpu: Gpu | None, dispatch: str) -> str:
    """Compile every kernel launch of `tests` for this machine's `gpu` into Triton's cache, on every core this process
    may use, so that the test processes that follow (in the `dispatch` mode) load binaries instead of each compiling
    its own; the one line that says how ('' without a GPU or anything to compile).

    The launches are captured as `mrbot compile` captures them, but with the GPU in view of the tests, so that those
    skipped where there is none (a GPU-only shape) are compiled too. It only saves time: a launch that does not
    compile here is compiled again, and reported, by the test that makes it, and where the whole step fails the line
    says why and the tests compile what they launch."""
    from mrbot.compile.launches import GpuRun
    from mrbot.compile.matrix import build_matrix
    from mrbot.compile.plan import CompilePlan, declarations, kernels_of
    from mrbot.testing import dispatch_variables

    target = next((t for t in TARGETS.values() if t.arch == gpu.arch), None) if gpu is not None else None
    if target is None or not tests:
        return ''
    jobs = usable_cores()
    try:
        kernels = kernels_of(workspace.graph.index, workspace.config)
        plan = CompilePlan(tuple(kernels), tuple(tests), (), whole=False, declared=declarations(workspace.root, kernels))
        gpu_run = GpuRun(target.arch, tuple(dispatch_variables(dispatch).items()))
        matrix = build_matrix(workspace.root, plan, (target,), 'binary', jobs, DEFAULT_TIMEOUT,
                              workspace.config.compile_test_seconds, gpu_run=gpu_run)
    except Exception as error:  # noqa: BLE001 - a speed-up only: each test compiles what it launches all the same
        return f'kernels not compiled ahead ({type(error).__name__}: {error}); the tests compile them'
    compiled = sum(1 for cell in matrix.cells if cell.result.status == 'ok')
    return (f"{plural(compiled, 'kernel launch', 'kernel launches')} compiled ahead for {target.name} in "
            f'{matrix.seconds:.0f} s ({matrix.capture.seconds:.0f} s of it capturing them), {jobs} at a time')
