# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Rules that keep the correctness gate honest: tests, references, tolerances, cases and precision stay as strict."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from checks.op_tests import file_paths, is_op_test, op_directory
from checks.pr import is_perf_change
from mrbot.records.change import Hunk
from mrbot.rules import Context, SourceFile, Violation, last_name, rule

_NUMBER = re.compile(r'(?<![\w.])(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?(?![\w.])')
_TOLERANCE = re.compile(r'assert_close|allclose|(?<![a-z])(?:[ar]?tol(?:erances?)?|ratios?)(?![a-z])', re.IGNORECASE)
_TOLERANCE_CALLS = frozenset({'assert_close', 'allclose', 'isclose'})
_SKIP = re.compile(r'pytest\.(?:mark\.(?:skipif|skip|xfail)\b|(?:skip|xfail|importorskip)\()')
_DTYPE = re.compile(r'\b(?:(?:tl|torch)\.)?(?:float32|float16|bfloat16|fp32|fp16|bf16)\b|\btorch\.(?:float|half)\b')
_WIDE_DTYPES = ('float32', 'fp32', 'torch.float')
_LOOSE_MATMUL_PRECISIONS = frozenset({'high', 'medium'})
_LABEL_LENGTH = 60
_LISTED_CASES = 5


def _target_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ''


def _pairs(hunk: Hunk, key: Callable[[str], str]) -> Iterator[tuple[int, str, str]]:
    """`(head line, removed text, added text)` for added lines of `hunk` whose `key` equals that of a removed line."""
    unmatched = list(hunk.old_lines)
    for offset, added in enumerate(hunk.new_lines):
        wanted = key(added)
        removed = next((old for old in unmatched if key(old) == wanted), None)
        if removed is not None:
            unmatched.remove(removed)
            yield hunk.new_start + offset, removed, added


def _without_numbers(line: str) -> str:
    return ' '.join(_NUMBER.sub('#', line).split())


def _without_dtypes(line: str) -> str:
    return ' '.join(_DTYPE.sub('<dtype>', line).split())


def _number(text: str) -> float:
    return float(text.replace('_', ''))


def _holds_tolerance(node: ast.AST) -> bool:
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(_TOLERANCE.search(_target_name(target)) for target in targets)
    if isinstance(node, ast.Call):
        return last_name(node.func) in _TOLERANCE_CALLS
    return isinstance(node, ast.keyword) and bool(node.arg) and bool(_TOLERANCE.search(node.arg))


def _tolerance_lines(tree: ast.Module | None) -> set[int]:
    """Lines of tolerance assignments, comparison calls and tolerance keywords, which may hold a number on their own."""
    nodes = ast.walk(tree) if tree is not None else ()
    return {line for node in nodes if _holds_tolerance(node) for line in range(node.lineno, node.end_lineno + 1)}


@dataclass(frozen=True)
class _Parametrization:
    """The cases one `parametrize` sees from one place: a module-level list, or the list written in the decorator."""

    key: tuple[str, ...]
    names: tuple[str, ...]
    line: int
    cases: dict[str, str]


def _argument_names(node: ast.expr | None) -> tuple[str, ...]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return tuple(name.strip() for name in node.value.split(',') if name.strip())
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else ast.unparse(e)
                     for e in node.elts)
    return (ast.unparse(node),) if node is not None else ()


def _case(element: ast.expr) -> tuple[str, str]:
    """`(identity, label)` of one case: its `id=` when it is a `pytest.param` with a literal id, else its source text."""
    if isinstance(element, ast.Call) and last_name(element.func) == 'param':
        for keyword in element.keywords:
            if keyword.arg == 'id' and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
                return f'id:{keyword.value.value}', repr(keyword.value.value)
    text = ast.unparse(element)
    label = text if len(text) <= _LABEL_LENGTH else text[:_LABEL_LENGTH - 3] + '...'
    return f'text:{text}', label


def _summands(node: ast.expr) -> Iterator[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from _summands(node.left)
        yield from _summands(node.right)
    else:
        yield node


def _parametrizations(tree: ast.Module | None) -> dict[tuple[str, ...], _Parametrization]:
    """Every parametrization of the module's tests, keyed by `('list', name)` or `('test', qualified name, *names)`."""
    if tree is None:
        return {}
    lists: dict[str, ast.Assign | ast.AnnAssign] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.List, ast.Tuple)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            lists.update({target.id: node for target in targets if isinstance(target, ast.Name)})
    found: dict[tuple[str, ...], _Parametrization] = {}

    def collect(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for decorator in node.decorator_list:
                if not (isinstance(decorator, ast.Call) and last_name(decorator.func) == 'parametrize'):
                    continue
                arguments = {k.arg: k.value for k in decorator.keywords}
                names = _argument_names(decorator.args[0] if decorator.args else arguments.get('argnames'))
                values = decorator.args[1] if len(decorator.args) > 1 else arguments.get('argvalues')
                inline = []
                for part in _summands(values) if values is not None else ():
                    if isinstance(part, ast.Name) and part.id in lists:
                        assignment = lists[part.id]
                        found.setdefault(('list', part.id), _Parametrization(
                            ('list', part.id), names, assignment.lineno, dict(map(_case, assignment.value.elts))))
                    elif isinstance(part, (ast.List, ast.Tuple)):
                        inline.extend(part.elts)
                if inline:
                    key = ('test', prefix + node.name, *names)
                    found[key] = _Parametrization(key, names, decorator.lineno, dict(map(_case, inline)))
            if isinstance(node, ast.ClassDef):
                collect(node.body, f'{prefix}{node.name}.')

    collect(tree.body, '')
    return found


def _removed_cases(source: SourceFile) -> Iterator[Violation]:
    head = _parametrizations(source.tree)
    for key, old in _parametrizations(source.base_tree).items():
        same = [head[key]] if key in head else [p for p in head.values() if p.names == old.names]
        present = {identity for p in same for identity in p.cases}
        missing = [label for identity, label in old.cases.items() if identity not in present]
        if not missing:
            continue
        where = f'list {key[1]}' if key[0] == 'list' else key[1]
        listed = ', '.join(missing[:_LISTED_CASES]) + (f' and {len(missing) - _LISTED_CASES} more'
                                                       if len(missing) > _LISTED_CASES else '')
        noun = 'case' if len(missing) == 1 else 'cases'
        yield Violation(source.path, min((p.line for p in same), default=0),
                        f'parametrized {noun} {listed} of {where} removed')


def _tf32_lines(source: SourceFile, in_test: bool) -> Iterator[tuple[int, str]]:
    """`(line, what)` for each place the module turns TF32 on; a `'tf32'` among a test's parametrized cases is an op
    mode under test, not a setting."""
    cases = {id(inner) for node in ast.walk(source.tree) if source.tree is not None
             and isinstance(node, ast.Call) and last_name(node.func) in ('parametrize', 'param')
             for inner in ast.walk(node)} if in_test else set()
    for node in ast.walk(source.tree) if source.tree is not None else ():
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                name = _target_name(target)
                if name == 'allow_tf32' and node.value.value is True:
                    yield node.lineno, f'{ast.unparse(target)} = True'
                elif name == 'fp32_precision' and node.value.value == 'tf32':
                    yield node.lineno, f"{ast.unparse(target)} = 'tf32'"
        elif isinstance(node, ast.keyword) and isinstance(node.value, ast.Constant):
            if node.arg == 'allow_tf32' and node.value.value is True:
                yield node.lineno, 'allow_tf32=True'
            elif node.arg == 'input_precision' and node.value.value == 'tf32':
                yield node.lineno, "input_precision='tf32'"
        elif isinstance(node, ast.Call) and last_name(node.func) == 'set_float32_matmul_precision':
            precision = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == 'precision'), None)
            if isinstance(precision, ast.Constant) and precision.value in _LOOSE_MATMUL_PRECISIONS:
                yield node.lineno, f'set_float32_matmul_precision({precision.value!r})'
        elif in_test and isinstance(node, ast.Constant) and node.value == 'tf32' and id(node) not in cases:
            yield node.lineno, "'tf32'"


@rule('GATE001', 'Performance change edits its correctness gate', 'error',
      "revert the edits to the op's tests and naive.py; change the gate in a separate PR first", scope='file')
def frozen_gate(context: Context) -> Iterator[Violation]:
    """Checks that a performance change leaves the test file and the `naive.py` of every op it touches unmodified.

    A speedup counts only on a green gate that is the same before and after: the op's tests and its reference decide
    what correct means, and a change that edits them while making the kernel faster can pass by moving the goalposts.
    A performance change is one whose title tag is in `perf-tags` (e.g. `[Perf]`) or that runs with `--perf`.

    Example: `[Perf] Fuse the state update` changing `fla/ops/simple_gla/chunk.py` and `tests/ops/test_simple_gla.py`.

    Instead: change only the kernel; land test or reference changes in their own PR before the performance work.
    """
    if not is_perf_change(context):
        return
    change, config = context.change, context.config
    gate: dict[str, str] = {}
    for directory in {op_directory(path, config) for file in change.files for path in file_paths(file)} - {None}:
        op = directory.rstrip('/').rsplit('/', 1)[-1]
        gate[f'{directory}naive.py'] = op
        gate.update({f"{root.rstrip('/')}/ops/test_{op}.py": op for root in config.test_roots})
    for file in change.files:
        frozen = next((path for path in file_paths(file) if path in gate), None)
        if frozen is not None and file.status != 'added':
            yield Violation(file.path, 0, f'{frozen} is {file.status}: a performance change must leave its gate frozen '
                                          f'(the tests and naive.py of {gate[frozen]})')


@rule('GATE002', 'Test tolerance loosened', 'error',
      'keep the tolerance and fix the numbers, or raise it in a separate PR that explains why', scope='lines')
def loosened_tolerance(context: Context) -> Iterator[Violation]:
    """Checks that no number in a tolerance (`assert_close` ratio, `atol`, `rtol`, a `TOLERANCE` table) grows in a test.

    A looser tolerance makes every kernel pass that was wrong by less than the new bound, and it hides the change in a
    one-character diff. A removed and an added line of the same hunk that differ only in their numbers, on a line that
    mentions a tolerance or lies inside a tolerance assignment or comparison call, must not increase any number.

    Example: `torch.float32: {'default': 2e-3, 'dg': 2e-3},` becoming `torch.float32: {'default': 5e-3, 'dg': 2e-3},`
    in the `TOLERANCE` table.

    Instead: keep `2e-3` and find why the kernel drifted; a deliberate change of precision needs its own PR and reason.
    """
    for source in context.sources('*.py'):
        if not context.config.is_test(source.path):
            continue
        tolerance_lines = _tolerance_lines(source.tree)
        for hunk in source.file.hunks:
            for line, removed, added in _pairs(hunk, _without_numbers):
                if line not in tolerance_lines and not _TOLERANCE.search(added):
                    continue
                numbers = zip(_NUMBER.findall(removed), _NUMBER.findall(added), strict=False)
                grown = [f'{old} to {new}' for old, new in numbers if _number(new) > _number(old)]
                if grown:
                    yield Violation(source.path, line, f"tolerance loosened from {', '.join(grown)}")


@rule('GATE003', 'Test case removed or skipped', 'error',
      'restore the case or the unconditional run; a case that cannot pass is a bug to fix, not to skip', scope='file')
def kept_cases(context: Context) -> Iterator[Violation]:
    """Checks that a change to a test under `<test root>/ops/` removes no parametrized case and adds no skip or xfail.

    Dropping the shape that fails, or skipping it, turns a red gate green without fixing anything. A case is compared
    by its `pytest.param` id, else by its source text, per module-level case list and per decorator; added lines with
    `pytest.mark.skip`, `skipif`, `xfail`, `pytest.skip(`, `pytest.xfail(` or `pytest.importorskip(` are reported where
    the file now has more of them than before, unless they belong to a test function the base did not have (a new test
    carrying the file's usual platform skip removes nothing), or that take a condition off the module's `pytestmark`
    onto the tests that need it. New test files are not checked for skips.

    Example: deleting `pytest.param(1, 13, 1, 16, 16, ..., id='T13-shorter-than-chunk')` from `DENSE_CASES`, or adding
    `@pytest.mark.skip(reason='flaky')` above `test_varlen`.

    Instead: keep every case and fix the kernel; for a shape too large for the interpreter, add a new case with
    `marks=LARGE` instead of skipping an old one.
    """
    for source in context.sources('*.py'):
        if not is_op_test(source.path, context.config) or source.file.base_text is None:
            continue
        yield from _removed_cases(source)
        before = Counter(_SKIP.findall(source.file.base_text))
        after = Counter(_SKIP.findall(source.text))
        existing, new_tests = _test_names(source.base_tree), _test_spans(source.tree)
        mild = _skips_the_gate_runs_past(source.tree, existing) | _skips_moved_onto_tests(source)
        for line in sorted(source.added):
            # a skip on a test the base did not have stops no case from running
            if line in mild or any(first <= line <= last and name not in existing for name, first, last in new_tests):
                continue
            for skip in dict.fromkeys(_SKIP.findall(source.line(line))):
                if after[skip] > before[skip]:
                    yield Violation(source.path, line, f'{skip.rstrip("(")} added: the case no longer runs in the gate')


# What the gate's runs are: an NVIDIA GPU of the runner classes (Hopper, Blackwell), backend dispatch off. Each name a
# skip condition may read, with its value on each; a name not here is unknown, and so is the skip.
_GATE_PLATFORMS = (
    {'IS_NVIDIA': True, 'IS_NVIDIA_HOPPER': True, 'IS_NVIDIA_BLACKWELL': False, 'IS_NVIDIA_SM100': False},
    {'IS_NVIDIA': True, 'IS_NVIDIA_HOPPER': False, 'IS_NVIDIA_BLACKWELL': True, 'IS_NVIDIA_SM100': True},
)
_OTHER_PLATFORMS = re.compile(r'^IS_(?:AMD|NPU|INTEL\w*|TPU|MUSA|MLU|XPU|ROCM|MPS|CPU)$')
_DISPATCH_OFF = 'FLA_DISABLE_BACKEND_DISPATCH'


def _on_gate(node: ast.expr, platform: dict[str, bool]) -> object:
    """The value of a skip condition on one of the gate's platforms: True, False, a string, or None where it cannot be
    told from the condition itself."""
    if isinstance(node, ast.Constant):
        return node.value
    name = last_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    if name is not None:
        return platform.get(name, False if _OTHER_PLATFORMS.match(name) else 'cuda' if name == 'device' else None)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = _on_gate(node.operand, platform)
        return None if value is None else not value
    if isinstance(node, ast.BoolOp):
        values = [_on_gate(v, platform) for v in node.values]
        decided = isinstance(node.op, ast.And) and False in values or isinstance(node.op, ast.Or) and True in values
        if decided:
            return isinstance(node.op, ast.Or)
        return None if None in values else bool(values[-1])
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _on_gate(node.left, platform), _on_gate(node.comparators[0], platform)
        if left is None or right is None:
            return None
        if isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            return (left == right) == isinstance(node.ops[0], ast.Eq)
        return None
    if isinstance(node, ast.Call) and last_name(node.func) in ('get', 'getenv') and node.args \
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == _DISPATCH_OFF:
        return '1'
    if isinstance(node, ast.Call) and last_name(node.func) == 'is_available' and 'cuda' in ast.unparse(node.func):
        return True
    return None


def _gate_runs_past(condition: ast.expr | None) -> bool:
    """Whether a skip under `condition` (None: none) skips nothing on any of the gate's platforms."""
    return condition is not None and all(_on_gate(condition, platform) is False for platform in _GATE_PLATFORMS)


def _skip_condition(call: ast.Call) -> ast.expr | None:
    """The condition of a `skipif(...)`/`xfail(...)` mark, None for one that always applies."""
    if last_name(call.func) not in ('skipif', 'xfail'):
        return None
    return call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == 'condition'), None)


def _module_skip_conditions(tree: ast.Module | None) -> set[str]:
    """The conditions (as dumped trees) of the `skipif`/`xfail` marks of a module's `pytestmark`."""
    conditions = set()
    for statement in tree.body if tree is not None else []:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == 'pytestmark'
                                                     for t in statement.targets):
            conditions |= {ast.dump(condition) for node in ast.walk(statement.value) if isinstance(node, ast.Call)
                           if (condition := _skip_condition(node)) is not None}
    return conditions


def _skips_moved_onto_tests(source: SourceFile) -> set[int]:
    """The lines of skips whose condition a module-wide `pytestmark` of the base had and the head has not: the skip
    moved onto some tests, and the others run where they did not."""
    moved = _module_skip_conditions(source.base_tree) - _module_skip_conditions(source.tree)
    if not moved or source.tree is None:
        return set()
    return {node.lineno for node in ast.walk(source.tree) if isinstance(node, ast.Call)
            if (condition := _skip_condition(node)) is not None and ast.dump(condition) in moved}


def _skips_the_gate_runs_past(tree: ast.Module | None, existing: set[str]) -> set[int]:
    """The lines of skips that take no case out of the gate: a skip whose condition is false on each of the gate's
    platforms (`IS_NPU`, `not IS_NVIDIA`, dispatch turned on), and a mark kept in a name that only tests the base did
    not have are decorated with."""
    mild: set[int] = set()
    if tree is None:
        return mild
    decorated: dict[str, set[str]] = {}
    for name, function in _test_functions(tree):
        for decorator in function.decorator_list:
            decorated.setdefault(last_name(decorator) or '', set()).add(name)
        for node in ast.walk(function):
            if isinstance(node, ast.If) and any(isinstance(inner, ast.Call) and last_name(inner.func) in ('skip', 'xfail')
                                                for statement in node.body for inner in ast.walk(statement)) \
                    and _gate_runs_past(node.test):
                mild.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and last_name(node.func) in ('skipif', 'xfail') and _gate_runs_past(
                _skip_condition(node)):
            mild.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Call):
            users = decorated.get(statement.targets[0].id, set())
            if not users & existing and statement.targets[0].id not in _case_mark_names(tree):
                mild.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return mild


def _case_mark_names(tree: ast.Module) -> set[str]:
    """The names given as `marks=` of a `pytest.param` case."""
    return {node.value.id for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg == 'marks'
            and isinstance(node.value, ast.Name)}


def _test_functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in tree.body:
        functions = [(f'{node.name}.', child) for child in node.body] if isinstance(node, ast.ClassDef) else [('', node)]
        for prefix, function in functions:
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.name.startswith('test'):
                yield prefix + function.name, function


def _test_spans(tree: ast.Module | None) -> list[tuple[str, int, int]]:
    """Each test function (`Class.test_x` for a method) with its first line, decorators included, and its last."""
    return [(name, min([function.lineno, *(d.lineno for d in function.decorator_list)]),
             function.end_lineno or function.lineno) for name, function in _test_functions(tree)] if tree else []


def _test_names(tree: ast.Module | None) -> set[str]:
    return {name for name, _, _ in _test_spans(tree)}


@rule('GATE004', 'Numeric precision relaxed', 'error',
      'keep float32 accumulation and IEEE float32 matmuls; change precision only in a separate PR with its reason',
      scope='lines')
def relaxed_precision(context: Context) -> Iterator[Violation]:
    """Checks that no added line turns TF32 on or narrows a float32 accumulator to float16 or bfloat16.

    TF32 keeps 10 mantissa bits and half-precision accumulators lose sums; either makes a kernel faster and less
    accurate, and on one side of a comparison it also moves the reference. The TF32 checks cover `allow_tf32 = True`,
    `allow_tf32=True`, `fp32_precision = 'tf32'`, `input_precision='tf32'` and `set_float32_matmul_precision('high')`
    everywhere under source and test roots, and a bare `'tf32'` string in tests outside `pytest.mark.parametrize` and
    `pytest.param` (there it is a mode of the op under test). A narrowed accumulator is a removed and
    an added line of one hunk that differ only in dtypes, with a float32 turned into a 16-bit type.

    Example: `b_h = tl.zeros([BK, BV], dtype=tl.float32)` becoming `b_h = tl.zeros([BK, BV], dtype=tl.bfloat16)`, or
    `torch.backends.cuda.matmul.allow_tf32 = True` in a test.

    Instead: accumulate in `tl.float32` and cast once on store; let precision follow
    `torch.get_float32_matmul_precision()` as the library does.
    """
    config = context.config
    for source in context.sources('*.py'):
        in_test = config.is_test(source.path)
        if not (in_test or config.is_source(source.path)):
            continue
        # a keyword and its string constant both match on one line; report the line once
        tf32: dict[int, str] = {}
        for line, what in _tf32_lines(source, in_test):
            tf32.setdefault(line, what)
        for line, what in tf32.items():
            yield Violation(source.path, line, f'{what} turns TF32 on')
        for hunk in source.file.hunks:
            for line, removed, added in _pairs(hunk, _without_dtypes):
                dtypes = zip(_DTYPE.findall(removed), _DTYPE.findall(added), strict=False)
                narrowed = [f'{old} to {new}' for old, new in dtypes
                            if old.endswith(_WIDE_DTYPES) and not new.endswith(_WIDE_DTYPES)]
                if narrowed:
                    yield Violation(source.path, line, f"precision narrowed from {', '.join(narrowed)}")
