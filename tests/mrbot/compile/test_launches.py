# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Launch capture: what Triton would specialize for each launch the tests make, with no GPU and no kernel run."""

from __future__ import annotations

import textwrap

import pytest

from mrbot.compile.launches import GpuRun, Launch, capture_launches
from mrbot.testing import local_gpu

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'
KERNELS = HEADER + textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl


    @triton.heuristics({'EVEN': lambda args: args['n'] % args['BLOCK'] == 0})
    @triton.jit(do_not_specialize=['n'])
    def scale_kernel(x, y, bias, n, factor, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        b_x = tl.load(x + o, mask=o < n, other=0) * factor
        if bias is not None:
            b_x += tl.load(bias + o, mask=o < n, other=0)
        tl.store(y + o, b_x, mask=o < n)


    def scale(x, factor, bias=None):
        y = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), 64),)](x, y, bias, x.numel(), factor, BLOCK=64)
        return y


    @triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (2, 4, 8)], key=['n'],
                     prune_configs_by={'early_config_prune': lambda configs, args, **kwargs: configs[:2]})
    @triton.jit
    def copy_kernel(x, y, n, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)
''')
TESTS = HEADER + textwrap.dedent('''
    import torch

    from lib.kernels import copy_kernel, scale


    def test_scale():
        scale(torch.ones(100), 2.0)
        scale(torch.ones(128, dtype=torch.bfloat16), 1, bias=torch.ones(128, dtype=torch.bfloat16))


    def test_copy():
        copy_kernel[(1,)](torch.ones(16, dtype=torch.int32), torch.zeros(16, dtype=torch.int32), 16, BLOCK=16)
''')


@pytest.fixture
def captured(repo) -> list[Launch]:
    repo.write({'lib/__init__.py': HEADER, 'lib/kernels.py': KERNELS, 'tests/test_kernels.py': TESTS})
    capture = capture_launches(repo.root, ['tests/test_kernels.py'], [], timeout=300, jobs=1, test_seconds=60)
    assert capture.problems == ()
    return list(capture.launches)


def _by_kernel(launches: list[Launch], kernel: str) -> list[Launch]:
    return [launch for launch in launches if launch.kernel == kernel]


def test_each_launch_is_specialized_as_triton_would_on_a_gpu(captured):
    # sorted by the dtype of x: '*bf16' before '*fp32'
    bfloat16, float32 = sorted(_by_kernel(captured, 'scale_kernel'),
                               key=lambda launch: launch.specialization['signature']['x'])
    for launch in (float32, bfloat16):
        assert (launch.path, launch.line, launch.config) == ('lib/kernels.py', 11, '')
        assert launch.origins == ('tests/test_kernels.py::test_scale',)
    # a None argument and an integer equal to 1 become compile-time constants; do_not_specialize keeps n an i32
    assert bfloat16.specialization['signature'] == {'x': '*bf16', 'y': '*bf16', 'bias': '*bf16', 'n': 'i32',
                                                    'factor': 'constexpr', 'BLOCK': 'constexpr', 'EVEN': 'constexpr'}
    assert bfloat16.constants() == {'factor': 1, 'BLOCK': 64, 'EVEN': True}
    assert float32.specialization['signature']['bias'] == 'constexpr'
    assert float32.specialization['signature']['factor'] == 'fp32'
    # the heuristic saw the arguments: 100 is no multiple of 64
    assert float32.constants() == {'bias': None, 'BLOCK': 64, 'EVEN': False}


def test_an_autotuned_launch_is_captured_once_per_config_its_pruning_keeps(captured):
    launches = _by_kernel(captured, 'copy_kernel')
    assert [(launch.config_index, launch.configs, launch.specialization['options']) for launch in launches] == [
        (0, 2, {'num_warps': 2}), (1, 2, {})]
    assert launches[0].specialization['signature']['x'] == '*i32'


def test_capture_processes_share_the_cores_instead_of_each_taking_all_of_them(repo, monkeypatch):
    import os

    monkeypatch.delenv('OMP_NUM_THREADS', raising=False)
    jobs = os.cpu_count() or 1
    repo.write({'tests/test_threads.py': HEADER + textwrap.dedent('''
        import torch


        def test_threads():
            with open('threads.txt', 'w') as out:
                out.write(str(torch.get_num_threads()))
    ''')})
    capture = capture_launches(repo.root, ['tests/test_threads.py'], [], timeout=300, jobs=jobs, test_seconds=60)
    assert capture.problems == ()
    # one capture process per core, each with one torch thread, instead of each with a thread per core
    assert (repo.root / 'threads.txt').read_text() == '1'


def test_launches_are_heard_while_the_capture_runs(repo):
    """The first test's launches reach `heard` while the file's later test still runs: that test waits for the file
    the listener writes, so a capture that reported only at its end would leave it waiting out its minute."""
    waiting = HEADER + textwrap.dedent('''
        import os
        import time

        import torch

        from lib.kernels import copy_kernel


        def test_copy():
            copy_kernel[(1,)](torch.ones(16, dtype=torch.int32), torch.zeros(16, dtype=torch.int32), 16, BLOCK=16)


        def test_waits_for_the_listener():
            deadline = time.monotonic() + 60
            while not os.path.exists('heard.txt') and time.monotonic() < deadline:
                time.sleep(0.1)
            with open('seen.txt', 'w') as out:
                out.write(str(os.path.exists('heard.txt')))
    ''')
    repo.write({'lib/__init__.py': HEADER, 'lib/kernels.py': KERNELS, 'tests/test_waits.py': waiting})
    batches: list[list[str]] = []

    def heard(launches: list[Launch]) -> None:
        batches.append([launch.kernel for launch in launches])
        (repo.root / 'heard.txt').write_text('yes')

    capture = capture_launches(repo.root, ['tests/test_waits.py'], [], timeout=300, jobs=1, test_seconds=90,
                               use_cache=False, heard=heard)
    assert capture.problems == ()
    assert (repo.root / 'seen.txt').read_text() == 'True'
    # each launch heard once: the two configs the pruning keeps
    assert sorted(kernel for batch in batches for kernel in batch) == ['copy_kernel', 'copy_kernel']


def test_a_launch_a_benchmark_row_makes_stays_benchmarked_however_many_tests_made_it_first():
    """Only three origins are kept; the benchmark row's is one of them, since it decides how far the launch compiles."""
    from mrbot.compile.launches import BENCH_ORIGIN, _merged

    launch = Launch('k', 'lib.kernels', 'lib/kernels.py', 3, 'source', {
        'signature': {'x': '*fp32'}, 'constant_keys': [], 'constant_vals': [], 'attrs_keys': [], 'attrs_vals': [],
        'options': {}})
    records = [{**launch.to_json(), 'origins': [f'tests/test_{n}.py::test_it']} for n in range(4)]
    records.append({**launch.to_json(), 'origins': [f'{BENCH_ORIGIN}op:fwd:B1']})
    (merged,), malformed = _merged(records)
    assert malformed == 0 and merged.benchmarked
    assert merged.origins == ('tests/test_0.py::test_it', 'tests/test_1.py::test_it', f'{BENCH_ORIGIN}op:fwd:B1')


def _capture(repo):
    capture = capture_launches(repo.root, ['tests/test_kernels.py'], [], timeout=300, jobs=1, test_seconds=60,
                               imports={'lib/kernels.py': frozenset({'lib/kernels.py'})})
    assert capture.problems == ()
    return capture


def test_an_edit_in_a_kernels_body_reuses_the_capture_and_changes_that_kernel_alone(repo):
    # launches are made by the code around kernels: a body edit captures nothing again, and only the edited kernel's
    # cells get a new source hash, at the line its `def` moved to
    repo.commit({'lib/__init__.py': HEADER, 'lib/kernels.py': KERNELS, 'tests/test_kernels.py': TESTS})
    first = _capture(repo)
    hashes = {launch.kernel: launch.source_hash for launch in first.launches}
    edited = KERNELS.replace('        b_x += tl.load(bias + o, mask=o < n, other=0)\n',
                             '        b_x += tl.load(bias + o, mask=o < n, other=0)\n        b_x = b_x * 1.0\n')
    assert edited.count('b_x * 1.0') == 1
    edited = edited.replace('    o = tl.arange(0, BLOCK)\n', '    # no offset\n    o = tl.arange(0, BLOCK)\n')
    repo.write({'lib/kernels.py': edited})
    second = _capture(repo)
    assert second.cached
    assert {launch.kernel for launch in second.launches if launch.source_hash != hashes[launch.kernel]} == {
        'scale_kernel'}
    copy = next(launch for launch in second.launches if launch.kernel == 'copy_kernel')
    assert edited.splitlines()[copy.line - 1].startswith('def copy_kernel(')
    # an edit of the code around the kernels captures again
    repo.write({'lib/kernels.py': edited.replace('BLOCK=64)', 'BLOCK=32)')})
    assert not _capture(repo).cached


GPU_ONLY_TESTS = HEADER + textwrap.dedent('''
    import pytest
    import torch

    from lib.kernels import scale


    @pytest.mark.skipif(not torch.cuda.is_available(), reason='a GPU-only shape')
    def test_scale_on_a_gpu():
        scale(torch.ones(4096, device='cuda'), 2.0)
''')


def test_a_capture_beside_the_gpu_is_not_served_from_the_capture_without_it(repo):
    repo.write({'lib/__init__.py': HEADER, 'lib/kernels.py': KERNELS, 'tests/test_kernels.py': TESTS})
    assert _capture(repo).launches
    beside = capture_launches(repo.root, ['tests/test_kernels.py'], [], timeout=300, jobs=1, test_seconds=60,
                              gpu_run=GpuRun(90, (('LIB_DISPATCH', '0'),)))
    # where torch sees no GPU the launches are captured as without one, but not served from the hidden capture's store
    assert not beside.cached and beside.launches == _capture(repo).launches


@pytest.mark.skipif(local_gpu() is None, reason='captures beside a GPU')
def test_a_compile_ahead_captures_the_tests_that_skip_without_a_gpu(repo):
    repo.write({'lib/__init__.py': HEADER, 'lib/kernels.py': KERNELS, 'tests/test_gpu.py': GPU_ONLY_TESTS})
    hidden = capture_launches(repo.root, ['tests/test_gpu.py'], [], timeout=300, jobs=1, test_seconds=60)
    assert hidden.launches == ()
    beside = capture_launches(repo.root, ['tests/test_gpu.py'], [], timeout=300, jobs=1, test_seconds=60,
                              gpu_run=GpuRun(local_gpu().arch))
    assert beside.problems == ()
    assert [(launch.kernel, launch.origins) for launch in beside.launches] == [
        ('scale_kernel', ('tests/test_gpu.py::test_scale_on_a_gpu',))]


BROKEN_CONTEXT_TESTS = HEADER + textwrap.dedent('''
    import torch

    from lib.kernels import scale


    def test_out_of_bounds():
        # what torch raises once a kernel of the process read out of bounds: the process's later launches all fail
        raise RuntimeError('CUDA error: an illegal memory access was encountered')


    def test_scale():
        scale(torch.ones(100), 2.0)
''')


def test_a_capture_beside_the_gpu_whose_device_context_broke_is_reported_and_not_stored(repo):
    repo.write({'lib/__init__.py': HEADER, 'lib/kernels.py': KERNELS, 'tests/test_broken.py': BROKEN_CONTEXT_TESTS})
    beside = GpuRun(90)
    first = capture_launches(repo.root, ['tests/test_broken.py'], [], timeout=300, jobs=1, test_seconds=60,
                             gpu_run=beside)
    assert [problem.split(' (log: ')[0] for problem in first.problems] == [
        'tests/test_broken.py: CUDA error: an illegal memory access was encountered; every launch after it failed '
        'uncaptured']
    again = capture_launches(repo.root, ['tests/test_broken.py'], [], timeout=300, jobs=1, test_seconds=60,
                             gpu_run=beside)
    assert not again.cached and again.problems == first.problems
    # with the GPU hidden no context can break: the words are the test's own, and the capture is kept
    hidden = capture_launches(repo.root, ['tests/test_broken.py'], [], timeout=300, jobs=1, test_seconds=60)
    assert hidden.problems == ()
    assert capture_launches(repo.root, ['tests/test_broken.py'], [], timeout=300, jobs=1, test_seconds=60).cached
