# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The layered Triton cache of GPU jobs: a trusted job's kernels are found by later jobs, and a pull request's job
writes only its own folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

triton = pytest.importorskip('triton')
tl = pytest.importorskip('triton.language')
triton_cache = pytest.importorskip('mrbot.bench.triton_cache')


# a kernel as Triton compiles it: JITFunction itself, since the suite's interpreter would make `triton.jit` interpret it
def scaled_copy(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)


def _compile(monkeypatch, block: int, cache: Path, shared: Path | None = None, repository: str = 'owner/kernels') -> str:
    """Compile the kernel for sm_90 as a launch would, through Triton's cache under `cache`, over `shared` if given,
    in a GitHub job of `repository`; the kernel's hash."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    for name in ('TRITON_CACHE_MANAGER', triton_cache.SHARED, *(n for pair in triton_cache.REPOSITORY for n in pair)):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('TRITON_CACHE_DIR', str(cache))
    if shared is not None:
        monkeypatch.setenv('TRITON_CACHE_MANAGER', 'mrbot.bench.triton_cache:LayeredCache')
        monkeypatch.setenv(triton_cache.SHARED, str(shared))
        monkeypatch.setenv('GITHUB_ACTIONS', 'true')
        monkeypatch.setenv('GITHUB_REPOSITORY', repository)
    source = ASTSource(JITFunction(scaled_copy), {'x': '*fp32', 'y': '*fp32', 'n': 'i32', 'BLOCK': 'constexpr'},
                       {(3,): block})
    return triton.compile(source, target=GPUTarget('cuda', 90, 32)).hash


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob('*') if p.is_file()}


def _as_another_user(monkeypatch) -> None:
    """The jobs of pull requests run as a user that owns nothing of the shared layer and cannot write it: links are
    still links."""
    monkeypatch.setattr(triton_cache, 'out_of_reach', lambda path: os.path.exists(path) and not os.path.islink(path))


def test_a_pull_requests_job_reads_the_shared_layer_and_writes_only_its_own(tmp_path, monkeypatch):
    shared, job, later = tmp_path / 'shared', tmp_path / 'job', tmp_path / 'later-job'
    # the default branch's own job, under the user that owns the shared layer, fills its repository's folder
    trusted = _compile(monkeypatch, 64, shared / 'owner' / 'kernels')
    filled = _files(shared)
    assert filled
    _as_another_user(monkeypatch)
    # the default branch's kernel comes from the shared layer, compiled nowhere
    assert _compile(monkeypatch, 64, job, shared) == trusted
    assert _files(job) == {}
    # its own kernel (another block size: another hash) compiles into its folder, and the shared layer is as it was
    own = _compile(monkeypatch, 128, job, shared)
    assert own != trusted and _files(job)
    assert _files(shared) == filled
    # a later job finds only what the trusted job left: the first job's kernel compiles anew there
    assert _compile(monkeypatch, 128, later, shared) == own
    assert _files(later) and _files(shared) == filled


def test_a_shared_layer_the_job_could_change_is_not_read(tmp_path, monkeypatch, capsys):
    shared, job = tmp_path / 'shared', tmp_path / 'job'
    _compile(monkeypatch, 64, shared / 'owner' / 'kernels')
    # the test's own folders: its user owns them, as a runner's user would own a folder it was told to share
    _compile(monkeypatch, 64, job, shared)
    assert capsys.readouterr().err.strip().endswith(
        f"mrbot: MRBOT_SHARED_TRITON_CACHE: {shared / 'owner' / 'kernels'} or a folder above it is a link or is this "
        "job's user's to change, so not read: a shared layer must belong to another user (docs/ci.md)")
    # compiled again in the job's folder: a binary in a folder the job can change could have come from any earlier job
    assert _files(job)


def test_a_link_in_the_shared_layer_is_not_followed(tmp_path, monkeypatch):
    shared, job = tmp_path / 'shared', tmp_path / 'job'
    _compile(monkeypatch, 64, shared / 'owner' / 'kernels')
    (cubin,) = (shared / 'owner' / 'kernels').rglob('*.cubin')
    planted = tmp_path / 'planted.cubin'
    planted.write_bytes(cubin.read_bytes())
    cubin.unlink()
    cubin.symlink_to(planted)
    _as_another_user(monkeypatch)
    _compile(monkeypatch, 64, job, shared)
    assert _files(job)


@pytest.mark.parametrize('repository', ['../owner/kernels', 'owner/../kernels', '/owner/kernels', 'kernels', ''])
def test_a_repository_name_that_is_no_path_of_owner_and_name_reads_no_layer(tmp_path, monkeypatch, repository):
    shared, job = tmp_path / 'shared', tmp_path / 'job'
    _compile(monkeypatch, 64, shared / 'kernels')
    _compile(monkeypatch, 64, shared / 'owner' / 'kernels')
    _as_another_user(monkeypatch)
    _compile(monkeypatch, 64, job, shared / 'owner', repository)
    assert _files(job)


def test_each_repository_reads_only_its_own_subfolder(tmp_path, monkeypatch):
    shared = tmp_path / 'shared'
    trusted = _compile(monkeypatch, 64, shared / 'owner' / 'kernels')
    (shared / 'owner' / 'other').mkdir()
    _as_another_user(monkeypatch)
    assert _compile(monkeypatch, 64, tmp_path / 'other-job', shared, 'owner/other') == trusted
    assert _files(tmp_path / 'other-job')
    assert _compile(monkeypatch, 64, tmp_path / 'job', shared, 'owner/kernels') == trusted
    assert _files(tmp_path / 'job') == {}


@pytest.mark.parametrize(('mode', 'read'), [(0o644, True), (0o664, False), (0o646, False)])
def test_an_entry_a_group_or_other_users_may_write_is_out_of_reach_no_more(tmp_path, monkeypatch, mode, read):
    """Owned by another user and not writable by this job's: read, unless the owner's group or everyone may write it,
    since another runner user could then have planted it."""
    entry = tmp_path / 'entry.cubin'
    entry.write_bytes(b'binary')
    entry.chmod(mode)
    monkeypatch.setattr(triton_cache.os, 'geteuid', lambda: entry.stat().st_uid + 1)
    monkeypatch.setattr(triton_cache.os, 'access', lambda path, how: False)
    assert triton_cache.out_of_reach(str(entry)) is read


def test_a_sticky_folder_everyone_may_write_still_keeps_its_entries_their_owners(tmp_path, monkeypatch):
    folder = tmp_path / 'tmp'
    folder.mkdir()
    folder.chmod(0o1777)
    monkeypatch.setattr(triton_cache.os, 'geteuid', lambda: folder.stat().st_uid + 1)
    monkeypatch.setattr(triton_cache.os, 'access', lambda path, how: False)
    assert triton_cache.out_of_reach(str(folder))
    folder.chmod(0o777)
    assert not triton_cache.out_of_reach(str(folder))
