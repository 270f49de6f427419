# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Rules that keep ops tested: tests change with the op, the naive reference stays pure PyTorch, gradients are compared."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from mrbot.config import Config
from mrbot.records.change import ChangedFile, ChangeSet
from mrbot.rules import Context, Violation, last_name, rule
from mrbot.selection import select

# Folders under `<source root>/ops/` that hold shared code rather than one op.
_SHARED_FOLDERS = frozenset({'common', 'backends', 'utils'})
_COMPARISONS = frozenset({'assert_close', 'allclose'})
_GRADIENT_CALLS = frozenset({'backward', 'grad', 'gradcheck', 'gradgradcheck'})


def _folder(path: str, roots: tuple[str, ...], folder: str) -> str | None:
    """`<root>/<folder>/` for the first of `roots` under which `path` lies in `folder`, else None."""
    return next((f"{root.rstrip('/')}/{folder}/" for root in roots if path.startswith(f"{root.rstrip('/')}/{folder}/")),
                None)


def op_directory(path: str, config: Config) -> str | None:
    """The op folder `<source root>/ops/<op>/` that holds `path`, or None outside one (shared folders are not ops)."""
    prefix = _folder(path, config.source_roots, 'ops')
    if prefix is None:
        return None
    op, slash, _ = path[len(prefix):].partition('/')
    return f'{prefix}{op}/' if slash and op not in _SHARED_FOLDERS else None


def is_op_test(path: str, config: Config) -> bool:
    """Whether `path` lies under `<test root>/ops/`."""
    return _folder(path, config.test_roots, 'ops') is not None


def file_paths(file: ChangedFile) -> tuple[str, ...]:
    """The head path of a changed file, and its base path when it was renamed."""
    return (file.path, file.old_path) if file.old_path else (file.path,)


def touched_ops(change: ChangeSet, config: Config) -> dict[str, list[ChangedFile]]:
    """Each op folder the change touches, with its changed files; a rename touches the folders of both paths."""
    ops: dict[str, list[ChangedFile]] = {}
    for file in change.files:
        for directory in {op_directory(path, config) for path in file_paths(file)} - {None}:
            ops.setdefault(directory, []).append(file)
    return ops


def new_op_directories(change: ChangeSet, config: Config) -> set[str]:
    """Op folders the change creates: every changed file in them is added, `__init__.py` among them.

    Without git the base tree is unknown, so the added `__init__.py` is the proof that the folder was not a package in
    the base; a change that only adds a kernel file to an existing op is therefore not a new op.
    """
    return {directory for directory, files in touched_ops(change, config).items()
            if all(f.status == 'added' and f.base_text is None for f in files)
            and any(f.path == f'{directory}__init__.py' for f in files)}


def _shared_kernels(directory: str, change: ChangeSet, config: Config) -> bool:
    """Whether the new folder serves other ops rather than users: the change imports it from other op folders and
    from no test."""
    module = directory.rstrip('/').replace('/', '.')
    importers = [file.path for file in change.files if file.text is not None and file.path.endswith('.py')
                 and not file.path.startswith(directory) and _imports_module(file.text, module)]
    return any(op_directory(path, config) for path in importers) and not any(is_op_test(path, config)
                                                                            or config.is_test(path)
                                                                            for path in importers)


def _imports_module(text: str, module: str) -> bool:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
               and (node.module == module or node.module.startswith(module + '.'))
               or isinstance(node, ast.Import) and any(a.name == module or a.name.startswith(module + '.')
                                                       for a in node.names)
               for node in ast.walk(tree))


def _triton_import(node: ast.AST) -> str | None:
    """The Triton module an import statement names, or None for any other statement."""
    if isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        modules = [node.module]
    else:
        return None
    return next((m for m in modules if m == 'triton' or m.startswith('triton.')), None)


def _checks_gradient(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        return last_name(node.func) in _GRADIENT_CALLS
    return isinstance(node, ast.Attribute) and node.attr == 'grad' and isinstance(node.ctx, ast.Load)


@rule('TST001', 'Op or module changed without a test change', 'warning',
      'add or update the tests under tests/ (tests/ops/test_<op>.py for an op) in the same change', scope='change')
def tests_follow_code(context: Context) -> Iterator[Violation]:
    """Checks that a change to Python under `<source root>/ops/<op>/` or `<source root>/modules/` also changes a test,
    and that a code change to shared kernels in `ops/common/` or `ops/utils/` changes one of the tests that reach it.

    Kernels are only as correct as the tests that compare them with their reference; a change that leaves every test
    untouched either relies on existing coverage (say so in the Test plan) or ships an untested path. A new op without
    any test is an error, an edit of an existing op or module a warning. Shared code is tested through the ops that use
    it: any test that reaches the changed file through the import graph counts, and so do the tests of the ops that
    dispatch to a platform backend of it (`ops/common/backends/`): a backend rewritten with no test changed is as
    untested as the kernel it stands in for.

    Example: a change that adds `fla/ops/kda/chunk.py` and `fla/ops/kda/__init__.py` and nothing under `tests/`.

    Instead: add `tests/ops/test_kda.py`, comparing the outputs and gradients of the kernel with `naive.py`.
    """
    change, config = context.change, context.config
    changed_tests = {path for file in change.files for path in file_paths(file) if config.is_test(path)}
    yield from _untested_shared_code(context, changed_tests)
    if changed_tests:
        return
    new_ops = new_op_directories(change, config)
    test_root = config.test_roots[0].rstrip('/') if config.test_roots else 'tests'
    for directory, files in sorted(touched_ops(change, config).items()):
        if not any(path.endswith('.py') for file in files for path in file_paths(file)):
            continue
        if directory in new_ops:
            op = directory.rstrip('/').rsplit('/', 1)[-1]
            yield Violation(directory, 0, f'new op {directory} comes without tests; add {test_root}/ops/test_{op}.py',
                            severity='error')
        else:
            yield Violation(directory, 0, f'{directory} changed but no test did')
    modules = sorted({_folder(path, config.source_roots, 'modules') for file in change.files for path in file_paths(file)
                      if path.endswith('.py')} - {None})
    for directory in modules:
        yield Violation(directory, 0, f'{directory} changed but no test did')


def _untested_shared_code(context: Context, changed_tests: set[str]) -> Iterator[Violation]:
    """A code change under `ops/common/` or `ops/utils/` (their backends included) that changes none of the tests
    reaching it."""
    config = context.config
    shared = [f.path for f in context.change.files if f.path.endswith('.py') and f.changes_code
              and any(_folder(f.path, config.source_roots, f'ops/{folder}') for folder in ('common', 'utils'))]
    for path in shared:
        reaching = [t.test for t in select(context.workspace, [path]).tests]
        # a change no test reaches at all is SEL001's finding
        if reaching and not changed_tests & set(reaching):
            named = ', '.join(reaching[:3]) + (f' and {len(reaching) - 3} more' if len(reaching) > 3 else '')
            yield Violation(path, 0, f'shared code changed, but none of the tests that reach it did ({named})')


@rule('TST002', 'Op without a pure PyTorch reference', 'error',
      'give the op a naive.py: the recurrence in plain PyTorch with float32 accumulation and no Triton import',
      scope='file')
def naive_reference(context: Context) -> Iterator[Violation]:
    """Checks that a new op folder has a `naive.py`, and that no added line of a `naive.py` under `ops/` imports Triton.

    A new folder whose modules the change imports from other op folders and from no test holds kernels shared by those
    ops (upstream's `fla/ops/atk/`), not an op of its own, and needs no reference.

    `naive.py` is the ground truth every kernel test compares against. A reference built from Triton kernels shares
    their bugs and their rounding, so a test against it proves nothing; pure PyTorch is slow but independent.

    Example: a new `fla/ops/kda/` with only `chunk.py` and `__init__.py`, or `import triton.language as tl` in
    `fla/ops/kda/naive.py`.

    Instead: `fla/ops/kda/naive.py` with the token-by-token recurrence in `torch` operations only.
    """
    change, config = context.change, context.config
    for directory in sorted(new_op_directories(change, config)):
        if change.file(f'{directory}naive.py') is None and not _shared_kernels(directory, change, config):
            yield Violation(directory, 0, f'new op {directory} has no naive.py reference')
    for source in context.sources('*/naive.py'):
        if _folder(source.path, config.source_roots, 'ops') is None or source.tree is None:
            continue
        for node in ast.walk(source.tree):
            module = _triton_import(node)
            if module and any(line in source.added for line in range(node.lineno, node.end_lineno + 1)):
                yield Violation(source.path, node.lineno, f'naive.py imports {module}; the reference must be pure PyTorch')


@rule('TST003', 'Op test compares outputs but no gradients', 'warning',
      'run backward through the reference and the kernel and compare every gradient with assert_close')
def gradients_compared(context: Context) -> Iterator[Violation]:
    """Checks that a comparison a change adds to a `test_*.py` under `<test root>/ops/` sits in a file that checks gradients.

    Most kernel bugs hide in the backward pass, which a forward-only comparison never runs. A file counts as checking
    gradients when it calls `.backward(`, `torch.autograd.grad(` or `gradcheck(`, or reads a `.grad` attribute
    anywhere; an op without autograd support may disable the rule for its test file.

    Example: `tests/ops/test_kda.py` whose only comparison is `assert_close('o', ref, tri, 1e-3)` on outputs.

    Instead: call `(o * do).sum().backward()` on both sides and `assert_close('dq', ref_dq, q.grad, ratio)` for every
    input.
    """
    config = context.config
    for source in context.sources('*.py'):
        name = source.path.rsplit('/', 1)[-1]
        if not is_op_test(source.path, config) or not name.startswith('test_') or source.tree is None:
            continue
        comparisons = []
        for node in ast.walk(source.tree):
            if _checks_gradient(node):
                break
            if isinstance(node, ast.Call) and last_name(node.func) in _COMPARISONS:
                comparisons.append(node)
        else:
            if comparisons:
                first = min(comparisons, key=lambda call: (call.lineno, call.col_offset))
                yield Violation(source.path, first.lineno, f'{last_name(first.func)} compares outputs, but no gradient is '
                                                           'checked anywhere in this file', column=first.col_offset,
                                anchors=tuple(sorted(call.lineno for call in comparisons)))
