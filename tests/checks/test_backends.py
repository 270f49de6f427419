# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Backend rules: declarations, verifier signatures and side effects, lazy optional imports, tested rejections."""

from __future__ import annotations

import textwrap

import pytest

BACKENDS = 'fla/ops/foo/backends/__init__.py'
PUBLIC = 'fla/ops/foo/chunk.py'

DISPATCHED = """
from fla.ops.backends import dispatch


@dispatch('foo')
def scale(x, factor=2, *, cu_seqlens=None):
    return x * factor
"""

GOOD_BACKEND = """
import os

import torch

from fla.ops.backends import BackendRegistry, BaseBackend

registry = BackendRegistry('foo')


@registry.register
class Fast(BaseBackend):
    backend_type = 'fast'
    package_name = 'fast_kernels'
    env_var = 'FLA_FAST'

    def scale_verifier(self, x, factor=2, *, cu_seqlens=None):
        checked = {}
        checked['factor'] = factor
        if os.environ.get('FLA_FAST_STRICT') == '1' and x.dtype != torch.bfloat16:
            return (False, 'x must be bfloat16 in strict mode')
        return (True, None)

    def scale(self, x, factor=2, *, cu_seqlens=None):
        import fast_kernels

        return fast_kernels.scale(x.float(), factor)
"""

TEST_OF_GOOD_BACKEND = """
def test_strict_mode_rejects_float32(caplog):
    assert 'x must be bfloat16 in strict mode' in caplog.text
"""


@pytest.fixture
def repo(repo):
    """The shared fixture with a first commit, so every test has a base to check against."""
    repo.commit({'README.md': '# Test\n'})
    return repo


def _code(text: str) -> str:
    return textwrap.dedent(text).lstrip('\n')


def _line(text: str, fragment: str) -> int:
    """The number of the first line of `text` that contains `fragment`."""
    return next(i for i, line in enumerate(_code(text).splitlines(), 1) if fragment in line)


def _located(report) -> list[tuple[str, str, int]]:
    return [(f.rule, f.path, f.line) for f in report.findings]


def _backend(classes: str, imports: str = '') -> str:
    return _code(imports) + 'from fla.ops.backends import BackendRegistry, BaseBackend\n\n' + _code(classes)


def test_the_compliant_backend_passes_every_rule(repo):
    repo.write({PUBLIC: _code(DISPATCHED), BACKENDS: _code(GOOD_BACKEND),
                'tests/ops/test_foo.py': _code(TEST_OF_GOOD_BACKEND)})
    assert repo.check('BKD001', 'BKD002', 'BKD003', 'BKD004', 'BKD005').findings == ()


@pytest.mark.parametrize('body, message', [
    pytest.param("priority = 3\n", 'does not set backend_type', id='missing'),
    pytest.param("backend_type = 'base'\n", "sets backend_type to 'base'", id='placeholder'),
    pytest.param("backend_type = 'fast'\nenv_var = 'FAST_BACKEND'\n", "'FAST_BACKEND', which does not start with FLA_",
                 id='env-var'),
])
def test_backend_declaration_is_reported_at_the_class_line(repo, body, message):
    classes = 'class Fast(BaseBackend):\n' + textwrap.indent(body, '    ')
    repo.write({BACKENDS: _backend(classes)})
    report = repo.check('BKD001')
    assert _located(report) == [('BKD001', BACKENDS, _line(_backend(classes), 'class Fast'))]
    assert message in report.findings[0].message


def test_backend_declaration_ignores_indirect_subclasses_and_files_outside_backends(repo):
    classes = """
    class Fast(BaseBackend):
        backend_type = 'fast'
        env_var = 'FLA_FAST'

    class Faster(Fast):
        priority = 1
    """
    repo.write({BACKENDS: _backend(classes), 'fla/ops/foo/chunk.py': _backend('class Fast(BaseBackend):\n    pass\n')})
    assert repo.check('BKD001').findings == ()


def test_backend_declaration_is_reported_when_the_change_touches_the_class_only(repo):
    old = """
    class Fast(BaseBackend):
        def scale(self, x, factor=2):
            return x
    """
    repo.commit({BACKENDS: _backend(old)})
    repo.write({BACKENDS: _backend(old) + 'PRIORITY = 1\n'})
    assert repo.check('BKD001').findings == ()
    touched = old.replace('return x', 'return x + x')
    repo.write({BACKENDS: _backend(touched)})
    assert _located(repo.check('BKD001')) == [('BKD001', BACKENDS, _line(_backend(touched), 'class Fast'))]


def _verifier_backend(parameters: str) -> str:
    return _backend(f"""
    class Fast(BaseBackend):
        backend_type = 'fast'

        def scale_verifier(self, {parameters}):
            return (True, None)
    """)


@pytest.mark.parametrize('parameters, message', [
    pytest.param('factor, x, *, cu_seqlens=None', 'scale_verifier takes (factor, x, *, cu_seqlens) but scale takes '
                 '(x, factor, *, cu_seqlens)', id='order'),
    pytest.param('x, factor=2, cu_seqlens=None', 'takes (x, factor, cu_seqlens) but', id='keyword-only-made-positional'),
    pytest.param('x, **kwargs', 'takes (x, **kwargs) but scale takes (x, factor, *, cu_seqlens); **kwargs lets factor, '
                 'cu_seqlens through unchecked', id='swallowed'),
    pytest.param('*args, **kwargs', 'takes (*args, **kwargs)', id='catch-all'),
    pytest.param('factor, *args, **kwargs', 'takes (factor, *args, **kwargs)', id='pass-through-out-of-order'),
])
def test_verifier_signature_mismatch_is_reported_at_the_def_line(repo, parameters, message):
    repo.commit({PUBLIC: _code(DISPATCHED)})
    repo.write({BACKENDS: _verifier_backend(parameters)})
    report = repo.check('BKD002')
    assert _located(report) == [('BKD002', BACKENDS, _line(_verifier_backend(parameters), 'def scale_verifier'))]
    assert message in report.findings[0].message


@pytest.mark.parametrize('parameters', ['x, *args, **kwargs', 'x, factor=2, *args, **kwargs', '*args, **kwargs'])
def test_verifier_passing_the_rest_through_is_accepted_where_the_repository_allows_it(repo, parameters):
    # upstream writes whole backends with verifiers of `(*args, **kwargs)` alone, which is its pass-through form too
    repo.commit({PUBLIC: _code(DISPATCHED)})
    repo.write({BACKENDS: _verifier_backend(parameters)})
    assert [f.rule for f in repo.check('BKD002').findings] == ['BKD002']
    repo.write({'pyproject.toml': '[tool.mrbot]\nverifier-pass-through = true\n'})
    assert repo.check('BKD002').findings == ()


def test_verifier_signature_matches_on_names_and_order_not_defaults(repo):
    repo.commit({PUBLIC: _code(DISPATCHED)})
    repo.write({BACKENDS: _verifier_backend('x, factor=3, *, cu_seqlens=None')})
    assert repo.check('BKD002').findings == ()


def test_verifier_signature_follows_a_public_function_changed_in_the_same_change(repo):
    repo.commit({PUBLIC: _code(DISPATCHED), BACKENDS: _verifier_backend('x, factor=2, *, cu_seqlens=None')})
    repo.write({PUBLIC: _code(DISPATCHED).replace('factor=2', 'scale=2'),
                BACKENDS: _verifier_backend('x, scale=2, *, cu_seqlens=None')})
    assert repo.check('BKD002').findings == ()


def test_verifier_signature_prefers_the_function_dispatched_to_this_package(repo):
    other = _code(DISPATCHED).replace("'foo'", "'bar'").replace('factor=2', 'bias=0')
    repo.commit({PUBLIC: _code(DISPATCHED), 'fla/ops/bar/chunk.py': other})
    backend = _verifier_backend('x, factor=2, *, cu_seqlens=None')
    repo.write({BACKENDS: backend, 'fla/ops/bar/backends.py': backend})
    assert _located(repo.check('BKD002')) == [('BKD002', 'fla/ops/bar/backends.py', _line(backend, 'def scale_verifier'))]


def test_verifier_without_a_dispatched_public_function_is_not_reported(repo):
    repo.commit({PUBLIC: _code(DISPATCHED).replace("@dispatch('foo')\n", '')})
    repo.write({BACKENDS: _verifier_backend('factor, x')})
    assert repo.check('BKD002').findings == ()


def test_verifier_signature_mismatch_in_the_base_is_not_reported(repo):
    repo.commit({PUBLIC: _code(DISPATCHED), BACKENDS: _verifier_backend('factor, x')})
    repo.write({BACKENDS: _verifier_backend('factor, x') + 'PRIORITY = 1\n'})
    assert repo.check('BKD002').findings == ()


SIDE_EFFECTS = """
import os
import random

import torch

from fla.ops.backends import BackendRegistry, BaseBackend

registry = BackendRegistry('foo')
_SEEN = set()


class Fast(BaseBackend):
    backend_type = 'fast'

    def scale_verifier(self, x, factor=2):
        os.environ['FLA_FAST'] = '0'
        os.environ.setdefault('FLA_FAST', '1')
        global _COUNT
        self.calls += 1
        _SEEN.add(factor)
        torch.backends.cuda.matmul.allow_tf32 = True
        x[0] = 0
        registry.register(Fast)
        x.clamp_(-1, 1)
        torch.manual_seed(0)
        random.seed(0)
        return (True, None)
"""


def test_every_side_effect_of_a_verifier_is_reported_at_its_line(repo):
    repo.write({BACKENDS: _code(SIDE_EFFECTS)})
    body = _code(SIDE_EFFECTS).split('def scale_verifier')[1].splitlines()[1:-1]
    expected = [('BKD003', BACKENDS, _line(SIDE_EFFECTS, line.strip())) for line in body]
    assert sorted(_located(repo.check('BKD003'))) == sorted(expected)


def test_verifier_side_effect_messages_name_what_changes(repo):
    repo.write({BACKENDS: _code(SIDE_EFFECTS)})
    messages = {f.line: f.message for f in repo.check('BKD003').findings}
    assert messages[_line(SIDE_EFFECTS, 'self.calls')] == 'scale_verifier assigns to self.calls, which outlives the call'
    assert messages[_line(SIDE_EFFECTS, 'clamp_')] == 'scale_verifier changes a tensor in place through .clamp_()'


def test_verifier_reading_state_and_writing_locals_is_not_reported(repo):
    classes = """
    class Fast(BaseBackend):
        backend_type = 'fast'

        def scale_verifier(self, x, factor=2):
            x = x.float()
            x.tag = 'local'
            shapes = []
            shapes.append(x.shape)
            return (factor == 2 and os.environ.get('FLA_FAST') != '0' and self.priority < 9, None)

        def scale(self, x, factor=2):
            self.calls = 1
            return x.add_(x)
    """
    repo.write({BACKENDS: _backend(classes, 'import os\n')})
    assert repo.check('BKD003').findings == ()


def test_verifier_side_effect_in_the_base_is_not_reported(repo):
    repo.commit({BACKENDS: _code(SIDE_EFFECTS)})
    repo.write({BACKENDS: _code(SIDE_EFFECTS) + 'PRIORITY = 1\n'})
    assert repo.check('BKD003').findings == ()


EAGER_IMPORTS = """
import functools
from typing import TYPE_CHECKING

import flash_kda.ops
import numpy as np
import torch
import triton

from fla.ops.backends import BackendRegistry
from tilelang import jit

from .kernels import fast_scale

try:
    import cutlass
except ImportError:
    cutlass = None

if TYPE_CHECKING:
    import deep_gemm
"""


def test_optional_packages_imported_at_module_level_are_reported(repo):
    repo.write({BACKENDS: _code(EAGER_IMPORTS)})
    report = repo.check('BKD004')
    assert _located(report) == [('BKD004', BACKENDS, _line(EAGER_IMPORTS, name))
                                for name in ('import flash_kda', 'from tilelang', 'import cutlass')]
    assert report.findings[0].message.startswith('flash_kda is imported when the backends module loads')
    assert {f.severity for f in report.findings} == {'warning'}


def _importing_backend(package: str, statement: str, call: str) -> str:
    """A backend class whose one method imports what it calls, `package` naming the optional package."""
    return f"""
    class Fast(BaseBackend):
        backend_type = 'fast'
        package_name = '{package}'

        def scale(self, x, factor=2):
            {statement}

            return {call}(x, factor)
    """


def test_optional_packages_imported_inside_methods_are_not_reported(repo):
    classes = _importing_backend('flash_kda', 'import flash_kda', 'flash_kda.scale')
    repo.write({BACKENDS: _backend(classes, 'import os\n\nimport torch\n')})
    assert repo.check('BKD004').findings == ()


def test_optional_package_in_a_module_that_loads_only_from_a_method_is_not_reported(repo):
    """Upstream's tilelang kernels: each module imports tilelang, and the backend imports the module when it runs."""
    classes = _importing_backend('tilelang', 'from fla.ops.foo.backends.fast.kernels import fast_scale', 'fast_scale')
    repo.write({BACKENDS: 'from .fast import Fast\n',
                'fla/ops/foo/backends/fast/__init__.py': _backend(classes, 'from .schedules import best\n'),
                'fla/ops/foo/backends/fast/schedules.py': 'import tilelang\n\nbest = tilelang.best\n',
                'fla/ops/foo/backends/fast/kernels.py': 'import tilelang\n\nfast_scale = tilelang.jit\n'})
    assert _located(repo.check('BKD004')) == [('BKD004', 'fla/ops/foo/backends/fast/schedules.py', 1)]


def test_optional_package_imported_in_the_base_is_not_reported(repo):
    repo.commit({BACKENDS: _code(EAGER_IMPORTS)})
    repo.write({BACKENDS: _code(EAGER_IMPORTS) + 'PRIORITY = 1\n'})
    assert repo.check('BKD004').findings == ()


REJECTIONS = """
class Fast(BaseBackend):
    backend_type = 'fast'

    def scale_verifier(self, x, factor=2):
        if factor != 2:
            return False, f'factor must be 2, got {factor}'
        if x.dim() != 3:
            return (False, f'{x.dim()}')
        if x.dtype != 'bf16':
            return (False, 'x must be bfloat16') if x.is_cuda else (True, None)
        return (x.shape[0] > 10, None if x.shape[0] > 10 else 'x must hold more than 10 rows')
"""


def test_rejection_reasons_no_test_mentions_are_reported_at_their_return(repo):
    repo.write({BACKENDS: _backend(REJECTIONS)})
    report = repo.check('BKD005')
    assert _located(report) == [('BKD005', BACKENDS, _line(_backend(REJECTIONS), line))
                                for line in ("f'factor must be 2", "'x must be bfloat16'", "'x must hold more")]
    assert report.findings[0].message == ("no file under tests/ contains the rejection reason 'factor must be 2, got' "
                                          "of scale_verifier")


def test_rejection_reasons_found_in_tests_on_disk_or_in_the_change_are_not_reported(repo):
    repo.commit({'tests/ops/test_foo.py': "assert reason == 'factor must be 2, got 5'\n"})
    reasons = "REASONS = ['x must be bfloat16', 'x must hold more than 10 rows']\n"
    repo.write({BACKENDS: _backend(REJECTIONS), 'tests/ops/test_foo_dtypes.py': reasons})
    assert repo.check('BKD005').findings == ()


def test_rejection_reasons_a_test_asserts_in_part_count_as_tested(repo):
    tests = ("assert not ok and 'hold more than' in reason\n"
             "with pytest.raises(ValueError, match='must be bfloat16'):\n    pass\n")
    repo.write({BACKENDS: _backend(REJECTIONS), 'tests/ops/test_foo.py': tests})
    assert [f.message.split("'")[1] for f in repo.check('BKD005').findings] == ['factor must be 2, got']


def test_a_short_distinctive_part_a_test_asserts_counts_as_tested_and_a_bare_word_does_not(repo):
    # upstream asserts `"K=128" in reason` and tables of (case, 'chunk_size'); a quoted 'bfloat16' is any test's word
    tests = "CASES = [('rows', 'than 10'), ('factor', 'factor must')]\nassert dtype == 'bfloat16'\n"
    repo.write({BACKENDS: _backend(REJECTIONS), 'tests/ops/test_foo.py': tests})
    assert [f.message.split("'")[1] for f in repo.check('BKD005').findings] == ['x must be bfloat16']


def test_rejection_reasons_of_an_untouched_backend_are_not_reported(repo):
    repo.commit({BACKENDS: _backend(REJECTIONS)})
    repo.write({'fla/ops/foo/chunk.py': 'x = 1\n'})
    assert repo.check('BKD005').findings == ()


def test_an_old_untested_reason_in_a_touched_backend_is_not_reported(repo):
    repo.commit({BACKENDS: _backend(REJECTIONS)})
    repo.write({BACKENDS: _backend(REJECTIONS) + '\nSCALE = 2\n'})
    assert repo.check('BKD005').findings == ()


def test_a_backend_that_rebinds_another_modules_attribute_when_imported_is_reported_where_it_does(repo):
    # upstream's Ascend backend replaced torch.compile for every user of the op the moment its package was imported
    rebinding = textwrap.dedent("""
        import os

        import torch

        from fla.ops.backends import BaseBackend
        from fla.utils import IS_NPU

        if IS_NPU:
            _compile = torch.compile

            def _compile_but_one(fn=None, /, **kwargs):
                return fn if fn is not None and fn.__name__ == 'loss' else _compile(fn, **kwargs)

            torch.compile = _compile_but_one
        os.environ['FLA_FAST'] = '1'


        class Fast(BaseBackend):
            backend_type = 'fast'


        Fast.priority = 1
    """)
    repo.commit({'README.md': 'demo\n'})
    repo.write({BACKENDS: _code(rebinding)})
    assert _located(repo.check('BKD006')) == [('BKD006', BACKENDS, _line(rebinding, 'torch.compile = ')),
                                              ('BKD006', BACKENDS, _line(rebinding, "os.environ['FLA_FAST']"))]
    # the same work done where the backend runs changes nothing at import
    repo.write({BACKENDS: GOOD_BACKEND})
    assert repo.check('BKD006').findings == ()


def test_a_module_a_backend_imports_in_its_methods_is_not_run_by_importing_the_package(repo):
    # upstream's Ascend backend loads its kernels from its methods: a shim there runs when the backend serves a call
    shim = _code("""
        import triton.language as tl

        if not hasattr(tl, 'extract_slice'):
            tl.extract_slice = lambda x, offsets, sizes, strides: x
    """)
    package = _code("""
        from fla.ops.backends import BaseBackend


        class Fast(BaseBackend):
            backend_type = 'fast'

            def chunk_foo(self, x):
                from .kernels import fast_foo
                return fast_foo(x)
    """)
    repo.commit({'README.md': 'demo\n'})
    repo.write({BACKENDS: package, 'fla/ops/foo/backends/kernels.py': shim})
    assert repo.check('BKD006').findings == ()
    # imported by the package itself, the same shim runs for every user of the op
    repo.write({BACKENDS: package.replace('from fla.ops.backends import BaseBackend',
                                          'from fla.ops.backends import BaseBackend\n\nfrom . import kernels')})
    assert _located(repo.check('BKD006')) == [('BKD006', 'fla/ops/foo/backends/kernels.py',
                                              _line(shim, 'tl.extract_slice = '))]
