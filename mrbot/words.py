# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Counts in words, as every message that says how many of something writes them."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """'1 finding', '2 findings'; `nouns` where adding an s is wrong ('1 match', '2 matches')."""
    return f'{count} {noun if count == 1 else nouns or noun + "s"}'
