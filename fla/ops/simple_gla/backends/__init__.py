# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Alternative implementations of `chunk_simple_gla`, which `@dispatch('simple_gla')` consults on the first call."""

from fla.ops.backends import BackendRegistry
from fla.ops.simple_gla.backends.gluon_hopper import GluonHopperBackend

registry = BackendRegistry('simple_gla')
registry.register(GluonHopperBackend)

__all__ = ['GluonHopperBackend', 'registry']
