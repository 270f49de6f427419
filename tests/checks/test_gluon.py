# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""GLU001-GLU007: the Gluon pitfalls, each found at its line in a small kernel that has it and silent on the kernel
written right; all of them silent on our Gluon kernel and on upstream flash-linear-attention's."""

from __future__ import annotations

import subprocess
from pathlib import Path
from textwrap import dedent

import pytest

IMPORTS = '''\
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.blackwell import allocate_tensor_memory, tcgen05_commit, tcgen05_mma
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                             warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor


'''
PATH = 'fla/ops/demo/backends/gluon.py'
GLU = tuple(f'GLU00{number}' for number in range(1, 8))
ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = Path('/work/.mirror/fla-org+flash-linear-attention/repo')


def _kernel(body: str) -> str:
    return IMPORTS + dedent(body)


def _lines_of(text: str, fragment: str) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), 1) if fragment in line]


def _where(report) -> list[tuple[str, int]]:
    return [(f.rule, f.line) for f in report.findings]


def _check(repo, rule_id: str, text: str):
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: text})
    return repo.check(rule_id)


# Each case: the rule, the kernel with the pitfall and the fragment of the line or lines it is reported on, and the
# same kernel written right.
CASES = {
    'tma-store-after-register-store': ('GLU001', '''
        @gluon.jit
        def demo_fwd_kernel(o_desc, BT: gl.constexpr, BV: gl.constexpr):
            layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
            b_o = gl.zeros([BT, BV], gl.float32, layout)
            o_smem = gl.allocate_shared_memory(gl.bfloat16, [BT, BV], o_desc.layout)
            o_smem.store(b_o.to(gl.bfloat16))
            tma.async_copy_shared_to_global(o_desc, [gl.program_id(0) * BT, 0], o_smem)  # here
            tma.store_wait(0)
    ''', ('o_smem.store(b_o.to(gl.bfloat16))', 'o_smem.store(b_o.to(gl.bfloat16))\n    fence_async_shared()')),
    'wgmma-over-a-filled-allocation-and-a-view': ('GLU001', '''
        @gluon.jit
        def demo_fwd_kernel(k_desc, BT: gl.constexpr, BK: gl.constexpr, NUM_BUFFERS: gl.constexpr):
            acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
            lhs: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BT, BK], gl.bfloat16)
            b_q = gl.zeros([BT, BK], gl.bfloat16, acc)
            q_smem = gl.allocate_shared_memory(gl.bfloat16, [BT, BK], lhs, b_q)
            k_smem = gl.allocate_shared_memory(gl.bfloat16, [NUM_BUFFERS, BT, BK], k_desc.layout)
            k_slot = k_smem.index(1)
            k_slot.store(b_q)
            b_s = warpgroup_mma(q_smem, k_smem.index(1).permute((1, 0)), gl.zeros([BT, BT], gl.float32, acc))  # here
    ''', ('k_slot.store(b_q)', 'k_slot.store(b_q)\n    fence_async_shared()')),
    'constant-phase-in-a-ring': ('GLU002', '''
        @gluon.jit
        def demo_fwd_kernel(k_desc, NT, BT: gl.constexpr, BK: gl.constexpr, NUM_BUFFERS: gl.constexpr):
            k_smem = gl.allocate_shared_memory(k_desc.dtype, [NUM_BUFFERS, BT, BK], k_desc.layout)
            ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
            for i_b in gl.static_range(NUM_BUFFERS):
                mbarrier.init(ready.index(i_b), count=1)
            for i_t in range(NT):
                i_s = i_t % NUM_BUFFERS
                mbarrier.expect(ready.index(i_s), k_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(k_desc, [i_t * BT, 0], ready.index(i_s), k_smem.index(i_s))
                mbarrier.wait(ready.index(i_s), 0)  # here
    ''', ('mbarrier.wait(ready.index(i_s), 0)', 'mbarrier.wait(ready.index(i_s), (i_t // NUM_BUFFERS) & 1)')),
    'phase-that-ignores-the-ring-size': ('GLU002', '''
        @gluon.jit
        def demo_fwd_kernel(k_desc, NT, BT: gl.constexpr, BK: gl.constexpr, NUM_BUFFERS: gl.constexpr):
            k_smem = gl.allocate_shared_memory(k_desc.dtype, [NUM_BUFFERS, BT, BK], k_desc.layout)
            ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
            for i_t in range(NT):
                i_s = i_t % NUM_BUFFERS
                tma.async_copy_global_to_shared(k_desc, [i_t * BT, 0], ready.index(i_s), k_smem.index(i_s))
                mbarrier.wait(ready.index(i_s), i_t & 1)  # here
    ''', ('i_t & 1)', '(i_t // NUM_BUFFERS) & 1)')),
    'constant-phase-on-one-barrier': ('GLU002', '''
        @gluon.jit
        def demo_fwd_kernel(k_desc, NT, BT: gl.constexpr, BK: gl.constexpr):
            k_smem = gl.allocate_shared_memory(k_desc.dtype, [BT, BK], k_desc.layout)
            bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
            mbarrier.init(bar, count=1)
            phase = 0
            for i_t in range(NT):
                mbarrier.expect(bar, k_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(k_desc, [i_t * BT, 0], bar, k_smem)
                mbarrier.wait(bar, phase)  # here
    ''', ('mbarrier.wait(bar, phase)  # here', 'mbarrier.wait(bar, phase)\n        phase ^= 1')),
    'one-barrier-for-tma-and-mma': ('GLU003', '''
        @gluon.jit
        def demo_fwd_kernel(k_desc, q_smem, s_tmem, NT, BT: gl.constexpr, BK: gl.constexpr, NUM_BUFFERS: gl.constexpr):
            k_smem = gl.allocate_shared_memory(k_desc.dtype, [NUM_BUFFERS, BT, BK], k_desc.layout)
            bars = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
            mma_bars = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
            for i_t in range(NT):
                i_s = i_t % NUM_BUFFERS
                bar = bars.index(i_s)
                mbarrier.expect(bar, k_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(k_desc, [i_t * BT, 0], bar, k_smem.index(i_s))
                mbarrier.wait(bar, (i_t // NUM_BUFFERS) & 1)
                tcgen05_mma(q_smem, k_smem.index(i_s).permute((1, 0)), s_tmem, mbarriers=[bars.index(i_s)])  # here
    ''', ('mbarriers=[bars.index(i_s)]', 'mbarriers=[mma_bars.index(i_s)]')),
    'commit-on-the-tma-barrier': ('GLU003', '''
        @gluon.jit
        def demo_fwd_kernel(k_desc, q_smem, s_tmem, BT: gl.constexpr, BK: gl.constexpr):
            k_smem = gl.allocate_shared_memory(k_desc.dtype, [BT, BK], k_desc.layout)
            bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
            mbarrier.init(bar, count=1)
            mbarrier.expect(bar, k_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(k_desc, [0, 0], bar, k_smem)
            mbarrier.wait(bar, 0)
            tcgen05_mma(q_smem, k_smem.permute((1, 0)), s_tmem)
            tcgen05_commit(bar)  # here
            mbarrier.wait(bar, 1)
    ''', ('mbarrier.wait(bar, 0)', 'mbarrier.wait(bar, 0)\n    mbarrier.invalidate(bar)\n    mbarrier.init(bar, count=1)')),
    'module-level-python-value': ('GLU004', '''
        GROUP = 32


        @gluon.jit
        def demo_fwd_kernel(x, G: gl.constexpr = GROUP):
            i_g = gl.program_id(0) * GROUP  # here
            gl.store(x + i_g, 1.0)
    ''', ('GROUP = 32', 'GROUP = gl.constexpr(32)')),
    'descriptor-on-the-host': ('GLU005', '''
        def demo_fwd(k: torch.Tensor, BT: int, BK: int):
            layout = gl.NVMMASharedLayout.get_default_for([BT, BK], gl.bfloat16)
            return TensorDescriptor.from_tensor(k, [BT, BK], layout)  # here
    ''', ('    layout = gl', '    if k.stride(-2) * k.element_size() % 16 != 0:\n        raise ValueError("k: rows must '
                             'start 16-byte aligned")\n    layout = gl')),
    'descriptor-in-the-kernel': ('GLU005', '''
        @gluon.jit
        def demo_fwd_kernel(k, T, K: gl.constexpr, BT: gl.constexpr, BK: gl.constexpr):
            layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BT, BK], gl.bfloat16)
            k_desc = tma.make_tensor_descriptor(k, [T, K], [K, 1], [BT, BK], layout)  # here
    ''', ('    k_desc = tma', '    gl.static_assert(K * 2 % 16 == 0)\n    k_desc = tma')),
    'tma-load-into-a-slot-an-async-wgmma-reads': ('GLU006', '''
        @gluon.jit
        def demo_fwd_kernel(k_desc, q_smem, NT, BT: gl.constexpr, BK: gl.constexpr, NUM_BUFFERS: gl.constexpr):
            acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
            k_smem = gl.allocate_shared_memory(k_desc.dtype, [NUM_BUFFERS, BT, BK], k_desc.layout)
            ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
            b_s = gl.zeros([BT, BT], gl.float32, acc)
            for i_t in range(NT):
                i_s = i_t % NUM_BUFFERS
                mbarrier.expect(ready.index(i_s), k_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(k_desc, [i_t * BT, 0], ready.index(i_s), k_smem.index(i_s))  # here
                mbarrier.wait(ready.index(i_s), (i_t // NUM_BUFFERS) & 1)
                b_s = warpgroup_mma(q_smem, k_smem.index(i_s).permute((1, 0)), b_s, is_async=True)
            b_s = warpgroup_mma_wait(0, deps=[b_s])
    ''', ('is_async=True)', 'is_async=True)\n        b_s = warpgroup_mma_wait(num_outstanding=1, deps=[b_s, k_smem])')),
    'masked-cp-async': ('GLU007', '''
        @gluon.jit
        def demo_fwd_kernel(k, o, T, K: gl.constexpr, BT: gl.constexpr, BK: gl.constexpr):
            layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
            o_t = gl.program_id(0) * BT + gl.arange(0, BT, layout=gl.SliceLayout(1, layout))
            o_k = gl.arange(0, BK, layout=gl.SliceLayout(0, layout))
            k_smem = gl.allocate_shared_memory(k.dtype.element_ty, [BT, BK], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
            async_copy.async_copy_global_to_shared(k_smem, k + o_t[:, None] * K + o_k[None, :], mask=o_t[:, None] < T)  # here
            async_copy.commit_group()
            async_copy.wait_group(0)
            b_k = k_smem.load(layout)
            gl.store(o + o_t, gl.sum(b_k, axis=1), mask=o_t < T)
    ''', ('k + o_t[:, None] * K + o_k[None, :], mask=o_t[:, None] < T)',
          'k + gl.minimum(o_t, T - 1)[:, None] * K + o_k[None, :])')),
}


@pytest.mark.parametrize('case', CASES, ids=list(CASES))
def test_the_pitfall_is_found_on_its_line(repo, case):
    rule_id, body, _ = CASES[case]
    text = _kernel(body)
    found = _where(_check(repo, rule_id, text))
    assert sorted(set(found)) == [(rule_id, line) for line in _lines_of(text, '# here')]
    # one finding per pitfall: the MMA over a filled allocation and over a stored view is two
    assert len(found) == (2 if case == 'wgmma-over-a-filled-allocation-and-a-view' else 1)


@pytest.mark.parametrize('case', CASES, ids=list(CASES))
def test_the_kernel_written_right_is_silent(repo, case):
    rule_id, body, (wrong, right) = CASES[case]
    text = _kernel(body)
    assert text.count(wrong) == 1, f'{wrong!r} is not once in the {case} kernel'
    assert _where(_check(repo, rule_id, text.replace(wrong, right))) == []


def test_each_finding_says_what_and_where(repo):
    repo.commit({'README.md': 'demo\n'})
    messages = {}
    for case in ('tma-store-after-register-store', 'phase-that-ignores-the-ring-size', 'one-barrier-for-tma-and-mma',
                 'module-level-python-value', 'tma-load-into-a-slot-an-async-wgmma-reads', 'masked-cp-async'):
        rule_id, body, _ = CASES[case]
        text = _kernel(body)
        repo.write({PATH: text})
        messages[case] = [f.message for f in repo.check(rule_id).findings]
        repo.write({PATH: None})
    store = _lines_of(_kernel(CASES['tma-store-after-register-store'][1]), 'o_smem.store')[0]
    mma = _lines_of(_kernel(CASES['tma-load-into-a-slot-an-async-wgmma-reads'][1]), 'is_async=True')[0]
    loop = _lines_of(_kernel(CASES['phase-that-ignores-the-ring-size'][1]), 'for i_t in range(NT)')[0]
    tma_use = _lines_of(_kernel(CASES['one-barrier-for-tma-and-mma'][1]), 'mbarrier.expect(bar')[0]
    group = _lines_of(_kernel(CASES['module-level-python-value'][1]), 'GROUP = 32')[0]
    assert messages == {
        'tma-store-after-register-store': [f'`o_smem` is written from registers on line {store} and read by '
                                           '`async_copy_shared_to_global` here with no `fence_async_shared()` between'],
        'phase-that-ignores-the-ring-size': [f'the phase `i_t & 1` flips every iteration of the loop on line {loop}, but '
                                             '`ready.index(i_s)` is one of a ring used again every `NUM_BUFFERS` '
                                             'iterations: wait for `(i_t // NUM_BUFFERS) & 1`'],
        'one-barrier-for-tma-and-mma': [f'`bars.index(i_s)` tracks MMA completion here (`tcgen05_mma`) and TMA '
                                        f'completion on line {tma_use} (`expect`)'],
        'module-level-python-value': [f'`GROUP` (line {group}) is a module-level Python value read in `@gluon.jit` '
                                      '`demo_fwd_kernel`; Triton 3.6 refuses to compile it'],
        'tma-load-into-a-slot-an-async-wgmma-reads': [f'`async_copy_global_to_shared` refills `k_smem`, which the '
                                                      f'asynchronous `warpgroup_mma` on line {mma} may still be reading: '
                                                      'no `warpgroup_mma_wait` between'],
        'masked-cp-async': ['cp.async with `mask=o_t[:, None] < T` leaves the masked lanes of the buffer unwritten, and '
                            'nothing replaces them after it is read back'],
    }


@pytest.mark.parametrize(('rule_id', 'body'), [
    pytest.param('GLU001', '''
        @gluon.jit
        def demo_fwd_kernel(q_smem, BT: gl.constexpr, BV: gl.constexpr):
            layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
            s_tmem = allocate_tensor_memory(gl.bfloat16, [BT, BV], layout)
            s_tmem.store(gl.zeros([BT, BV], gl.bfloat16, layout))
            tcgen05_mma(s_tmem, q_smem, s_tmem)
            gl.store(q_smem, 1.0)
    ''', id='tensor-memory-and-gl-store-are-not-shared-memory'),
    pytest.param('GLU002', '''
        @gluon.jit
        def demo_fwd_kernel(k_desc, NT, BT: gl.constexpr, BK: gl.constexpr, NUM_BUFFERS: gl.constexpr):
            ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
            for i_b in gl.static_range(NUM_BUFFERS):
                mbarrier.wait(ready.index(i_b), 0)
            index = 0
            phase = 0
            for i_t in range(NT):
                mbarrier.wait(ready.index(index), phase)
                index += 1
                wrapped = index == NUM_BUFFERS
                index = gl.where(wrapped, 0, index)
                phase = gl.where(wrapped, phase ^ 1, phase)
            for i_t in range(NT):
                bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
                mbarrier.init(bar, count=1)
                mbarrier.wait(bar, 0)
                mbarrier.invalidate(bar)
    ''', id='one-wait-per-barrier-a-carried-phase-and-a-barrier-made-per-iteration'),
    pytest.param('GLU003', '''
        @gluon.jit
        def demo_fwd_kernel(k_desc, q_smem, s_tmem, BT: gl.constexpr, BK: gl.constexpr):
            k_smem = gl.allocate_shared_memory(k_desc.dtype, [BT, BK], k_desc.layout)
            load_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
            mma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
            mbarrier.expect(load_bar, k_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(k_desc, [0, 0], load_bar, k_smem)
            tcgen05_mma(q_smem, k_smem.permute((1, 0)), s_tmem, mbarriers=[mma_bar])
    ''', id='two-barriers-allocated-alike'),
    pytest.param('GLU004', '''
        BLOCK = 64
        SCALE = gl.constexpr(0.5)


        def helper():
            return BLOCK


        @gluon.jit
        def demo_fwd_kernel(x, BT: gl.constexpr = BLOCK):
            BLOCK: gl.constexpr = 32
            o_t = gl.arange(0, BLOCK, layout=gl.BlockedLayout([1], [32], [4], [0]))
            gl.store(x + o_t, SCALE * o_t)
    ''', id='constexpr-default-and-local-name'),
    pytest.param('GLU005', '''
        class DemoBackend:
            def demo_verifier(self, k):
                if not k.is_contiguous() or k.shape[-1] % 8 != 0:
                    return False, 'k must be contiguous with K a multiple of 8'
                return True, None

            def demo(self, k):
                layout = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
                return TensorDescriptor.from_tensor(k, [64, 64], layout)
    ''', id='checked-by-the-verifier'),
    pytest.param('GLU006', '''
        @gluon.jit
        def demo_fwd_kernel(k_desc, q_smem, bar, BT: gl.constexpr, BK: gl.constexpr):
            acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
            k_smem = gl.allocate_shared_memory(k_desc.dtype, [BT, BK], k_desc.layout)
            b_s = warpgroup_mma(q_smem, k_smem.permute((1, 0)), gl.zeros([BT, BT], gl.float32, acc), is_async=False)
            tma.async_copy_global_to_shared(k_desc, [BT, 0], bar, k_smem)
    ''', id='synchronous-mma'),
    pytest.param('GLU007', '''
        @gluon.jit
        def demo_fwd_kernel(k, k_desc, bar, T, K: gl.constexpr, BT: gl.constexpr, BK: gl.constexpr):
            layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
            o_t = gl.program_id(0) * BT + gl.arange(0, BT, layout=gl.SliceLayout(1, layout))
            o_k = gl.arange(0, BK, layout=gl.SliceLayout(0, layout))
            m_k = o_k[None, :] < K
            k_smem = gl.allocate_shared_memory(k.dtype.element_ty, [BT, BK], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
            async_copy.async_copy_global_to_shared(k_smem, k + gl.minimum(o_t, T - 1)[:, None] * K + o_k[None, :],
                                                   mask=m_k)
            tma.async_copy_global_to_shared(k_desc, [0, 0], bar, k_smem)
            b_k = gl.where(m_k, k_smem.load(layout), 0.)
    ''', id='masked-columns-replaced-after-the-read-and-a-tma-load'),
])
def test_what_the_rules_leave_alone(repo, rule_id, body):
    assert _where(_check(repo, rule_id, _kernel(body))) == []


def test_a_pitfall_already_in_the_base_is_not_reported(repo):
    text = _kernel(CASES['masked-cp-async'][1])
    repo.commit({PATH: text})
    repo.write({PATH: text + '\n\nUNRELATED = 1\n'})
    assert _where(repo.check(*GLU)) == []


def test_our_gluon_kernel_is_silent_as_if_every_line_were_new(repo):
    path = 'fla/ops/simple_gla/backends/gluon_hopper.py'
    repo.commit({'README.md': 'demo\n'})
    repo.write({path: (ROOT / path).read_text(encoding='utf-8')})
    assert _where(repo.check(*GLU)) == []


@pytest.mark.skipif(not (UPSTREAM / 'HEAD').exists(), reason='no snapshot of upstream flash-linear-attention')
def test_upstream_gluon_kernels_are_silent_as_if_every_line_were_new(repo):
    path = 'fla/ops/attnres/backends/gluon.py'
    text = subprocess.run(['git', '-C', str(UPSTREAM), 'show', f'HEAD:{path}'], capture_output=True, text=True,
                          check=True).stdout
    assert 'async_copy_global_to_shared' in text
    repo.commit({'README.md': 'demo\n'})
    repo.write({path: text})
    assert _where(repo.check(*GLU)) == []
