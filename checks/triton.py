# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Rules for Triton kernels: how they address memory, index in int64, specialize and declare compile-time values."""

from __future__ import annotations

import ast
import re
from collections.abc import Container, Iterator, Set

from mrbot.rules import Context, Violation, dotted_name, last_name, rule

_BLOCK_POINTER_APIS = ('make_block_ptr', 'advance')
# `BH` and `BH_...` count batch x heads, a runtime value that would recompile the kernel per batch size as a constexpr.
_COMPILE_TIME_NAME = re.compile(r'^(?:B(?!H(?:_|$))[A-Z0-9][A-Z0-9_]*|(?:USE|IS|HAS)_[A-Z0-9_]*)$')
# Calls whose result is an index computed from their arguments, so a narrow program id stays narrow through them.
_INDEX_FUNCTIONS = frozenset({'abs', 'cdiv', 'int', 'max', 'max_contiguous', 'maximum', 'min', 'minimum', 'multiple_of',
                              'range', 'static_range', 'where'})
_SNIPPET_LENGTH = 60

_BLOCK_SIZE_NAME = re.compile(r'^B[A-Z0-9][A-Z0-9_]*$')
# Program ids over a feature dimension (key, value, model width), and the sizes of those dimensions: a product of the
# two stays within one token's row or one weight matrix.
_FEATURE_INDEX_NAME = re.compile(r'^i_(?:k|v|d|kv)$')
_FEATURE_SIZES = frozenset({'K', 'V', 'D', 'W'})

# Variable name -> lines where a `tl.program_id` value without an int64 cast flowed into it, negated for a program id
# over a feature dimension, or WIDE for an int64 value.
Taint = dict[str, frozenset[int]]
# No line is 0: the mark of a value known to be int64, which makes every arithmetic result it enters int64 too.
WIDE = frozenset({0})
# Narrow multiplication -> its narrow operand and the lines where that operand's program id was read.
Found = dict[ast.AST, tuple[ast.expr, frozenset[int]]]


def _jit_decorator(function: ast.FunctionDef) -> ast.expr | None:
    """The `@triton.jit` / `@jit` / `@triton.jit(...)` decorator of `function`, wherever it sits in the stack."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if dotted_name(target) in ('jit', 'triton.jit'):
            return decorator
    return None


def _statements(node: ast.AST) -> Iterator[ast.stmt]:
    """Every statement under `node` at any depth; expressions are not entered, which keeps large files fast."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            yield child
            yield from _statements(child)
        elif isinstance(child, (ast.excepthandler, ast.match_case)):
            yield from _statements(child)


def _jit_functions(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef, ast.expr]]:
    for node in _statements(tree):
        if isinstance(node, ast.FunctionDef):
            decorator = _jit_decorator(node)
            if decorator is not None:
                yield node, decorator


def _positional_parameters(function: ast.FunctionDef) -> list[ast.arg]:
    return [*function.args.posonlyargs, *function.args.args]


def _snippet(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= _SNIPPET_LENGTH else text[:_SNIPPET_LENGTH - 3] + '...'


def _imports_triton(tree: ast.Module) -> bool:
    for node in _statements(tree):
        if isinstance(node, ast.Import) and any(alias.name.split('.')[0] == 'triton' for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] == 'triton':
            return True
    return False


@rule('TRI001', 'Block pointer addressing', 'error',
      'address memory with offset vectors and masked `tl.load` / `tl.store`')
def block_pointers(context: Context) -> Iterator[Violation]:
    """Checks that no Python file uses `make_block_ptr` or `advance` from `triton.language`.

    Any attribute access `<name>.make_block_ptr` counts, and so does an import of either name from a `triton` module;
    `<name>.advance` counts only in files that import triton, since the word is common elsewhere. Strings and comments
    do not count.

    Block pointers hide the offsets and the boundary handling that a reviewer needs to see, and how they lower differs
    across Triton versions and backends; explicit offset vectors with masks state every bound in the kernel itself.

    Example: `p_q = tl.make_block_ptr(q, (T, K), (H * K, 1), (i_t * BT, 0), (BT, BK), (1, 0))` followed by
    `p_q = tl.advance(p_q, (BT, 0))`.

    Instead: `o_t = i_t * BT + tl.arange(0, BT)` and `tl.load(q + o_t[:, None] * H * K + o_k[None, :], mask=m_tk)`.
    """
    for source in context.sources('*.py'):
        tree = source.tree
        if tree is None or not any(api in source.text for api in _BLOCK_POINTER_APIS):
            continue
        imports_triton = _imports_triton(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in _BLOCK_POINTER_APIS and dotted_name(node):
                if node.attr == 'make_block_ptr' or imports_triton:
                    yield Violation(source.path, node.lineno, f'`{dotted_name(node)}` addresses memory through a block '
                                                              'pointer', column=node.col_offset)
            elif isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] == 'triton':
                for alias in node.names:
                    if alias.name in _BLOCK_POINTER_APIS:
                        yield Violation(source.path, node.lineno, f'`{alias.name}` imported from `{node.module}`: block '
                                                                  'pointers are not used here', column=node.col_offset)


def _cast_target(node: ast.expr) -> tuple[ast.expr, ast.expr | None] | None:
    """`(value, dtype)` when `node` is `value.to(dtype)` or `tl.cast(value, dtype)`, else None."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    keywords = {k.arg: k.value for k in node.keywords}
    if node.func.attr == 'to':
        return node.func.value, node.args[0] if node.args else keywords.get('dtype')
    if node.func.attr == 'cast' and dotted_name(node.func) and node.args:
        return node.args[0], node.args[1] if len(node.args) > 1 else keywords.get('dtype')
    return None


def _narrow(origins: frozenset[int]) -> frozenset[int]:
    """The program-id lines of a value, without the int64 mark: empty for a value that is wide or no index."""
    return origins - WIDE


def _join(parts: list[frozenset[int]]) -> frozenset[int]:
    """An arithmetic result of `parts`: int64 when any part is (Triton promotes int32 to int64), else narrow from
    every narrow part."""
    if any(part == WIDE for part in parts):
        return WIDE
    return frozenset().union(*map(_narrow, parts))


def _is_feature_size(node: ast.expr) -> bool:
    """Whether `node` is the size of a feature dimension (`K`, `V`), a block size, or a product of them."""
    if isinstance(node, ast.Name) and node.id in _FEATURE_SIZES:
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _is_feature_size(node.left) and _is_feature_size(node.right)
    return _is_block_size(node)


def _is_block_size(node: ast.expr) -> bool:
    """Whether `node` is a compile-time block size (`BT`, `BK`), an integer literal, or a product of them."""
    if isinstance(node, ast.Name):
        return bool(_BLOCK_SIZE_NAME.match(node.id))
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _is_block_size(node.left) and _is_block_size(node.right)
    return False


def _origins(node: ast.AST, taint: Taint, reported: Container[ast.AST] = ()) -> frozenset[int]:
    """Lines where a program id still in int32 entered the value of `node`; empty when the value is not such an index,
    WIDE when it is int64.

    Comparisons make masks and loads read data, so neither carries the index on; nodes in `reported` count as clean so
    that one narrow multiplication is reported once, not again by each multiplication around it.
    """
    if node in reported:
        return frozenset()
    cast = _cast_target(node)
    if cast is not None:
        value, dtype = cast
        if dtype is not None and last_name(dtype) in ('int64', 'uint64'):
            return WIDE
        floating = (last_name(dtype) or '').startswith(('float', 'bfloat')) if dtype is not None else False
        return frozenset() if floating else _narrow(_origins(value, taint, reported))
    if isinstance(node, ast.Call) and last_name(node.func) == 'program_id':
        return frozenset({node.lineno})
    if isinstance(node, ast.Name):
        return taint.get(node.id, frozenset())
    if isinstance(node, ast.Call):
        if last_name(node.func) not in _INDEX_FUNCTIONS:
            return frozenset()
        operands = [*node.args, *(k.value for k in node.keywords)]
    elif isinstance(node, ast.BinOp):
        operands = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp):
        operands = [node.operand]
    elif isinstance(node, ast.Subscript):
        operands = [node.value]
    elif isinstance(node, ast.IfExp):
        branches = [_origins(node.body, taint, reported), _origins(node.orelse, taint, reported)]
        return WIDE if all(b == WIDE for b in branches) else frozenset().union(*map(_narrow, branches))
    elif isinstance(node, (ast.Tuple, ast.List)):
        return frozenset().union(*(_narrow(_origins(e, taint, reported)) for e in node.elts))
    else:
        return frozenset()
    return _join([_origins(operand, taint, reported) for operand in operands])


def _loop_index(iterable: ast.expr, taint: Taint) -> frozenset[int]:
    """What a `for` over `iterable` binds: an index of `range(start, stop)` follows `start`, and `stop` unless a block
    size bounds it (`range(0, tl.minimum(BC, T - i_t * BT))`), since the index stays below it."""
    if not (isinstance(iterable, ast.Call) and last_name(iterable.func) in ('range', 'static_range')
            and iterable.args):
        return _origins(iterable, taint)
    start, stop = (iterable.args[0], iterable.args[1]) if len(iterable.args) > 1 else (None, iterable.args[0])
    bounded = _is_block_size(stop) or (isinstance(stop, ast.Call) and last_name(stop.func) in ('min', 'minimum')
                                       and any(_is_block_size(argument) for argument in stop.args))
    parts = ([] if start is None else [_origins(start, taint)]) + ([] if bounded else [_origins(stop, taint)])
    return _join(parts) if parts else frozenset()


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _names(element)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []


def _bindings(target: ast.expr, value: ast.expr, taint: Taint) -> list[tuple[str, frozenset[int]]]:
    """What assigning `value` to `target` binds; `a, b = x, y` pairs element by element."""
    pairs_up = isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
        and len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
    if pairs_up:
        return [binding for t, v in zip(target.elts, value.elts, strict=True) for binding in _bindings(t, v, taint)]
    origins = _origins(value, taint)
    if isinstance(target, ast.Name) and _FEATURE_INDEX_NAME.match(target.id) and origins != WIDE:
        # named for a feature block (`i_k = tl.program_id(0)`, `i_d = pid % ND`): it counts that dimension's blocks
        origins = frozenset(-abs(line) for line in origins)
    return [(name, origins) for name in _names(target)]


def _bind(bindings: list[tuple[str, frozenset[int]]], taint: Taint) -> None:
    for name, origins in bindings:
        if origins:
            taint[name] = origins
        else:
            taint.pop(name, None)


def _assign(statement: ast.stmt, taint: Taint) -> None:
    if isinstance(statement, ast.Assign):
        # Evaluate every right-hand side before binding, as Python does for `a, b = b, a`.
        bindings = [b for target in statement.targets for b in _bindings(target, statement.value, taint)]
        _bind(bindings, taint)
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        _bind(_bindings(statement.target, statement.value, taint), taint)
    elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        name = statement.target.id
        _bind([(name, _join([taint.get(name, frozenset()), _origins(statement.value, taint)]))], taint)


def _check_multiplications(expression: ast.AST, taint: Taint, found: Found) -> None:
    """Record in `found` each multiplication in `expression` of a narrow program id by anything but a block size,
    innermost first; a comparison makes a mask, not an address, so what it holds is not recorded."""
    masks = {id(inner) for node in ast.walk(expression) if isinstance(node, ast.Compare) for inner in ast.walk(node)}
    # Breadth-first order reversed visits every node before the nodes that contain it.
    for node in reversed(list(ast.walk(expression))):
        if id(node) in masks:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            operands = (node.left, node.right)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Mult):
            operands = (node.target, node.value)
        else:
            continue
        for operand, other in (operands, operands[::-1]):
            origins = _narrow(_origins(operand, taint, found))
            # a program id times a block size is at most the extent of the dimension it tiles, a feature offset times
            # a feature size one token's row: the next product is the one that can wrap
            bounded = _is_block_size(other) or (all(line < 0 for line in origins) and _is_feature_size(other))
            if origins and not bounded:
                found.setdefault(node, (operand, origins))
                break


def _merge(first: Taint, second: Taint) -> Taint:
    """Names after two paths: int64 where both made them so, else narrow from either."""
    merged = {}
    for name in first.keys() | second.keys():
        one, two = first.get(name, frozenset()), second.get(name, frozenset())
        value = WIDE if one == two == WIDE else _narrow(one) | _narrow(two)
        if value:
            merged[name] = value
    return merged


def _headers(statement: ast.stmt) -> list[ast.AST]:
    """The parts of `statement` outside its nested blocks (a whole simple statement, the test of an `if`, ...)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return []
    if isinstance(statement, ast.AugAssign):
        return [statement]
    headers = []
    for _, value in ast.iter_fields(statement):
        values = value if isinstance(value, list) else [value]
        headers += [v for v in values if isinstance(v, (ast.expr, ast.withitem))]
    return headers


def _flow(statements: list[ast.stmt], taint: Taint, found: Found) -> None:
    """Follow program ids through `statements` in order, recording narrow multiplications in `found`."""
    for statement in statements:
        for header in _headers(statement):
            _check_multiplications(header, taint, found)
        if isinstance(statement, ast.If):
            body, orelse = dict(taint), dict(taint)
            _flow(statement.body, body, found)
            _flow(statement.orelse, orelse, found)
            taint.clear()
            taint.update(_merge(body, orelse))
        elif isinstance(statement, (ast.For, ast.While)):
            loop = dict(taint)
            # Two passes let a value assigned late in the body reach its uses early in the next iteration.
            for _ in range(2):
                if isinstance(statement, ast.For):
                    _bind([(name, _loop_index(statement.iter, loop)) for name in _names(statement.target)], loop)
                _flow(statement.body, loop, found)
            after = _merge(taint, loop)
            _flow(statement.orelse, after, found)
            taint.clear()
            taint.update(after)
        elif isinstance(statement, ast.With):
            _flow(statement.body, taint, found)
        else:
            _assign(statement, taint)


@rule('TRI002', 'Program id multiplied in int32', 'error',
      'cast the program id with `.to(tl.int64)` where it is read, before it meets a size or stride')
def narrow_program_ids(context: Context) -> Iterator[Violation]:
    """Checks that inside `@triton.jit` functions no multiplication takes a program id that was not cast to int64 and
    multiplies it by a size or stride.

    A value is a program id when it is `tl.program_id(...)` or a name assigned from an expression holding one, through
    arithmetic, subscripts, `tl.minimum`-like index functions, loops over `range(...)` and tuple unpacking such as
    `i_k, i_v = tl.program_id(0), tl.program_id(1)`. `x.to(tl.int64)`, `tl.cast(x, tl.int64)`, names assigned from
    them and arithmetic holding them are wide, as Triton promotes int32 with int64 to int64. A product with a block
    size (a `B...` compile-time name such as `BT`, an integer literal, or a product of them) is at most the extent of the
    dimension it tiles and is not reported, but stays narrow; so is an offset from a program id over a feature
    dimension (`i_k`, `i_v`, `i_d`) times a feature size (`K`, `V`, `D`, `W`), a loop index below a block size
    (`range(tl.minimum(BC, T - i_t * BT))`), and a comparison, which makes a mask rather than an address. The analysis
    is intra-procedural: a program id passed to a helper, or returned from one, is not followed; values read with
    `tl.load` through a program id offset are data, not indices, and are not followed either.

    Program ids are int32, and so is every product of them with int32 sizes: `(i_t * BT + o_t) * H * K` wraps around
    once the tensor holds more than 2**31 elements, and the kernel silently reads and writes the wrong memory. Large
    batches and long packed sequences reach that size on today's GPUs.

    Example: `i_t = tl.program_id(0)` followed by `o_row = i_t * BT + tl.arange(0, BT)` and `q + o_row[:, None] * H * K`.

    Instead: `i_t = tl.program_id(0).to(tl.int64)`, then the same offsets.
    """
    for source in context.sources('*.py'):
        if source.tree is None or 'program_id' not in source.text:
            continue
        for function, _ in _jit_functions(source.tree):
            found: Found = {}
            _flow(function.body, {}, found)
            for node, (narrow, origins) in sorted(found.items(), key=lambda item: (item[0].lineno, item[0].col_offset)):
                first = min(map(abs, origins))
                yield Violation(source.path, node.lineno, f'`{_snippet(node)}` multiplies `{_snippet(narrow)}`, derived '
                                                          f'from `tl.program_id` on line {first}, without an int64 cast',
                                column=node.col_offset,
                                anchors=tuple(range(node.lineno, node.end_lineno + 1)))


def _launched_kernels(tree: ast.Module) -> set[str]:
    """Names launched as `name[grid](...)` in the module."""
    return {last_name(node.func.value) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and dotted_name(node.func.value)}


def _unspecialized(decorator: ast.expr, function: ast.FunctionDef, parameter: str) -> bool:
    """Whether the jit decorator lists `parameter` (by name or position) in `do_not_specialize`, or in a way not seen."""
    if not isinstance(decorator, ast.Call):
        return False
    listed = next((k.value for k in decorator.keywords if k.arg == 'do_not_specialize'), None)
    if listed is None:
        return False
    if not isinstance(listed, (ast.List, ast.Tuple, ast.Set)):
        # A name or an expression: its content cannot be read here, so give the benefit of the doubt.
        return True
    position = next((i for i, a in enumerate(_positional_parameters(function)) if a.arg == parameter), None)
    return any(isinstance(e, ast.Constant) and e.value in (parameter, position) and not isinstance(e.value, bool)
               for e in listed.elts)


@rule('TRI003', 'Kernel specializes on the sequence length', 'error',
      "list `T` in the kernel's decorator: `@triton.jit(do_not_specialize=['T'])`")
def sequence_length_specialization(context: Context) -> Iterator[Violation]:
    """Checks that every `@triton.jit` kernel with a parameter `T` names it in `do_not_specialize`.

    `T` may be listed by name or by its position. A jit function counts as a kernel when its name contains `kernel` or
    the file launches it as `name[grid](...)`; device helpers are specialized by the kernel that calls them, so the
    setting does nothing there. The finding is reported at `T` and also appears when only the decorator changed.

    Triton specializes integer arguments on their value (equal to 1, divisible by 16) and compiles a new kernel for
    each combination; a sequence length changes with every batch, so without `do_not_specialize` a training run
    stalls on recompilations and fills the cache with copies of the same kernel.

    Example: `@triton.jit` above `def chunk_fwd_kernel(q, k, o, T, H: tl.constexpr, BT: tl.constexpr):`.

    Instead: `@triton.jit(do_not_specialize=['T'])` above the same definition.
    """
    for source in context.sources('*.py'):
        if source.tree is None:
            continue
        launched = None
        for function, decorator in _jit_functions(source.tree):
            length = next((a for a in _positional_parameters(function) if a.arg == 'T'), None)
            if length is None or _unspecialized(decorator, function, 'T'):
                continue
            if 'kernel' not in function.name:
                launched = _launched_kernels(source.tree) if launched is None else launched
                if function.name not in launched:
                    continue
            anchors = (*range(decorator.lineno, decorator.end_lineno + 1), length.lineno)
            yield Violation(source.path, length.lineno, f'kernel `{function.name}` specializes on the sequence length '
                                                        '`T`: every new length compiles a new kernel',
                            column=length.col_offset, anchors=anchors)


def _is_constexpr(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.rsplit('.', 1)[-1] == 'constexpr'
    return annotation is not None and last_name(annotation) == 'constexpr'


@rule('TRI004', 'Compile-time parameter not `tl.constexpr`', 'error',
      'annotate the parameter `: tl.constexpr`, or rename it if it is a runtime value')
def compile_time_parameters(context: Context) -> Iterator[Violation]:
    """Checks that `@triton.jit` parameters named like compile-time values are annotated `tl.constexpr`.

    Compile-time names are block sizes, `B` followed by an upper-case letter or digit and only upper-case letters,
    digits and underscores (`BT`, `BK`, `BLOCK_SIZE`), and flags starting with `USE_`, `IS_` or `HAS_`. `BH` and
    `BH_...` are not: they count batch x heads, which changes with every batch size. The annotation may be written
    `tl.constexpr` or `triton.language.constexpr`.

    Without the annotation the value arrives as a runtime integer: `tl.arange(0, BT)` fails to compile, and a flag in
    `if USE_G:` becomes a branch in the compiled code instead of removing the dead path. The naming convention is how a
    reader knows which values shape the compiled kernel.

    Example: `def chunk_fwd_kernel(q, k, T, BT, USE_G):`.

    Instead: `def chunk_fwd_kernel(q, k, T, BT: tl.constexpr, USE_G: tl.constexpr):`.
    """
    for source in context.sources('*.py'):
        if source.tree is None:
            continue
        for function, _ in _jit_functions(source.tree):
            arguments = function.args
            for parameter in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
                if _COMPILE_TIME_NAME.match(parameter.arg) and not _is_constexpr(parameter.annotation):
                    yield Violation(source.path, parameter.lineno, f'parameter `{parameter.arg}` of `{function.name}` '
                                                                   'is named as a compile-time value but is not '
                                                                   '`tl.constexpr`', column=parameter.col_offset)



_MEMORY_ACCESSES = frozenset({'tl.load', 'tl.store', 'triton.language.load', 'triton.language.store'})
# Where `mask` sits among the positional arguments: `tl.load(pointer, mask, other)`, `tl.store(pointer, value, mask)`.
_MASK_POSITION = {'load': 1, 'store': 2}

# A `tl.load` / `tl.store` with a mask, and block offset -> dimension for each offset of its pointer that the mask
# bounds.
MaskedAccess = tuple[ast.Call, ast.expr, dict[str, str]]
# Name -> the names of block offsets (`o_k = i_k * BK + tl.arange(0, BK)`) that every value assigned to it is built
# from, itself included when there is one.
Offsets = dict[str, frozenset[str]]


def _assigned_values(function: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    """Every value assigned to each name anywhere in `function`, in any branch or loop; `p += d` assigns `p + d`."""
    values: dict[str, list[ast.expr]] = {}

    def assign(target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for element, part in zip(target.elts, value.elts, strict=True):
                assign(element, part)
            return
        for name in _names(target):
            values.setdefault(name, []).append(value)

    for statement in _statements(function):
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                assign(target, statement.value)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            assign(statement.target, statement.value)
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            assign(statement.target, ast.BinOp(ast.Name(statement.target.id), statement.op, statement.value))
    return values


def _is_block_arange(node: ast.expr) -> bool:
    """Whether `node` is `tl.arange(start, B...)`: a range as long as a block size rather than a dimension."""
    return isinstance(node, ast.Call) and last_name(node.func) == 'arange' and len(node.args) == 2 \
        and isinstance(node.args[1], ast.Name) and bool(_BLOCK_SIZE_NAME.match(node.args[1].id))


def _hinted_value(node: ast.Call) -> ast.expr | None:
    """The value inside `x.to(tl.int64)`, `tl.multiple_of(x, B)` or `tl.max_contiguous(x, B)`, which keep its lanes."""
    if last_name(node.func) == 'to' and isinstance(node.func, ast.Attribute):
        return node.func.value
    if last_name(node.func) in ('multiple_of', 'max_contiguous') and node.args:
        return node.args[0]
    return None


def _block_offsets(node: ast.expr, offsets: Offsets) -> frozenset[str]:
    """The block offsets that index every lane of `node`: names from `offsets`, and the text of a block arange written
    in `node` itself. `o % K` wraps an offset into its dimension, and other calls (`tl.minimum`, `tl.load`) clamp it or
    turn it into data, so neither carries it on."""
    if _is_block_arange(node):
        return frozenset({ast.unparse(node)})
    if isinstance(node, ast.Name):
        return offsets.get(node.id, frozenset())
    if isinstance(node, ast.Call):
        value = _hinted_value(node)
        return frozenset() if value is None else _block_offsets(value, offsets)
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Mod):
        return _block_offsets(node.left, offsets) | _block_offsets(node.right, offsets)
    if isinstance(node, ast.UnaryOp):
        return _block_offsets(node.operand, offsets)
    if isinstance(node, ast.Subscript):
        return _block_offsets(node.value, offsets)
    if isinstance(node, ast.IfExp):
        return _block_offsets(node.body, offsets) & _block_offsets(node.orelse, offsets)
    return frozenset()


def _offsets_by_name(values: dict[str, list[ast.expr]]) -> Offsets:
    """The block offsets of each name, counting only those that every assigned value holds: `p_beta` over `o_v` in one
    branch and a scalar in the other holds none. An arange's text stays with the name that holds it, so that two
    names over the same block size are two offsets."""
    offsets: Offsets = {}
    # The offsets that any value holds first, then narrowed to those all values hold; `p += d` keeps those of `p`.
    for combine in (frozenset.union, frozenset.intersection):
        changed = True
        while changed:
            changed = False
            for name, assigned in values.items():
                held = combine(*(_block_offsets(value, offsets) for value in assigned))
                named = frozenset({name, *(key for key in held if key.isidentifier())}) if held else frozenset()
                if named != offsets.get(name, frozenset()):
                    offsets[name], changed = named, True
    return offsets


def _compared_offset(node: ast.expr, offsets: Offsets) -> str | None:
    """The block offset that `node` is as it stands, through subscripts and casts (`o_k[:, None]`), else None."""
    while isinstance(node, ast.Subscript) or (isinstance(node, ast.Call) and _hinted_value(node) is not None):
        node = node.value if isinstance(node, ast.Subscript) else _hinted_value(node)
    if _is_block_arange(node):
        return ast.unparse(node)
    return node.id if isinstance(node, ast.Name) and offsets.get(node.id) else None


def _dimension_bounds(mask: ast.expr, values: dict[str, list[ast.expr]], offsets: Offsets,
                      seen: frozenset[str] = frozenset()) -> dict[str, str]:
    """Block offset -> the dimension that `mask` holds it below: `o_k < K` gives `{'o_k': 'K'}`, and so do
    `mask_k[:, None] & m_t` and a name assigned `o_k < K` on every path. Only an offset compared as it stands counts,
    and only against a dimension: `i_t * BT + o_i < T` bounds rows that start elsewhere, and `o_i < BT` compares two
    block sizes, not a block with the end of its data."""
    if isinstance(mask, ast.Name):
        if mask.id in seen or mask.id not in values:
            return {}
        paths = [_dimension_bounds(value, values, offsets, seen | {mask.id}) for value in values[mask.id]]
        return {key: bound for key, bound in paths[0].items() if all(key in path for path in paths)}
    if isinstance(mask, ast.Subscript):
        return _dimension_bounds(mask.value, values, offsets, seen)
    if isinstance(mask, (ast.BinOp, ast.BoolOp)) and isinstance(mask.op, (ast.BitAnd, ast.And)):
        parts = [mask.left, mask.right] if isinstance(mask, ast.BinOp) else mask.values
        return {key: bound for part in parts for key, bound in _dimension_bounds(part, values, offsets, seen).items()}
    if not isinstance(mask, ast.Compare):
        return {}
    bounds = {}
    sides = [mask.left, *mask.comparators]
    for left, operator, right in zip(sides[:-1], mask.ops, sides[1:], strict=True):
        if not isinstance(operator, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            continue
        below, bound = (left, right) if isinstance(operator, (ast.Lt, ast.LtE)) else (right, left)
        offset = _compared_offset(below, offsets)
        if offset is not None and not _block_offsets(bound, offsets) and not _is_block_size(bound):
            bounds[offset] = ast.unparse(bound)
    return bounds


def _memory_accesses(function: ast.FunctionDef) -> Iterator[tuple[ast.Call, ast.expr, ast.expr | None]]:
    """`(call, pointer, mask)` of each `tl.load` / `tl.store` in `function`; mask is None when none is given."""
    for node in ast.walk(function):
        if not (isinstance(node, ast.Call) and dotted_name(node.func) in _MEMORY_ACCESSES):
            continue
        keywords = {keyword.arg: keyword.value for keyword in node.keywords}
        position = _MASK_POSITION[last_name(node.func)]
        pointer = node.args[0] if node.args else keywords.get('pointer')
        mask = keywords.get('mask', node.args[position] if len(node.args) > position else None)
        if pointer is not None:
            yield node, pointer, None if isinstance(mask, ast.Constant) and mask.value is None else mask


def _mask_to_copy(masked: list[MaskedAccess], overrun: Set[str]) -> tuple[ast.Call, ast.expr, bool]:
    """`(call, mask, fits)` of the masked access to point to among those bounding an offset in `overrun`: first one
    whose mask bounds exactly those offsets (`fits`: its mask has the shape to copy), then a plain name such as
    `mask_k` over an expression, then the first in the source."""
    candidates = [(call, mask, bounds.keys() == overrun) for call, mask, bounds in masked if bounds.keys() & overrun]
    return min(candidates, key=lambda candidate: (not candidate[2], not isinstance(candidate[1], ast.Name),
                                                  candidate[0].lineno, candidate[0].col_offset))


@rule('TRI005', 'Unmasked access past a dimension', 'error',
      'mask it as the kernel masks its other accesses through the same offset: `mask=<that mask>, other=0` for a load')
def unmasked_block_offsets(context: Context) -> Iterator[Violation]:
    """Checks that a `tl.load` / `tl.store` without a mask does not address memory through a block offset that the same
    kernel bounds by a mask elsewhere.

    A block offset is a `tl.arange(0, B...)` over a compile-time block size (`BK`, `BT`), inline or held by a name
    assigned in the kernel (`o_k = i_k * BK + tl.arange(0, BK)`), followed through arithmetic, subscripts, casts and
    the names built from it (`p_g = g + (bos * HV + i_hv) * K + o_k`, `p_g += HV * K`). An access is reported when its
    pointer holds such an offset, it has no `mask`, and another access of the kernel through the same offset has a
    mask that bounds it by a dimension (`mask_k = o_k < K`, also inside `mask_k[:, None] & mask_v[None, :]`): that
    mask is the kernel's own statement that the block can pass the end of the dimension. To keep findings certain, an
    offset counts only when the pointer or mask holds it on every path (`p_beta` over `o_v` when `IS_BETA_HEADWISE`
    and a scalar otherwise holds none), `o % K`, `tl.minimum` and loaded values end an offset, and a comparison bounds
    only an offset compared as it stands (`o_k < K`, not `i_t * BT + o_i < T`) against a dimension (not `o_i < BT`).
    Not reported: an offset that no access masks, a range over the dimension itself (`tl.arange(0, K)`), block
    pointers (their `boundary_check` is another matter), and an access whose mask bounds only some of its offsets.

    Block sizes are powers of two (`BK = triton.next_power_of_2(K)`) and dimensions need not be: the lanes past the end
    read the next row or another allocation and feed it into the result (the gate of the next head, NaN from freed
    memory), or write over it. No test at a power-of-two size sees it.

    Example: `b_q = tl.load(p_q, mask=mask_k, other=0)` and, in the same kernel, `b_g = tl.load(p_g)` with
    `p_g = g + (bos * HV + i_hv) * K + o_k`.

    Instead: `b_g = tl.load(p_g, mask=mask_k, other=0)`.
    """
    for source in context.sources('*.py'):
        if source.tree is None or 'arange' not in source.text:
            continue
        for function, _ in _jit_functions(source.tree):
            values = _assigned_values(function)
            offsets = _offsets_by_name(values)
            accesses = [(call, _block_offsets(pointer, offsets), mask) for call, pointer, mask in _memory_accesses(function)]
            masked: list[MaskedAccess] = []
            for call, reached, mask in accesses:
                if mask is not None:
                    bounds = _dimension_bounds(mask, values, offsets)
                    masked.append((call, mask, {key: bound for key, bound in bounds.items() if key in reached}))
            for call, reached, mask in accesses:
                overrun = {key: bound for _, _, bounds in masked for key, bound in bounds.items() if key in reached}
                if mask is not None or not overrun:
                    continue
                other, other_mask, fits = _mask_to_copy(masked, overrun.keys())
                passing = ', '.join(f'`{key}` can pass `{bound}`' for key, bound in sorted(overrun.items()))
                fill = ', other=0' if last_name(call.func) == 'load' else ''
                advice = f'; add `mask={ast.unparse(other_mask)}{fill}`' if fits else ''
                yield Violation(source.path, call.lineno, f'`{_snippet(call)}` has no mask, but {passing}: line '
                                                          f'{other.lineno} masks it with `{_snippet(other_mask)}`{advice}',
                                column=call.col_offset, anchors=tuple(range(call.lineno, call.end_lineno + 1)))
