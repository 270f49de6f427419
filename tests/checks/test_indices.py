# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""TRI002: program ids multiplied in int32 where the product can pass 2**31, each shape of upstream's kernels that it
must tell apart as a small synthetic kernel of our own."""

from __future__ import annotations

from textwrap import dedent

import pytest

from tests.checks.kernels import PATH, kernel_source, line_of, placed


def _found(repo, text: str) -> list[int]:
    """The lines TRI002 reports in `text`, added whole to a repository."""
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: text})
    return [f.line for f in repo.check('TRI002').findings]


NARROW = kernel_source('''
    @triton.jit(do_not_specialize=['T'])
    def demo_fwd_kernel(x, o, T, H: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, K: tl.constexpr):
        i_t, i_h = tl.program_id(0), tl.program_id(1)
        i_k = tl.program_id(2).to(tl.int64)
        o_row = i_t * BT + tl.arange(0, BT)
        i_blocks = tl.minimum(i_h, H - 1)
        p_x = x + (o_row[:, None] * H + i_blocks) * K + i_k * BK
        b_x = tl.load(p_x)
        b_o = b_x * 2.0
        tl.store(o + tl.program_id(0) * T * H, b_o)
''')


def test_program_id_products_without_an_int64_cast_are_reported(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: NARROW})
    report = repo.check('TRI002')
    # one finding for the offset of `p_x`, whose products all go on from the same row: tokens times heads alone stays
    # below 2**31, times the features it does not
    assert placed(report) == [('TRI002', PATH, line_of(NARROW, 'p_x = x')), ('TRI002', PATH, line_of(NARROW, 'tl.store(o'))]
    first, store = line_of(NARROW, 'i_t, i_h ='), line_of(NARROW, 'tl.store(o')
    assert [f.message for f in report.findings] == [
        f'`(o_row[:, None] * H + i_blocks) * K` multiplies `o_row[:, None] * H + i_blocks`, derived from `tl.program_id` '
        f'on line {first}, without an int64 cast, and can pass 2**31',
        # the finding names the whole int32 term of the address, not only its first product to pass 2**31
        f'`tl.program_id(0) * T * H` multiplies `tl.program_id(0) * T`, derived from `tl.program_id` on line {store}, '
        'without an int64 cast, and can pass 2**31',
    ]


@pytest.mark.parametrize(('body', 'product'), [
    pytest.param('''
        if IS_VARLEN:
            i_n = tl.program_id(0)
        else:
            i_n = 0
        o_n = i_n * stride_n
    ''', 'i_n * stride_n', id='narrow-in-one-branch'),
    pytest.param('''
        o_n = 0
        for i_t in range(tl.program_id(0), T):
            o_n += i_t
        o_n *= T
    ''', 'o_n *= T', id='loop-variable-and-augmented-product'),
    pytest.param('''
        i_n = 0
        for i_t in range(T):
            o_n = i_n * stride_n
            i_n = tl.program_id(0)
    ''', 'i_n * stride_n', id='narrow-from-the-previous-iteration'),
    pytest.param('''
        i_a, (i_b, i_c) = 0, (1, tl.program_id(0))
        o_n = (i_c + 1) * T
    ''', '(i_c + 1) * T', id='nested-unpacking'),
])
def test_program_ids_followed_through_branches_loops_and_unpacking(repo, body, product):
    text = kernel_source('''
        @triton.jit(do_not_specialize=['T'])
        def demo_fwd_kernel(x, T, stride_n, IS_VARLEN: tl.constexpr):
    ''') + dedent(body).replace('\n', '\n    ').rstrip() + '\n'
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: text})
    assert placed(repo.check('TRI002')) == [('TRI002', PATH, line_of(text, product))]


def test_program_ids_cast_to_int64_and_code_outside_kernels_are_not_reported(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: kernel_source('''
        @triton.jit(do_not_specialize=['T'])
        def demo_fwd_kernel(x, o, T, H: tl.constexpr, BT: tl.constexpr):
            i_t = tl.program_id(0).to(tl.int64)
            i_h = tl.cast(tl.program_id(1), tl.int64)
            i_n, i_v = tl.program_id(2).to(tl.int64), tl.program_id(0)
            i_scaled = i_v.to(tl.float32) * 0.5
            i_v = 0
            o_row = i_t * BT + tl.arange(0, BT)
            b_x = tl.load(x + o_row * H + i_h) * 2.0
            mask = o_row < T
            tl.store(o + i_n * T + i_v * BT + o_row, b_x * i_scaled, mask=mask)


        def grid(meta):
            return (tl.program_id(0) * 2,)
    ''')})
    assert placed(repo.check('TRI002')) == []


def test_bounded_products_masks_and_promoted_sums_are_not_reported(repo):
    """Upstream flash-linear-attention's kernels: tile indices times block sizes, a loop index below a block size, a
    mask, a feature offset times a feature size, and a sum that already holds an int64 cast; only the offset with a
    sequence size and a runtime stride is reported, once."""
    text = kernel_source('''
        @triton.jit(do_not_specialize=['T'])
        def demo_fwd_kernel(x, chunk_indices, T, stride_x, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
                            BC: tl.constexpr, BK: tl.constexpr):
            i_kt, i_bh = tl.program_id(0), tl.program_id(1)
            i_k, i_t = i_kt % tl.cdiv(K, BK), i_kt // tl.cdiv(K, BK)
            i_b, i_h = i_bh // H, i_bh % H
            i_n = tl.load(chunk_indices + i_t * 2).to(tl.int32)
            o_k = i_k * BK + tl.arange(0, BK)
            o_t = i_t * BT + tl.arange(0, BT)
            m_t = o_t * 2 < T
            p_x = x + (tl.cast(i_b, tl.int64) * H + i_h) * T * K + o_k
            for j in range(0, tl.minimum(BC, T - i_t * BT)):
                b_x = tl.load(p_x + j * K + o_k[None, :] * V, mask=m_t)
            tl.store(x + (o_t + i_n) * H + o_k * stride_x, b_x)
    ''')
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: text})
    assert placed(repo.check('TRI002')) == [('TRI002', PATH, line_of(text, 'tl.store(x'))]


def test_program_id_product_already_in_the_base_is_not_reported(repo):
    repo.commit({PATH: NARROW})
    repo.write({PATH: NARROW.replace('b_o = b_x * 2.0', 'b_o = b_x * 3.0')})
    assert placed(repo.check('TRI002')) == []


@pytest.mark.parametrize('offset', [
    pytest.param('p_x = x + pid_h * D + tl.arange(0, BD)', id='head-times-feature-size'),
    pytest.param('p_x = x + i_h * K + o_k', id='head-index-times-key-size'),
    pytest.param('p_x = x + i_h * K * V + o_k', id='head-index-times-state-size'),
    pytest.param('p_x = x + o_g[:, None] * K + o_k[None, :]', id='group-offsets-times-key-size'),
    pytest.param('p_x = x + (i_k * all + bos).to(tl.int64) * H * K', id='feature-tile-times-token-count'),
    pytest.param('p_x = x + (i_b * T).to(tl.int64) * H * K', id='batch-row-times-length-cast-after'),
    pytest.param('p_x = x + bos * H + i_h', id='token-offset-times-heads-of-a-per-head-scalar'),
    pytest.param('p_x = x + i_h * x_stride_h + o_k', id='head-index-times-head-stride'),
    pytest.param('p_x = x + (i_b * tl.cdiv(T, BK)).to(tl.int64) * H * K', id='batch-row-times-chunks-cast-after'),
    pytest.param('p_x = x + tl.program_id(2) * D + tl.arange(0, BD)', id='later-grid-axis-times-width'),
    pytest.param('b_g = tl.load(x + i_h); b_s = b_g * tl.minimum(BK, T - i_k * BK); p_x = x + o_k',
                 id='data-times-an-index-is-no-address'),
    pytest.param('p_x = x + (bos * Hq + i_h).to(tl.int64) * K', id='token-offset-times-query-heads-cast-after'),
    pytest.param('p_x = x + (i_b * TQ).to(tl.int64) * H * K', id='batch-row-times-query-length-cast-after'),
])
def test_products_bounded_by_sizes_and_head_counts_are_not_reported_cast_or_not(repo, offset):
    # upstream's false alarms: a head or a feature tile times a feature size (a head's state: keys times values) or a
    # head's stride, a group times a size, a batch row times a sequence length or its chunks cast only afterwards,
    # tokens times heads indexing a per-head scalar, a later grid axis (at most 65535 programs) times a width, a block
    # of data times an index: none can pass 2**31 in the largest launch the rule allows for (4M tokens, 128 heads)
    assert _found(repo, kernel_source(f'''
        @triton.jit(do_not_specialize=['T'])
        def demo_fwd_kernel(x, T, TQ, all, x_stride_h, H: tl.constexpr, Hq: tl.constexpr, G: tl.constexpr,
                            K: tl.constexpr, V: tl.constexpr, D: tl.constexpr, BD: tl.constexpr, BK: tl.constexpr):
            i_k, i_bh = tl.program_id(0), tl.program_id(1)
            i_b, i_h = i_bh // H, i_bh % H
            pid_h = tl.program_id(2)
            i_g = i_h // G
            o_g = i_g * G + tl.arange(0, G)
            o_k = i_k * BK + tl.arange(0, BK)
            bos = i_b * T
            {offset}
            tl.store(p_x, tl.zeros([BK], dtype=tl.float32))
    ''')) == []


@pytest.mark.parametrize(('length', 'reported'), [('T: tl.int64', False), ('T', True)],
                         ids=['length-annotated-int64', 'length-in-int32'])
def test_a_length_annotated_int64_makes_the_offsets_it_enters_int64(repo, length, reported):
    # upstream's `T: tl.int64` in a kernel's signature: Triton passes it as int64, so `i_n * T` and the offsets
    # built on it are int64 with no cast
    text = kernel_source(f'''
        @triton.jit(do_not_specialize=['T'])
        def demo_fwd_kernel(x, {length}, H: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
            i_n, i_h = tl.program_id(0), tl.program_id(1)
            bos = i_n * T
            p_x = x + (bos * H + i_h) * K + tl.arange(0, BK)
            tl.store(p_x, tl.zeros([BK], dtype=tl.float32))
    ''')
    assert _found(repo, text) == ([line_of(text, 'p_x = x')] if reported else [])


@pytest.mark.parametrize('offset', [
    pytest.param('p_g = g + i_b * HV * T_max + i_h * T_max', id='batch-times-heads-times-length-of-a-per-head-scalar'),
    pytest.param('p_g = g + (i_tg // T_max * T_max + i_h) * HV', id='a-start-rounded-down-to-a-length-times-heads'),
    pytest.param('p_g = g + bos * HV + i_h + o_t * HV', id='position-in-the-sequence-times-heads'),
    pytest.param('p_g = g + o_d * g_stride_x_d', id='feature-index-times-feature-stride'),
    pytest.param('p_g = g + (o_t // BD) * g_stride_row + o_t % BD', id='row-of-a-flat-offset-times-the-row-stride'),
    pytest.param('p_g = g + i_b * BT * 256', id='factors-that-reach-2**31-only-all-at-their-largest'),
    pytest.param('p_g = g + (i_b * HV + i_h) * D', id='sequence-and-head-times-a-width-beside-heads'),
    pytest.param('p_g = g + (i_b * HV + i_h) * TC + o_t', id='sequence-and-head-times-the-chunks-of-a-sequence'),
])
def test_products_that_count_rows_within_each_other_are_not_reported(repo, offset):
    # tokens times heads through three factors, a division rounded back, a chunk times its block size: each is a
    # position in a per-head scalar (a gate), far below 2**31
    assert _found(repo, kernel_source(f'''
        @triton.jit(do_not_specialize=['T_max'])
        def demo_fwd_kernel(g, T_max, TC, g_stride_x_d, g_stride_row, HV: tl.constexpr, BT: tl.constexpr,
                            BD: tl.constexpr, D: tl.constexpr):
            i_t, i_bh = tl.program_id(0), tl.program_id(1)
            i_b, i_h = i_bh // HV, i_bh % HV
            i_tg = i_t
            bos = i_b * T_max
            o_t = i_t * BT + tl.arange(0, BT)
            o_d = tl.arange(0, BD)
            {offset}
            tl.store(p_g, tl.zeros([BT], dtype=tl.float32))
    ''')) == []


def test_a_row_of_a_flat_offset_is_followed_into_the_helper_that_strides_it(repo):
    # an elementwise kernel passes its flat offsets and its rows' stride to a helper that splits them into rows
    assert _found(repo, kernel_source('''
        @triton.jit
        def _flat_offset(offs, D: tl.constexpr, stride):
            row = offs // D
            return row * stride + offs % D

        @triton.jit
        def demo_fwd_kernel(x, T, stride_x_row, D: tl.constexpr, BLOCK: tl.constexpr):
            pid = tl.program_id(1)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            tl.store(x + _flat_offset(offs, D, stride_x_row), tl.zeros([BLOCK], dtype=tl.float32), mask=offs < T)
    ''')) == []


def test_program_ids_of_kernels_for_a_grid_of_at_most_65535_programs_an_axis_stay_narrow(repo):
    # Ascend NPUs launch at most 65535 programs on every axis: a row there times a width stays below 2**31
    text = kernel_source('''
        @triton.jit
        def demo_fwd_kernel(x, stride_x_row, D: tl.constexpr, BD: tl.constexpr):
            row = tl.program_id(0)
            p_x = x + row * stride_x_row + tl.arange(0, BD)
            tl.store(p_x, tl.zeros([BD], dtype=tl.float32))
    ''')
    repo.commit({'README.md': 'demo\n'})
    repo.write({'fla/ops/demo/backends/triton_ascend/chunk.py': text, PATH: text})
    assert [(f.path, f.line) for f in repo.check('TRI002').findings] == [(PATH, line_of(text, 'p_x = x'))]


@pytest.mark.parametrize(('offset', 'product'), [
    pytest.param('p_x = x + (bos * H + i_h) * K', '(bos * H + i_h) * K', id='token-offset-times-heads-and-features'),
    pytest.param('p_x = x + i_bh * T * K', 'i_bh * T * K', id='batch-by-heads-times-length-and-features'),
    pytest.param('p_x = x + i_h * stride_t', 'i_h * stride_t', id='head-times-runtime-stride'),
    pytest.param('p_x = x + (i_b * T * H * K).to(tl.int64)', 'i_b * T * H * K', id='cast-after-a-product-that-wraps'),
    pytest.param('p_x, p_y = x + i_t * stride_t, x + i_t * stride_t + 1', 'i_t * stride_t', id='twice-on-one-line'),
    pytest.param('p_x = x + i_t * H * BK', 'i_t * H * BK', id='a-position-times-heads-times-a-row-width'),
])
def test_products_that_can_pass_int32_are_reported_once_per_offset(repo, offset, product):
    # the inner and the outer products of one offset were each reported (445 lines of upstream's twice or more)
    text = kernel_source(f'''
        @triton.jit(do_not_specialize=['T'])
        def demo_fwd_kernel(x, T, stride_t, H: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
            i_t, i_bh = tl.program_id(0), tl.program_id(1)
            i_b, i_h = i_bh // H, i_bh % H
            bos = i_b * T
            {offset}
            tl.store(p_x, tl.zeros([BK], dtype=tl.float32))
    ''')
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: text})
    [finding] = repo.check('TRI002').findings
    assert finding.line == line_of(text, offset) and finding.message.startswith(f'`{product}` multiplies ')


def test_program_ids_are_followed_into_the_jit_helpers_a_kernel_passes_them_to(repo):
    # upstream's kernels compute offsets in @triton.jit helpers from the program ids their kernels pass in
    text = kernel_source('''
        @triton.jit
        def load_rows(x, i_t, i_h, H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr):
            o_t = i_t * BT + tl.arange(0, BT)
            head = i_h * K
            return tl.load(x + o_t[:, None] * H * K + head)


        @triton.jit
        def unused_helper(x, i_t, K: tl.constexpr):
            return tl.load(x + i_t * K)


        @triton.jit(do_not_specialize=['T'])
        def demo_fwd_kernel(x, o, T, H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr):
            i_t, i_h = tl.program_id(0), tl.program_id(1)
            b_x = load_rows(x, i_t, i_h, H=H, K=K, BT=BT)
            wide = load_rows(x, i_t.to(tl.int64), i_h, H, K, BT)
            tl.store(o, b_x + wide)
    ''')
    # once: the call with an int64 row makes nothing wide for the call without one
    assert _found(repo, text) == [line_of(text, 'o_t[:, None] * H * K')]


def test_a_compile_time_value_is_no_count_of_tokens_whatever_its_name(repo):
    # log-linear attention's `L: tl.constexpr` counts levels: a kernel compiles once per value, so it stays small
    assert _found(repo, kernel_source('''
        @triton.jit
        def demo_fwd_kernel(x, H: tl.constexpr, L: tl.constexpr, BT: tl.constexpr):
            i_n, i_h = tl.program_id(0), tl.program_id(1)
            p_l = x + (i_n * BT * H + i_h) * L + tl.arange(0, BT)
            tl.store(p_l, tl.zeros([BT], dtype=tl.float32))
    ''')) == []
