# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""DOC001: the `Args:`, `Returns:` and `Raises:` sections of docstrings in the house style."""

from __future__ import annotations

import pytest

PATH = 'fla/ops/demo.py'
# The header takes lines 1 and 2, so `def` is line 3 and the summary line 4.
GOOD = '''def scale(x, factor=None, inplace=False):
    """Multiply `x` by a factor; returns None-free output.

    Args:
        x (torch.Tensor):
            The input, of shape `[B, T]`.
        factor (float, Optional):
            The factor; `None` means 2. None of the values may be negative.
            Default: `None`.
        inplace (bool | None):
            Whether to write into `x`. ``True`` saves memory.

    Returns:
        The scaled tensor, `None` only when `inplace` is `True`.

    Raises:
        ValueError: if `factor` is negative.
    """
    return x * (factor or 2)
'''


def _findings(repo, head: str, base: str = GOOD):
    repo.commit({PATH: repo.HEADER + base})
    repo.write({PATH: repo.HEADER + head})
    return repo.check('DOC001').findings


def _located(findings) -> list[tuple[str, str, int]]:
    return [(f.rule, f.path, f.line) for f in findings]


def test_house_style_docstring_passes(repo):
    assert _findings(repo, GOOD + '\n\nSIZE = 4\n', base='') == ()


@pytest.mark.parametrize(('old', 'new', 'problem'), [
    ('factor (float, Optional):', 'factor (float, optional):', '`Optional` capitalised'),
    ('Default: `None`.', 'Defaults to `None`.', '`Default: <value>`'),
    ('Default: `None`.', 'Default: None.', 'None in backticks'),
    ('``True`` saves memory.', 'True saves memory.', 'True in backticks'),
])
def test_style_problem_in_args_is_reported_at_its_line(repo, old, new, problem):
    head = GOOD.replace(old, new)
    line = next(number for number, text in enumerate(head.splitlines(), start=3) if new in text)
    findings = _findings(repo, head)
    assert _located(findings) == [('DOC001', PATH, line)]
    assert problem in findings[0].message


def test_defaults_to_that_explains_a_value_of_an_entry_with_its_default_is_fine(repo):
    # upstream's own form: "If `None`, defaults to ..." says what `None` means, and `Default:` follows
    head = GOOD.replace('The factor; `None` means 2.', 'The factor. If `None`, defaults to 2.')
    assert _findings(repo, head) == ()
    # without the `Default:` line the entry states no default in the house form
    assert _located(_findings(repo, head.replace('            Default: `None`.\n', ''))) == [
        ('DOC001', PATH, next(n for n, text in enumerate(head.splitlines(), start=3) if 'defaults to 2' in text))]


def test_docstring_opening_on_its_own_line_maps_to_file_lines(repo):
    head = 'class Scaler:\n    """\n    Returns:\n        False on failure.\n    """\n'
    assert _located(_findings(repo, head, base='')) == [('DOC001', PATH, 6)]


def test_several_problems_on_one_line_are_one_finding(repo):
    head = GOOD.replace('factor (float, Optional):', 'factor (float, optional): Defaults to None.')
    findings = _findings(repo, head)
    assert _located(findings) == [('DOC001', PATH, 9)]
    assert all(part in findings[0].message for part in ('`Optional`', 'Default:', 'None'))


def test_text_outside_the_sections_is_not_checked(repo):
    head = GOOD.replace('returns None-free output.', 'returns None when empty; defaults to doubling.')
    assert _findings(repo, head) == ()


def test_method_docstrings_are_checked(repo):
    head = ('class Scaler:\n    def run(self, x):\n        """Run.\n\n        Args:\n'
            '            x (int, optional):\n        """\n')
    assert _located(_findings(repo, head, base='')) == [('DOC001', PATH, 8)]


def test_string_that_is_not_a_docstring_is_not_checked(repo):
    head = GOOD + 'HELP = """\nArgs:\n    x (int, optional): Defaults to None.\n"""\n'
    assert _findings(repo, head) == ()


def test_problem_already_in_the_base_is_not_reported(repo):
    base = GOOD.replace('Default: `None`.', 'Defaults to None.')
    assert _findings(repo, base.replace('return x * (factor or 2)', 'return x * (factor or 3)'), base) == ()
