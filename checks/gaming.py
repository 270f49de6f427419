# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Rules that keep a speedup honest: the op still runs its kernels, on every call, on the stream the benchmark times."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator

from checks.op_tests import op_directory
from checks.pr import is_perf_change
from mrbot.rules import Context, SourceFile, Violation, dotted_name, last_name, rule

_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_VENDOR_CALLS = frozenset({'matmul', 'mm', 'bmm', 'baddbmm', 'einsum', 'scaled_dot_product_attention'})
_CONTAINERS = frozenset({'dict', 'list', 'set', 'OrderedDict', 'defaultdict', 'deque', 'WeakKeyDictionary',
                         'WeakValueDictionary'})
_CONTAINER_WRITES = frozenset({'setdefault', 'append', 'update', '__setitem__'})
_IDENTITY_CALLS = frozenset({'data_ptr', 'id', 'hash', 'size'})
_CACHE_DECORATORS = frozenset({'cache', 'lru_cache'})
_STREAM_CALLS = frozenset({'Stream', 'stream', 'set_stream', 'Event', 'ExternalStream'})
_STREAM_METHODS = frozenset({'record_stream', 'wait_stream', 'wait_event'})


def _op_sources(context: Context) -> Iterator[SourceFile]:
    """The parsed op modules a performance change touches; `naive.py` is the reference and tests are the gate."""
    if not is_perf_change(context):
        return
    config = context.config
    for source in context.sources('*.py'):
        if (config.is_source(source.path) and not config.is_test(source.path) and source.tree is not None
                and op_directory(source.path, config) and not source.path.endswith('/naive.py')):
            yield source


def _span(node: ast.AST) -> tuple[int, ...]:
    return tuple(range(node.lineno, (node.end_lineno or node.lineno) + 1))


def _functions(tree: ast.Module | None) -> dict[str, _FunctionNode]:
    """Every function of the module by qualified name (`Class.method`, `outer.inner`)."""
    found: dict[str, _FunctionNode] = {}

    def collect(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[prefix + node.name] = node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                collect(node.body, f'{prefix}{node.name}.')

    collect(tree.body if tree is not None else [], '')
    return found


def _launches(function: ast.AST) -> Counter[str]:
    """How often `function` launches each Triton kernel: `kernel[grid](...)`, counted by the kernel's name."""
    return Counter(dotted_name(node.func.value) for node in ast.walk(function)
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                   and dotted_name(node.func.value))


def _computing(tree: ast.Module) -> set[str]:
    """Names of the functions that run the op: they launch a Triton kernel or call an autograd `.apply(`, directly or
    through another function of the module."""
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    calls = {name: {last_name(node.func) for node in ast.walk(function) if isinstance(node, ast.Call)}
             for name, function in functions.items()}
    computing = {name for name, function in functions.items() if _launches(function) or 'apply' in calls[name]}
    while reached := {name for name in functions if calls[name] & computing} - computing:
        computing |= reached
    return computing


def _vendor_call(node: ast.AST) -> str | None:
    """The vendor routine an expression calls, or `@` for the matmul operator; None for anything else."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return '@'
    if not isinstance(node, ast.Call):
        return None
    name = dotted_name(node.func) or last_name(node.func) or ''
    parts = name.split('.')
    if (parts[-1] in _VENDOR_CALLS or name.startswith('torch.linalg.') or any('cublas' in p.lower() for p in parts)
            or any(p.startswith('flash_attn') for p in parts)):
        return name
    return None


def _vendor_calls(function: ast.AST) -> Counter[str]:
    return Counter(vendor for node in ast.walk(function) if (vendor := _vendor_call(node)))


@rule('GAME001', 'Op delegated to a vendor routine where a kernel was', 'error',
      "keep the op's Triton kernel and make it faster; a vendor routine belongs in the reference, not in the op",
      scope='lines')
def kernel_replaced(context: Context) -> Iterator[Violation]:
    """Checks that a performance change does not swap a Triton kernel launch of an op for a vendor routine.

    Within a function the base and the head both define, a launch `kernel[grid](...)` the head has fewer of, together
    with an added call to `torch.matmul`, `torch.mm`, `torch.bmm`, `torch.baddbmm`, `torch.einsum`,
    `scaled_dot_product_attention`, anything under `torch.linalg`, a cuBLAS binding or a `flash_attn` function, or an
    added `@`, is reported at the vendor call when the function makes more such calls than before and fewer launches
    in all. A function that keeps its launches may add vendor calls (a small prologue), and a renamed kernel still
    launches; a vendor call in a new helper function, a renamed function, or a kernel swapped for a vendor call plus
    another new kernel are not seen.

    The benchmark measures the op, and the loop exists to make its kernels faster. Handing the work to cuBLAS or
    FlashAttention can be faster without improving anything of ours, and it changes the numerics the gate was tuned
    for, so the speedup says nothing about the kernel the change claims to optimize.

    Example: in `chunk_fwd`, `chunk_fwd_kernel[grid](q, k, v, o, T=T, BT=BT)` replaced by
    `o = torch.matmul(q, k.transpose(-1, -2)) @ v`.

    Instead: keep `chunk_fwd_kernel[grid](...)` and speed it up (tiling, fusion, fewer loads); propose a vendor path
    in its own change, with its benchmark and reason.
    """
    for source in _op_sources(context):
        base = _functions(source.base_tree)
        for name, function in _functions(source.tree).items():
            if name not in base:
                continue
            before, after = _launches(base[name]), _launches(function)
            # a renamed or swapped kernel still launches: only launches the function lost outright count
            if after.total() >= before.total():
                continue
            kernels = ', '.join(sorted(before - after))
            # a vendor call the base function already made, reformatted or moved, replaces nothing
            new_vendors = _vendor_calls(function) - _vendor_calls(base[name])
            for node in ast.walk(function):
                vendor = _vendor_call(node)
                if vendor in new_vendors:
                    yield Violation(source.path, node.lineno, f'{vendor} replaces the launch of {kernels} in {name}',
                                    anchors=_span(node))


def _module_containers(tree: ast.Module) -> set[str]:
    """Names bound at module level to an empty or literal dict, list or set, or to a container constructor."""
    found = set()
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, (ast.Dict, ast.List, ast.Set)) or (isinstance(value, ast.Call)
                                                                and last_name(value.func) in _CONTAINERS):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {target.id for target in targets if isinstance(target, ast.Name)}
    return found


def _from_inputs(function: _FunctionNode) -> set[str]:
    """Names in `function` whose value comes from its arguments: the parameters and what is assigned from them."""
    arguments = function.args
    derived = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                               arguments.vararg, arguments.kwarg] if a is not None}
    assignments = [node for node in ast.walk(function)
                   if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None]
    # the walk visits nested blocks after their parents, so repeat until no assignment adds a name
    while reached := {n.id for node in assignments if _depends(node.value, derived)
                      for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                      for n in ast.walk(target) if isinstance(n, ast.Name)} - derived:
        derived |= reached
    return derived


def _depends(expression: ast.AST, derived: set[str]) -> bool:
    """Whether `expression` reads a derived name, a `.shape`, or an identity such as `.data_ptr()` or `id(...)`."""
    return any(isinstance(n, ast.Name) and n.id in derived
               or isinstance(n, ast.Attribute) and n.attr == 'shape'
               or isinstance(n, ast.Call) and last_name(n.func) in _IDENTITY_CALLS for n in ast.walk(expression))


def _cache_writes(function: _FunctionNode, containers: set[str]) -> Iterator[tuple[ast.AST, str, list[ast.AST]]]:
    """`(node, what, stored expressions)` for each write into a module-level container inside `function`."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and dotted_name(target.value) in containers:
                    yield node, f'{target.value.id}[...]', [target.slice, node.value]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _CONTAINER_WRITES and dotted_name(node.func.value) in containers):
            yield node, f'{node.func.value.id}.{node.func.attr}(...)', [*node.args, *(k.value for k in node.keywords)]


def _global_stores(function: _FunctionNode) -> Iterator[tuple[ast.Assign | ast.AnnAssign | ast.AugAssign, str]]:
    """`(assignment, name)` for each assignment in `function` to a name it declares `global`."""
    names = {name for node in ast.walk(function) if isinstance(node, ast.Global) for name in node.names}
    for node in ast.walk(function):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            yield from ((node, t.id) for t in targets if isinstance(t, ast.Name) and t.id in names)


@rule('GAME002', 'Op inputs or outputs cached across calls', 'error',
      'compute the output on every call; cache only metadata such as chunk indices, keyed by the tensors themselves',
      scope='lines')
def cached_results(context: Context) -> Iterator[Violation]:
    """Checks that a performance change adds no memoization of an op's inputs or outputs to the op's source.

    Three forms are reported, each inside a function that runs the op (it launches a Triton kernel, calls an autograd
    `.apply(`, or calls a function of the module that does): a write into a module-level dict, list, set, `deque`,
    `OrderedDict` or weak dictionary (`X[key] = ...`, `.setdefault`, `.append`, `.update`, `.__setitem__`) whose key
    or value comes from an argument, a `.shape`, `.size()`, `.data_ptr()`, `id(...)` or `hash(...)`; a
    `functools.cache` or `lru_cache` decorator on such a function; and an assignment of such a value to a name the
    function declares `global`. Helpers that only prepare metadata (`prepare_chunk_indices` under `@tensor_cache`, a
    device query under `@lru_cache`) run no kernel and are not reported.

    A benchmark calls the op again and again on the same tensors, so a cache keyed on their address or shape turns
    every call after the first into a lookup: the timing drops to nothing while the kernel is as slow as before, and
    in training the op returns stale results once the tensors are written in place.

    Example: `_OUTPUTS[(q.data_ptr(), k.data_ptr())] = o` after `chunk_fwd_kernel[grid](q, k, v, o)`, or
    `@functools.lru_cache` above `def chunk_simple_gla(q, k, v)`.

    Instead: launch the kernel on every call; memoize only index metadata, with `@tensor_cache` on a helper such as
    `prepare_chunk_indices(cu_seqlens, chunk_size)`.
    """
    for source in _op_sources(context):
        containers, computing = _module_containers(source.tree), _computing(source.tree)
        for name, function in _functions(source.tree).items():
            if function.name not in computing:
                continue
            derived = _from_inputs(function)
            for decorator in function.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if last_name(target) in _CACHE_DECORATORS:
                    yield Violation(source.path, decorator.lineno, f'@{dotted_name(target)} caches the results of '
                                                                   f'{name} across calls', anchors=_span(decorator))
            for node, what, stored in _cache_writes(function, containers):
                if any(_depends(expression, derived) for expression in stored):
                    yield Violation(source.path, node.lineno, f'{what} in {name} caches inputs or outputs across '
                                                              'calls', anchors=_span(node))
            for node, target in _global_stores(function):
                if _depends(node.value, derived):
                    yield Violation(source.path, node.lineno, f'global {target} keeps {ast.unparse(node.value)} '
                                                              f'from {name} across calls', anchors=_span(node))


def _stream_call(node: ast.AST) -> str | None:
    """The stream or event call an expression makes (`torch.cuda.Stream`, `.wait_stream`), or None."""
    if not isinstance(node, ast.Call):
        return None
    name, method = dotted_name(node.func), last_name(node.func)
    if name and name.rsplit('.', 1)[0] in ('torch.cuda', 'torch') and method in _STREAM_CALLS:
        return name
    return f'.{method}' if method in _STREAM_METHODS and isinstance(node.func, ast.Attribute) else None


@rule('GAME003', 'Stream or event tricks around the timed call', 'error',
      "run the op's work on the current stream; leave streams and events to the caller", scope='lines')
def side_streams(context: Context) -> Iterator[Violation]:
    """Checks that a performance change adds no CUDA stream or event handling to an op's source.

    Reported on added lines: `torch.cuda.Stream(`, `torch.cuda.stream(`, `torch.cuda.set_stream(`,
    `torch.cuda.Event(`, `torch.cuda.ExternalStream(` (and the same under `torch.`), and the methods
    `.record_stream(`, `.wait_stream(` and `.wait_event(`.

    A benchmark times the stream it launches the op on. Work moved to a side stream, or ordered through events the
    timer does not see, finishes after the clock stops, so the op looks faster while doing the same work, and callers
    that read the output right away race with it.

    Example: `with torch.cuda.stream(side): chunk_bwd_kernel[grid](...)` in `fla/ops/simple_gla/chunk.py`.

    Instead: launch every kernel on `torch.cuda.current_stream()`, and overlap work by fusing kernels rather than by
    hiding it on another stream.
    """
    for source in _op_sources(context):
        for node in ast.walk(source.tree):
            found = _stream_call(node)
            if found:
                yield Violation(source.path, node.lineno, f'{found}(...) lets work escape the stream the benchmark times',
                                anchors=_span(node))
