# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Platform checks and device choice through the helpers of `fla.utils`, not through torch directly."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from mrbot.config import Config
from mrbot.rules import Context, Violation, dotted_name, rule

_CAPABILITY_FLAGS = '`IS_NVIDIA_HOPPER` / `IS_NVIDIA_BLACKWELL`'
# Direct platform queries and the helper of fla.utils that answers the same question.
_DIRECT_CHECKS = {
    'torch.cuda.is_available': "`fla.utils.device` (`device != 'cpu'`) or `IS_NVIDIA` / `IS_AMD`",
    'torch.cuda.get_device_capability': _CAPABILITY_FLAGS,
    'torch.cuda.get_device_name': _CAPABILITY_FLAGS,
    'torch.version.cuda': '`IS_NVIDIA`',
    'torch.version.hip': '`IS_AMD`',
    'torch.xpu.is_available': '`IS_INTEL`',
}
_CUDA_LITERAL = re.compile(r'cuda(?::\d+)?')
# Every pattern above names one of these; a file without any is skipped unparsed.
_PLATFORM_WORDS = re.compile(r'cuda|hip|xpu')


def _is_helpers_module(path: str, config: Config) -> bool:
    """Whether `path` is the module that defines the platform helpers, `<source root>/utils.py` or `.../utils/`."""
    return any(path == f'{root.rstrip("/")}/utils.py' or path.startswith(f'{root.rstrip("/")}/utils/')
               for root in config.source_roots)


def _is_cuda_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(_CUDA_LITERAL.fullmatch(node.value))


def _device_literals(call: ast.Call) -> Iterator[ast.Constant]:
    """'cuda' literals that `call` takes as a device: `device=`, `torch.device(...)` or `.to(...)`."""
    yield from (k.value for k in call.keywords if k.arg == 'device' and _is_cuda_literal(k.value))
    takes_device = dotted_name(call.func) == 'torch.device' or isinstance(call.func, ast.Attribute) and call.func.attr == 'to'
    if takes_device:
        yield from (argument for argument in call.args if _is_cuda_literal(argument))


def _violations(path: str, tree: ast.Module, is_test: bool) -> Iterator[Violation]:
    # a test asserting what the raw query answers pins a platform flag to it: the query is what it tests
    pinned = {id(inner) for node in ast.walk(tree) if is_test and isinstance(node, ast.Assert)
              for inner in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in pinned:
            continue
        if isinstance(node, ast.Attribute) and dotted_name(node) in _DIRECT_CHECKS:
            name = dotted_name(node)
            yield Violation(path, node.lineno, f'`{name}` checks the platform directly; use {_DIRECT_CHECKS[name]} '
                                               'from `fla.utils`', column=node.col_offset)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == 'cuda':
                # The line of `.cuda`, not of the receiver, which may start lines above in a chain.
                yield Violation(path, node.func.end_lineno, '`.cuda()` moves to a CUDA device directly; use '
                                                            '`.to(fla.utils.device)`',
                                column=node.func.end_col_offset - len('.cuda'))
            for literal in _device_literals(node):
                yield Violation(path, literal.lineno, f"device literal {literal.value!r}; use `fla.utils.device`",
                                column=literal.col_offset)


@rule('PLT001', 'Direct platform check or device literal', 'warning',
      'use `fla.utils.device` and the platform flags of `fla.utils` (`IS_NVIDIA`, `IS_NVIDIA_HOPPER`, `IS_AMD`, `IS_INTEL`)')
def platform_helpers(context: Context) -> Iterator[Violation]:
    """Checks that tests and library code ask `fla.utils` for the platform and the device instead of torch.

    Reported in files under a test or source root: `torch.cuda.is_available`, `torch.cuda.get_device_capability`,
    `torch.cuda.get_device_name`, `torch.xpu.is_available`, reads of `torch.version.cuda` / `torch.version.hip`,
    `.cuda()` calls, and the literal `'cuda'` (or `'cuda:N'`) given as `device=`, to `torch.device(...)` or to
    `.to(...)`. The module that defines the helpers (`<source root>/utils.py` or `<source root>/utils/`) is exempt, and
    so is an `assert` of a test, which pins a flag to what the raw query answers. A `'cuda'` stored in a variable first
    is not seen.

    The helpers decide the platform once and in one place: AMD GPUs answer to `'cuda'` in torch yet need their own
    flags, Intel GPUs are `'xpu'`, and without a GPU the tests run on the CPU under Triton's interpreter. A direct
    `torch.cuda` check or a hard-coded `'cuda'` gets one of those cases wrong and skips or fails a test on it.

    Example: `q = torch.randn(B, T, H, K, device='cuda')` or `@pytest.mark.skipif(not torch.cuda.is_available(), ...)`.

    Instead: `from fla.utils import device`, `q = torch.randn(B, T, H, K, device=device)`, and skip on
    `device == 'cpu'` or a platform flag such as `not IS_NVIDIA_HOPPER`.
    """
    for source in context.sources('*.py'):
        path = source.path
        in_scope = context.config.is_test(path) or context.config.is_source(path)
        if not in_scope or _is_helpers_module(path, context.config) or not _PLATFORM_WORDS.search(source.text):
            continue
        if source.tree is None:
            continue
        yield from _violations(path, source.tree, context.config.is_test(path))
