# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Markdown from the jinja2 templates in `templates/`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).resolve().parents[1] / 'templates'


def render(name: str, **values: Any) -> str:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
    )
    return environment.get_template(name).render(**values)
