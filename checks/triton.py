# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Rules for Triton kernels: how they address memory, specialize and declare compile-time values (their int64 indexing
is checked in `indices`)."""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterator, Set

from mrbot.compile import BLOCK_SIZE_NAME
from mrbot.rules import Context, Violation, dotted_name, last_name, rule

_BLOCK_POINTER_APIS = ('make_block_ptr', 'advance')
# Where kernels for Huawei's Ascend NPUs live: triton-ascend compiles them, which needs block pointers and launches at
# most 65535 programs on every grid axis.
ASCEND_PATH = re.compile(r'(?:^|/)(?:\w+_)?(?:ascend|npu)(?:_\w+)?(?:/|\.py$)')
# `BH` and `BH_...` count batch x heads, a runtime value that would recompile the kernel per batch size as a constexpr.
_COMPILE_TIME_NAME = re.compile(r'^(?:B(?!H(?:_|$))[A-Z0-9][A-Z0-9_]*|(?:USE|IS|HAS)_[A-Z0-9_]*)$')
_SNIPPET_LENGTH = 60


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


def jit_functions(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef, ast.expr]]:
    for node in _statements(tree):
        if isinstance(node, ast.FunctionDef):
            decorator = _jit_decorator(node)
            if decorator is not None:
                yield node, decorator


def _positional_parameters(function: ast.FunctionDef) -> list[ast.arg]:
    return [*function.args.posonlyargs, *function.args.args]


def snippet(node: ast.AST) -> str:
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
    do not count. Kernels for Ascend NPUs (a path naming `ascend` or `npu`, as `backends/triton_ascend/`) are not
    checked: triton-ascend still requires block pointers. A use is new where its function did not have it at the base
    (each function's uses matched in order by what they call): a fix to the arguments of a block pointer a kernel
    already had is not asked to migrate the kernel.

    Block pointers hide the offsets and the boundary handling that a reviewer needs to see, and how they lower differs
    across Triton versions and backends; explicit offset vectors with masks state every bound in the kernel itself.

    Example: `p_q = tl.make_block_ptr(q, (T, K), (H * K, 1), (i_t * BT, 0), (BT, BK), (1, 0))` followed by
    `p_q = tl.advance(p_q, (BT, 0))`.

    Instead: `o_t = i_t * BT + tl.arange(0, BT)` and `tl.load(q + o_t[:, None] * H * K + o_k[None, :], mask=m_tk)`.
    """
    for source in context.sources('*.py'):
        tree = source.tree
        if tree is None or not any(api in source.text for api in _BLOCK_POINTER_APIS) or ASCEND_PATH.search(source.path):
            continue
        imports_triton = _imports_triton(tree)
        base = source.file.trees[0] if source.file.trees else None
        for node in _new_block_pointer_uses(tree, base, imports_triton):
            yield Violation(source.path, node.lineno, f'`{dotted_name(node)}` addresses memory through a block pointer',
                            column=node.col_offset)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] == 'triton':
                for alias in node.names:
                    if alias.name in _BLOCK_POINTER_APIS:
                        yield Violation(source.path, node.lineno, f'`{alias.name}` imported from `{node.module}`: block '
                                                                  'pointers are not used here', column=node.col_offset)


def _block_pointer_uses(tree: ast.Module | None, imports_triton: bool) -> list[tuple[str, ast.Attribute]]:
    """Each `<name>.make_block_ptr` (and `<name>.advance` where the file imports triton) with the name of the function
    it is in ('' at module level)."""
    uses = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if (isinstance(child, ast.Attribute) and child.attr in _BLOCK_POINTER_APIS and dotted_name(child)
                    and (child.attr == 'make_block_ptr' or imports_triton)):
                uses.append((function, child))
            visit(child, inner)

    if tree is not None:
        visit(tree, '')
    return uses


def _new_block_pointer_uses(tree: ast.Module, base: ast.Module | None, imports_triton: bool) -> list[ast.Attribute]:
    """The uses of `tree` that its function did not have at `base`: each function's uses in order, matched to the
    base's by what they call, and those left over."""
    before: dict[str, list[str]] = {}
    for function, node in _block_pointer_uses(base, imports_triton):
        before.setdefault(function, []).append(node.attr)
    now: dict[str, list[ast.Attribute]] = {}
    for function, node in _block_pointer_uses(tree, imports_triton):
        now.setdefault(function, []).append(node)
    new = []
    for function, nodes in now.items():
        matcher = difflib.SequenceMatcher(a=before.get(function, []), b=[node.attr for node in nodes], autojunk=False)
        matched = {block.b + k for block in matcher.get_matching_blocks() for k in range(block.size)}
        new += [node for index, node in enumerate(nodes) if index not in matched]
    return sorted(new, key=lambda node: (node.lineno, node.col_offset))


def cast_target(node: ast.expr) -> tuple[ast.expr, ast.expr | None] | None:
    """`(value, dtype)` when `node` is `value.to(dtype)` or `tl.cast(value, dtype)`, else None."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    keywords = {k.arg: k.value for k in node.keywords}
    if node.func.attr == 'to':
        return node.func.value, node.args[0] if node.args else keywords.get('dtype')
    if node.func.attr == 'cast' and dotted_name(node.func) and node.args:
        return node.args[0], node.args[1] if len(node.args) > 1 else keywords.get('dtype')
    return None


def is_block_size(node: ast.expr) -> bool:
    """Whether `node` is a compile-time block size (`BT`, `BK`), an integer literal, or a product of them."""
    if isinstance(node, ast.Name):
        return bool(BLOCK_SIZE_NAME.match(node.id))
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return is_block_size(node.left) and is_block_size(node.right)
    return False


def bound_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in bound_names(element)]
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    return []


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
    setting does nothing there. The finding is reported at `T` and also appears when only the decorator changed. A
    kernel that takes the number of chunks as `NT: tl.constexpr` compiles for every length by design, and listing `T`
    would change nothing: it is not reported.

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
        for function, decorator in jit_functions(source.tree):
            length = next((a for a in _positional_parameters(function) if a.arg == 'T'), None)
            if length is None or _unspecialized(decorator, function, 'T') or _chunks_at_compile_time(function):
                continue
            if 'kernel' not in function.name:
                launched = _launched_kernels(source.tree) if launched is None else launched
                if function.name not in launched:
                    continue
            anchors = (*range(decorator.lineno, decorator.end_lineno + 1), length.lineno)
            yield Violation(source.path, length.lineno, f'kernel `{function.name}` specializes on the sequence length '
                                                        '`T`: every new length compiles a new kernel',
                            column=length.col_offset, anchors=anchors)


# Calls whose arguments shape a block and must be known when the kernel compiles.
_BUILTINS = frozenset({'range', 'min', 'max', 'abs', 'int', 'float', 'len', 'print'})
_SHAPING_CALLS = frozenset({'arange', 'zeros', 'full', 'reshape', 'view', 'broadcast_to', 'make_block_ptr',
                            'static_range', 'make_tensor_descriptor', 'split', 'join', 'permute', 'trans'})


def _shaping_names(function: ast.FunctionDef) -> set[str]:
    """The names that go into a block's shape in `function`: the arguments of a call of `_SHAPING_CALLS`, or of a
    call of a plain name other than a builtin (a jit helper may shape with them)."""
    names = set()
    for node in ast.walk(function):
        called = dotted_name(node.func) if isinstance(node, ast.Call) else None
        if isinstance(node, ast.Call) and (last_name(node.func) in _SHAPING_CALLS
                                           or (called and '.' not in called and called not in _BUILTINS)):
            names |= {n.id for argument in [*node.args, *(k.value for k in node.keywords)]
                      for n in ast.walk(argument) if isinstance(n, ast.Name)}
    return names


def _chunks_at_compile_time(function: ast.FunctionDef) -> bool:
    """Whether the kernel takes the number of chunks of its sequence (`NT`, `NC`) as a compile-time value."""
    return any(p.arg in ('NT', 'NC') and _is_constexpr(p.annotation)
               for p in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs))


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
    `tl.constexpr` or `triton.language.constexpr`. A block-size name that shapes nothing, used only as a loop bound or
    in arithmetic (`BS = cdiv(T, NS)`, computed by the launcher for every call), is a runtime count on purpose and is
    not reported.

    Without the annotation the value arrives as a runtime integer: `tl.arange(0, BT)` fails to compile, and a flag in
    `if USE_G:` becomes a branch in the compiled code instead of removing the dead path. The naming convention is how a
    reader knows which values shape the compiled kernel.

    Example: `def chunk_fwd_kernel(q, k, T, BT, USE_G):`.

    Instead: `def chunk_fwd_kernel(q, k, T, BT: tl.constexpr, USE_G: tl.constexpr):`.
    """
    for source in context.sources('*.py'):
        if source.tree is None:
            continue
        for function, _ in jit_functions(source.tree):
            arguments = function.args
            shaping = _shaping_names(function)
            for parameter in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
                name = parameter.arg
                # a block size that shapes nothing (a loop's bound, say) may be a runtime count on purpose
                if name.startswith('B') and name not in shaping:
                    continue
                if _COMPILE_TIME_NAME.match(name) and not _is_constexpr(parameter.annotation):
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
        for name in bound_names(target):
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
        and isinstance(node.args[1], ast.Name) and bool(BLOCK_SIZE_NAME.match(node.args[1].id))


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
        if offset is not None and not _block_offsets(bound, offsets) and not is_block_size(bound):
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
        for function, _ in jit_functions(source.tree):
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
                yield Violation(source.path, call.lineno, f'`{snippet(call)}` has no mask, but {passing}: line '
                                                          f'{other.lineno} masks it with `{snippet(other_mask)}`{advice}',
                                column=call.col_offset, anchors=tuple(range(call.lineno, call.end_lineno + 1)))
