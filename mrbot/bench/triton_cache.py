# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Triton's cache in two layers: a shared one that only trusted jobs fill, read first, and the job's own, written.

A GPU job that runs a pull request's code compiles into its own folder (`TRITON_CACHE_DIR`), which ends with the job.
Kernels of the default branch compile the same in every job, so a job that runs no pull-request code (the default
branch's own, on the runner's trusted user) compiles them into a shared folder, and the jobs of pull requests read it
through this manager: `TRITON_CACHE_MANAGER=mrbot.bench.triton_cache:LayeredCache` with `MRBOT_SHARED_TRITON_CACHE`
naming the shared folder. Triton names each kernel's entry by a hash of its source, options, target and compiler, so
an entry of the shared layer is only ever found by the kernel it was compiled from. What the job compiles goes to its
own folder alone; that the job's code cannot write the shared folder is the runner's part (another user owns it, or it
is mounted read-only), as `docs/ci.md` says.
"""

from __future__ import annotations

import json
import os

from triton.runtime.cache import FileCacheManager

SHARED = 'MRBOT_SHARED_TRITON_CACHE'


class LayeredCache(FileCacheManager):
    """The job's Triton cache over the shared layer named by `MRBOT_SHARED_TRITON_CACHE`, which it never writes."""

    def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
        super().__init__(key, override, dump)
        shared = os.environ.get(SHARED, '')
        # override and dump folders are a developer's own tools, never layered
        self.shared_dir = os.path.join(shared, key) if shared and not (override or dump) else None

    def _shared(self, filename: str) -> str | None:
        if self.shared_dir is None:
            return None
        path = os.path.join(self.shared_dir, filename)
        return path if os.path.isfile(path) else None

    def get_file(self, filename: str) -> str | None:
        return super().get_file(filename) or self._shared(filename)

    def get_group(self, filename: str) -> dict[str, str] | None:
        own = super().get_group(filename)
        if own is not None:
            return own
        group = self._shared(f'__grp__{filename}')
        if group is None:
            return None
        with open(group) as file:
            children = json.load(file).get('child_paths')
        if not isinstance(children, dict):
            return None
        # an entry of the shared layer is made of its own files: a path out of its folder is not followed
        paths = {name: self._shared(os.path.basename(path)) for name, path in children.items()
                 if isinstance(path, str) and os.path.dirname(path) == self.shared_dir}
        found = {name: path for name, path in paths.items() if path is not None}
        return found if len(found) == len(children) else None
