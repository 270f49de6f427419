# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Rules for Gluon kernels (`triton.experimental.gluon`): the pitfalls of explicit shared memory, mbarriers, TMA and
MMA that no test on the interpreter sees.

Each rule reads one function at a time and follows names only within it (and, for TMA descriptors, the checks of the
functions it calls and of the module's verifiers). Gluon's operations are matched by their last name
(`fence_async_shared`, `warpgroup_mma`), since the module alias varies, and by the module name before it where one
name has two meanings: `tma.async_copy_global_to_shared` is a TMA load, `async_copy.async_copy_global_to_shared` a
cp.async copy.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from mrbot.rules import Context, SourceFile, Violation, dotted_name, last_name, rule

_GLUON = 'triton.experimental.gluon'
# Methods of a shared-memory descriptor that give a view of the same memory.
_VIEWS = frozenset({'index', 'slice', 'permute', 'reshape', '_reinterpret'})
# Operations the async proxy runs on shared memory written from registers: callee -> (position, keyword) of each
# shared-memory operand it reads.
_ASYNC_READS = {
    'async_copy_shared_to_global': ((2, 'src'),),
    'async_scatter': ((3, 'src'),),
    'warpgroup_mma': ((0, 'a'), (1, 'b')),
    'tcgen05_mma': ((0, 'a'), (1, 'b')),
    'tcgen05_mma_scaled': ((0, 'a'), (1, 'b')),
    'tcgen05_copy': ((0, 'src'),),
}
# tcgen05 operands that may live in tensor memory, where a register store needs no proxy fence.
_TENSOR_MEMORY_OPERANDS = frozenset({('tcgen05_mma', 0), ('tcgen05_mma_scaled', 0)})
# TMA loads into shared memory: callee -> (position, keyword) of the barrier and of the destination buffer.
_TMA_LOADS = {'async_copy_global_to_shared': ((2, 'barrier'), (3, 'result')),
              'async_gather': ((3, 'barrier'), (4, 'result'))}
_SNIPPET_LENGTH = 60


def _snippet(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= _SNIPPET_LENGTH else text[:_SNIPPET_LENGTH - 3] + '...'


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted path it was imported as (`gl` -> `triton.experimental.gluon.language`)."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases[alias.name.split('.')[0]] = alias.name.split('.')[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f'{node.module}.{alias.name}'
    return aliases


def _qualified(node: ast.AST, aliases: dict[str, str]) -> str:
    """The dotted name of `node` with its first part replaced by what it was imported as; '' when not a name."""
    name = dotted_name(node)
    if name is None:
        return ''
    first, _, rest = name.partition('.')
    first = aliases.get(first, first)
    return f'{first}.{rest}' if rest else first


def _is_gluon_jit(function: ast.FunctionDef, aliases: dict[str, str]) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _qualified(target, aliases) == f'{_GLUON}.jit':
            return True
    return False


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _gluon_functions(tree: ast.Module, aliases: dict[str, str]) -> Iterator[ast.FunctionDef]:
    if any(path.startswith(_GLUON) for path in aliases.values()):
        for function in _functions(tree):
            if _is_gluon_jit(function, aliases):
                yield function


@dataclass(frozen=True)
class _Call:
    """A call in a function: the callee's last name, the name before it (`tma` in `tma.store_wait`, '' for a bare
    name or a method of a computed value), and the loops around it, outermost first."""

    node: ast.Call
    name: str
    owner: str
    loops: tuple[ast.For | ast.While, ...]

    @property
    def line(self) -> int:
        return self.node.lineno


def _gluon_kernels(context: Context, word: str) -> Iterator[tuple[SourceFile, dict[str, str], ast.FunctionDef]]:
    """Each `@gluon.jit` function of the Python files whose text holds `word` (a cheap filter before parsing), with
    its file and the file's import aliases."""
    for source in context.sources('*.py'):
        if source.tree is None or word not in source.text:
            continue
        aliases = _aliases(source.tree)
        for function in _gluon_functions(source.tree, aliases):
            yield source, aliases, function


def _calls(function: ast.FunctionDef) -> list[_Call]:
    """Every call in `function`'s body in source order, nested functions left out."""
    found: list[_Call] = []

    def visit(node: ast.AST, loops: tuple[ast.For | ast.While, ...]) -> None:
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                found.append(_Call(node, func.attr, last_name(func.value) or '', loops))
            elif isinstance(func, ast.Name):
                found.append(_Call(node, func.id, '', loops))
        if isinstance(node, (ast.For, ast.While)):
            visit(node.iter if isinstance(node, ast.For) else node.test, loops)
            for statement in (*node.body, *node.orelse):
                visit(statement, (*loops, node))
            return
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                visit(child, loops)

    for statement in function.body:
        visit(statement, ())
    return sorted(found, key=lambda call: (call.node.lineno, call.node.col_offset))


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    return call.args[position] if len(call.args) > position else None


def _keyword(call: ast.Call, keyword: str) -> ast.expr | None:
    return next((item.value for item in call.keywords if item.arg == keyword), None)


def _names(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _assigned(function: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    """Name -> every value `function` assigns to it directly (`a = ...`, `a, b = x, y` element by element)."""
    values: dict[str, list[ast.expr]] = {}

    def bind(target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            values.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
            for index, element in enumerate(target.elts):
                bind(element, value.elts[index] if pairs else value)

    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            bind(node.target, node.value)
    return values


def _once(values: dict[str, list[ast.expr]]) -> dict[str, ast.expr]:
    """The names assigned exactly once, with their value."""
    return {name: assigned[0] for name, assigned in values.items() if len(assigned) == 1}


def _expand(node: ast.expr, once: dict[str, ast.expr]) -> ast.expr:
    """`node`, or the value of the name it is when that name is assigned once (one level)."""
    return once[node.id] if isinstance(node, ast.Name) and node.id in once else node


def _expand_view(node: ast.expr, once: dict[str, ast.expr]) -> ast.expr:
    """`node`, or the view a name assigned once holds (`bar = bars.index(s)`): a name bound to an allocation is the
    allocation itself, so two of them stay two."""
    value = _expand(node, once)
    return value if value is not node and _strip_views(value)[1] else node


def _strip_views(node: ast.expr) -> tuple[ast.expr, bool]:
    """The expression under any views (`a_smem` for `a_smem.index(s).permute((1, 0))`), and whether there were any."""
    viewed = False
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS:
            node, viewed = node.func.value, True
        elif isinstance(node, ast.Subscript):
            node, viewed = node.value, True
        else:
            return node, viewed


def _buffers(function: ast.FunctionDef) -> dict[str, str]:
    """Name -> the buffer it is a view or another name of (`a = a_bufs.index(s)` gives `a` -> `a_bufs`)."""
    views = {}
    for name, assigned in _assigned(function).items():
        bases = {dotted_name(_strip_views(value)[0]) for value in assigned
                 if _strip_views(value)[1] or isinstance(value, (ast.Name, ast.Attribute))}
        if len(bases) == 1 and None not in bases:
            views[name] = bases.pop()
    return views


def _buffer(node: ast.expr | None, views: dict[str, str]) -> str | None:
    """The buffer `node` reads or writes, through views and the names that hold them."""
    if node is None:
        return None
    name = dotted_name(_strip_views(node)[0])
    seen = set()
    while name in views and name not in seen:
        seen.add(name)
        name = views[name]
    return name


def _allocated(function: ast.FunctionDef, allocator: str) -> dict[str, ast.Assign]:
    """Name -> the assignment that allocates it with `allocator` (`allocate_shared_memory`)."""
    found = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and last_name(node.value.func) == allocator:
            found[node.targets[0].id] = node
    return found


@rule('GLU001', 'Shared memory written from registers, then read by TMA or an MMA without a fence', 'error',
      'call `fence_async_shared()` between the register store and the TMA store or MMA that reads the buffer')
def missing_proxy_fence(context: Context) -> Iterator[Violation]:
    """Checks that a shared-memory buffer written from registers (`smem.store(value)`, or
    `gl.allocate_shared_memory(dtype, shape, layout, value)`) in a `@gluon.jit` function is followed by
    `fence_async_shared()` before a TMA store (`tma.async_copy_shared_to_global`, `tma.async_scatter`), an MMA
    (`warpgroup_mma`, `tcgen05_mma`, `tcgen05_mma_scaled`) or a `tcgen05_copy` reads the same buffer.

    A buffer is the allocation a name holds, through views (`.index(s)`, `.slice`, `.permute`, `.reshape`,
    `._reinterpret`) and the names that hold them. The order is the source order within one function: a fence
    anywhere between the store and the read counts, and stores into tensor memory (`allocate_tensor_memory`) are not
    shared memory. Not seen: a store in one warp-specialized partition read in another.

    Register stores go through the generic proxy and TMA, WGMMA and tcgen05 read through the async proxy; the two are
    not ordered with each other, not even by an mbarrier wait or `gl.thread_barrier()`. Without the fence the TMA
    store or the MMA may read the buffer before the values land: wrong results now and then, on some GPUs, which no
    test on the interpreter sees.

    Example: `c_smem.store(b_o.to(gl.bfloat16))` followed by `tma.async_copy_shared_to_global(o_desc, [i_t * BT, 0],
    c_smem)`.

    Instead: `c_smem.store(b_o.to(gl.bfloat16))`, then `fence_async_shared()`, then the
    `tma.async_copy_shared_to_global(o_desc, [i_t * BT, 0], c_smem)`.
    """
    for source, aliases, function in _gluon_kernels(context, 'gluon'):
        views = _buffers(function)
        shared = _allocated(function, 'allocate_shared_memory')
        tensor_memory = set(_allocated(function, 'allocate_tensor_memory'))
        # an allocation given a value is a register store where it is assigned
        filled = sorted((assignment.lineno, name) for name, assignment in shared.items()
                        if _argument(assignment.value, 3, 'value') is not None)
        # buffer -> the line of its register store that no fence has followed yet
        pending: dict[str, int] = {}
        for call in _calls(function):
            while filled and filled[0][0] <= call.line:
                line, name = filled.pop(0)
                pending[name] = line
            if call.name == 'fence_async_shared':
                pending.clear()
            elif call.name == 'store' and isinstance(call.node.func, ast.Attribute) and len(call.node.args) == 1:
                root = _buffer(call.node.func.value, views)
                if root and root.split('.')[0] not in aliases and root not in tensor_memory:
                    pending[root] = call.line
            elif call.name in _ASYNC_READS:
                for position, keyword in _ASYNC_READS[call.name]:
                    root = _buffer(_argument(call.node, position, keyword), views)
                    tensor_operand = (call.name, position) in _TENSOR_MEMORY_OPERANDS and root not in shared
                    if root not in pending or tensor_operand:
                        continue
                    written = pending.pop(root)
                    yield Violation(source.path, call.line, f'`{root}` is written from registers on line {written} '
                                                            f'and read by `{call.name}` here with no '
                                                            '`fence_async_shared()` between',
                                    column=call.node.col_offset, anchors=(written, call.line))


def _loop_targets(loop: ast.For | ast.While) -> set[str]:
    return _names(loop.target) if isinstance(loop, ast.For) else set()


def _varying(loop: ast.For | ast.While) -> set[str]:
    """The names whose value changes from one iteration of `loop` to the next: its own target, names assigned in its
    body from a changing value, and names the body carries (`phase ^= 1`, `state = state.next()`)."""
    varying = set(_loop_targets(loop))
    assignments: list[tuple[set[str], set[str]]] = []
    for statement in loop.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Assign):
                assignments += [(_names(target), _names(node.value)) for target in node.targets]
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                assignments.append((_names(node.target), _names(node.value)))
            elif isinstance(node, (ast.AugAssign, ast.For)):
                varying |= _names(node.target)
            elif isinstance(node, ast.NamedExpr):
                assignments.append(({node.target.id}, _names(node.value)))
    changed = True
    while changed:
        changed = False
        for targets, used in assignments:
            if not targets <= varying and used & (varying | targets):
                varying |= targets
                changed = True
    return varying


def _inside(node: ast.AST, loop: ast.For | ast.While) -> bool:
    return any(child is node for statement in loop.body for child in ast.walk(statement))


@rule('GLU002', 'mbarrier phase not derived from the iteration', 'error',
      'wait for the phase of the iteration: `(i // NUM_BUFFERS) & 1` for a ring of `NUM_BUFFERS` barriers, or a phase '
      'the loop flips when its ring index wraps')
def constant_mbarrier_phase(context: Context) -> Iterator[Violation]:
    """Checks that an `mbarrier.wait(bar, phase)` inside a loop of a `@gluon.jit` function waits for a phase that
    follows the iteration when the loop waits on the same barrier again.

    The loop that matters is the innermost one around the wait that does not pick a different barrier each time
    (`for s in gl.static_range(NUM_BUFFERS): mbarrier.wait(bars.index(s), 0)` waits on each barrier once). Its phase
    must change with the iteration: it uses the loop's variable or a name the loop carries (`phase ^= 1`,
    `index, phase = advance(index, phase)`). When the barrier is one of a ring, `bars.index(i % NUM_BUFFERS)`, a phase
    built from `i` must divide it by the ring's size (`(i // NUM_BUFFERS) & 1`). Not reported: a loop that
    re-initializes the barrier each time (`mbarrier.init`).

    An mbarrier completes one phase per round of arrivals, and `wait(bar, phase)` returns once the phase with that
    parity has completed. A constant phase returns at once from the second round on, so the kernel reads a buffer the
    TMA is still filling; a phase that flips every iteration while each barrier of a ring is used every
    `NUM_BUFFERS` iterations waits for a round that already passed or one that never comes, and the kernel reads
    stale data or hangs.

    Example: `for i in range(num_tiles):` with `mbarrier.wait(ready.index(i % NUM_BUFFERS), 0)`, or with
    `mbarrier.wait(ready.index(i % NUM_BUFFERS), i & 1)`.

    Instead: `mbarrier.wait(ready.index(i % NUM_BUFFERS), (i // NUM_BUFFERS) & 1)`.
    """
    for source, _, function in _gluon_kernels(context, 'mbarrier'):
        once = _once(_assigned(function))
        calls = _calls(function)
        initialized = [(call, dotted_name(_strip_views(_expand_view(call.node.args[0], once))[0]))
                       for call in calls if call.owner == 'mbarrier' and call.name == 'init' and call.node.args]
        for call in calls:
            if call.owner != 'mbarrier' or call.name != 'wait' or not call.loops:
                continue
            barrier, phase = _argument(call.node, 0, 'mbarrier'), _argument(call.node, 1, 'phase')
            if barrier is None or phase is None:
                continue
            barrier = _expand_view(barrier, once)
            index = None
            if isinstance(barrier, ast.Call) and isinstance(barrier.func, ast.Attribute) \
                    and barrier.func.attr == 'index' and barrier.args:
                index = _expand(barrier.args[0], once)
            ring = index is not None and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
                                             for n in ast.walk(index))
            reuse = next((loop for loop in reversed(call.loops)
                          if index is None or ring or not _loop_targets(loop) & _names(index)), None)
            if reuse is None:
                continue
            root = dotted_name(_strip_views(barrier)[0])
            if any(_inside(init.node, reuse) and init_root == root for init, init_root in initialized):
                continue
            varying = _varying(reuse)
            where = f'the loop on line {reuse.lineno}'
            if not _names(phase) & varying:
                yield Violation(source.path, call.line, f'`{_snippet(call.node)}` waits again in every iteration '
                                                        f'of {where} for a phase that does not change',
                                column=call.node.col_offset)
                continue
            if not ring or not isinstance(index, ast.BinOp) or not isinstance(index.op, ast.Mod):
                continue
            size = index.right
            counters = _names(index.left) & varying
            expanded = _expand(phase, once)
            divided = any(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.FloorDiv, ast.RShift))
                          for n in ast.walk(expanded))
            trivial = isinstance(size, ast.Constant) and size.value == 1
            if counters & _names(expanded) and not divided and not trivial:
                counter = sorted(counters & _names(expanded))[0]
                yield Violation(source.path, call.line, f'the phase `{ast.unparse(phase)}` flips every iteration of '
                                                        f'{where}, but `{ast.unparse(barrier)}` is one of a ring '
                                                        f'used again every `{ast.unparse(size)}` iterations: wait '
                                                        f'for `({counter} // {ast.unparse(size)}) & 1`',
                                column=call.node.col_offset)


# `(barrier, call)`: a barrier, as its expression reads, and a call that completes on it.
_BarrierUses = list[tuple[str, _Call]]


def _barrier_uses(calls: list[_Call], once: dict[str, ast.expr]) -> tuple[_BarrierUses, _BarrierUses]:
    """`(barrier, call)` of each TMA completion (`mbarrier.expect`, a TMA load) and each MMA completion
    (`tcgen05_commit`, an MMA's `mbarriers=`), a barrier named by its text through names assigned once."""

    def text(node: ast.expr) -> str:
        return ast.unparse(_expand_view(node, once))

    tma: _BarrierUses = []
    mma: _BarrierUses = []
    for call in calls:
        if call.owner == 'mbarrier' and call.name == 'expect':
            barrier = _argument(call.node, 0, 'mbarrier')
            if barrier is not None:
                tma.append((text(barrier), call))
        elif call.owner == 'tma' and call.name in _TMA_LOADS:
            barrier = _argument(call.node, *_TMA_LOADS[call.name][0])
            if barrier is not None:
                tma.append((text(barrier), call))
        elif call.name == 'tcgen05_commit' and call.node.args:
            mma.append((text(call.node.args[0]), call))
        elif call.name in ('tcgen05_mma', 'tcgen05_mma_scaled'):
            barriers = _keyword(call.node, 'mbarriers')
            if isinstance(barriers, (ast.List, ast.Tuple)):
                mma += [(text(barrier), call) for barrier in barriers.elts]
    return tma, mma


@rule('GLU003', 'One mbarrier tracks both TMA and MMA completion', 'error',
      'give the TMA loads and the MMAs barriers of their own (two allocations), or re-initialize the barrier between')
def shared_tma_and_mma_barrier(context: Context) -> Iterator[Violation]:
    """Checks that no barrier of a `@gluon.jit` function is used both for the completion of TMA loads
    (`mbarrier.expect(bar, ...)`, `tma.async_copy_global_to_shared(desc, coord, bar, smem)`, `tma.async_gather`) and
    for the completion of MMAs (`tcgen05_commit(bar)`, `tcgen05_mma(..., mbarriers=[bar])`).

    A barrier is its expression (`bars.index(s)`), through names assigned once (`bar = bars.index(s)`). Not reported:
    a barrier re-initialized (`mbarrier.init`) between the two uses.

    A TMA barrier counts transaction bytes that `expect` announced; a tcgen05 commit arrives on it when the MMAs
    finish. Mixed on one barrier, the phase completes when whichever signal comes first, so a wait for the data may
    return while the MMA still runs, or the reverse: NVIDIA leaves it undefined, and it shows as rare wrong results
    or a hang.

    Example: `mbarrier.expect(bars.index(s), nbytes)` and `tma.async_copy_global_to_shared(k_desc, [i_t * BT, 0],
    bars.index(s), k_smem.index(s))`, then `tcgen05_mma(q_smem, k_smem.index(s).permute((1, 0)), s_tmem,
    mbarriers=[bars.index(s)])`.

    Instead: `load_bars` for the TMA loads and `mma_bars` for the MMAs, each allocated and initialized on its own:
    `tcgen05_mma(..., mbarriers=[mma_bars.index(s)])`.
    """
    for source, _, function in _gluon_kernels(context, 'mbarrier'):
        once = _once(_assigned(function))
        calls = _calls(function)
        tma, mma = _barrier_uses(calls, once)
        resets = [(ast.unparse(_expand_view(call.node.args[0], once)), call.line) for call in calls
                  if call.owner == 'mbarrier' and call.name in ('init', 'invalidate') and call.node.args]
        for barrier in dict.fromkeys(name for name, _ in tma):
            loads = [call for name, call in tma if name == barrier]
            commits = [call for name, call in mma if name == barrier]
            if not commits:
                continue
            first, second = sorted((loads[0], commits[0]), key=lambda call: call.line)
            if any(name == barrier and first.line < line < second.line for name, line in resets):
                continue
            kinds = ('TMA', 'MMA') if first is loads[0] else ('MMA', 'TMA')
            yield Violation(source.path, second.line, f'`{barrier}` tracks {kinds[1]} completion here '
                                                      f'(`{second.name}`) and {kinds[0]} completion on line '
                                                      f'{first.line} (`{first.name}`)',
                            column=second.node.col_offset, anchors=(first.line, second.line))


def _is_literal(node: ast.expr, constants: set[str]) -> bool:
    """Whether `node` is a plain Python value: a literal, a tuple or list of them, or arithmetic on them and on names
    in `constants`."""
    if isinstance(node, ast.Constant):
        return node.value is not Ellipsis
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_literal(element, constants) for element in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _is_literal(node.operand, constants)
    if isinstance(node, ast.BinOp):
        return _is_literal(node.left, constants) and _is_literal(node.right, constants)
    return isinstance(node, ast.Name) and node.id in constants


def _module_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """The statements that run at module level, inside `if`, `try` and `with` blocks too."""
    stack = list(reversed(tree.body))
    while stack:
        statement = stack.pop()
        yield statement
        if isinstance(statement, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            blocks = [statement.body, statement.orelse] if not isinstance(statement, ast.With) else [statement.body]
            if isinstance(statement, ast.Try):
                blocks += [handler.body for handler in statement.handlers] + [statement.finalbody]
            stack += [child for block in reversed(blocks) for child in reversed(block)]


def _module_constants(tree: ast.Module) -> dict[str, int]:
    """Module-level names bound only to plain Python values (`GROUP = 32`), with the line of their assignment; a
    `gl.constexpr(...)`, a function, a class or an import is not one, and neither is a name bound to one anywhere."""
    constants: dict[str, int] = {}
    other: set[str] = set()
    for statement in _module_statements(tree):
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            literal = _is_literal(statement.value, set(constants))
            for target in targets:
                for name in _names(target) if isinstance(target, (ast.Name, ast.Tuple, ast.List)) else ():
                    if literal and isinstance(target, ast.Name):
                        constants.setdefault(name, statement.lineno)
                    else:
                        other.add(name)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            other.update((alias.asname or alias.name).split('.')[0] for alias in statement.names)
        elif isinstance(statement, (ast.AugAssign, ast.For)):
            other |= _names(statement.target)
    return {name: line for name, line in constants.items() if name not in other}


def _local_names(function: ast.FunctionDef) -> set[str]:
    arguments = function.args
    names = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


@rule('GLU004', 'Module-level Python value read in a Gluon kernel', 'error',
      'pass the value as a `gl.constexpr` parameter, or define it as `NAME = gl.constexpr(value)`')
def module_global_in_kernel(context: Context) -> Iterator[Violation]:
    """Checks that the body of a `@gluon.jit` function reads no module-level name bound to a plain Python value
    (`GROUP = 32`, `SIZES = (64, 128)`, or arithmetic on such names).

    Allowed, as Triton allows them: a value wrapped in `gl.constexpr(...)`, functions, classes, modules, anything
    bound by other code (a call's result, an import), and module-level names used as parameter defaults. A name the
    function binds itself is its own. Names imported from another module are not judged.

    Since Triton 3.6 a JIT function may read only globals that are `constexpr` instances: the compile fails with
    `NameError: Cannot access global variable GROUP from within @jit'ed function`. The interpreter does not check it,
    so the tests pass on a CPU and the kernel does not compile on any GPU. A constexpr parameter also keeps the host
    and the kernel from disagreeing and shows the value to autotune keys and pruning.

    Example: `GROUP = 32` at module level and `i_g = gl.program_id(0) * GROUP` in the kernel.

    Instead: a parameter `G: gl.constexpr` passed `G=GROUP` at the launch, or `GROUP = gl.constexpr(32)`.
    """
    for source in context.sources('*.py'):
        if source.tree is None or 'gluon' not in source.text:
            continue
        aliases = _aliases(source.tree)
        functions = list(_gluon_functions(source.tree, aliases))
        constants = _module_constants(source.tree) if functions else {}
        for function in functions:
            local = _local_names(function)
            reported = set()
            for statement in function.body:
                for node in ast.walk(statement):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in constants \
                            and node.id not in local and (node.id, node.lineno) not in reported:
                        reported.add((node.id, node.lineno))
                        yield Violation(source.path, node.lineno, f'`{node.id}` (line {constants[node.id]}) is a '
                                                                  f'module-level Python value read in `@gluon.jit` '
                                                                  f'`{function.name}`; Triton 3.6 refuses to compile '
                                                                  'it', column=node.col_offset)


def _alignment_checked(nodes: list[ast.AST]) -> bool:
    """Whether `nodes` hold a check that strides are 16-byte aligned: a `... % 16`, or a contiguity test
    (`.is_contiguous()`, `.contiguous()`) together with a size multiple (`K % 8`)."""
    modulos = [node for node in nodes if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)
               and isinstance(node.right, ast.Constant) and isinstance(node.right.value, int)]
    if any(node.right.value == 16 for node in modulos):
        return True
    contiguous = any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                     and node.func.attr in ('is_contiguous', 'contiguous') for node in nodes)
    return contiguous and any(node.right.value > 1 for node in modulos)


def _descriptor(call: ast.Call, aliases: dict[str, str]) -> bool:
    """Whether `call` builds a TMA descriptor: a host `TensorDescriptor(...)` / `TensorDescriptor.from_tensor(...)`
    of Triton, or Gluon's device-side `tma.make_tensor_descriptor(...)`."""
    name = _qualified(call.func, aliases)
    if not name.startswith('triton.'):
        return False
    if name.endswith(('.TensorDescriptor', '.TensorDescriptor.from_tensor')):
        return True
    return name.startswith(_GLUON) and name.endswith('.tma.make_tensor_descriptor')


@rule('GLU005', 'TMA descriptor over strides not checked for 16-byte alignment', 'warning',
      'check `stride * element_size % 16 == 0` (or `.is_contiguous()` and the last dimension a multiple of 16 bytes) '
      "before building the descriptor, in the backend's verifier or the function that builds it, and fall back where "
      'it fails')
def unaligned_tma_descriptor(context: Context) -> Iterator[Violation]:
    """Checks that a TMA descriptor (`TensorDescriptor(...)`, `TensorDescriptor.from_tensor(...)` from Triton, or
    Gluon's `tma.make_tensor_descriptor(...)` in a kernel) is built only after the code has checked that the tensor's
    strides are 16-byte aligned.

    A check is a `... % 16` (`x.stride(-2) * x.element_size() % 16 == 0`, `gl.static_assert(K * 2 % 16 == 0)`), or a
    contiguity test (`.is_contiguous()`, `.contiguous()`) together with a size multiple (`K % 8 == 0`), found before
    the descriptor in the same function, in a function of the module it calls before, or in the module's backend
    verifiers (`*_verifier`), which guard every call of their backend. In files that import Triton only.

    TMA addresses global memory in 16-byte units: every stride but the last must be a multiple of 16 bytes. Triton's
    host `TensorDescriptor` asserts it, so an unchecked shape (bf16 with `K = 100`, a sliced view) fails with an
    AssertionError in the middle of a call the verifier had accepted instead of falling back to the Triton kernel;
    a descriptor made in the kernel is not checked at all and faults on the GPU or reads the wrong rows.

    Example: `k_desc = TensorDescriptor.from_tensor(k.view(B * T, H * K), [BT, BK], layout)` with nothing about K.

    Instead: the verifier refuses `k.stride(-2) * k.element_size() % 16 != 0` (or a non-contiguous `k`, or
    `K % 8 != 0` in 16 bits) with its reason, and the descriptor is built only for calls it accepted.
    """
    for source in context.sources('*.py'):
        if source.tree is None or 'escriptor' not in source.text:
            continue
        aliases = _aliases(source.tree)
        if not any(path.startswith('triton') for path in aliases.values()):
            continue
        functions = {function.name: function for function in _functions(source.tree)}
        verifiers = [node for name, function in functions.items() if name.endswith('_verifier')
                     for node in ast.walk(function)]
        for function in functions.values():
            calls = _calls(function)
            for call in calls:
                if not _descriptor(call.node, aliases):
                    continue
                before = [node for statement in function.body for node in ast.walk(statement)
                          if getattr(node, 'lineno', call.line) < call.line]
                for called in calls:
                    if called.line < call.line and not called.owner and called.name in functions \
                            and functions[called.name] is not function:
                        before += list(ast.walk(functions[called.name]))
                if not _alignment_checked(before + verifiers):
                    yield Violation(source.path, call.line, f'`{_snippet(call.node)}` builds a TMA descriptor, but '
                                                            'nothing before it checks that the strides are 16-byte '
                                                            'aligned', column=call.node.col_offset)


def _on_path(start: _Call, end: _Call, waits: list[_Call]) -> bool | None:
    """Whether a wait runs on the way from `start` to `end`: straight down the source when `end` comes later, else
    around the innermost loop that holds both; None when no path leads from one to the other."""
    if end.line > start.line:
        return any(start.line < wait.line < end.line for wait in waits)
    common = [a for a, b in zip(start.loops, end.loops, strict=False) if a is b]
    if not common:
        return None
    return any((wait.line > start.line or wait.line < end.line) and _inside(wait.node, common[-1]) for wait in waits)


@rule('GLU006', 'Shared buffer refilled while an async WGMMA may still read it', 'error',
      'call `warpgroup_mma_wait(num_outstanding, deps=...)` after the asynchronous `warpgroup_mma` and before the TMA '
      'load that refills its buffer')
def buffer_reused_under_async_mma(context: Context) -> Iterator[Violation]:
    """Checks that after a `warpgroup_mma(a, b, acc, is_async=True)` of a `@gluon.jit` function reads a shared
    buffer, a `warpgroup_mma_wait(...)` runs before the next TMA load (`tma.async_copy_global_to_shared`,
    `tma.async_gather`) into the same buffer.

    An MMA with `is_async=FLAG` counts, since it is asynchronous where the flag is set. A buffer is the allocation its
    name holds, through views (`a_bufs.index(s)`), whatever the slot: the slot a load refills is usually computed
    differently from the one the MMA read. The next load is the next in the source, or, when the load comes first in
    the same loop, the one of the next iteration; a wait on either part of that way counts.

    An asynchronous WGMMA reads its shared operands while the warps go on; only `warpgroup_mma_wait` says it is done.
    A TMA load into the slot it is still reading changes the operands in the middle of the product: wrong results
    that depend on timing, and that the interpreter never shows.

    Example: in a loop, `tma.async_copy_global_to_shared(k_desc, [i_t * BT, 0], bars.index(s), k_smem.index(s))`
    and later `acc = warpgroup_mma(q_smem, k_smem.index(s).permute((1, 0)), acc, is_async=True)` with no wait in the
    loop.

    Instead: `acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, k_smem))` after each asynchronous MMA, so the one
    before it has finished with the slot the next load refills.
    """
    for source, _, function in _gluon_kernels(context, 'warpgroup_mma'):
        views = _buffers(function)
        calls = _calls(function)
        waits = [call for call in calls if call.name == 'warpgroup_mma_wait']
        products = []
        for call in calls:
            asynchronous = _keyword(call.node, 'is_async')
            # `is_async=OVERLAP` is asynchronous in the specializations that set the flag
            if call.name == 'warpgroup_mma' and asynchronous is not None \
                    and not (isinstance(asynchronous, ast.Constant) and not asynchronous.value):
                read = {_buffer(_argument(call.node, position, keyword), views)
                        for position, keyword in _ASYNC_READS['warpgroup_mma']}
                products.append((call, read - {None}))
        for call in calls:
            if call.owner != 'tma' or call.name not in _TMA_LOADS:
                continue
            target = _buffer(_argument(call.node, *_TMA_LOADS[call.name][1]), views)
            for product, read in products:
                if target in read and _on_path(product, call, waits) is False:
                    yield Violation(source.path, call.line, f'`{call.name}` refills `{target}`, which the '
                                                            f'asynchronous `warpgroup_mma` on line {product.line} '
                                                            'may still be reading: no `warpgroup_mma_wait` between',
                                    column=call.node.col_offset, anchors=(product.line, call.line))
                    break


def _is_async_copy(call: _Call, aliases: dict[str, str]) -> bool:
    """Whether `call` is cp.async (`async_copy.async_copy_global_to_shared`), not the TMA load of the same name."""
    if call.name != 'async_copy_global_to_shared':
        return False
    name = _qualified(call.node.func, aliases)
    return call.owner != 'tma' and '.tma.' not in name


@rule('GLU007', 'Masked cp.async into shared memory read back unmasked', 'error',
      "clamp the rows instead (`o_t = gl.minimum(o_t, T - 1)`) and mask only the stores, or use TMA's own bounds; "
      'where a mask stays, replace the masked lanes after reading the buffer back (`gl.where(mask, b_x, 0.)`)')
def masked_async_copy(context: Context) -> Iterator[Violation]:
    """Checks that a cp.async copy into shared memory (`async_copy.async_copy_global_to_shared(smem, pointer,
    mask=...)`) in a `@gluon.jit` function has no mask, unless the function replaces the masked lanes after reading
    the buffer back: a `gl.where(...)` whose condition uses a name of the mask.

    The TMA load of the same name (`tma.async_copy_global_to_shared`) takes no mask and is not reported. A mask
    held by a name assigned once is followed to its value.

    A masked lane of cp.async is not written: that part of the buffer keeps what it held, which under the test
    suite's NaN poisoning (and in real use, after an earlier tile) is garbage. Read back and reduced across rows, or
    multiplied by a zero (`0 * NaN = NaN`), it spreads into lanes that are stored.

    Example: `async_copy.async_copy_global_to_shared(k_smem, k + o_t[:, None] * K + o_k[None, :],
    mask=o_t[:, None] < T)` and then `b_k = k_smem.load(layout)` used in a product.

    Instead: `o_t = gl.minimum(o_t, T - 1)` before the unmasked copy, with the stores masked by `o_t < T`; or a TMA
    load, whose out-of-bounds rows are zeros.
    """
    for source, aliases, function in _gluon_kernels(context, 'async_copy_global_to_shared'):
        once = _once(_assigned(function))
        calls = _calls(function)
        remasked = set()
        for call in calls:
            if call.name == 'where' and call.node.args:
                condition = call.node.args[0]
                remasked |= _names(condition) | {n for name in _names(condition) if name in once
                                                 for n in _names(once[name])}
        for call in calls:
            if not _is_async_copy(call, aliases):
                continue
            mask = _argument(call.node, 2, 'mask')
            if mask is None or isinstance(mask, ast.Constant) and mask.value is None:
                continue
            names = _names(mask) | {n for name in _names(mask) if name in once for n in _names(once[name])}
            if names & remasked:
                continue
            yield Violation(source.path, call.line, f'cp.async with `mask={_snippet(mask)}` leaves the masked '
                                                    'lanes of the buffer unwritten, and nothing replaces them after '
                                                    'it is read back', column=call.node.col_offset,
                            anchors=tuple(range(call.line, (call.node.end_lineno or call.line) + 1)))
