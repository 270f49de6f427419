# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Alternative implementations of KDA's public functions, which `@dispatch('kda')` consults on the first call."""

from fla.ops.backends import BackendRegistry
from fla.ops.kda.backends.torch_chunked import TorchChunkedBackend, chunked_kda_core

registry = BackendRegistry('kda')
registry.register(TorchChunkedBackend)

__all__ = ['TorchChunkedBackend', 'chunked_kda_core', 'registry']
