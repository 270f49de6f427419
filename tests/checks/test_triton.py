# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""TRI001 and TRI003-TRI005: block pointers, length specialization, constexpr parameters and unmasked accesses past a
dimension (TRI002 is in test_indices.py)."""

from __future__ import annotations

import pytest

from tests.checks.kernels import PATH, kernel_source, line_of, placed

BLOCK_POINTERS = kernel_source('''
    from triton.language import advance

    @triton.jit
    def demo_fwd_kernel(q, o, T, BT: tl.constexpr):
        p_q = tl.make_block_ptr(q, (T,), (1,), (0,), (BT,), (0,))
        p_q = triton.language.advance(p_q, (BT,))
        tl.store(o, tl.load(p_q))
''')


def test_block_pointers_are_reported_where_used(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: BLOCK_POINTERS})
    assert placed(repo.check('TRI001')) == [
        ('TRI001', PATH, line_of(BLOCK_POINTERS, 'import advance')),
        ('TRI001', PATH, line_of(BLOCK_POINTERS, 'tl.make_block_ptr')),
        ('TRI001', PATH, line_of(BLOCK_POINTERS, 'triton.language.advance')),
    ]


def test_block_pointer_names_in_text_or_unrelated_code_are_not_reported(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({
        PATH: kernel_source('''
            # tl.make_block_ptr and tl.advance are not used here
            NOTE = 'no tl.make_block_ptr or tl.advance'

            @triton.jit
            def demo_fwd_kernel(q, o, BT: tl.constexpr):
                o_t = tl.arange(0, BT)
                tl.store(o + o_t, tl.load(q + o_t))
        '''),
        'mrbot/cursor.py': 'def step(cursor):\n    cursor.advance()\n',
    })
    assert placed(repo.check('TRI001')) == []


def test_block_pointer_already_in_the_base_is_not_reported(repo):
    repo.commit({PATH: BLOCK_POINTERS})
    repo.write({PATH: BLOCK_POINTERS + '\n\nUNRELATED = 1\n'})
    assert placed(repo.check('TRI001')) == []


def test_a_fix_to_the_arguments_of_a_block_pointer_a_kernel_had_is_not_a_new_use(repo):
    # upstream's fix of a wrong offset (`(0,)` to `(i_v * BT,)`) is not asked to migrate the kernel; a second block
    # pointer in the same kernel is new use
    repo.commit({PATH: BLOCK_POINTERS})
    fixed = BLOCK_POINTERS.replace('(0,), (BT,), (0,))', '(tl.program_id(0) * BT,), (BT,), (0,))')
    repo.write({PATH: fixed})
    assert placed(repo.check('TRI001')) == []
    grown = fixed.replace('    tl.store(o, tl.load(p_q))',
                          '    p_o = tl.make_block_ptr(o, (T,), (1,), (0,), (BT,), (0,))\n    tl.store(p_o, tl.load(p_q))')
    repo.write({PATH: grown})
    assert placed(repo.check('TRI001')) == [('TRI001', PATH, line_of(grown, 'p_o = tl.make_block_ptr'))]


SPECIALIZED = kernel_source('''
    @triton.autotune(configs=[triton.Config({})], key=['K'])
    @triton.jit
    def demo_fwd_kernel(
        x,
        T,
        K: tl.constexpr,
    ):
        tl.store(x, T)
''')


def test_kernel_with_a_specialized_length_is_reported_at_t(repo):
    repo.commit({'README.md': 'demo\n'})
    launched = kernel_source('''
        @triton.jit(do_not_specialize=['N'])
        def fwd(x, N, T):
            tl.store(x, N + T)


        def launch(x):
            fwd[(1,)](x, 1, 2)
    ''')
    repo.write({PATH: SPECIALIZED, 'fla/ops/demo/launched.py': launched})
    assert placed(repo.check('TRI003')) == [
        ('TRI003', PATH, line_of(SPECIALIZED, '    T,')),
        ('TRI003', 'fla/ops/demo/launched.py', line_of(launched, 'def fwd(x, N, T)')),
    ]


@pytest.mark.parametrize('decorator', [
    "@triton.jit(do_not_specialize=['T'])",
    "@triton.jit(do_not_specialize=('N', 'T'))",
    '@triton.jit(do_not_specialize=[2])',
    '@triton.jit(do_not_specialize=DO_NOT_SPECIALIZE)',
])
def test_length_named_in_do_not_specialize_is_not_reported(repo, decorator):
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: kernel_source(f'''
        {decorator}
        def demo_fwd_kernel(x, N, T):
            tl.store(x, N + T)
    ''')})
    assert placed(repo.check('TRI003')) == []


def test_device_helpers_taking_a_length_are_not_kernels(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: kernel_source('''
        @triton.jit
        def sequence_end(bos, T):
            return bos + T


        @triton.jit
        def store_length(x, T):
            tl.store(x, T)
    ''')})
    assert placed(repo.check('TRI003')) == []


def test_specialized_length_is_reported_when_only_the_decorator_changes(repo):
    repo.commit({PATH: SPECIALIZED})
    repo.write({PATH: SPECIALIZED.replace('@triton.jit\n', "@triton.jit(do_not_specialize=['K'])\n")})
    assert placed(repo.check('TRI003')) == [('TRI003', PATH, line_of(SPECIALIZED, '    T,'))]


def test_specialized_length_already_in_the_base_is_not_reported(repo):
    repo.commit({PATH: SPECIALIZED})
    repo.write({PATH: SPECIALIZED.replace('tl.store(x, T)', 'tl.store(x, T + 1)')})
    assert placed(repo.check('TRI003')) == []


COMPILE_TIME = kernel_source('''
    @triton.jit
    def demo_fwd_kernel(
        x,
        B,
        T,
        BT,
        BLOCK_SIZE: int,
        USE_G,
        bt,
        BH,
        BH_OFFSET,
        BHV,
        IS_VARLEN: tl.constexpr,
        HAS_BIAS: triton.language.constexpr,
    ):
        o_x = tl.arange(0, BT) + tl.arange(0, BLOCK_SIZE) + tl.arange(0, BHV)
        tl.store(x + o_x, B + T + USE_G + bt + BH + BH_OFFSET)
''')


def test_a_kernel_taking_its_chunks_at_compile_time_is_not_asked_to_leave_t_unspecialized(repo):
    # it compiles for every length through `NT` by design: listing `T` would change nothing
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: kernel_source('''
        @triton.jit
        def demo_fwd_kernel(x, T, NT: tl.constexpr, BT: tl.constexpr):
            for i_t in tl.static_range(NT):
                tl.store(x + i_t * BT + tl.arange(0, BT), tl.zeros([BT], dtype=tl.float32), mask=i_t * BT < T)
    ''')})
    assert placed(repo.check('TRI003')) == []


def test_a_block_size_name_that_shapes_nothing_may_be_a_runtime_count(repo):
    # upstream's launcher computes `BS = cdiv(T, NS)` for every call: a loop's bound, which a constexpr would recompile
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: kernel_source('''
        @triton.jit
        def demo_bwd_kernel(x, T, BS, BD: tl.constexpr):
            for i in range(0, BS):
                tl.store(x + i * BD + tl.arange(0, BD), tl.zeros([BD], dtype=tl.float32), mask=i < T)
    ''')})
    assert placed(repo.check('TRI004')) == []


def test_compile_time_names_without_constexpr_are_reported(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: COMPILE_TIME})
    report = repo.check('TRI004')
    assert placed(report) == [
        ('TRI004', PATH, line_of(COMPILE_TIME, '    BT,')),
        ('TRI004', PATH, line_of(COMPILE_TIME, 'BLOCK_SIZE: int')),
        ('TRI004', PATH, line_of(COMPILE_TIME, 'USE_G,')),
        ('TRI004', PATH, line_of(COMPILE_TIME, 'BHV,')),
    ]
    assert report.findings[0].message == ('parameter `BT` of `demo_fwd_kernel` is named as a compile-time value but is '
                                          'not `tl.constexpr`')


def test_constexpr_parameters_and_plain_functions_are_not_reported(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: kernel_source('''
        @triton.jit
        def demo_fwd_kernel(x, BT: tl.constexpr, USE_G: 'tl.constexpr', HAS_BIAS: triton.language.constexpr):
            tl.store(x, BT + USE_G + HAS_BIAS)


        def launch_config(BT, USE_G):
            return {'BT': BT, 'USE_G': USE_G}
    ''')})
    assert placed(repo.check('TRI004')) == []


def test_compile_time_parameter_already_in_the_base_is_not_reported(repo):
    repo.commit({PATH: COMPILE_TIME})
    repo.write({PATH: COMPILE_TIME.replace('tl.store(x, B', 'tl.store(x, 1 + B')})
    assert placed(repo.check('TRI004')) == []


# The shape of upstream flash-linear-attention's `fused_recurrent_kda_fwd_kernel` before b67113b masked its `g` load.
UNMASKED_GATE = kernel_source('''
    @triton.jit(do_not_specialize=['T'])
    def demo_fwd_kernel(q, g, o, T, H: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
        i_k, i_nh = tl.program_id(0).to(tl.int64), tl.program_id(1).to(tl.int64)
        bos = i_nh * T
        o_k = i_k * BK + tl.arange(0, BK)
        p_q = q + bos * H * K + o_k
        p_g = g + bos * H * K + o_k
        mask_k = o_k < K
        for _ in range(0, T):
            b_q = tl.load(p_q, mask=mask_k, other=0).to(tl.float32)
            b_g = tl.load(p_g, eviction_policy='evict_last').to(tl.float32)
            tl.store(o + bos * H * K + o_k, b_q * tl.exp(b_g), mask=mask_k)
            p_q += H * K
            p_g += H * K
''')


def test_unmasked_load_through_an_offset_the_kernel_masks_elsewhere_is_reported(repo):
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: UNMASKED_GATE})
    report = repo.check('TRI005')
    assert placed(report) == [('TRI005', PATH, line_of(UNMASKED_GATE, 'b_g = tl.load'))]
    assert report.findings[0].message == (
        "`tl.load(p_g, eviction_policy='evict_last')` has no mask, but `o_k` can pass `K`: line "
        f"{line_of(UNMASKED_GATE, 'b_q = tl.load')} masks it with `mask_k`; add `mask=mask_k, other=0`")


def test_unmasked_store_is_reported_without_a_fill_value(repo):
    text = UNMASKED_GATE.replace('b_q * tl.exp(b_g), mask=mask_k)', 'b_q * tl.exp(b_g))').replace(
        "tl.load(p_g, eviction_policy='evict_last')", 'tl.load(p_g, mask=mask_k, other=0)')
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: text})
    report = repo.check('TRI005')
    assert placed(report) == [('TRI005', PATH, line_of(text, 'tl.store(o'))]
    assert report.findings[0].message.endswith('; add `mask=mask_k`')


@pytest.mark.parametrize('edits', [
    pytest.param({"tl.load(p_g, eviction_policy='evict_last')": 'tl.load(p_g, mask=mask_k, other=0)'}, id='masked'),
    pytest.param({'tl.load(p_q, mask=mask_k, other=0)': 'tl.load(p_q)', ', mask=mask_k)': ')'},
                 id='no-access-masks-the-offset'),
    pytest.param({'p_g = g + bos * H * K + o_k': 'p_g = tl.make_block_ptr(g, (T, K), (H * K, 1), (bos, i_k * BK), (1, BK), '
                                                 '(1, 0))',
                  "tl.load(p_g, eviction_policy='evict_last')": 'tl.load(p_g, boundary_check=(1,))',
                  'p_g += H * K': 'p_g = tl.advance(p_g, (1, 0))'},
                 id='block-pointer'),
    pytest.param({'tl.arange(0, BK)': 'tl.arange(0, K)'}, id='range-over-the-dimension'),
    pytest.param({'p_g = g + bos * H * K + o_k': 'if USE_GK:\n        p_g = g + bos * H * K + o_k\n    else:\n'
                                                 '        p_g = g + bos * H'},
                 id='offset-on-one-path-only'),
    pytest.param({'mask_k = o_k < K': 'mask_k = i_k * BK + o_k < K'}, id='mask-over-an-offset-that-starts-elsewhere'),
    pytest.param({'mask_k = o_k < K': 'mask_k = o_k < BK'}, id='mask-against-a-block-size'),
    pytest.param({'p_g = g + bos * H * K + o_k': 'p_g = g + bos * H * K + tl.minimum(o_k, K - 1)'}, id='clamped-offset'),
])
def test_unmasked_accesses_the_kernel_does_not_show_can_overrun_are_not_reported(repo, edits):
    text = UNMASKED_GATE.replace('BK: tl.constexpr)', 'BK: tl.constexpr, USE_GK: tl.constexpr)')
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new)
    repo.commit({'README.md': 'demo\n'})
    repo.write({PATH: text})
    assert placed(repo.check('TRI005')) == []


def test_unmasked_load_already_in_the_base_is_not_reported(repo):
    repo.commit({PATH: UNMASKED_GATE})
    repo.write({PATH: UNMASKED_GATE.replace('p_q += H * K', 'p_q += H * K + 0')})
    assert placed(repo.check('TRI005')) == []


def test_kernels_for_ascend_npus_may_use_block_pointers(repo):
    # triton-ascend still requires them (upstream's exemption wrote down what held before it was written)
    repo.commit({'README.md': 'demo\n'})
    repo.write({'fla/ops/demo/backends/triton_ascend/chunk.py': BLOCK_POINTERS, PATH: BLOCK_POINTERS})
    assert {f.path for f in repo.check('TRI001').findings} == {PATH}
