# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Host-side pieces of a launch shared by the ops: sizing a state block, keeping the autotune configs that fit the
device's shared memory, and summing per-block partial results."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import triton

# Shared memory one block may use where Triton's driver cannot say (mrbot's launch capture, a CPU): sm_90's and
# sm_100's 227 KiB, the targets these kernels are built for.
DEFAULT_SHARED_MEMORY = 232_448


def state_block(dim: int, cap: int, smallest: int = 16) -> int:
    """Block covering `dim`: a power of two, at least `smallest` (16 is the smallest `tl.dot` operand), at most `cap`."""
    return min(max(smallest, triton.next_power_of_2(dim)), cap)


def reduce_partials(partials: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`[..., P, D] -> [..., D]` in `dtype`: the sum of the partials that P state blocks wrote; one is the result."""
    if partials.shape[-2] == 1:
        return partials.squeeze(-2).to(dtype)
    return partials.sum(-2).to(dtype)


@functools.lru_cache(maxsize=16)
def _device_shared_memory(device: int) -> int:
    return triton.runtime.driver.active.utils.get_device_properties(device)['max_shared_mem']


def shared_memory_budget() -> int:
    """Bytes of shared memory one block may use on the current device (`DEFAULT_SHARED_MEMORY` without one)."""
    try:
        driver = triton.runtime.driver.active
        return _device_shared_memory(driver.get_current_device())
    except (RuntimeError, AttributeError, KeyError):
        return DEFAULT_SHARED_MEMORY


def fitting_configs(estimate: Callable[[triton.Config, dict[str, Any]], int]) -> Callable:
    """An autotuner's `early_config_prune` that keeps the configs whose shared memory, as `estimate` puts it from the
    config and the launch's arguments by name, fits the device.

    An estimate errs high, so when none fits it keeps those of the smallest estimate (the unpipelined ones, as a rule):
    `mrbot compile` checks what they really take for each target, and a launch over the limit fails with Triton's own
    message rather than an empty search space.
    """

    def prune(configs: list[triton.Config], named_args: dict[str, Any], **kwargs: Any) -> list[triton.Config]:
        budget = shared_memory_budget()
        sizes = [estimate(config, {**named_args, **kwargs, **config.kwargs}) for config in configs]
        fitting = [config for config, size in zip(configs, sizes, strict=True) if size <= budget]
        return fitting or [config for config, size in zip(configs, sizes, strict=True) if size == min(sizes)]

    return prune
