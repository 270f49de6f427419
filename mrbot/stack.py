# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The kernel stack (torch and Triton, the `kernels` extra): whether this environment has it, and the one line a
command that needs it stops with where it does not; and the cores its processes may share. The bot's light core
(check, rules, init, action) runs without the stack."""

from __future__ import annotations

import importlib.util
import os

from mrbot.records import MrbotError

KERNEL_STACK = ('torch', 'triton')


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    # a meta-path finder that keeps a package out refuses the name instead of answering None
    except ModuleNotFoundError:
        return False


def missing_kernel_stack() -> list[str]:
    """The packages of the kernel stack that this environment cannot import."""
    return [name for name in KERNEL_STACK if not _importable(name)]


def require_kernel_stack(command: str) -> None:
    """Stop `command` with one line naming the extra to install where torch or triton is missing."""
    if missing := missing_kernel_stack():
        raise MrbotError(f"{command} needs torch and triton ({' and '.join(missing)} not installed): "
                         "pip install 'mrbot[kernels]'")


def usable_cores() -> int:
    """The cores this process may run on: a container's or a runner's CPU set makes them fewer than the machine's."""
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1
