# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Markdown from the jinja2 templates in `templates/`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import jinja2

# A checkout or an editable install has them beside the packages; an installed wheel under the environment's prefix.
TEMPLATES = next((folder for folder in (Path(__file__).resolve().parents[1] / 'templates',
                                        Path(sys.prefix) / 'share' / 'mrbot' / 'templates') if folder.is_dir()),
                 Path(__file__).resolve().parents[1] / 'templates')


def render(name: str, overrides: Path | None = None, **values: Any) -> str:
    """Render template `name`; a file of that name in the `overrides` folder (a repository's own) wins."""
    folders = [str(overrides)] if overrides is not None else []
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*folders, str(TEMPLATES)]), trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
    )
    return environment.get_template(name).render(**values)
