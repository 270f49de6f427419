# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The op declarations: which ops `mrbot bench` can time, with which inputs, on which shapes, and what each call must
move (arithmetic over the shape's dimensions, read and evaluated here).

They come from `[tool.mrbot.bench.ops.<name>]` tables in the repository's pyproject.toml or, where there is no
`[tool.mrbot.bench]`, from upstream flash-linear-attention's `benchmarks/ops/registry.py`, read as a syntax tree
because importing it imports torch. Which ops a change touches is the bench stage's question (`mrbot.bench.specs`).
"""

from __future__ import annotations

import ast
import keyword
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from mrbot.config import Config
from mrbot.records import MrbotError
from mrbot.records.bench import BENCH_MODES

DTYPES = ('bfloat16', 'float16', 'float32')
TRANSFORMS = ('', 'logsigmoid', 'sigmoid', 'l2norm', 'abs_neg')
OP_KEYS = ('callable', 'gate', 'modes', 'varlen', 'kwargs', 'default-shapes', 'inputs', 'shapes', 'bytes', 'flops')
INPUT_KEYS = ('shape', 'dtype', 'transform', 'requires-grad')
REGISTRY = 'benchmarks/ops/registry.py'
# TOML bare keys, so that names are written and passed to --op and --shapes without quotes
NAME = re.compile(r'[A-Za-z0-9_-]+')
CALLABLE = re.compile(r'[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*')
MAX_EXPONENT = 64


@dataclass(frozen=True)
class InputSpec:
    """One keyword argument of the op, built from the shape before timing.

    `shape` lists dimension names of the shape ('B', 'T', 'H', 'K', ...) or literal sizes; `transform` is '',
    'logsigmoid', 'sigmoid', 'l2norm' (over the last dimension) or 'abs_neg' (-|x|).
    """

    name: str
    shape: tuple[str | int, ...]
    dtype: str = 'bfloat16'
    transform: str = ''
    requires_grad: bool = True


@dataclass(frozen=True)
class OpSpec:
    """How to benchmark one op; JSON-able (`dataclasses.asdict`) so that a worker process can rebuild it.

    `callable` is 'module:attribute'; `source` is 'config' ([tool.mrbot.bench]) or 'fla-registry' (upstream's
    benchmarks/ops/registry.py, whose inputs the worker builds through the registry, so `inputs` is empty). `varlen`
    ops take `cu_seqlens`; a shape with `N` is packed: `B == 1`, N sequences of seeded uneven lengths. `gate` is the
    op's test file; `bytes` and `flops` map a mode to an arithmetic expression over the shape's dimensions.
    """

    name: str
    callable: str
    source: str
    inputs: tuple[InputSpec, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    modes: tuple[str, ...] = BENCH_MODES
    varlen: bool = False
    gate: str = ''
    shapes: dict[str, dict[str, int]] = field(default_factory=dict)
    # shapes timed when none are named; all of them when empty
    default_shapes: tuple[str, ...] = ()
    bytes: dict[str, str] = field(default_factory=dict)
    flops: dict[str, str] = field(default_factory=dict)


def op_folder(root: Path, spec: OpSpec) -> str:
    """The folder of the op's implementation: its module if that is a package, else the module's folder."""
    module = spec.callable.split(':')[0].replace('.', '/')
    return module if (root / module / '__init__.py').exists() else module.rpartition('/')[0]


def load_specs(root: Path, config: Config) -> list[OpSpec]:
    """The benchmarkable ops of the repository at `root` with settings `config`, in declaration order; none when it
    declares none."""
    if config.bench is not None:
        return _config_specs(config.bench)
    if (root / REGISTRY).is_file():
        return _registry_specs(root / REGISTRY)
    return []


def _power(base: float, exponent: float) -> float:
    if abs(exponent) > MAX_EXPONENT:
        raise OverflowError(f'exponent {exponent} is over {MAX_EXPONENT}')
    value = base ** exponent
    if isinstance(value, complex):
        raise ValueError('the result is not a real number')
    return value


BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Pow: _power,
}
UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


@lru_cache(maxsize=256)
def _arithmetic(expression: str) -> ast.expr:
    """The syntax tree of `expression`, which may hold only numbers, names, + - * / // ** and parentheses."""
    try:
        tree = ast.parse(expression.strip(), mode='eval')
    except SyntaxError as exc:
        raise MrbotError(f'expression {expression!r}: not valid arithmetic ({exc.msg})') from None
    for node in ast.walk(tree.body):
        allowed = (isinstance(node, ast.BinOp) and type(node.op) in BINARY
                   or isinstance(node, ast.UnaryOp) and type(node.op) in UNARY
                   or isinstance(node, ast.Constant) and type(node.value) in (int, float)
                   or isinstance(node, (ast.Name, ast.operator, ast.unaryop, ast.expr_context)))
        if not allowed:
            shown = ast.unparse(node) if isinstance(node, ast.expr) else type(node).__name__
            raise MrbotError(f'expression {expression!r}: {shown!r} is not plain arithmetic; '
                             'use numbers, dimension names, + - * / // ** and parentheses')
    return tree.body


def _dimension_names(expression: str) -> list[str]:
    return sorted({node.id for node in ast.walk(_arithmetic(expression)) if isinstance(node, ast.Name)})


def count_of(expression: str, dims: dict[str, int]) -> float:
    """The value of an arithmetic expression over the dimensions of a shape, such as `2 * B * T * H * K`."""

    def value(node: ast.expr) -> Any:
        if isinstance(node, ast.BinOp):
            return BINARY[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp):
            return UNARY[type(node.op)](value(node.operand))
        if isinstance(node, ast.Name):
            if node.id not in dims:
                raise MrbotError(f"expression {expression!r}: unknown dimension {node.id}; "
                                 f"the shape has {', '.join(dims) or 'none'}")
            return dims[node.id]
        return node.value

    try:
        return float(value(_arithmetic(expression)))
    except (ArithmeticError, ValueError) as exc:
        raise MrbotError(f'expression {expression!r}: {exc} at {dims}') from None


def _config_specs(bench: dict) -> list[OpSpec]:
    for key in bench:
        if key != 'ops':
            raise MrbotError(f'[tool.mrbot.bench] {key}: unknown key; known: ops')
    ops = bench.get('ops', {})
    if not isinstance(ops, dict):
        raise MrbotError(f'[tool.mrbot.bench] ops: expected tables [tool.mrbot.bench.ops.<name>], got {ops!r}')
    specs = []
    for name, table in ops.items():
        if not NAME.fullmatch(name):
            raise MrbotError(f'[tool.mrbot.bench.ops] {name!r}: expected an op name of letters, digits, - and _')
        if not isinstance(table, dict):
            raise MrbotError(f'[tool.mrbot.bench.ops] {name}: expected a table [tool.mrbot.bench.ops.{name}], '
                             f'got {table!r}')
        specs.append(_config_spec(name, table))
    return specs


def _is_identifier(name: object) -> bool:
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def _is_json(value: object) -> bool:
    """TOML dates and times would not survive the trip to the worker process."""
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    if isinstance(value, dict):
        return all(_is_json(v) for v in value.values())
    return isinstance(value, (str, int, float, bool))


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _config_spec(op: str, table: dict) -> OpSpec:
    def error(key: str, message: str) -> MrbotError:
        return MrbotError(f'[tool.mrbot.bench.ops.{op}] {key}: {message}')

    for key in table:
        if key not in OP_KEYS:
            raise error(key, f"unknown key; known: {', '.join(OP_KEYS)}")
    target = table.get('callable')
    if not (isinstance(target, str) and CALLABLE.fullmatch(target)):
        raise error('callable', f"expected 'package.module:function', got {target!r}")
    gate = table.get('gate', '')
    if not (isinstance(gate, str) and (not gate or gate.endswith('.py') and not gate.startswith('/')
                                      and '..' not in gate.split('/'))):
        raise error('gate', f"expected a repository-relative test file such as 'tests/ops/test_op.py', got {gate!r}")
    modes = table.get('modes', list(BENCH_MODES))
    if not (isinstance(modes, list) and modes and all(m in BENCH_MODES for m in modes) and len(set(modes)) == len(modes)):
        raise error('modes', f"expected a non-empty list of distinct modes out of {', '.join(BENCH_MODES)}, got {modes!r}")
    varlen = table.get('varlen', False)
    if not isinstance(varlen, bool):
        raise error('varlen', f'expected true or false, got {varlen!r}')
    inputs = _inputs(table.get('inputs'), error)
    kwargs = table.get('kwargs', {})
    if not isinstance(kwargs, dict):
        raise error('kwargs', f'expected a table of argument = value, got {kwargs!r}')
    for name, value in kwargs.items():
        if not _is_identifier(name) or name == 'cu_seqlens' or any(name == i.name for i in inputs):
            raise error(f'kwargs.{name}', 'expected a keyword argument of the op that is neither an input nor cu_seqlens')
        if not _is_json(value):
            raise error(f'kwargs.{name}', f'expected a string, number, boolean, array or table, got {value!r}')
    shapes = _shapes(table.get('shapes'), varlen, error)
    counts = {key: _counts(table.get(key, {}), modes, key, error) for key in ('bytes', 'flops')}
    used = [(f'inputs.{i.name}', [d for d in i.shape if isinstance(d, str)]) for i in inputs]
    used += [(f'{key}.{mode}', _dimension_names(expression)) for key in counts for mode, expression in counts[key].items()]
    for shape, dims in shapes.items():
        for user, names in used:
            missing = [name for name in names if name not in dims]
            if missing:
                raise error(f'shapes.{shape}', f"lacks dimension {', '.join(missing)} used by {user}")
    defaults = table.get('default-shapes', [])
    if not (isinstance(defaults, list) and all(isinstance(d, str) for d in defaults)):
        raise error('default-shapes', f'expected a list of shape names, got {defaults!r}')
    for name in defaults:
        if name not in shapes:
            raise error('default-shapes', f"unknown shape {name!r}; shapes: {', '.join(shapes)}")
    if len(set(defaults)) != len(defaults):
        raise error('default-shapes', f'expected distinct shape names, got {defaults!r}')
    return OpSpec(name=op, callable=target, source='config', inputs=inputs, kwargs=kwargs, modes=tuple(modes),
                  varlen=varlen, gate=gate, shapes=shapes, default_shapes=tuple(defaults), **counts)


def _inputs(table: Any, error: Callable[[str, str], MrbotError]) -> tuple[InputSpec, ...]:
    if not (isinstance(table, dict) and table):
        raise error('inputs', f'expected a table of name = {{ shape = [...], dtype = ... }}, got {table!r}')
    inputs = []
    for name, entry in table.items():
        where = f'inputs.{name}'
        if not _is_identifier(name):
            raise error(where, 'expected a keyword argument name of the op')
        if name == 'cu_seqlens':
            raise error(where, 'built from the packed shapes of a varlen op; declare varlen = true instead')
        if not isinstance(entry, dict):
            raise error(where, f'expected a table {{ shape = [...], dtype = ... }}, got {entry!r}')
        for key in entry:
            if key not in INPUT_KEYS:
                raise error(f'{where}.{key}', f"unknown key; known: {', '.join(INPUT_KEYS)}")
        shape = entry.get('shape')
        if not (isinstance(shape, list) and shape and all(_is_identifier(d) or _is_size(d) for d in shape)):
            raise error(f'{where}.shape', f'expected a non-empty list of dimension names and sizes, got {shape!r}')
        dtype = entry.get('dtype', 'bfloat16')
        if dtype not in DTYPES:
            raise error(f'{where}.dtype', f"expected one of {', '.join(DTYPES)}, got {dtype!r}")
        transform = entry.get('transform', '')
        if transform not in TRANSFORMS:
            raise error(f'{where}.transform', f"expected one of {', '.join(TRANSFORMS[1:])} or '', got {transform!r}")
        requires_grad = entry.get('requires-grad', True)
        if not isinstance(requires_grad, bool):
            raise error(f'{where}.requires-grad', f'expected true or false, got {requires_grad!r}')
        inputs.append(InputSpec(name, tuple(shape), dtype, transform, requires_grad))
    return tuple(inputs)


def _shapes(table: Any, varlen: bool, error: Callable[[str, str], MrbotError]) -> dict[str, dict[str, int]]:
    if not (isinstance(table, dict) and table):
        raise error('shapes', f'expected a table of name = {{ B = 8, T = 2048, ... }}, got {table!r}')
    shapes = {}
    for name, dims in table.items():
        where = f'shapes.{name}'
        if not NAME.fullmatch(name):
            raise error(where, 'expected a shape name of letters, digits, - and _')
        if not (isinstance(dims, dict) and dims):
            raise error(where, f'expected a table of dimension = size, got {dims!r}')
        for dim, size in dims.items():
            if not _is_identifier(dim):
                raise error(f'{where}.{dim}', 'expected a dimension name usable in expressions')
            if not _is_size(size):
                raise error(f'{where}.{dim}', f'expected a positive integer, got {size!r}')
        if 'N' in dims:
            if not varlen:
                raise error(where, 'packed (it has N) but the op is not varlen; set varlen = true or drop N')
            if dims.get('B', 1) != 1:
                raise error(where, f"packed (it has N) so B must be 1, got B = {dims['B']}")
            if dims.get('T', 0) < dims['N']:
                raise error(where, f"packed (it has N) so T must hold N sequences of at least one token, got "
                                   f"T = {dims.get('T')}, N = {dims['N']}")
        shapes[name] = dict(dims)
    if varlen and not any('N' in dims for dims in shapes.values()):
        raise error('varlen', 'true but no shape is packed; add one with B = 1, T tokens and N sequences')
    return shapes


def _counts(table: Any, modes: list[str], key: str, error: Callable[[str, str], MrbotError]) -> dict[str, str]:
    if not isinstance(table, dict):
        raise error(key, f'expected a table of mode = "expression", got {table!r}')
    for mode, expression in table.items():
        where = f'{key}.{mode}'
        if mode not in BENCH_MODES:
            raise error(where, f"unknown mode; expected one of {', '.join(BENCH_MODES)}")
        if mode not in modes:
            raise error(where, f"the op has no mode {mode} (modes: {', '.join(modes)})")
        if not isinstance(expression, str):
            raise error(where, f'expected an arithmetic expression over dimension names as a string, got {expression!r}')
        try:
            _arithmetic(expression)
        except MrbotError as exc:
            raise error(where, str(exc)) from None
    return dict(table)


def _registry_specs(path: Path) -> list[OpSpec]:
    """Upstream's `register_op(OpConfig(...))` calls, from their literal keyword arguments; the rest is left out."""
    try:
        tree = ast.parse(path.read_text(encoding='utf-8'))
    except (SyntaxError, ValueError) as exc:
        raise MrbotError(f'{path}: cannot read the op registry ({exc})') from None
    constants = _module_constants(tree)
    shape_configs = constants.get('SHAPE_CONFIGS')
    shape_configs = shape_configs if _is_shape_table(shape_configs) else {}
    specs: dict[str, OpSpec] = {}
    for call in _registrations(tree):
        arguments = {}
        for argument in call.keywords:
            value = _constant(argument.value, constants)
            if argument.arg and value is not None:
                arguments[argument.arg] = value
        name, import_path = arguments.get('name'), arguments.get('import_path')
        if not (isinstance(name, str) and isinstance(import_path, str)):
            continue
        func_name = arguments.get('func_name')
        test_file = arguments.get('test_file')
        shapes = arguments.get('default_shapes')
        shapes = shapes if _is_shape_table(shapes) else shape_configs
        constraints = arguments.get('dim_constraints')
        if isinstance(constraints, dict):
            # as upstream's runner does, a shape outside the op's constraints is not run
            shapes = {n: dims for n, dims in shapes.items()
                      if all(dims.get(dim) in allowed for dim, allowed in constraints.items())}
        gate = test_file if isinstance(test_file, str) else f"tests/ops/test_{import_path.rstrip('.').split('.')[-1]}.py"
        # like the registry's dict, a later registration of a name replaces the earlier one in its place
        specs[name] = OpSpec(name=name, callable=f'{import_path}:{func_name if isinstance(func_name, str) else name}',
                             source='fla-registry', modes=('fwd',) if arguments.get('skip_backward') is True else BENCH_MODES,
                             gate=gate, shapes={n: dict(dims) for n, dims in shapes.items()})
    return list(specs.values())


def _registrations(tree: ast.Module) -> list[ast.Call]:
    """The `OpConfig(...)` of each `register_op(OpConfig(...))`, in source order."""
    calls = [node.args[0] for node in ast.walk(tree)
             if isinstance(node, ast.Call) and _function_name(node) == 'register_op' and node.args
             and isinstance(node.args[0], ast.Call) and _function_name(node.args[0]) == 'OpConfig']
    return sorted(calls, key=lambda call: (call.lineno, call.col_offset))


def _function_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ''


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level names bound to a literal, such as `SHAPE_CONFIGS = {...}`, which registrations may refer to."""
    constants = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if isinstance(target, ast.Name):
            literal = _constant(value, {})
            if literal is None:
                constants.pop(target.id, None)
            else:
                constants[target.id] = literal
    return constants


def _constant(node: ast.expr, constants: dict[str, Any]) -> Any:
    """The value of a literal, or of a name bound to one at module level; None for anything else."""
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _is_shape_table(value: Any) -> bool:
    return (isinstance(value, dict) and bool(value) and all(
        isinstance(name, str) and isinstance(dims, dict) and all(isinstance(d, str) and _is_size(s) for d, s in dims.items())
        for name, dims in value.items()))
