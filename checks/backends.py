# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Backends of the dispatch system (`fla/ops/<op>/backends/`): their declarations, verifiers and imports."""

from __future__ import annotations

import ast
import fnmatch
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from mrbot.records.source import type_checking_only
from mrbot.repo.index import imported_module
from mrbot.rules import Context, SourceFile, Violation, dotted_name, last_name, rule
from mrbot.selection import imported_at_import

# Required by the library itself, so a backend may import them at module level.
_ALWAYS_INSTALLED = frozenset({'torch', 'triton', 'numpy'})
_ENVIRON_MUTATORS = frozenset({'update', 'pop', 'setdefault', 'clear', 'popitem'})
_CONTAINER_MUTATORS = frozenset({'append', 'extend', 'insert', 'remove', 'add', 'discard', 'update', 'setdefault', 'pop',
                                 'popitem', 'clear'})
_RNG_SEEDERS = frozenset({'manual_seed', 'manual_seed_all', 'set_rng_state'})
_MIN_REASON_PART = 8


@dataclass(frozen=True)
class _Signature:
    positional: tuple[str, ...]
    keyword_only: tuple[str, ...]
    var_positional: str | None
    var_keyword: str | None

    @property
    def names(self) -> tuple[str, ...]:
        return self.positional + self.keyword_only

    def __str__(self) -> str:
        star = [f'*{self.var_positional}'] if self.var_positional else ['*'] if self.keyword_only else []
        double_star = [f'**{self.var_keyword}'] if self.var_keyword else []
        return ', '.join([*self.positional, *star, *self.keyword_only, *double_star])


def _signature(function: ast.FunctionDef | ast.AsyncFunctionDef, bound: bool) -> _Signature:
    arguments = function.args
    positional = [a.arg for a in arguments.posonlyargs + arguments.args]
    if bound and positional and not any(last_name(d) == 'staticmethod' for d in function.decorator_list):
        positional = positional[1:]
    return _Signature(tuple(positional), tuple(a.arg for a in arguments.kwonlyargs),
                      arguments.vararg.arg if arguments.vararg else None,
                      arguments.kwarg.arg if arguments.kwarg else None)


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _constant(node: ast.expr | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _lines(node: ast.AST) -> tuple[int, ...]:
    return tuple(range(node.lineno, (node.end_lineno or node.lineno) + 1))


def _module_path(path: str, context: Context) -> list[str]:
    """The dotted-name parts of the module at `path`, counted from the folder that holds its source root."""
    for root in (r.strip('/') for r in context.config.source_roots):
        if path.startswith(root + '/'):
            holder = root.rpartition('/')[0]
            path = path[len(holder) + 1:] if holder else path
            break
    parts = path.removesuffix('.py').split('/')
    return parts[:-1] if parts[-1] == '__init__' else parts


def _is_backend_module(path: str) -> bool:
    parts = path.split('/')
    return 'backends' in parts[:-1] or parts[-1] == 'backends.py'


def _backend_sources(context: Context) -> Iterator[SourceFile]:
    """Parsed Python files of the head under a source root that belong to a `backends` module or package."""
    for source in context.sources('*.py'):
        if source.file.status != 'deleted' and context.config.is_source(source.path) and _is_backend_module(source.path) \
                and source.tree is not None:
            yield source


def _imported_with_packages(context: Context) -> set[str]:
    """The files that importing the backends packages of the changed files runs: each package's `__init__.py` and
    the package's modules it imports at import time, through the head's files; not those a backend imports in its
    methods."""
    graph = context.workspace.graph
    packages = {'/'.join(parts[:len(parts) - parts[::-1].index('backends')]) for source in _backend_sources(context)
                if 'backends' in (parts := source.path.split('/'))[:-1]}
    todo = [f'{package}/__init__.py' for package in packages]
    found = {source.path for source in _backend_sources(context) if source.path.endswith('/backends.py')}
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found.add(path)
        changed = context.change.file(path)
        try:
            text = changed.text if changed is not None and changed.text is not None else \
                (context.workspace.root / path).read_text(encoding='utf-8')
            tree = ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        todo += [graph.by_module[module] for module in imported_at_import(path, tree, graph)
                 if graph.by_module[module].startswith(tuple(f'{package}/' for package in packages))]
    return found


def _backends_package(path: str, context: Context) -> str:
    """The dotted name of the backends module or package that `path` belongs to."""
    parts = _module_path(path, context)
    return '.'.join(parts[:len(parts) - parts[::-1].index('backends')])


def _verifiers(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                        and statement.name.endswith('_verifier') and statement.name != '_verifier':
                    yield statement


def _top_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run when the module is imported: the body and its `if`/`try`/`with` blocks, less TYPE_CHECKING."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If):
            if not type_checking_only(statement):
                yield from _top_level_statements(statement.body)
            yield from _top_level_statements(statement.orelse)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, *(h.body for h in statement.handlers), statement.orelse, statement.finalbody):
                yield from _top_level_statements(block)
        elif isinstance(statement, ast.With):
            yield from _top_level_statements(statement.body)


def _repository_texts(context: Context, roots: tuple[str, ...], pattern: str) -> Iterator[tuple[str, str]]:
    """`(path, text)` of the files under `roots` as the change leaves them: the change's version, else the file on disk."""
    prefixes = tuple(root.strip('/') + '/' for root in roots)
    changed = {file.path: file for file in context.change.files}
    for file in changed.values():
        if file.text is not None and file.path.startswith(prefixes) and fnmatch.fnmatchcase(file.path, pattern):
            yield file.path, file.text
    for root in roots:
        folder = context.change.root / root.strip('/')
        if not folder.is_dir():
            continue
        for candidate in sorted(folder.rglob(pattern)):
            path = candidate.relative_to(context.change.root).as_posix()
            if path in changed or '__pycache__' in candidate.parts:
                continue
            try:
                if not candidate.is_file() or candidate.stat().st_size > context.config.max_file_bytes:
                    continue
                yield path, candidate.read_text(encoding='utf-8')
            except (OSError, UnicodeDecodeError):
                continue


def _class_attributes(node: ast.ClassDef) -> dict[str, ast.expr]:
    values = {}
    for statement in node.body:
        if isinstance(statement, ast.Assign):
            values.update((t.id, statement.value) for t in statement.targets if isinstance(t, ast.Name))
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None and isinstance(statement.target, ast.Name):
            values[statement.target.id] = statement.value
    return values


@rule('BKD001', 'Backend with no backend_type, or an env var outside FLA_', 'error',
      "set `backend_type = '<name>'` in the class body and name its switch `env_var = 'FLA_<NAME>'`")
def backend_declaration(context: Context) -> Iterator[Violation]:
    """Checks that each direct `BaseBackend` subclass in a backends module sets `backend_type`, and any `env_var` to `FLA_...`.

    The registry keys backends by `backend_type`: two backends left at the default `'base'` replace each other
    silently, and the dispatch log names neither. Users find a backend's switch by the `FLA_` prefix that every
    other variable of the library carries. The finding sits on the class line and is reported when the change
    touches any line of the class.

    Example: `class FlashKDABackend(BaseBackend):` with `env_var = 'FLASH_KDA'` and no `backend_type`.

    Instead: `backend_type = 'flash_kda'` and `env_var = 'FLA_FLASH_KDA'` in the class body.
    """
    for source in _backend_sources(context):
        for node in ast.walk(source.tree):
            if not (isinstance(node, ast.ClassDef) and any(last_name(b) == 'BaseBackend' for b in node.bases)):
                continue
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            anchors = tuple(range(first, (node.end_lineno or node.lineno) + 1))
            attributes = _class_attributes(node)
            if 'backend_type' not in attributes:
                yield Violation(source.path, node.lineno, f"backend {node.name} does not set backend_type, so it registers "
                                f"as 'base' and replaces any other backend that did the same", node.col_offset, anchors)
            elif _constant(attributes['backend_type']) == 'base':
                yield Violation(source.path, node.lineno, f"backend {node.name} sets backend_type to 'base', the "
                                f"placeholder of BaseBackend", node.col_offset, anchors)
            env_var = _constant(attributes.get('env_var'))
            if isinstance(env_var, str) and not env_var.startswith('FLA_'):
                yield Violation(source.path, node.lineno, f'backend {node.name} is switched by {env_var!r}, which does '
                                f'not start with FLA_', node.col_offset, anchors)


def _dispatch_module(call: ast.Call) -> str | None:
    """The backends module a `@dispatch(...)` call imports, when its arguments are literals."""
    keywords = {k.arg: k.value for k in call.keywords}
    operation = _constant(call.args[0] if call.args else keywords.get('operation'))
    module = _constant(call.args[1] if len(call.args) > 1 else keywords.get('module'))
    if isinstance(module, str):
        return module
    return f'fla.ops.{operation}.backends' if isinstance(operation, str) else None


def _dispatched_functions(context: Context, names: set[str]) -> dict[str, list[tuple[str | None, _Signature]]]:
    """For each of `names`, `(backends module, signature)` of every function of that name decorated with `@dispatch`."""
    found = defaultdict(list)
    for _, text in _repository_texts(context, context.config.source_roots, '*.py'):
        if 'dispatch' not in text or not any(f'def {name}(' in text for name in names):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names):
                continue
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and last_name(decorator.func) == 'dispatch':
                    found[node.name].append((_dispatch_module(decorator), _signature(node, bound=False)))
    return found


@rule('BKD002', "Verifier parameters differ from the dispatched function's", 'error',
      'give the verifier the parameters of the public function, same names and order, after `self`')
def verifier_signature(context: Context) -> Iterator[Violation]:
    """Checks that each `<name>_verifier` takes, after `self`, the parameters of the `@dispatch`-decorated `<name>` in order.

    The dispatcher calls the verifier with the caller's arguments exactly as given. A verifier whose positional
    parameters are ordered differently judges one argument under another's name, and a `**kwargs` standing in for
    parameters lets them through unchecked, so the backend serves calls it cannot compute. Keyword-only parameters
    must match as a set; defaults are not compared. With `verifier-pass-through = true` in `[tool.mrbot]` (upstream
    flash-linear-attention's convention) a verifier may instead name leading parameters, or none, and take the rest as
    `*args, **kwargs`: every call reaches it, and what it judges arrives under the right name.
    The public function is looked up in the change and on disk
    under the source roots, preferring the one whose `@dispatch` imports this backends package; when none is
    found, or the candidates disagree, nothing is reported.

    Example: `def chunk_kda_verifier(self, q, k, v, g, beta, state_v_first=False, **kwargs)` for
    `chunk_kda(q, k, v, g, beta, scale=None, ..., allow_neg_eigval=False, state_v_first=False)`.

    Instead: `def chunk_kda_verifier(self, q, k, v, g, beta, scale=None, ..., allow_neg_eigval=False,
    state_v_first=False)`, returning `(False, reason)` for every value the backend cannot serve.
    """
    verifiers = [(source, verifier) for source in _backend_sources(context) for verifier in _verifiers(source.tree)]
    if not verifiers:
        return
    public = _dispatched_functions(context, {verifier.name.removesuffix('_verifier') for _, verifier in verifiers})
    for source, verifier in verifiers:
        name = verifier.name.removesuffix('_verifier')
        package = _backends_package(source.path, context)
        candidates = public.get(name, [])
        signatures = {s for module, s in candidates if module == package} or {s for _, s in candidates}
        if len(signatures) != 1:
            continue
        expected, found = signatures.pop(), _signature(verifier, bound=True)
        if found.positional == expected.positional and set(found.keyword_only) == set(expected.keyword_only):
            continue
        # the pass-through form: every call reaches it, and what it names (if anything) it names in the function's order
        passes_through = found.var_positional and found.var_keyword and not found.keyword_only
        if context.config.verifier_pass_through and passes_through \
                and expected.positional[:len(found.positional)] == found.positional:
            continue
        message = f'{verifier.name} takes ({found}) but {name} takes ({expected})'
        swallowed = [n for n in expected.names if n not in found.names] if found.var_keyword else []
        if swallowed:
            message += f'; **{found.var_keyword} lets {", ".join(swallowed)} through unchecked'
        yield Violation(source.path, verifier.lineno, message, verifier.col_offset)


def _module_names(tree: ast.Module) -> set[str]:
    names = set()
    for statement in _top_level_statements(tree.body):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split('.')[0] for a in statement.names)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _assignment_targets(statement: ast.stmt) -> list[ast.expr]:
    """What an assignment, augmented assignment, annotated assignment with a value or `del` writes, tuples unpacked."""
    if isinstance(statement, (ast.Assign, ast.Delete)):
        targets = list(statement.targets)
    elif isinstance(statement, ast.AugAssign) or (isinstance(statement, ast.AnnAssign) and statement.value is not None):
        targets = [statement.target]
    else:
        return []
    flat = []
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets.extend(target.elts)
        else:
            flat.append(target.value if isinstance(target, ast.Starred) else target)
    return flat


def _call_side_effect(call: ast.Call, shared: set[str]) -> str | None:
    name = dotted_name(call.func) or ''
    method = call.func.attr if isinstance(call.func, ast.Attribute) else None
    if name in ('os.putenv', 'os.unsetenv') or (method in _ENVIRON_MUTATORS and dotted_name(call.func.value) == 'os.environ'):
        return f'changes the environment through {name}()'
    if method == 'register':
        return f'registers through {ast.unparse(call.func)}()'
    if method and method.endswith('_') and not method.startswith('_'):
        return f'changes a tensor in place through .{method}()'
    if name.rpartition('.')[2] in _RNG_SEEDERS or name in ('random.seed', 'np.random.seed', 'numpy.random.seed', 'torch.seed'):
        return f'reseeds a random number generator through {name}()'
    if method in _CONTAINER_MUTATORS and _root_name(call.func.value) in shared:
        return f'changes shared state through {ast.unparse(call.func)}()'
    return None


def _side_effects(verifier: ast.FunctionDef | ast.AsyncFunctionDef, module_names: set[str]) -> Iterator[tuple[ast.AST, str]]:
    arguments = verifier.args
    parameters = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
    rebound = {n.id for n in ast.walk(verifier) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    # Names that outlive the call: the backend, its inputs and the module's globals, unless the verifier rebinds them.
    shared = ({'self'} | parameters | module_names) - rebound
    for node in ast.walk(verifier):
        if isinstance(node, ast.Global):
            yield node, f'declares global {", ".join(node.names)}'
        elif isinstance(node, ast.Call):
            effect = _call_side_effect(node, shared)
            if effect:
                yield node, effect
        for target in _assignment_targets(node) if isinstance(node, ast.stmt) else ():
            if isinstance(target, ast.Subscript) and dotted_name(target.value) == 'os.environ':
                yield node, f'writes {ast.unparse(target)}'
                break
            if isinstance(target, (ast.Attribute, ast.Subscript)) and _root_name(target) in shared:
                yield node, f'assigns to {ast.unparse(target)}, which outlives the call'
                break


@rule('BKD003', 'Verifier with side effects', 'error',
      'make the verifier only read its arguments and return `(True, None)` or `(False, reason)`')
def verifier_side_effects(context: Context) -> Iterator[Violation]:
    """Checks that backend verifiers change nothing: no environment writes, `global`, registering, RNG seeding, in-place
    tensor methods (`.add_()`, `.copy_()`), and no assignments to or container updates of `self`, the inputs or
    module-level names.

    The dispatcher runs every verifier of every enabled backend on every call, including verifiers of backends
    that end up rejecting it. A verifier that normalises an input, caches, registers or reseeds changes what the
    default path computes and makes results depend on which backends are installed.

    Example: `def chunk_kda_verifier(self, q, ...):` containing `os.environ['FLA_TILELANG'] = '0'`,
    `self.calls += 1` or `q.clamp_(-1, 1)`.

    Instead: compute what the decision needs in local variables and return `(False, 'q must be bfloat16')`; move
    normalisation into the backend's implementation.
    """
    for source in _backend_sources(context):
        module_names = None
        for verifier in _verifiers(source.tree):
            module_names = _module_names(source.tree) if module_names is None else module_names
            for node, effect in _side_effects(verifier, module_names):
                yield Violation(source.path, node.lineno, f'{verifier.name} {effect}', node.col_offset, _lines(node))


@rule('BKD004', 'Optional package imported at module level in a backend', 'warning',
      'import the package inside the methods that use it and name it in `package_name`')
def eager_backend_import(context: Context) -> Iterator[Violation]:
    """Checks that a backends module imports at module level only the standard library, torch, triton, numpy and the
    packages of the source roots (`fla`).

    The dispatcher imports the backends module on the first call of any function of the op. A missing or broken
    optional package (a kernel library built for another CUDA) then fails that import and turns off every backend
    of the op, not only the one that needs the package; a `try`/`except ImportError` around it still pays the
    import on every first call. Imports under `if TYPE_CHECKING:` are exempt, and so are modules of the backends
    package that load only when a method imports them: the package's own modules that it, or a module it loads,
    imports at module level are the ones checked.

    Example: `import flash_kda` at the top of `fla/ops/kda/backends/flash_kda.py`.

    Instead: `package_name = 'flash_kda'` in the backend class and `import flash_kda` inside the method that calls it.
    """
    own = {root.strip('/').rpartition('/')[2] for root in context.config.source_roots}
    allowed = _ALWAYS_INSTALLED | own | set(sys.stdlib_module_names)
    eager: dict[str, set[str]] = {}
    for source in _backend_sources(context):
        package = _backends_package(source.path, context)
        if package not in eager:
            eager[package] = _eager_modules(context, source.path, package)
        if '.'.join(_module_path(source.path, context)) not in eager[package]:
            continue
        for statement in _top_level_statements(source.tree.body):
            if isinstance(statement, ast.Import):
                packages = [a.name.split('.')[0] for a in statement.names]
            elif isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
                packages = [statement.module.split('.')[0]]
            else:
                continue
            for package in dict.fromkeys(p for p in packages if p not in allowed):
                yield Violation(source.path, statement.lineno, f'{package} is imported when the backends module loads; '
                                f'import it inside the methods that use it', statement.col_offset, _lines(statement))


def _eager_modules(context: Context, path: str, package: str) -> set[str]:
    """Dotted names of the modules of the backends `package` (which holds `path`) that load with it: the package and
    what it and they import at module level, as the change leaves them."""
    parts = path.split('/')
    if 'backends' not in parts[:-1]:
        return {package}
    folder = '/'.join(parts[:len(parts) - parts[::-1].index('backends')])
    modules = {'.'.join(_module_path(module_path, context)): (module_path.endswith('__init__.py'), text)
               for module_path, text in _repository_texts(context, (folder,), '*.py')}
    loaded, waiting = set(), [package]
    while waiting:
        name = waiting.pop()
        if name in loaded or name not in modules:
            continue
        loaded.add(name)
        is_package, text = modules[name]
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for statement in _top_level_statements(tree.body):
            if isinstance(statement, ast.Import):
                waiting += [alias.name for alias in statement.names]
            elif isinstance(statement, ast.ImportFrom):
                target = imported_module(name if is_package else name.rpartition('.')[0], statement)
                waiting += [target, *(f'{target}.{alias.name}' for alias in statement.names)]
    return loaded


def _alternatives(node: ast.expr) -> Iterator[ast.expr]:
    """The values `node` can take, through the branches of conditional expressions."""
    if isinstance(node, ast.IfExp):
        yield from _alternatives(node.body)
        yield from _alternatives(node.orelse)
    else:
        yield node


def _rejection_reasons(verifier: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[tuple[ast.Return, str]]:
    """`(return, text)` for each string a `return` of the verifier gives as its reason; of an f-string, the longest literal."""
    for node in ast.walk(verifier):
        if not (isinstance(node, ast.Return) and node.value is not None):
            continue
        for verdict in _alternatives(node.value):
            if not (isinstance(verdict, ast.Tuple) and len(verdict.elts) == 2 and _constant(verdict.elts[0]) is not True):
                continue
            for reason in _alternatives(verdict.elts[1]):
                if isinstance(reason, ast.JoinedStr):
                    parts = [v.value.strip() for v in reason.values if isinstance(_constant(v), str)]
                    text = max(parts, key=len, default='')
                    if len(text) >= _MIN_REASON_PART:
                        yield node, text
                elif isinstance(_constant(reason), str) and _constant(reason).strip():
                    yield node, _constant(reason)


# A quoted string in a test: an assertion on part of a reason where it is distinctive (see `_distinctive`).
_QUOTED = re.compile(r"""(['"])([^'"\n]{5,200}?)\1""")
# What sets a part of a reason apart from a word any test may quote: a space, an identifier's underscore, a comparison.
_DISTINCTIVE = re.compile(r'\S[\s_=<>]+\S')


@rule('BKD005', 'Verifier rejection reason that no test triggers', 'warning',
      'add a test that calls the public function with input this branch rejects and checks the reason')
def untested_rejection(context: Context) -> Iterator[Violation]:
    """Checks that each rejection reason a change adds to a verifier in a backends module occurs in a test file.

    A reason is a string literal or f-string returned as the second item of a verdict, as in `return False, 'reason'`
    or `return (ok, None if ok else 'reason')`.

    Each rejection branch is a route to the default implementation that only runs on the inputs it names; without
    a test the branch can reject the wrong inputs, or accept inputs the backend computes wrongly, and nobody
    notices. A reason counts as tested when its text occurs in a test file, or a test's quoted string of at least five
    characters with a space, an underscore or a comparison in it occurs in it (`assert 'slower than Triton' in reason`,
    `"K=128" in reason`, `'chunk_size'` in a table of cases, `pytest.raises(..., match='...')`); for an f-string, its
    longest literal part of at least eight characters counts, and shorter ones are not checked.

    Example: `return False, 'q must be bfloat16'` in `chunk_kda_verifier`, with no test mentioning it.

    Instead: a test that calls `chunk_kda` with float32 inputs and asserts the logged reason `q must be bfloat16`.
    """
    reasons = [(source, verifier, node, text) for source in _backend_sources(context)
               for verifier in _verifiers(source.tree) for node, text in _rejection_reasons(verifier)]
    if not reasons:
        return
    tests = [text for _, text in _repository_texts(context, context.config.test_roots, '*')]
    asserted = {match[2] for test in tests for match in _QUOTED.finditer(test) if _DISTINCTIVE.search(match[2])}
    roots = ', '.join(f'{root.strip("/")}/' for root in context.config.test_roots)
    for source, verifier, node, text in reasons:
        if not any(text in test for test in tests) and not any(part in text for part in asserted):
            yield Violation(source.path, node.lineno, f'no file under {roots} contains the rejection reason {text!r} '
                            f'of {verifier.name}', node.col_offset,
                            anchors=tuple(range(node.lineno, (node.end_lineno or node.lineno) + 1)))


def _imported_names(tree: ast.Module) -> set[str]:
    """The names a module binds to other modules or their members by importing them."""
    return {(alias.asname or alias.name).split('.')[0] for statement in _top_level_statements(tree.body)
            if isinstance(statement, (ast.Import, ast.ImportFrom)) for alias in statement.names}


def _rebound(statement: ast.stmt, imported: set[str]) -> Iterator[tuple[ast.AST, str]]:
    """`(node, name)` for each attribute of an imported module that `statement` rebinds: `torch.compile = f`,
    `setattr(triton, 'autotune', f)`, `os.environ['X'] = '1'`."""
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, (ast.AugAssign, ast.AnnAssign)) else []
    for target in targets:
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            root = target
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                yield target, ast.unparse(target)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        if last_name(call.func) == 'setattr' and call.args and isinstance(call.args[0], ast.Name) \
                and call.args[0].id in imported:
            yield call, f'{call.args[0].id}.{ast.unparse(call.args[1]).strip(chr(39) + chr(34))}'
        elif isinstance(call.func, ast.Attribute) and call.func.attr in ('update', 'setdefault') \
                and dotted_name(call.func.value) in ('os.environ', 'environ'):
            yield call, dotted_name(call.func.value)


@rule('BKD006', 'Backend package changes what other code sees when it is imported', 'error',
      'do the work where the backend runs (its methods), or ask for it in the backend\'s documentation; import only '
      'registers the backend')
def import_side_effects(context: Context) -> Iterator[Violation]:
    """Checks that a backends module rebinds no attribute of another module while it is imported.

    A statement that runs when the module is imported (its top level, and the `if`, `try` and `with` blocks there)
    and assigns to an attribute or item of an imported module (`torch.compile = ...`, `triton.autotune = ...`,
    `os.environ['X'] = ...`), calls `setattr` on one, or updates `os.environ` is reported.

    Importing a backends package happens for every user of the op, whichever backend serves the call, and often
    before the user has chosen a platform: a backend that replaces `torch.compile` or an environment variable there
    changes the program for everyone, on every platform its condition lets through, and no test of the op notices.
    Upstream's dispatch guide: "Do not add import-time side effects in backend packages beyond registering backends."

    Example: at the top of `fla/modules/backends/triton_ascend/__init__.py`, `if IS_NPU:` followed by a wrapper of
    `torch.compile` and `torch.compile = _torch_compile`.

    Instead: keep `torch.compile` as it is, and leave the one function out of compilation where it is defined
    (`@torch.compiler.disable`), or in the backend's method that runs it.
    """
    with_package = _imported_with_packages(context)
    for source in _backend_sources(context):
        if source.path not in with_package:
            continue
        imported = _imported_names(source.tree)
        for statement in _top_level_statements(source.tree.body):
            for node, name in _rebound(statement, imported):
                yield Violation(source.path, node.lineno, f'`{name}` is changed when the backend is imported, for every '
                                                          'user of the op', column=node.col_offset)
