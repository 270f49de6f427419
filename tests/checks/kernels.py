# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Small synthetic Triton kernels for the rule tests: their source, and where a fragment of it lies."""

from __future__ import annotations

from textwrap import dedent

IMPORTS = 'import triton\nimport triton.language as tl\n\n\n'
PATH = 'fla/ops/demo/chunk.py'


def kernel_source(body: str) -> str:
    return IMPORTS + dedent(body)


def line_of(text: str, fragment: str) -> int:
    """The line number of the one line of `text` that holds `fragment`."""
    numbers = [n for n, line in enumerate(text.splitlines(), 1) if fragment in line]
    assert len(numbers) == 1, f'{fragment!r} is on lines {numbers}'
    return numbers[0]


def placed(report) -> list[tuple[str, str, int]]:
    """Each finding of `report` as its rule, path and line."""
    return [(f.rule, f.path, f.line) for f in report.findings]
