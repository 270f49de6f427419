# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Triton's cache in two layers: a shared one that only trusted jobs fill, read first, and the job's own, written.

A GPU job that runs a pull request's code compiles into its own folder (`TRITON_CACHE_DIR`), which ends with the job.
Kernels of the default branch compile the same in every job, so a job that runs no pull-request code, under a user of
its own, compiles them into a shared folder, and the jobs of pull requests read it through this manager:
`TRITON_CACHE_MANAGER=mrbot.bench.triton_cache:LayeredCache` with `MRBOT_SHARED_TRITON_CACHE` naming the shared folder
in the runner's environment; each repository reads its own subfolder (`GITHUB_REPOSITORY`, `CI_PROJECT_PATH`). Triton
names each kernel's entry by a hash of its source, options, target and compiler, so an entry of the shared layer is only
ever found by the kernel it was compiled from. What the job compiles goes to its own folder alone. A shared folder that
the job's own user owns or may write is not read at all: that user is the pull request's code, which could plant
binaries there for the next job (`docs/ci.md`).
"""

from __future__ import annotations

import json
import os
import sys

from triton.runtime.cache import FileCacheManager

SHARED = 'MRBOT_SHARED_TRITON_CACHE'
# the variables that name the repository of a job, on GitHub and on GitLab
REPOSITORY = ('GITHUB_REPOSITORY', 'CI_PROJECT_PATH')
# folders already found writable by this process, each said once
_REFUSED: set[str] = set()


def writable_by_job(folder: str) -> bool:
    """Whether this process's user owns `folder` or may write it (root may write anything)."""
    return os.stat(folder).st_uid == os.geteuid() or os.access(folder, os.W_OK)


def shared_layer() -> str | None:
    """The shared folder of this job's repository, or None when none is set or this process's user could write it."""
    shared = os.environ.get(SHARED, '')
    if not shared:
        return None
    repository = next((os.environ[name] for name in REPOSITORY if os.environ.get(name)), '')
    folder = os.path.join(shared, repository) if repository else shared
    if not os.path.isdir(folder):
        return None
    if writable_by_job(folder):
        if folder not in _REFUSED:
            _REFUSED.add(folder)
            print(f'mrbot: {SHARED}: {folder} is writable by this job\'s user, so not read: a shared layer must '
                  'belong to another user (docs/ci.md)', file=sys.stderr)
        return None
    return folder


class LayeredCache(FileCacheManager):
    """The job's Triton cache over the shared layer named by `MRBOT_SHARED_TRITON_CACHE`, which it never writes."""

    def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
        super().__init__(key, override, dump)
        shared = shared_layer()
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
        try:
            with open(group) as file:
                children = json.load(file).get('child_paths')
        except (OSError, ValueError, AttributeError):
            return None
        if not isinstance(children, dict) or not all(isinstance(path, str) for path in children.values()):
            return None
        # an entry of the shared layer is made of the files of its own folder, whatever path its filler saw it at
        found = {name: self._shared(os.path.basename(path)) for name, path in children.items()}
        return found if all(found.values()) else None
