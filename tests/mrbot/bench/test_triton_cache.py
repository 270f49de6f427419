# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The layered Triton cache of GPU jobs: a trusted job's kernels are found by later jobs, and a pull request's job
writes only its own folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip('triton')

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def scaled_copy(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)
'''
# compiles the kernel for sm_90 as a launch would, through Triton's cache; prints the kernel's hash
COMPILE = '''import sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernel import scaled_copy
source = ASTSource(scaled_copy, {'x': '*fp32', 'y': '*fp32', 'n': 'i32', 'BLOCK': 'constexpr'}, {(3,): int(sys.argv[1])})
print(triton.compile(source, target=GPUTarget('cuda', 90, 32)).hash)
'''
ROOT = Path(__file__).resolve().parents[3]


def _compile(folder: Path, block: int, cache: Path, shared: Path | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith('TRITON_') and k != 'MRBOT_SHARED_TRITON_CACHE'}
    env.update(TRITON_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]))
    if shared is not None:
        env.update(TRITON_CACHE_MANAGER='mrbot.bench.triton_cache:LayeredCache', MRBOT_SHARED_TRITON_CACHE=str(shared))
    done = subprocess.run([sys.executable, '-c', COMPILE, str(block)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob('*') if p.is_file()}


def test_a_pull_requests_job_reads_the_shared_layer_and_writes_only_its_own(tmp_path):
    (tmp_path / 'kernel.py').write_text(KERNEL)
    shared, job, later = tmp_path / 'shared', tmp_path / 'job', tmp_path / 'later-job'
    # the default branch's own job fills the shared layer
    trusted = _compile(tmp_path, 64, shared)
    filled = _files(shared)
    assert filled
    # a pull request's job: the default branch's kernel comes from the shared layer, compiled nowhere
    assert _compile(tmp_path, 64, job, shared) == trusted
    assert _files(job) == {}
    # its own kernel (another block size: another hash) compiles into its folder, and the shared layer is as it was
    own = _compile(tmp_path, 128, job, shared)
    assert own != trusted
    assert _files(job)
    assert _files(shared) == filled
    # a later job finds only what the trusted job left: the first job's kernel compiles anew there
    assert _compile(tmp_path, 128, later, shared) == own
    assert _files(later) and _files(shared) == filled
