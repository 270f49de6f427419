# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Backend dispatch: a public op decorated with `@dispatch('<operation>')` may be served by an alternative backend.

On the first call, `fla.ops.<operation>.backends` is imported; it creates a `BackendRegistry('<operation>')` and
registers `BaseBackend` subclasses. Each call tries the registered backends in priority order (lower first); a
backend is tried only when it is available and enabled, implements the called function, and its
`<function>_verifier` accepts the call. With no backend left, the decorated function itself runs.
`FLA_DISABLE_BACKEND_DISPATCH=1` bypasses all of it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import torch

logger = logging.getLogger(__name__)

DISABLE_ENV_VAR = 'FLA_DISABLE_BACKEND_DISPATCH'


class BackendContractError(TypeError):
    """A backend broke the dispatch contract (a bug in the backend, not in the caller's input)."""


@functools.cache
def _package_installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


class BaseBackend:
    """An alternative implementation of some functions of one operation.

    A subclass sets the class attributes below and defines, for each function `f` it serves, a method `f` with the
    public call surface and optionally `f_verifier` returning `(True, None)` or `(False, reason)`.
    """

    backend_type: str = 'base'
    # Importable package the backend needs; `None` when it needs nothing beyond fla.
    package_name: str | None = None
    # Environment variable that turns the backend off with '0' (or on with any other value).
    env_var: str | None = None
    default_enable: bool = True
    priority: int = 5

    @classmethod
    def is_available(cls) -> bool:
        return cls.package_name is None or _package_installed(cls.package_name)

    @classmethod
    def is_enabled(cls) -> bool:
        if cls.env_var is None:
            return True
        return os.environ.get(cls.env_var, '1' if cls.default_enable else '0') != '0'

    def verify(self, func_name: str, *args: Any, **kwargs: Any) -> tuple[bool, str | None]:
        verifier = getattr(self, f'{func_name}_verifier', None)
        if verifier is None:
            return True, None
        try:
            verdict = verifier(*args, **kwargs)
        except Exception as exc:
            return False, f'{func_name}_verifier raised {type(exc).__name__}: {exc}'
        if not (isinstance(verdict, tuple) and len(verdict) == 2 and isinstance(verdict[0], bool)):
            raise BackendContractError(
                f"backend '{self.backend_type}': {func_name}_verifier returned {verdict!r}; "
                "expected (True, None) or (False, 'reason')"
            )
        return verdict


class BackendRegistry:
    """The backends of one operation, in priority order (ties keep registration order)."""

    _by_operation: dict[str, BackendRegistry] = {}

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self._backends: list[BaseBackend] = []
        self._lock = threading.RLock()
        BackendRegistry._by_operation[operation] = self

    @classmethod
    def get(cls, operation: str) -> BackendRegistry | None:
        return cls._by_operation.get(operation)

    def register(self, backend: BaseBackend | type[BaseBackend]) -> BaseBackend | type[BaseBackend]:
        """Add a backend (an instance or a class, so this also works as a class decorator).

        Registering a second backend of the same `backend_type` replaces the first in its place.
        """
        instance = backend() if isinstance(backend, type) else backend
        with self._lock:
            for i, existing in enumerate(self._backends):
                if existing.backend_type == instance.backend_type:
                    self._backends[i] = instance
                    break
            else:
                self._backends.append(instance)
        return backend

    def backends(self) -> list[BaseBackend]:
        with self._lock:
            return sorted(self._backends, key=lambda b: b.priority)


_init_lock = threading.Lock()
# Operation name -> its registry, or None when it has no usable backends module.
_loaded: dict[str, BackendRegistry | None] = {}
_reported: set[tuple[str, ...]] = set()


def _log_once(level: int, key: tuple[str, ...], message: str) -> None:
    if key not in _reported:
        _reported.add(key)
        logger.log(level, message)


def _load_registry(operation: str, module: str) -> BackendRegistry | None:
    with _init_lock:
        if operation in _loaded:
            return _loaded[operation]
        registry = None
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            try:
                importlib.import_module(module)
                registry = BackendRegistry.get(operation)
                if registry is None:
                    _log_once(logging.WARNING, ('no-registry', operation),
                              f"[fla backends] {module} defines no BackendRegistry('{operation}'); "
                              "using the default implementation")
            except Exception as exc:
                _log_once(logging.WARNING, ('import', operation),
                          f"[fla backends] importing {module} failed with {type(exc).__name__}: {exc}; "
                          f"the backends of '{operation}' are off and the default implementation runs")
        _loaded[operation] = registry
        return registry


def dispatch(operation: str, module: str | None = None) -> Callable[[Callable], Callable]:
    """Let the backends registered for `operation` serve calls to the decorated function.

    Args:
        operation (str):
            Name of the `BackendRegistry` to consult.
        module (str, Optional):
            Module that registers the backends, imported on the first call.
            Default: `'fla.ops.<operation>.backends'`.
    """
    backends_module = module or f'fla.ops.{operation}.backends'

    def decorator(func: Callable) -> Callable:
        name = func.__name__

        @functools.wraps(func)
        def dispatched(*args: Any, **kwargs: Any) -> Any:
            if os.environ.get(DISABLE_ENV_VAR) == '1':
                return func(*args, **kwargs)
            registry = _load_registry(operation, backends_module)
            for backend in registry.backends() if registry is not None else ():
                impl = getattr(backend, name, None)
                if impl is None or not (backend.is_available() and backend.is_enabled()):
                    continue
                accepted, reason = backend.verify(name, *args, **kwargs)
                if not accepted:
                    _log_once(logging.INFO, ('rejected', operation, name, backend.backend_type, str(reason)),
                              f'[fla backends] {operation}.{name} -> {backend.backend_type} rejected: {reason}')
                    continue
                _log_once(logging.INFO, ('selected', operation, name, backend.backend_type),
                          f'[fla backends] {operation}.{name} -> {backend.backend_type}')
                return impl(*args, **kwargs)
            return func(*args, **kwargs)

        # Dispatch reads the environment and Python state per call, which a compiled graph must not freeze. The
        # wrapping waits for the first call: `torch.compiler.disable` imports torch._dynamo, a second of every import.
        disabled: list[Callable] = []

        @functools.wraps(func)
        def entry(*args: Any, **kwargs: Any) -> Any:
            if not disabled:
                disabled.append(torch.compiler.disable(dispatched))
            return disabled[0](*args, **kwargs)

        return entry

    return decorator


__all__ = ['BackendContractError', 'BackendRegistry', 'BaseBackend', 'DISABLE_ENV_VAR', 'dispatch']
