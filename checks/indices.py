# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""TRI002: a program id multiplied in int32 where the product can pass 2**31, followed through each kernel, the jit
helpers it calls, branches, loops and unpacking."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from checks.triton import ASCEND_PATH, bound_names, cast_target, is_block_size, jit_functions, snippet
from mrbot.rules import Context, Violation, last_name, rule

# int32 holds values below 2**31: a product whose factors together can pass this many bits wraps.
_LIMIT_BITS = 31
# The largest launch the bounds below allow for (log2 of each extent): 4M tokens in one launch or one sequence (22),
# 16K sequences (14), 128 heads (7), a head's features 512 (9), a model's width 16K (14), 256-wide blocks (8). A
# tensor of tokens x heads x features at these sizes is far past 2**31 elements, a tensor of tokens x heads is not.
_TOKENS, _SEQUENCES, _HEADS, _HEAD_FEATURES, _WIDTH = 22, 14, 7, 9, 14
# A sequence's chunks: its tokens in blocks of at least 4.
_CHUNKS = _TOKENS - 2
# How many bits a program id takes by what it counts, from the name it is given (the house's `i_*` vocabulary): feature
# tiles and the sub-chunks of a chunk a handful, a head or group up to the heads, a batch row or sequence up to the
# sequences, a chunk of a sequence up to its tokens, batch times heads both; a program id under another name as many
# as a launch has rows.
_PROGRAM_ID_BITS = (
    (re.compile(r'^(?:i|pid)_(?:bh|nh|bhq|nhq|bhv|nhv|bg|ng|bn)(?:_\w+)?$'), _SEQUENCES + _HEADS),
    (re.compile(r'^(?:i|pid)_(?:k|v|d|kv|dk|dv|i|j)(?:_\w+)?$'), 4),
    (re.compile(r'^(?:i|pid)_(?:h|hq|hv|hk|hkv|g|hg|head)(?:_\w+)?$'), _HEADS),
    (re.compile(r'^(?:i|pid)_(?:b|n|batch|seq)$'), _SEQUENCES),
    (re.compile(r'^(?:i|pid)_(?:t|c|s|chk|chunk|ti|tg|tc|cs|ts)(?:_\w+)?$'), _CHUNKS),
)
_PROGRAM_ID_DEFAULT_BITS = _TOKENS
# A grid's second and third axes hold at most 65535 programs on NVIDIA GPUs, and every axis does on Ascend NPUs, whose
# kernels live under a path naming them.
_LATER_AXIS_BITS = 16
# The key of a function's taint that holds the bits of its grid's first axis: no Python name has a space.
_FIRST_AXIS = ' first axis'
# How many bits a size or offset that no program id made takes, by its name: block sizes, feature-block counts, the
# feature sizes of a head, a head's stride (the [..., H, K] layout) and a feature's, other feature sizes and a row's
# stride (a model's width), head counts, batch and sequence counts, chunk counts, the offsets of a grid launched in
# parts, sequence lengths, token offsets; another stride, or a runtime name not listed, can be anything. A
# compile-time parameter not listed is taken for a feature size.
# Head counts and sequence lengths, attention's query and key sides among them (`HQ`, `Hq`, `TQ`, `TK`).
_HEAD_COUNT = re.compile(r'^(?:H|HQ|HV|HK|HKV|Hq|Hv|Hk|Hkv|G|NH|NG|NUM_HEADS)$')
_LENGTH = re.compile(r'^(?:T|TQ|TK|TKV|Tq|Tk|L|S|seq_len|T_\w+)$')
_ROW_STRIDE = re.compile(r'^(?:\w+_)?stride_(?:\w+_)?row$|^\w+_row_stride$')
_SIZE_BITS = (
    (re.compile(r'^B[A-Z0-9][A-Z0-9_]*$'), 8),
    (re.compile(r'^N[KV]$'), 4),
    (re.compile(r'^(?:K|V|DK|DV|HD|HEAD_DIM)$'), _HEAD_FEATURES),
    (re.compile(r'^(?:\w+_)?stride(?:_\w+)?_(?:h|hq|hv|hk|head|d|k|v)$|^s_(?:h|d|k|v)$'), _HEAD_FEATURES),
    (re.compile(r'^(?:D|W)$'), _WIDTH),
    (_ROW_STRIDE, _WIDTH),
    (_HEAD_COUNT, _HEADS),
    (re.compile(r'^(?:B|N|NB)$'), _SEQUENCES),
    (re.compile(r'^(?:NT|NC|NS|TC)$'), _CHUNKS),
    (re.compile(r'^[A-Z][A-Z0-9]*_OFFSET$'), _TOKENS),
    (_LENGTH, _TOKENS),
    (re.compile(r'^max_seqlen$'), _TOKENS),
    (re.compile(r'^(?:all|bos|eos|boh|boc)$'), _TOKENS),
)
# A compile-time value: a block, a feature size, a count of levels or heads; the kernel compiles once per value.
_CONSTEXPR_BITS = 13
_UNBOUNDED_BITS = 64
# The house's name for a block of data (`b_q`, `b_gamma`): a value, not an index.
_DATA_NAME = re.compile(r'^b_\w+$')
# What a value counts, read from the names it is made of: rows of a batch (or sequences), heads, the tokens of a
# sequence, its chunks.
_KINDS = (
    ('rows', re.compile(r'^(?:i|pid)_(?:b|n|batch|seq|bh|nh|bhq|nhq|bhv|nhv|bg|ng|bn)$|^(?:B|N|NB)$')),
    ('heads', re.compile(rf'^(?:i|pid)_(?:h|hq|hv|hk|hkv|g|hg|head|bh|nh|bhq|nhq|bhv|nhv|bg|ng)(?:_\w+)?$'
                         rf'|{_HEAD_COUNT.pattern}')),
    ('length', _LENGTH),
    ('chunks', re.compile(r'^(?:NT|NC|NS|TC)$')),
    ('width', re.compile(r'^D$')),
    ('row stride', _ROW_STRIDE),
)
# Kinds that two factors of a product count within each other, and the bits that takes off their sum: a batch row
# times a sequence length is a token offset, times the chunks of a sequence a chunk offset (either at most the tokens
# of a launch), and a width beside heads is a head's features.
_WITHIN = (('rows', 'length', _SEQUENCES), ('rows', 'chunks', _SEQUENCES + _CHUNKS - _TOKENS),
           ('heads', 'width', _WIDTH - _HEAD_FEATURES))
_LENGTH_NAME = _KINDS[2][1]
_TILE_NAME = re.compile(r'^(?:i|pid)_(?:t|c|s|chk|chunk|ti|tg|tc|cs|ts)(?:_\w+)?$')
_BLOCK_NAME = re.compile(r'^B[A-Z0-9][A-Z0-9_]*$')
# Calls whose result is an index computed from their arguments, so a narrow program id stays narrow through them.
_INDEX_FUNCTIONS = frozenset({'abs', 'cdiv', 'int', 'max', 'max_contiguous', 'maximum', 'min', 'minimum', 'multiple_of',
                              'range', 'static_range', 'where'})
# Nodes through which an offset expression goes on: a finding is made once for all of it.
_ARITHMETIC = (ast.BinOp, ast.UnaryOp, ast.Subscript, ast.IfExp)


@dataclass(frozen=True)
class Index:
    """What a value holds as an index: `lines` where a program id still in int32 entered it, `bits` how large it can
    get (log2), `wide` where it is int64, which Triton makes every sum or product it enters, `row_of` and `kinds`."""

    lines: frozenset[int] = frozenset()
    bits: int = 0
    wide: bool = False
    # the size a flat offset was divided by (`row = offs // D`): times the stride of such rows, it is the offset again
    row_of: str = ''
    # what it counts (see _KINDS)
    kinds: frozenset[str] = frozenset()

    @property
    def narrow(self) -> bool:
        return bool(self.lines) and not self.wide


# Name -> what it holds, within one function.
Taint = dict[str, Index]
# Reported multiplication -> its operand derived from a program id, and the lines where that program id was read.
Found = dict[ast.AST, tuple[ast.expr, frozenset[int]]]


@dataclass
class Calls:
    """The jit functions of a file, and what each call of one in the file passes to each of its parameters."""

    functions: dict[str, ast.FunctionDef]
    passed: dict[str, Taint] = field(default_factory=dict)

    def record(self, call: ast.Call, taint: Taint) -> None:
        callee = self.functions.get(last_name(call.func) or '')
        if callee is None:
            return
        parameters = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
        # a call passing more than the parameters (a *args helper) binds the ones it can
        given = [*zip(parameters, call.args, strict=False), *((k.arg, k.value) for k in call.keywords if k.arg)]
        passed = self.passed.setdefault(callee.name, {})
        for name, value in given:
            index = _index(value, taint)
            passed[name] = _either(passed[name], index) if name in passed else index


def _name_bits(name: str, table: tuple[tuple[re.Pattern[str], int], ...], default: int) -> int:
    return next((bits for pattern, bits in table if pattern.match(name)), default)


def _joined(parts: list[Index], bits: int) -> Index:
    """An arithmetic result of `parts` of `bits` bits: int64 where any part is, else narrow from every narrow part;
    it counts what they count."""
    kinds = frozenset().union(*(part.kinds for part in parts))
    if any(part.wide for part in parts):
        return Index(bits=bits, wide=True, kinds=kinds)
    return Index(frozenset().union(*(part.lines for part in parts)), bits, kinds=kinds)


def _either(one: Index, other: Index) -> Index:
    """What a name holds after two paths: int64 only where both made it so."""
    return Index(one.lines | other.lines, max(one.bits, other.bits), one.wide and other.wide,
                 kinds=one.kinds | other.kinds)


def _kinds(name: str) -> frozenset[str]:
    return frozenset(kind for kind, pattern in _KINDS if pattern.match(name))


def _counted(node: ast.expr) -> str:
    """The name `node` counts by: its own, or for `tl.cdiv(T, BT)` the chunks of a sequence, as `NT` does."""
    if isinstance(node, ast.Call) and last_name(node.func) == 'cdiv' and node.args and isinstance(node.args[0], ast.Name):
        return 'NT' if _LENGTH_NAME.match(node.args[0].id) else ''
    return node.id if isinstance(node, ast.Name) else ''


def _factors(node: ast.expr) -> list[ast.expr]:
    """The factors of a chain of multiplications (`i_b * H * T` has three), or `node` alone."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return [*_factors(node.left), *_factors(node.right)]
    return [node]


def _product_bits(left: ast.expr, right: ast.expr, taint: Taint) -> int:
    """The bits of `left * right`: those of its factors, fewer where two of them count rows within each other."""
    factors = [*_factors(left), *_factors(right)]
    indices = [_index(factor, taint) for factor in factors]
    bits = [index.bits for index in indices]
    counted = [_counted(factor) for factor in factors]
    total, paired = sum(bits), set()
    # a row of a flat offset (`offs // D`) times the stride of its rows is that offset again
    for i, j in ((i, j) for i in range(len(factors)) for j in range(len(factors)) if i != j):
        if not {i, j} & paired and indices[i].row_of and 'row stride' in indices[j].kinds | _kinds(counted[j]):
            total -= bits[j]
            paired |= {i, j}
    # a tile times its block size is a position in the dimension it tiles; in a longer product the block may be a
    # row's width instead (`i_t * HV * BT` over [T, HV, BT])
    if len(factors) == 2 and any(_TILE_NAME.match(counted[i]) and _BLOCK_NAME.match(counted[1 - i]) for i in (0, 1)):
        return min(total, _TOKENS)
    # `x // T * T` is at most `x`
    for i, j in ((i, j) for i in range(len(factors)) for j in range(len(factors)) if i != j):
        factor = factors[i]
        if (not {i, j} & paired and isinstance(factor, ast.BinOp) and isinstance(factor.op, ast.FloorDiv)
                and ast.dump(factor.right) == ast.dump(factors[j])):
            total -= max(bits[i] + bits[j] - _index(factor.left, taint).bits, 0)
            paired |= {i, j}
    kinds = [index.kinds | _kinds(name) for index, name in zip(indices, counted, strict=True)]
    for one, other, fewer in _WITHIN:
        for i, j in ((i, j) for i in range(len(factors)) for j in range(len(factors)) if i != j):
            # a factor that counts both already holds the one within the other
            if {i, j} & paired or not (one in kinds[i] - kinds[j] and other in kinds[j] - kinds[i]):
                continue
            total -= min(fewer, bits[i], bits[j])
            paired |= {i, j}
    return total


def _binary(node: ast.BinOp, taint: Taint) -> Index:
    left, right = _index(node.left, taint), _index(node.right, taint)
    constant = node.right.value if isinstance(node.right, ast.Constant) and isinstance(node.right.value, int) else None
    if isinstance(node.op, ast.Mult):
        bits = _product_bits(node.left, node.right, taint)
    elif isinstance(node.op, (ast.Add, ast.Sub)):
        bits = max(left.bits, right.bits) + 1
    elif isinstance(node.op, (ast.Mod, ast.BitAnd)):
        bits = min(left.bits, right.bits)
    elif isinstance(node.op, ast.RShift) and constant is not None:
        bits = max(left.bits - constant, 0)
    elif isinstance(node.op, ast.LShift) and constant is not None:
        bits = left.bits + constant
    elif isinstance(node.op, (ast.FloorDiv, ast.BitOr, ast.BitXor)):
        bits = max(left.bits, right.bits)
    else:
        bits = _UNBOUNDED_BITS
    joined = _joined([left, right], bits)
    if isinstance(node.op, ast.FloorDiv) and isinstance(node.right, ast.Name) and right.bits <= _WIDTH:
        return Index(joined.lines, joined.bits, joined.wide, node.right.id)
    return joined


def _call(node: ast.Call, taint: Taint) -> Index:
    cast = cast_target(node)
    if cast is not None:
        value, dtype = cast
        index = _index(value, taint)
        if dtype is not None and last_name(dtype) in ('int64', 'uint64'):
            return Index(bits=index.bits, wide=True)
        floating = (last_name(dtype) or '').startswith(('float', 'bfloat')) if dtype is not None else False
        return Index(bits=index.bits) if floating else Index(index.lines, index.bits)
    function = last_name(node.func)
    if function == 'program_id':
        axis = next((a.value for a in [*node.args[:1], *(k.value for k in node.keywords if k.arg == 'axis')]
                     if isinstance(a, ast.Constant)), 0)
        first = taint.get(_FIRST_AXIS, Index(bits=_PROGRAM_ID_DEFAULT_BITS)).bits
        return Index(frozenset({node.lineno}), _LATER_AXIS_BITS if axis in (1, 2) else first)
    arguments = [*node.args, *(k.value for k in node.keywords)]
    if function == 'arange' and arguments:
        return Index(bits=_index(arguments[-1], taint).bits)
    if function not in _INDEX_FUNCTIONS or not arguments:
        return Index(bits=_UNBOUNDED_BITS)
    parts = [_index(argument, taint) for argument in arguments]
    if function in ('min', 'minimum'):
        bits = min(part.bits for part in parts)
    elif function in ('multiple_of', 'max_contiguous', 'cdiv', 'int', 'abs'):
        bits = parts[0].bits
    else:
        # where(mask, a, b) is a or b; max and range below the largest
        bits = max(part.bits for part in (parts[1:] if function == 'where' else parts))
    return _joined(parts, bits)


def _index(node: ast.AST, taint: Taint) -> Index:
    """What the value of `node` holds as an index. Comparisons make masks, and loads read data: neither carries an
    index on."""
    if isinstance(node, ast.Constant):
        value = node.value
        return Index(bits=max(value.bit_length(), 1) if isinstance(value, int) and not isinstance(value, bool) else 0)
    if isinstance(node, ast.Name):
        return taint.get(node.id) or Index(bits=_name_bits(node.id, _SIZE_BITS, _UNBOUNDED_BITS), kinds=_kinds(node.id))
    if isinstance(node, ast.BinOp):
        return _binary(node, taint)
    if isinstance(node, ast.UnaryOp):
        return _index(node.operand, taint)
    if isinstance(node, ast.Subscript):
        return _index(node.value, taint)
    if isinstance(node, ast.Call):
        return _call(node, taint)
    if isinstance(node, ast.IfExp):
        return _either(_index(node.body, taint), _index(node.orelse, taint))
    if isinstance(node, (ast.Tuple, ast.List)):
        parts = [_index(e, taint) for e in node.elts]
        return Index(frozenset().union(*(p.lines for p in parts if not p.wide)), max((p.bits for p in parts), default=0))
    if isinstance(node, ast.Attribute):
        return Index(bits=_UNBOUNDED_BITS)
    return Index()


def _loop_index(iterable: ast.expr, taint: Taint) -> Index:
    """What a `for` over `iterable` binds: an index of `range(start, stop)` is below `stop`, and narrow from `start`,
    and from `stop` unless a block size bounds it (`range(0, tl.minimum(BC, T - i_t * BT))`)."""
    if not (isinstance(iterable, ast.Call) and last_name(iterable.func) in ('range', 'static_range')
            and iterable.args):
        return _index(iterable, taint)
    start, stop = (iterable.args[0], iterable.args[1]) if len(iterable.args) > 1 else (None, iterable.args[0])
    bounded = is_block_size(stop) or (isinstance(stop, ast.Call) and last_name(stop.func) in ('min', 'minimum')
                                       and any(is_block_size(argument) for argument in stop.args))
    limit = _index(stop, taint)
    parts = ([] if start is None else [_index(start, taint)]) + ([] if bounded else [limit])
    return _joined(parts, limit.bits) if parts else Index(bits=limit.bits)


def _named(name: str, index: Index) -> Index:
    """`index` as held by `name`: bounded by what the name says it counts (`i_h` a head, `bos` a token offset), or no
    index at all where the name says it holds data (`b_gamma`)."""
    if _DATA_NAME.match(name):
        return Index()
    bound = _name_bits(name, _PROGRAM_ID_BITS, _name_bits(name, _SIZE_BITS, _UNBOUNDED_BITS))
    return Index(index.lines, min(index.bits, bound), index.wide, index.row_of, _kinds(name) or index.kinds)


def _bindings(target: ast.expr, value: ast.expr, taint: Taint) -> list[tuple[str, Index]]:
    """What assigning `value` to `target` binds; `a, b = x, y` pairs element by element."""
    pairs_up = isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
        and len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
    if pairs_up:
        return [binding for t, v in zip(target.elts, value.elts, strict=True) for binding in _bindings(t, v, taint)]
    index = _index(value, taint)
    return [(name, _named(name, index)) for name in bound_names(target)]


def _assign(statement: ast.stmt, taint: Taint) -> None:
    if isinstance(statement, ast.Assign):
        # every right-hand side is read before any name is bound, as Python does for `a, b = b, a`
        bindings = [b for target in statement.targets for b in _bindings(target, statement.value, taint)]
        taint.update(bindings)
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        taint.update(_bindings(statement.target, statement.value, taint))
    elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        name = statement.target.id
        combined = _binary(ast.BinOp(statement.target, statement.op, statement.value), taint)
        taint[name] = _named(name, combined)


def _parts(node: ast.AST) -> list[ast.AST]:
    """The children of an arithmetic node that its value goes on from (not a subscript's slice, nor a condition)."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.Subscript):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, ast.AugAssign):
        return [node.value]
    return []


def _roots(node: ast.AST) -> Iterator[ast.AST]:
    """The offset expressions under `node`: each arithmetic node whose parent is not arithmetic (a call's argument
    starts one of its own), outside masks."""
    if isinstance(node, ast.Compare):
        return
    if not isinstance(node, (*_ARITHMETIC, ast.AugAssign)):
        for child in ast.iter_child_nodes(node):
            yield from _roots(child)
        return
    yield node
    yield from _inner_roots(node)


def _inner_roots(node: ast.AST) -> Iterator[ast.AST]:
    """The offset expressions that start inside the arithmetic of `node`: in the arguments of its calls."""
    for part in _parts(node):
        if isinstance(part, _ARITHMETIC):
            yield from _inner_roots(part)
        else:
            yield from _roots(part)


def _products(root: ast.AST) -> Iterator[ast.AST]:
    """The multiplications of an offset expression, each before any that holds it."""
    for part in _parts(root):
        if isinstance(part, _ARITHMETIC):
            yield from _products(part)
    if isinstance(root, (ast.BinOp, ast.AugAssign)) and isinstance(root.op, ast.Mult):
        yield root


def _check(expression: ast.AST, taint: Taint, found: Found) -> None:
    """Record in `found`, once for each offset expression in `expression`, the outermost int32 multiplication around
    the first one that takes a narrow program id and can pass int32: the product that is the overflowing address."""
    for root in _roots(expression):
        first = reported = None
        for node in _products(root):
            left, right = (node.left, node.right) if isinstance(node, ast.BinOp) else (node.target, node.value)
            parts = [_index(left, taint), _index(right, taint)]
            narrow = [(operand, part) for operand, part in zip((left, right), parts, strict=True) if part.narrow]
            if not narrow or any(part.wide for part in parts):
                continue
            if first is None and _product_bits(left, right, taint) > _LIMIT_BITS:
                first = node
            # products come inner first, so one holding the first is a larger term of the same address
            if first is not None and any(inner is first for inner in ast.walk(node)):
                reported = (node, (narrow[0][0], narrow[0][1].lines))
        if reported:
            found.setdefault(*reported)


def _merged(first: Taint, second: Taint) -> Taint:
    """Names after two paths: int64 where both made them so, else narrow from either."""
    merged = {}
    for name in first.keys() | second.keys():
        one, two = first.get(name), second.get(name)
        merged[name] = _either(one, two) if one and two else (one or two)
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


def _flow(statements: list[ast.stmt], taint: Taint, found: Found, calls: Calls) -> None:
    """Follow program ids through `statements` in order, recording narrow multiplications in `found` and what each
    call of a jit helper passes in `calls`."""
    for statement in statements:
        for header in _headers(statement):
            _check(header, taint, found)
            for node in ast.walk(header):
                if isinstance(node, ast.Call):
                    calls.record(node, taint)
        if isinstance(statement, ast.If):
            body, orelse = dict(taint), dict(taint)
            _flow(statement.body, body, found, calls)
            _flow(statement.orelse, orelse, found, calls)
            taint.clear()
            taint.update(_merged(body, orelse))
        elif isinstance(statement, (ast.For, ast.While)):
            loop = dict(taint)
            # two passes let a value assigned late in the body reach its uses early in the next iteration
            for _ in range(2):
                if isinstance(statement, ast.For):
                    loop.update((name, _named(name, _loop_index(statement.iter, loop)))
                                for name in bound_names(statement.target))
                _flow(statement.body, loop, found, calls)
            after = _merged(taint, loop)
            _flow(statement.orelse, after, found, calls)
            taint.clear()
            taint.update(after)
        elif isinstance(statement, ast.With):
            _flow(statement.body, taint, found, calls)
        else:
            _assign(statement, taint)


def _annotated(function: ast.FunctionDef) -> Taint:
    """The parameters of `function` whose annotation says what they hold: `tl.constexpr` ones bounded by their names,
    and by `_CONSTEXPR_BITS` whatever the name (a kernel compiles once per value, so no compile-time value is a count
    of tokens; `L` of log-linear attention's levels is not a sequence length); `tl.int64` ones int64, as is every
    product they enter (`T: tl.int64` makes `i_n * T` an int64 offset)."""
    parameters = (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
    annotated: Taint = {}
    for p in parameters:
        kind = last_name(p.annotation) if p.annotation is not None else None
        bits = _name_bits(p.arg, _SIZE_BITS, _UNBOUNDED_BITS)
        if kind == 'constexpr':
            annotated[p.arg] = Index(bits=min(_CONSTEXPR_BITS, bits), kinds=_kinds(p.arg))
        elif kind == 'int64':
            annotated[p.arg] = Index(bits=bits, wide=True, kinds=_kinds(p.arg))
    return annotated


def narrow_products(tree: ast.Module, narrow_grid: bool = False) -> Found:
    """The narrow program-id products of a file's jit functions, whose grids hold at most 65535 programs on every axis
    where `narrow_grid`; a helper's parameters hold what its callers in the file pass them, so a program id is followed
    into the helpers a kernel calls (three levels deep)."""
    first_axis = {_FIRST_AXIS: Index(bits=_LATER_AXIS_BITS if narrow_grid else _PROGRAM_ID_DEFAULT_BITS)}
    functions = {function.name: function for function, _ in jit_functions(tree)}
    passed: dict[str, Taint] = {}
    for _ in range(3):
        found: Found = {}
        calls = Calls(functions)
        for name, function in functions.items():
            _flow(function.body, {**first_axis, **_annotated(function), **passed.get(name, {})}, found, calls)
        if calls.passed == passed:
            break
        passed = calls.passed
    return found


@rule('TRI002', 'Program id multiplied in int32', 'error',
      'cast the program id with `.to(tl.int64)` where it is read, before it meets a size or stride')
def narrow_program_ids(context: Context) -> Iterator[Violation]:
    """Checks that inside `@triton.jit` functions no multiplication of a program id still in int32 can pass 2**31.

    A value is a program id when it is `tl.program_id(...)` or a name assigned from an expression holding one, through
    arithmetic, subscripts, `tl.minimum`-like index functions, loops over `range(...)`, tuple unpacking such as
    `i_k, i_v = tl.program_id(0), tl.program_id(1)`, and the parameters of a jit helper the kernel passes it to.
    `x.to(tl.int64)`, `tl.cast(x, tl.int64)`, a parameter annotated `tl.int64` and arithmetic holding them are
    int64, as Triton promotes int32 with int64.
    Each value is bounded by what it counts, read from its name, in the largest launch the rule allows for: 4M
    tokens in one launch or one sequence, 16K sequences, 128 heads, 512 features a head, a model 16K wide. A program
    id over feature blocks (`i_k`) takes 4 bits, a head (`i_h`, `pid_h`) 7, a batch row or sequence (`i_b`, `i_n`)
    14, a chunk (`i_t`) 20, batch times heads (`i_bh`, `i_nh`) 21, any other 22, and one of a grid's second or third
    axis at most 16 (65535 programs); a block size (`BT`) 8, a head's feature size (`K`, `V`) or stride
    (`k_stride_h`) 9, a model's width (`D`) or a row's stride 14, a head count (`H`, `HQ`) 7, a batch or sequence count
    (`B`, `N`) 14, a chunk count (`NT`) 20, a sequence length (`T`, `TQ`, `T_max`) or a token offset (`bos`, `all`) 22.
    Each value also keeps what it counts (batch rows, heads, a sequence's tokens or chunks), through sums and
    products: a batch row times a sequence length or its chunks (`i_b * T`, `(i_b * H + i_h) * NT`, `i_n *
    tl.cdiv(T, BT)`) is a token or chunk offset, a width beside heads (`(i_n * H + i_h) * D`) a head's features. A
    row of a flat offset (`offs // D`) times its rows' stride is the offset again, and `x // T * T` at most `x`. A
    block of data (`b_gamma`) is no index. A stride not named for a head, a feature or a row, or a name not listed,
    can be anything. A product is reported where its factors together can pass 2**31; once per offset expression
    (the first product of it that can pass 2**31) and once a line. Comparisons make masks, not addresses.

    Program ids are int32, and so is every product of them with int32 sizes: `(i_t * BT + o_t) * H * K` wraps around
    once the tensor holds more than 2**31 elements, and the kernel silently reads and writes the wrong memory. Large
    batches and long packed sequences reach that size on today's GPUs. A head index times a feature size, a batch row
    times a sequence length, or tokens times heads (a per-head gate), stay far below it, cast or not.

    Example: `i_t = tl.program_id(0)` followed by `o_row = i_t * BT + tl.arange(0, BT)` and `q + o_row[:, None] * H * K`.

    Instead: `i_t = tl.program_id(0).to(tl.int64)`, then the same offsets.
    """
    for source in context.sources('*.py'):
        if source.tree is None or 'program_id' not in source.text:
            continue
        found = narrow_products(source.tree, bool(ASCEND_PATH.search(source.path)))
        reported = set()
        for node, (narrow, origins) in sorted(found.items(), key=lambda item: (item[0].lineno, item[0].col_offset)):
            # one finding a line: `bos, eos = i_b * T, i_b * T + T` is one fault
            if node.lineno in reported:
                continue
            reported.add(node.lineno)
            yield Violation(source.path, node.lineno, f'`{snippet(node)}` multiplies `{snippet(narrow)}`, derived '
                                                      f'from `tl.program_id` on line {min(origins)}, without an int64 '
                                                      'cast, and can pass 2**31',
                            column=node.col_offset, anchors=tuple(range(node.lineno, node.end_lineno + 1)))
