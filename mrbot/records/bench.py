# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What `mrbot bench` is asked and what it measured: the request, its flags, the machine, the rows, the gate, the run."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from mrbot.records import MrbotError
from mrbot.records.reading import JsonObject, is_number
from mrbot.records.testruns import TestFailure, check_workers

BENCH_MODES = ('fwd', 'fwdbwd')
BENCH_DISPATCH = ('off', 'on')
# Variables mrbot itself sets around the gate and the timed sides; `--dispatch` and the device choose them, not `--env`.
RESERVED_VARIABLES = ('FLA_DISABLE_BACKEND_DISPATCH', 'TRITON_INTERPRET', 'TRITON_CACHE_DIR', 'PYTHONPATH')
_VARIABLE = re.compile(r'[A-Za-z_][A-Za-z0-9_]{0,127}')


def parse_environment(assignments: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`--env NAME=VALUE` options as (name, value) pairs, refused when a name is malformed, reserved or given twice."""
    pairs: dict[str, str] = {}
    for assignment in assignments:
        name, equals, value = assignment.partition('=')
        if not equals or not _VARIABLE.fullmatch(name):
            raise MrbotError(f'--env {ascii(assignment[:80])}: expected NAME=VALUE with NAME a variable name')
        if name in RESERVED_VARIABLES or name.startswith('MRBOT_'):
            raise MrbotError(f'--env {name}: mrbot sets this variable itself (use --dispatch for backend dispatch)')
        if len(value) > 1000 or any(not character.isprintable() for character in value):
            raise MrbotError(f'--env {name}: expected a printable value of at most 1000 characters')
        if name in pairs:
            raise MrbotError(f'--env {name}: given twice')
        pairs[name] = value
    return tuple(sorted(pairs.items()))
# A paired comparison's confidence interval needs this many rounds (mrbot.bench.stats.MIN_ROUNDS).
PAIRED_MIN_ROUNDS = 3


def check_min_effect(value: float) -> None:
    """The smallest change a verdict may call faster or slower is a share of the time, below all of it."""
    if not 0 <= value < 1:
        raise MrbotError(f'--min-effect must be at least 0 and below 1 (a share of the time), got {value:g}')


@dataclass(frozen=True)
class BenchRequest:
    """What `mrbot bench` is asked to time, however it was asked: its command line, `mrbot prepare`, a `/bench`
    comment. Checked when made, so a bad value is refused before any worktree, gate or worker starts.

    `ops` empty means every declared op (or, with `from_diff`, those the change from `base` touches); `shapes` empty
    means each op's default shapes. `command` is the command line recorded with the numbers, to reproduce them.
    """

    ops: tuple[str, ...] = ()
    from_diff: bool = False
    base: str | None = None
    aa: bool = False
    modes: tuple[str, ...] = BENCH_MODES
    shapes: tuple[str, ...] = ()
    rounds: int = 10
    min_effect: float = 0.02
    eager: bool = False
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    dispatch: str = 'off'
    # extra variables for the gate and both timed sides, e.g. a backend's switch: (('FLA_SIMPLE_GLA_GLUON', '1'),)
    environment: tuple[tuple[str, str], ...] = ()
    gate: bool = True
    gate_k: str | None = None
    gate_workers: int = 0
    gate_timeout: float = 1800.0
    ncu: str | None = None
    command: tuple[str, ...] = ()

    @property
    def paired(self) -> bool:
        return self.base is not None or self.aa

    def __post_init__(self) -> None:
        least = PAIRED_MIN_ROUNDS if self.paired else 1
        if self.rounds < least:
            why = ' with --base or --aa (a confidence interval needs them)' if self.paired else ''
            raise MrbotError(f'--rounds must be at least {least}{why}, got {self.rounds}')
        check_min_effect(self.min_effect)
        if not (math.isfinite(self.warmup_ms) and self.warmup_ms >= 0):
            raise MrbotError(f'--warmup-ms must be 0 or more, got {self.warmup_ms:g}')
        if not (math.isfinite(self.rep_ms) and self.rep_ms > 0):
            raise MrbotError(f'--rep-ms must be above 0, got {self.rep_ms:g}')
        check_workers(self.gate_workers, '--gate-workers')
        if not self.gate_timeout > 0:
            raise MrbotError(f'--gate-timeout must be above 0 seconds, got {self.gate_timeout:g}')
        unknown = [mode for mode in self.modes if mode not in BENCH_MODES]
        if unknown:
            raise MrbotError(f"--modes {' '.join(unknown)}: expected one or more of {', '.join(BENCH_MODES)}")
        if not self.modes:
            raise MrbotError(f"no mode to time: expected one or more of {', '.join(BENCH_MODES)}")
        if self.dispatch not in BENCH_DISPATCH:
            raise MrbotError(f"--dispatch {self.dispatch}: expected one of {', '.join(BENCH_DISPATCH)}")
        if self.from_diff and not self.ops and self.base is None:
            raise MrbotError('--from-diff needs --base REF to know the change')


@dataclass(frozen=True)
class Revision:
    """One side of a bench run: the ref as given, its commit, and whether uncommitted changes were timed with it."""

    ref: str
    sha: str | None
    dirty: bool = False

    def to_json(self) -> dict:
        return {'ref': self.ref, 'sha': self.sha, 'dirty': self.dirty}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Revision:
        return cls(fields.text('ref'), fields.optional_text('sha'), fields.flag('dirty', False))


# Where a machine's clocks and driver were read: `sm_clock_start`, `temperature_c_end`, ...
_READ_AT = ('_start', '_end')


@dataclass(frozen=True)
class Machine:
    """What a benchmark number is evidence of: the GPU (or 'cpu'), its class, the software, the clocks at start and
    end, the measured ceilings and the command line. `evidence` is False under the Triton interpreter."""

    gpu: str
    capability: str
    hardware_class: str
    torch: str
    triton: str
    cuda: str | None = None
    python: str = ''
    driver: str = '-'
    multiprocessors: int | None = None
    dispatch: bool = False
    interpreter: bool = False
    evidence: bool = False
    readings: dict[str, str] = field(default_factory=dict)
    ceilings: dict[str, float] | None = None
    command: tuple[str, ...] = ()

    def to_json(self) -> dict:
        out = {'torch': self.torch, 'triton': self.triton, 'cuda': self.cuda, 'python': self.python,
               'dispatch': self.dispatch, 'interpreter': self.interpreter, 'gpu': self.gpu,
               'capability': self.capability}
        if self.multiprocessors is not None:
            out['multiprocessors'] = self.multiprocessors
        return {**out, **self.readings, 'driver': self.driver, 'class': self.hardware_class, 'ceilings': self.ceilings,
                'command': list(self.command), 'evidence': self.evidence}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Machine:
        readings = {key: fields.text(key) for key in fields.data if key.endswith(_READ_AT)}
        ceilings = fields.optional_numbers('ceilings')
        return cls(gpu=fields.text('gpu'), capability=fields.text('capability'),
                   hardware_class=fields.text('class', '-'), torch=fields.text('torch'), triton=fields.text('triton'),
                   cuda=fields.optional_text('cuda'), python=fields.text('python', ''), driver=fields.text('driver', '-'),
                   multiprocessors=fields.optional_integer('multiprocessors'),
                   dispatch=fields.flag('dispatch', False), interpreter=fields.flag('interpreter', False),
                   evidence=fields.flag('evidence', False), readings=readings, ceilings=ceilings,
                   command=fields.texts('command', ()))

    @property
    def name(self) -> str:
        """The GPU as a reader compares two runs by: `NVIDIA H100 80GB HBM3 (sm_90)`, `cpu`."""
        return f'{self.gpu} ({self.capability})' if self.capability else self.gpu


@dataclass(frozen=True)
class Shape:
    """A benchmark shape: its name and its dimensions (`{'name': 'small', 'B': 4, 'D': 8}` in JSON)."""

    name: str
    dims: dict[str, int | float | str]

    def to_json(self) -> dict:
        return {'name': self.name, **self.dims}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Shape:
        dims = {}
        for key, value in fields.data.items():
            if key != 'name':
                if not (is_number(value) or isinstance(value, str)):
                    raise fields.error(fields.at(key), 'a number or a string (a dimension)', value)
                dims[key] = value
        return cls(fields.text('name'), dims)


def bench_row_key(op: str, mode: str, shape: Shape) -> str:
    """What the rows of two runs are matched on: op, mode and every shape key."""
    return f'{op}|{mode}|{json.dumps(shape.to_json(), sort_keys=True)}'


# Throughput figures a row may carry: achieved rates and their share of the device's measured ceilings.
THROUGHPUT = ('tbs', 'tflops', 'tbs_of_ceiling', 'tflops_of_ceiling')
VERDICTS = ('faster', 'slower', 'same', 'noisy', 'gate-failed')


@dataclass(frozen=True)
class BenchRow:
    """One op x mode x shape of a bench run. `samples_ms` are one median per round of the timed side (the head in a
    paired run); a paired row adds the base's, the ratio head/base with its 95% interval, and a verdict."""

    op: str
    mode: str
    shape: Shape
    samples_ms: tuple[float, ...]
    median_ms: float = 0.0
    eager_median_ms: float = 0.0
    launch_overhead_ms: float = 0.0
    timing: str = 'none'
    throughput: dict[str, float] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    evidence: bool = False
    base_ms: tuple[float, ...] | None = None
    base_median_ms: float | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: str | None = None
    aa_noise: float | None = None

    @property
    def key(self) -> str:
        return bench_row_key(self.op, self.mode, self.shape)

    def to_json(self) -> dict:
        out = {'op': self.op, 'mode': self.mode, 'shape': self.shape.to_json()}
        if self.base_ms is None:
            out['samples_ms'] = list(self.samples_ms)
        out.update(median_ms=self.median_ms, eager_median_ms=self.eager_median_ms,
                   launch_overhead_ms=self.launch_overhead_ms, timing=self.timing, **self.throughput,
                   flags=list(self.flags), evidence=self.evidence)
        if self.base_ms is not None:
            out.update(base_ms=list(self.base_ms), head_ms=list(self.samples_ms), base_median_ms=self.base_median_ms,
                       head_median_ms=self.median_ms)
            if self.ratio is not None:
                out.update(ratio=self.ratio, ci_low=self.ci_low, ci_high=self.ci_high)
            if self.verdict is not None:
                out['verdict'] = self.verdict
            if self.aa_noise is not None:
                out['aa_noise'] = self.aa_noise
        return out

    @classmethod
    def from_json(cls, fields: JsonObject, paired: bool) -> BenchRow:
        samples = fields.times('head_ms' if paired else 'samples_ms')
        throughput = {key: fields.number(key) for key in THROUGHPUT if key in fields.data}
        row = cls(op=fields.text('op'), mode=fields.text('mode'), shape=Shape.from_json(fields.object('shape')),
                  samples_ms=samples, median_ms=fields.number('median_ms', 0.0),
                  eager_median_ms=fields.number('eager_median_ms', 0.0),
                  launch_overhead_ms=fields.number('launch_overhead_ms', 0.0), timing=fields.text('timing', 'none'),
                  throughput=throughput, flags=fields.texts('flags', ()), evidence=fields.flag('evidence', False))
        if not paired:
            return row
        return replace(row, base_ms=fields.times('base_ms'), base_median_ms=fields.number('base_median_ms', 0.0),
                       ratio=fields.optional_number('ratio'), ci_low=fields.optional_number('ci_low'),
                       ci_high=fields.optional_number('ci_high'), verdict=fields.choice('verdict', VERDICTS, None),
                       aa_noise=fields.optional_number('aa_noise'))


GATE_STATUSES = ('passed', 'failed', 'skipped')


@dataclass(frozen=True)
class Gate:
    """The correctness gate of a bench run: the ops' test files on the head, and whether the change left them and the
    naive references alone (`frozen_ok`). `seconds` is None when the gate did not run."""

    status: str
    test_files: tuple[str, ...] = ()
    frozen_ok: bool = True
    partial: bool = False
    changed_contract: tuple[str, ...] = ()
    seconds: float | None = None
    pytest_args: tuple[str, ...] = ()
    reused: tuple[str, ...] = ()
    failures: tuple[TestFailure, ...] = ()
    # the device label of the machine it ran on ('' where it did not run)
    device: str = ''

    def to_json(self) -> dict:
        out = {'test_files': list(self.test_files), 'frozen_ok': self.frozen_ok, 'partial': self.partial,
               'changed_contract': list(self.changed_contract), 'status': self.status}
        if self.seconds is not None:
            out.update(seconds=self.seconds, pytest_args=list(self.pytest_args), reused=list(self.reused),
                       failures=[f.to_json() for f in self.failures])
        if self.device:
            out['device'] = self.device
        return out

    @classmethod
    def from_json(cls, fields: JsonObject) -> Gate:
        return cls(status=fields.choice('status', GATE_STATUSES), test_files=fields.texts('test_files', ()),
                   frozen_ok=fields.flag('frozen_ok', True), partial=fields.flag('partial', False),
                   changed_contract=fields.texts('changed_contract', ()), seconds=fields.optional_number('seconds'),
                   pytest_args=fields.texts('pytest_args', ()), reused=fields.texts('reused', ()),
                   failures=_read_gate_failures(fields), device=fields.text('device', ''))


def _read_gate_failures(fields: JsonObject) -> tuple[TestFailure, ...]:
    """The gate's failing tests with their errors; a record written before the errors were kept names the tests only."""
    # the first entry tells the form; an entry of the other form is then one error naming it
    if isinstance(next(iter(fields.sequence('failures', [])), None), str):
        return tuple(TestFailure(test, '') for test in fields.texts('failures', ()))
    return tuple(TestFailure(f.text('test'), f.text('message', '')) for f in fields.objects('failures', []))


@dataclass(frozen=True)
class Statistics:
    """How a paired run's verdicts were reached: the minimum effect, the correction across rows, the runner's noise."""

    min_effect: float
    correction: str
    runner_profile: str | None = None

    def to_json(self) -> dict:
        return {'min_effect': self.min_effect, 'correction': self.correction, 'runner_profile': self.runner_profile}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Statistics:
        return cls(fields.number('min_effect'), fields.text('correction'), fields.optional_text('runner_profile'))


BENCH_SCHEMA = 1


@dataclass(frozen=True)
class BenchRun:
    """The record of `mrbot bench`: a paired run (`base` and `head`, with verdicts) or a single-ref run (`ref`), the
    machine it ran on, one row per op x mode x shape, and the gate. `interrupted` says Ctrl-C stopped it after
    `rounds` rounds."""

    machine: Machine
    rows: tuple[BenchRow, ...]
    gate: Gate
    rounds: int = 0
    interrupted: bool = False
    dtypes: dict[str, dict[str, str]] = field(default_factory=dict)
    ref: Revision | None = None
    base: Revision | None = None
    head: Revision | None = None
    statistics: Statistics | None = None
    ncu: dict | None = None

    @property
    def paired(self) -> bool:
        return self.base is not None

    def to_json(self) -> dict:
        out = {'schema': BENCH_SCHEMA, 'machine': self.machine.to_json(), 'rounds': self.rounds,
               'interrupted': self.interrupted, 'dtypes': self.dtypes}
        if self.paired:
            out.update(base=self.base.to_json(), head=self.head.to_json())
            if self.statistics is not None:
                out['statistics'] = self.statistics.to_json()
        else:
            out['ref'] = self.ref.to_json()
        out['gate'] = self.gate.to_json()
        if self.ncu is not None:
            out['ncu'] = self.ncu
        out['rows'] = [row.to_json() for row in self.rows]
        return out

    @classmethod
    def from_json(cls, fields: JsonObject) -> BenchRun:
        fields.schema(BENCH_SCHEMA, 'a record of this mrbot bench')
        paired = 'base' in fields.data
        dtypes = fields.mapping('dtypes', {})
        for op, inputs in dtypes.items():
            if not isinstance(inputs, dict) or not all(isinstance(v, str) for v in inputs.values()):
                raise fields.error(f"{fields.at('dtypes')}.{op}", 'an object of input name to dtype', inputs)
        statistics = fields.optional_object('statistics')
        return cls(machine=Machine.from_json(fields.object('machine')),
                   rows=tuple(BenchRow.from_json(row, paired) for row in fields.objects('rows')),
                   gate=Gate.from_json(fields.object('gate')) if 'gate' in fields.data else Gate('skipped'),
                   rounds=fields.integer('rounds', 0), interrupted=fields.flag('interrupted', False), dtypes=dtypes,
                   ref=None if paired else Revision.from_json(fields.object('ref')),
                   base=Revision.from_json(fields.object('base')) if paired else None,
                   head=Revision.from_json(fields.object('head')) if paired else None,
                   statistics=None if statistics is None else Statistics.from_json(statistics),
                   ncu=fields.optional_mapping('ncu'))

    @classmethod
    def load(cls, path: Path) -> BenchRun:
        return cls.from_json(JsonObject.load(path, 'a bench record of mrbot bench --json'))
