# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The dispatch system: which implementation serves a call, what gets logged, and how broken backends are reported."""

from __future__ import annotations

import itertools
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from fla.ops.backends import DISABLE_ENV_VAR, BackendContractError, dispatch

_unique = itertools.count()


@pytest.fixture(autouse=True)
def dispatch_enabled(monkeypatch):
    """These tests are about dispatch itself, so it is on unless a test turns it off."""
    monkeypatch.delenv(DISABLE_ENV_VAR, raising=False)


@pytest.fixture
def make_op(tmp_path, monkeypatch):
    """Write a backends module with the given body and return a dispatched `scale(x, factor=2)` that uses it."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(body: str | None):
        operation = f'fake_op_{next(_unique)}'
        module = f'{operation}_backends'
        if body is not None:
            header = f"from fla.ops.backends import BackendRegistry, BaseBackend\nregistry = BackendRegistry('{operation}')\n"
            (tmp_path / f'{module}.py').write_text(header + textwrap.dedent(body))

        @dispatch(operation, module=module)
        def scale(x, factor=2):
            return ('default', x * factor)

        return scale

    return make


def _records(caplog, text):
    return [r for r in caplog.records if text in r.getMessage()]


ACCEPTING = """
@registry.register
class Fast(BaseBackend):
    backend_type = 'fast'
    def scale_verifier(self, x, factor=2):
        return (True, None) if factor == 2 else (False, f'factor must be 2, got {factor}')
    def scale(self, x, factor=2):
        return ('fast', x + x)
"""


def test_accepted_call_runs_the_backend_and_logs_the_route_once(make_op, caplog):
    scale = make_op(ACCEPTING)
    with caplog.at_level(logging.INFO, logger='fla.ops.backends'):
        assert scale(3) == ('fast', 6)
        assert scale(4) == ('fast', 8)
    assert len(_records(caplog, '-> fast')) == 1


def test_rejected_call_falls_back_and_logs_each_reason_once(make_op, caplog):
    scale = make_op(ACCEPTING)
    with caplog.at_level(logging.INFO, logger='fla.ops.backends'):
        assert scale(3, factor=5) == ('default', 15)
        assert scale(4, factor=5) == ('default', 20)
        assert scale(4, factor=7) == ('default', 28)
    assert len(_records(caplog, 'rejected: factor must be 2, got 5')) == 1
    assert len(_records(caplog, 'rejected: factor must be 2, got 7')) == 1


def test_rejection_falls_through_to_the_next_backend_in_priority_order(make_op):
    scale = make_op("""
    @registry.register
    class Late(BaseBackend):
        backend_type = 'late'
        priority = 9
        def scale(self, x, factor=2):
            return ('late', x)

    @registry.register
    class Picky(BaseBackend):
        backend_type = 'picky'
        priority = 1
        def scale_verifier(self, x, factor=2):
            return (x > 10, None if x > 10 else 'x must exceed 10')
        def scale(self, x, factor=2):
            return ('picky', x)
    """)
    assert scale(11) == ('picky', 11)
    assert scale(3) == ('late', 3)


def test_bypass_env_var_runs_the_decorated_function(make_op, monkeypatch):
    scale = make_op(ACCEPTING)
    monkeypatch.setenv(DISABLE_ENV_VAR, '1')
    assert scale(3) == ('default', 6)
    monkeypatch.setenv(DISABLE_ENV_VAR, '0')
    assert scale(3) == ('fast', 6)


def test_backend_env_var_and_missing_package_switch_a_backend_off(make_op, monkeypatch):
    scale = make_op("""
    @registry.register
    class Switchable(BaseBackend):
        backend_type = 'switchable'
        env_var = 'FLA_TEST_SWITCHABLE'
        def scale(self, x, factor=2):
            return ('switchable', x)

    @registry.register
    class NeedsPackage(BaseBackend):
        backend_type = 'needs_package'
        package_name = 'a_package_that_is_not_installed'
        def scale(self, x, factor=2):
            return ('needs_package', x)
    """)
    assert scale(3) == ('switchable', 3)
    monkeypatch.setenv('FLA_TEST_SWITCHABLE', '0')
    assert scale(3) == ('default', 6)


def test_import_failure_is_reported_once_and_the_default_runs(make_op, caplog):
    scale = make_op("raise RuntimeError('kernel library built for another CUDA')\n")
    with caplog.at_level(logging.INFO, logger='fla.ops.backends'):
        assert scale(3) == ('default', 6)
        assert scale(3) == ('default', 6)
    reports = _records(caplog, 'failed with RuntimeError: kernel library built for another CUDA')
    assert len(reports) == 1
    assert reports[0].levelno == logging.WARNING


def test_missing_backends_module_means_no_backends_and_no_report(make_op, caplog):
    scale = make_op(None)
    with caplog.at_level(logging.INFO, logger='fla.ops.backends'):
        assert scale(3) == ('default', 6)
    assert caplog.records == []


def test_verifier_returning_a_bare_bool_is_an_error_naming_the_backend(make_op):
    scale = make_op("""
    @registry.register
    class Sloppy(BaseBackend):
        backend_type = 'sloppy'
        def scale_verifier(self, x, factor=2):
            return True
        def scale(self, x, factor=2):
            return ('sloppy', x)
    """)
    with pytest.raises(BackendContractError, match=r"^backend 'sloppy': scale_verifier returned True; expected"):
        scale(3)


def test_verifier_that_raises_is_a_rejection_with_the_exception_as_reason(make_op, caplog):
    scale = make_op("""
    @registry.register
    class Fragile(BaseBackend):
        backend_type = 'fragile'
        def scale_verifier(self, x, factor=2):
            return (x.shape[0] == 4, None)
        def scale(self, x, factor=2):
            return ('fragile', x)
    """)
    with caplog.at_level(logging.INFO, logger='fla.ops.backends'):
        assert scale(3) == ('default', 6)
    assert len(_records(caplog, "rejected: scale_verifier raised AttributeError: 'int' object has no attribute 'shape'")) == 1


def test_re_registering_a_backend_type_replaces_it_in_place(make_op):
    scale = make_op("""
    class First(BaseBackend):
        backend_type = 'same'
        def scale(self, x, factor=2):
            return ('first', x)

    class Second(BaseBackend):
        backend_type = 'same'
        def scale(self, x, factor=2):
            return ('second', x)

    registry.register(First)
    registry.register(Second)
    assert [b.backend_type for b in registry.backends()] == ['same']
    """)
    assert scale(3) == ('second', 3)


def test_importing_an_op_leaves_torch_dynamo_unimported():
    # `torch.compiler.disable` imports torch._dynamo, over a second of every `import fla.ops...`: it waits for a call
    done = subprocess.run([sys.executable, '-c', 'import sys, fla.ops.simple_gla, fla.ops.kda; '
                           "print('torch._dynamo' in sys.modules)"], capture_output=True, text=True,
                          env={**os.environ, 'TRITON_INTERPRET': '1'}, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == 'False', done.stderr


def test_a_compiled_caller_follows_the_route_of_each_call(make_op, monkeypatch):
    # the first call of the op is under tracing, and the compiled graph must not freeze the route it took
    scale = make_op(ACCEPTING)
    compiled = torch.compile(lambda x: scale(x), backend='eager')
    assert compiled(torch.ones(2))[0] == 'fast'
    monkeypatch.setenv(DISABLE_ENV_VAR, '1')
    assert compiled(torch.ones(2))[0] == 'default'
