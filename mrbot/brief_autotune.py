# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""A pytest plugin for the test runs mrbot starts: Triton's autotuner times each config in a few runs instead of
filling 125 ms of the GPU with it.

A correctness test needs a config that works, not the fastest one. Triton's default timing keeps the GPU busy for about
125 ms per config and new key, and the test processes sharing one GPU queue behind each other's timing: at 12 workers
that was most of a kernel test file's time. A config that fails to compile or to launch is still set aside as before,
and the timed runs (`mrbot bench`) tune in processes of their own, unchanged.
"""

from __future__ import annotations

import functools
from typing import Any


def pytest_configure(config: Any) -> None:
    try:
        from triton.backends import backends
    except ImportError:
        return
    for backend in backends.values():
        # Triton before 3.3 has no benchmarker to swap: its autotuner is left as it is
        default = getattr(backend.driver, 'get_benchmarker', None)
        if default is not None and not hasattr(default, 'brief'):
            backend.driver.get_benchmarker = _briefly(default)


def _briefly(default: Any) -> Any:
    @functools.wraps(default)
    def get_benchmarker(driver: Any) -> Any:
        timer = default(driver)

        def brief(fn: Any, *args: Any, quantiles: Any = None, **kwargs: Any) -> Any:
            # warm-up and repetitions of 0 ms: one run of each after the 5 runs that estimate the time
            return timer(fn, 0, 0, quantiles=quantiles)

        return brief

    get_benchmarker.brief = True
    return get_benchmarker
