# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Triton's cache in two layers: a shared one that only trusted jobs fill, read first, and the job's own, written.

A GPU job that runs a pull request's code compiles into its own folder (`TRITON_CACHE_DIR`), which ends with the job.
Kernels of the default branch compile the same in every job, so a job that runs no pull-request code, under a user of
its own, compiles them into a shared folder, and the jobs of pull requests read it through this manager:
`TRITON_CACHE_MANAGER=mrbot.bench.triton_cache:LayeredCache` with `MRBOT_SHARED_TRITON_CACHE` naming the shared folder
in the runner's environment; each repository reads its own subfolder (GitHub's `GITHUB_REPOSITORY`, GitLab's
`CI_PROJECT_PATH`), and none where the job names no repository. Triton names each kernel's entry by a hash of its
source, options, target and compiler, so an entry of the shared layer is only ever found by the kernel it was compiled
from. What the job compiles goes to its own folder alone. A shared folder, a folder above it, an entry's folder or file
that the job's own user owns or may write, that a group or other users may write, or that is a link, is not read: that
user is the pull request's code, which could plant binaries there for the next job (`docs/ci.md`).
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys

from triton.runtime.cache import FileCacheManager

SHARED = 'MRBOT_SHARED_TRITON_CACHE'
# the variable that names a job's repository, by the forge that runs it
REPOSITORY = (('GITLAB_CI', 'CI_PROJECT_PATH'), ('GITHUB_ACTIONS', 'GITHUB_REPOSITORY'))
# a repository's path: names of letters, digits, dots, dashes and underscores, at least an owner and a name
_REPOSITORY_PATH = re.compile(r'^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+$')
# folders already refused by this process, each said once
_REFUSED: set[str] = set()


def out_of_reach(path: str) -> bool:
    """Whether `path` is a real file or folder (no link) that this process's user neither owns nor may write, and
    that no group or other user may write either (a runner user in the owner's group could plant entries), short of
    a folder whose sticky bit keeps its entries their owners' (`/tmp`)."""
    try:
        status = os.lstat(path)
    except OSError:
        return False
    shared_write = status.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if shared_write and not (stat.S_ISDIR(status.st_mode) and status.st_mode & stat.S_ISVTX):
        return False
    return not stat.S_ISLNK(status.st_mode) and status.st_uid != os.geteuid() and not os.access(path, os.W_OK)


def shared_layer() -> str | None:
    """The shared folder of this job's repository, or None: when none is set, the repository has no valid name, or
    this process's user could change the folder or any folder above it (and so replace what it holds)."""
    shared = os.environ.get(SHARED, '')
    repository = next((os.environ.get(name, '') for forge, name in REPOSITORY if os.environ.get(forge)), '')
    if not shared or not _REPOSITORY_PATH.match(repository) or any(part in ('.', '..') for part in repository.split('/')):
        return None
    folder = os.path.join(os.path.abspath(shared), repository)
    if not os.path.isdir(folder):
        return None
    steps = [folder]
    while os.path.dirname(steps[-1]) != steps[-1]:
        steps.append(os.path.dirname(steps[-1]))
    if not all(out_of_reach(step) for step in steps):
        if folder not in _REFUSED:
            _REFUSED.add(folder)
            print(f"mrbot: {SHARED}: {folder} or a folder above it is a link or is this job's user's to change, so not "
                  'read: a shared layer must belong to another user (docs/ci.md)', file=sys.stderr)
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
        """The file of the shared entry, where it and its entry's folder are out of this job's reach."""
        if self.shared_dir is None or os.path.basename(filename) != filename:
            return None
        path = os.path.join(self.shared_dir, filename)
        return path if out_of_reach(self.shared_dir) and out_of_reach(path) and os.path.isfile(path) else None

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
