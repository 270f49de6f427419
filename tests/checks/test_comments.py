# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The comment rules: banners, commented-out code, TODO anchors, personal asides and trailing comments."""

from __future__ import annotations

import warnings

import pytest

PATH = 'fla/ops/demo.py'
BODY = 'import torch\n\n\ndef scale(x):\n    return x * 2\n'


# CMT005 is off unless a repository turns it on.
TRAILING_ON = '[tool.mrbot]\nrules = { CMT005 = "note" }\n'


def _findings(repo, rule_id: str, head: str, base: str = BODY) -> list[tuple[str, str, int]]:
    """Commit the header and `base`, change the file to the header and `head`; line 3 is the first line after the header."""
    repo.commit({PATH: repo.HEADER + base, 'pyproject.toml': TRAILING_ON})
    repo.write({PATH: repo.HEADER + head})
    return [(f.rule, f.path, f.line) for f in repo.check(rule_id).findings]


def test_banner_comment_is_reported(repo):
    assert _findings(repo, 'CMT001', BODY + '\n\n# ==== Backward ====\ndef grad(x):\n    return 2\n') == [
        ('CMT001', PATH, 10)]


def test_banner_block_is_one_finding_at_its_first_banner(repo):
    head = '##########\n# Kernels\n##########\n' + BODY
    assert _findings(repo, 'CMT001', head) == [('CMT001', PATH, 3)]


@pytest.mark.parametrize('comment', ['# the backward pass recomputes the states', '# -*- coding: utf-8 -*-', '# [BT, BK]',
                                     '# a -> b'])
def test_plain_comments_are_not_banners(repo, comment):
    assert _findings(repo, 'CMT001', f'{comment}\n{BODY}') == []


def test_banner_inside_a_string_is_not_a_comment(repo):
    assert _findings(repo, 'CMT001', BODY + "RULE = '# ==========='\n") == []


def test_banner_in_markdown_is_not_checked(repo):
    repo.commit({'README.md': 'x\n'})
    repo.write({'README.md': 'x\n##########\n'})
    assert repo.check('CMT001').findings == ()


def test_banner_already_in_the_base_is_not_reported(repo):
    base = '# ---------- helpers ----------\n' + BODY
    assert _findings(repo, 'CMT001', base + 'SIZE = 4\n', base) == []


@pytest.mark.parametrize('comment', ['# x = compute(y)', '# print(o.shape)', '# import triton', '# return o',
                                     '# if x:', '# for i in range(3):', '# def f():', '# @triton.jit',
                                     '# b_h *= tl.exp(b_g)', '# BT: tl.constexpr = 64'])
def test_commented_out_code_is_reported(repo, comment):
    assert _findings(repo, 'CMT002', f'{comment}\n{BODY}') == [('CMT002', PATH, 3)]


def test_commented_out_block_is_one_finding_at_its_first_line(repo):
    head = BODY + '# for i in range(3):\n#     total += i\n#     o = torch.cat(\n#         [o, x])\n'
    assert _findings(repo, 'CMT002', head) == [('CMT002', PATH, 8)]


def test_line_added_inside_an_old_commented_out_block_reports_the_block(repo):
    base = BODY + '# a = 1\n# b = 2\n'
    assert _findings(repo, 'CMT002', BODY + '# a = 1\n# c = 3\n# b = 2\n', base) == [('CMT002', PATH, 8)]


@pytest.mark.parametrize('comment', ['# [BT, BK]', '# v: [B, T, H, V]', '# scale', '# the state is kept in float32',
                                     '# noqa: E402', '# type: ignore', '# mrbot: ignore[CMT001]',
                                     '# pylint: disable=unused-import', '# https://github.com/fla-org/fla/issues/1',
                                     '# Faster (bf16) than the reference', '# (B, T, H, K, V)', '# Example:',
                                     '# if so, the last chunk is partial', '# Copyright (c) 2026, the mrbot authors.',
                                     '# Note: a = b holds only for T > 0'])
def test_prose_annotations_and_directives_are_not_code(repo, comment):
    assert _findings(repo, 'CMT002', f'{comment}\n{BODY}') == []


@pytest.mark.parametrize('comment', ['# dv2 = A_qb^T @ do + bg @ dh', '# A_tmp = A_ab_inv @ A_ak (strict-lower)',
                                     '# the footprint fits a 99KB cap at\n# BT=64.',
                                     "# match FLA's two-step update order:\n#   b_h *= exp2(g_last)\n#   b_h += b_hc"])
def test_formulas_and_code_quoted_by_prose_are_not_commented_out_code(repo, comment):
    assert _findings(repo, 'CMT002', f'{comment}\n{BODY}') == []


def test_commented_out_code_with_a_bad_escape_prints_no_warning(repo):
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert _findings(repo, 'CMT002', "# pattern = re.compile('\\d+')\n" + BODY) == [('CMT002', PATH, 3)]


def test_documented_alternative_is_allowed(repo):
    head = BODY + '# Alternative for GPUs with less shared memory:\n# BT = 32\n# BK = 32\nBT = 64\n'
    assert _findings(repo, 'CMT002', head) == []


def test_code_inside_a_string_is_not_a_comment(repo):
    assert _findings(repo, 'CMT002', BODY + 'EXAMPLE = """\n# x = compute(y)\n"""\n') == []


def test_commented_out_code_already_in_the_base_is_not_reported(repo):
    base = '# x = compute(y)\n' + BODY
    assert _findings(repo, 'CMT002', base + 'SIZE = 4\n', base) == []


@pytest.mark.parametrize('comment', ['# TODO: remove this workaround', '# FIXME: slow for long sequences',
                                     '# XXX this is wrong', '# TODO(jd): handle T > 64'])
def test_todo_without_an_anchor_is_reported(repo, comment):
    assert _findings(repo, 'CMT003', f'{comment}\n{BODY}') == [('CMT003', PATH, 3)]


def test_trailing_todo_is_checked_too(repo):
    assert _findings(repo, 'CMT003', BODY + 'SIZE = 4  # TODO tune\n') == [('CMT003', PATH, 8)]


@pytest.mark.parametrize('comment', ['# TODO(#123): drop the cast', '# TODO: see https://github.com/org/repo/pull/4',
                                     '# TODO: GH-77', '# TODO: remove after issue 12 is fixed',
                                     '# TODO: use tl.dot once triton >= 3.7', '# TODO: drop for torch<2.9',
                                     '# FIXME: broken since v0.6', '# TODO: drop with 3.7.1',
                                     '# TODO: remove when the interpreter supports int64',
                                     '# TODO: remove this workaround\n# once the varlen kernel lands'])
def test_todo_with_an_anchor_is_accepted(repo, comment):
    assert _findings(repo, 'CMT003', f'{comment}\n{BODY}') == []


def test_todo_in_a_string_is_not_a_comment(repo):
    assert _findings(repo, 'CMT003', BODY + "PLACEHOLDER = '# TODO'\n") == []


def test_todo_already_in_the_base_is_not_reported(repo):
    base = '# TODO: remove this workaround\n' + BODY
    assert _findings(repo, 'CMT003', base + 'SIZE = 4\n', base) == []


@pytest.mark.parametrize('comment', ['# JD: not sure this mask is needed', '# ABC: check with the kernel team'])
def test_personal_aside_is_reported(repo, comment):
    assert _findings(repo, 'CMT004', f'{comment}\n{BODY}') == [('CMT004', PATH, 3)]


@pytest.mark.parametrize('comment', ['# NOTE: the mask covers the last chunk', '# NB: rows are keys',
                                     '# XXX: see #12', '# E501: long line kept on purpose', '# AMD: wavefronts are 64 wide',
                                     '# the JD: prefix is not at the start', '# Copyright (c) 2026, the mrbot authors.'])
def test_markers_and_prose_are_not_asides(repo, comment):
    assert _findings(repo, 'CMT004', f'{comment}\n{BODY}') == []


@pytest.mark.parametrize('code', ['def scale(x, cp_context=None):\n    # CP: exchange the boundary state\n    return x\n',
                                  'def scale(x):\n    """Two value heads per key head (GVA)."""\n    # GVA: heads share keys\n'
                                  '    return x\n'])
def test_an_acronym_the_file_uses_elsewhere_is_a_term_not_an_aside(repo, code):
    assert _findings(repo, 'CMT004', BODY + code) == []


@pytest.mark.parametrize('comment', ['# TODO cyril: drop after deprecation cycle', '# TODO(jd): check the mask'])
def test_todo_addressed_to_a_person_is_an_aside(repo, comment):
    assert _findings(repo, 'CMT004', f'{comment}\n{BODY}') == [('CMT004', PATH, 3)]


def test_todo_naming_a_term_of_the_file_is_not_an_aside(repo):
    assert _findings(repo, 'CMT004', f'# TODO(scale): fold into the kernel\n{BODY}') == []


def test_personal_aside_already_in_the_base_is_not_reported(repo):
    base = '# JD: not sure\n' + BODY
    assert _findings(repo, 'CMT004', base + 'SIZE = 4\n', base) == []


def test_trailing_explanatory_comment_is_a_note_where_the_repository_turns_it_on(repo):
    repo.commit({PATH: repo.HEADER + BODY})
    repo.write({PATH: repo.HEADER + BODY + 'SIZE = 4  # four fits the shared memory\n'})
    # off by default: on upstream's history about half of what it reported was an annotation after all
    assert repo.check('CMT005').findings == ()
    repo.write({'pyproject.toml': TRAILING_ON})
    findings = repo.check('CMT005').findings
    assert [(f.rule, f.path, f.line, f.severity) for f in findings] == [('CMT005', PATH, 8, 'note')]


@pytest.mark.parametrize('comment', ['# [BT, BK]', '# [BT, BV] after the decay', '# float32', '# bf16, [B, T]', '# (B, T)',
                                     '# noqa: E501', '# type: ignore[attr-defined]', '# pragma: no cover', '# fmt: skip',
                                     '# mrbot: ignore[CMT005]', '# pylint: disable=invalid-name', '# nosec'])
def test_annotations_and_directives_may_trail(repo, comment):
    assert _findings(repo, 'CMT005', BODY + f'SIZE = 4  {comment}\n') == []


@pytest.mark.parametrize('comment', ['# *f32 [B, T, H, D]', '# *i32 [N+1] - cumulative sequence lengths',
                                     '# scalar float32 - epsilon for log safety', '# *f32 [N, H, D] or None'])
def test_upstream_pointer_and_scalar_annotations_may_trail(repo, comment):
    assert _findings(repo, 'CMT005', BODY + f'SIZE = 4  {comment}\n') == []


def test_slot_labels_after_a_comma_may_trail_and_prose_may_not(repo):
    code = BODY + 'GRADS = (\n    None,  # scale\n    None,  # use_qk_l2norm_in_kernel (always True)\n    0,  # x, eps\n' \
                  '    1,  # the query side\n)\nSIZE = 4  # scale\n'
    lines = (repo.HEADER + code).splitlines()
    assert [line for _, _, line in _findings(repo, 'CMT005', code)] == [
        lines.index('    1,  # the query side') + 1, lines.index('SIZE = 4  # scale') + 1]


def test_comment_on_its_own_line_is_not_trailing(repo):
    assert _findings(repo, 'CMT005', BODY + '# four fits the shared memory\nSIZE = 4\n') == []


def test_trailing_comment_already_in_the_base_is_not_reported(repo):
    base = BODY + 'SIZE = 4  # four fits the shared memory\n'
    assert _findings(repo, 'CMT005', base + 'WIDTH = 8\n', base) == []
