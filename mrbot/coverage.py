# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Which coverage axes of an op its tests exercise: a pytest plugin that watches the op's calls, and the matrix.

The axes are those of a kernel change's correctness coverage (dense and varlen, forward and backward, initial and final
state, K != V, grouped value heads, the gate and beta modes, in-kernel L2 norm) that the op's signature supports. As a
pytest plugin, switched on by MRBOT_COVERAGE_OPS and MRBOT_COVERAGE_DIR, this module replaces each op, before the first
test module is imported, by a wrapper that records which axes every call hits and whether a gradient flowed back
through its outputs; only tests that pass count. It imports only the standard library (`mrbot prepare` loads a copy
of it by file, see there), and nothing from the tested repository until the first test module.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OPS_VARIABLE = 'MRBOT_COVERAGE_OPS'
DIR_VARIABLE = 'MRBOT_COVERAGE_DIR'


@dataclass(frozen=True)
class Axis:
    """One row of the matrix: the parameters that make it apply to an op, and how a call shows it was hit."""

    name: str
    needs: tuple[str, ...]
    hit: Callable[[dict[str, Any]], bool]
    # Applies only when the op's docstring mentions this (what the signature cannot show, e.g. grouped value heads).
    documented: str = ''


def _dim(value: Any, index: int) -> int | None:
    shape = getattr(value, 'shape', None)
    return shape[index] if shape is not None and len(shape) >= abs(index) else None


AXES = (
    Axis('dense', ('cu_seqlens',), lambda a: a['cu_seqlens'] is None),
    Axis('varlen (cu_seqlens)', ('cu_seqlens',), lambda a: a['cu_seqlens'] is not None),
    Axis('forward', (), lambda a: True),
    Axis('backward', (), lambda a: False),
    Axis('initial state', ('initial_state',), lambda a: a['initial_state'] is not None),
    Axis('final state', ('output_final_state',), lambda a: bool(a['output_final_state'])),
    Axis('K != V', ('k', 'v'), lambda a: _dim(a['k'], -1) != _dim(a['v'], -1)),
    Axis('grouped values (HV > H)', ('q', 'v'), lambda a: (_dim(a['v'], -2) or 0) > (_dim(a['q'], -2) or 0), 'HV'),
    Axis('pre-gated g', ('use_gate_in_kernel',), lambda a: not a['use_gate_in_kernel']),
    Axis('in-kernel gate', ('use_gate_in_kernel', 'safe_gate'), lambda a: a['use_gate_in_kernel'] and not a['safe_gate']),
    Axis('safe gate', ('safe_gate',), lambda a: bool(a['safe_gate'])),
    Axis('raw beta (sigmoid in kernel)', ('use_beta_sigmoid_in_kernel',), lambda a: bool(a['use_beta_sigmoid_in_kernel'])),
    Axis('post-sigmoid beta', ('use_beta_sigmoid_in_kernel',), lambda a: not a['use_beta_sigmoid_in_kernel']),
    Axis('q/k L2 norm in kernel', ('use_qk_l2norm_in_kernel',), lambda a: bool(a['use_qk_l2norm_in_kernel'])),
    Axis('no q/k L2 norm', ('use_qk_l2norm_in_kernel',), lambda a: not a['use_qk_l2norm_in_kernel']),
)
BACKWARD = 'backward'


def applicable_axes(function: Callable) -> list[str]:
    """The axes `function`'s signature (and docstring, for what a signature cannot show) supports, in matrix order."""
    parameters = inspect.signature(function).parameters
    doc = inspect.getdoc(function) or ''
    return [axis.name for axis in AXES
            if all(p in parameters for p in axis.needs) and (not axis.documented or axis.documented in doc)]


def axes_hit(function: Callable, args: tuple, kwargs: dict) -> set[str]:
    """The axes one call hits, from its arguments with the signature's defaults filled in."""
    bound = inspect.signature(function).bind_partial(*args, **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    names = set(applicable_axes(function))
    return {axis.name for axis in AXES if axis.name in names and axis.name != BACKWARD and axis.hit(arguments)}


@dataclass(frozen=True)
class OpCoverage:
    """One op's column of the matrix: each applicable axis and the passing tests that hit it (none: not covered)."""

    op: str
    axes: tuple[str, ...]
    tests: dict[str, tuple[str, ...]]

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(axis for axis in self.axes if not self.tests.get(axis))

    def to_json(self) -> dict:
        return {'op': self.op, 'axes': list(self.axes), 'tests': {k: list(v) for k, v in self.tests.items()},
                'missing': list(self.missing)}


def read_observations(folder: Path, ops: Iterable[str]) -> list[OpCoverage]:
    """The coverage of each op from what the plugin wrote under `folder` across test processes."""
    axes: dict[str, list[str]] = {}
    hits: dict[str, dict[str, set[str]]] = {op: {} for op in ops}
    for path in sorted(folder.glob('*.jsonl')):
        for line in path.read_text(encoding='utf-8').splitlines():
            record = json.loads(line)
            op = record['op']
            if op not in hits:
                continue
            if 'axes' in record:
                axes[op] = record['axes']
            else:
                for axis in record['hit']:
                    hits[op].setdefault(axis, set()).add(record['test'])
    return [OpCoverage(op, tuple(axes.get(op, ())), {axis: tuple(sorted(tests)) for axis, tests in hits[op].items()})
            for op in hits]


class _Recorder:
    """Per test process: the wrapped ops, the axes each running test hit, and the file the passing ones go to."""

    def __init__(self, ops: dict[str, str], folder: Path) -> None:
        self.ops = ops
        self.out = folder / f'{os.getpid()}.jsonl'
        self.current = ''
        self.pending: dict[tuple[str, str], set[str]] = {}
        self.installed = False

    def write(self, record: dict) -> None:
        with self.out.open('a', encoding='utf-8') as f:
            f.write(json.dumps(record) + '\n')

    def install(self) -> None:
        """Swap every reference to each op in the loaded modules for a recording wrapper."""
        self.installed = True
        for name, path in self.ops.items():
            module_name, _, attribute = path.partition(':')
            original = getattr(importlib.import_module(module_name), attribute)
            self.write({'op': name, 'axes': applicable_axes(original)})
            wrapper = self._wrap(name, original)
            for module in list(sys.modules.values()):
                for key, value in list(getattr(module, '__dict__', {}).items()):
                    if value is original:
                        setattr(module, key, wrapper)

    def _wrap(self, name: str, original: Callable) -> Callable:
        @functools.wraps(original)
        def recording(*args: Any, **kwargs: Any) -> Any:
            axes = axes_hit(original, args, kwargs)
            # a call that raises (a test of bad input) exercises no path of the kernel
            result = original(*args, **kwargs)
            hit = self.pending.setdefault((name, self.current), set())
            hit.update(axes)
            for output in result if isinstance(result, tuple) else (result,):
                if getattr(output, 'requires_grad', False):
                    output.register_hook(lambda grad: hit.add(BACKWARD))
            return result

        return recording

    def finish(self, test: str, passed: bool) -> None:
        for (name, owner), hit in list(self.pending.items()):
            if owner == test:
                del self.pending[(name, owner)]
                if passed and hit:
                    self.write({'op': name, 'test': test, 'hit': sorted(hit)})


# Set in each test process where mrbot asked for coverage; the hooks below do nothing otherwise.
_recorder: _Recorder | None = None


def pytest_configure(config: Any) -> None:
    global _recorder
    if os.environ.get(OPS_VARIABLE) and os.environ.get(DIR_VARIABLE):
        _recorder = _Recorder(json.loads(os.environ[OPS_VARIABLE]), Path(os.environ[DIR_VARIABLE]))


def pytest_collectstart(collector: Any) -> None:
    # the first test module imports the ops; the repository's conftest files have run by then
    if _recorder is not None and not _recorder.installed and collector.__class__.__name__ == 'Module':
        _recorder.install()


def pytest_runtest_setup(item: Any) -> None:
    if _recorder is not None:
        _recorder.current = item.nodeid


def pytest_runtest_logreport(report: Any) -> None:
    if _recorder is not None and (report.when == 'call' or report.failed):
        _recorder.finish(report.nodeid, report.passed and report.when == 'call')
