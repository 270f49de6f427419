# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Markdown from the jinja2 templates in `templates/`."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any

import jinja2

from mrbot.records import MrbotError
from mrbot.records.testruns import error_first_line

# A checkout or an editable install has them beside the packages; an installed wheel under the environment's prefix.
TEMPLATES = next((folder for folder in (Path(__file__).resolve().parents[1] / 'templates',
                                        Path(sys.prefix) / 'share' / 'mrbot' / 'templates') if folder.is_dir()),
                 Path(__file__).resolve().parents[1] / 'templates')


def _environment(overrides: Path | None) -> jinja2.Environment:
    folders = [str(overrides)] if overrides is not None else []
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*folders, str(TEMPLATES)]), trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
    )
    environment.filters['first_line'] = error_first_line
    return environment


def check_template(name: str, overrides: Path | None = None) -> None:
    """Refuse template `name` now if it does not parse, before the work whose result it would render."""
    _template(_environment(overrides), name)


def _template(environment: jinja2.Environment, name: str) -> jinja2.Template:
    try:
        return environment.get_template(name)
    except jinja2.TemplateSyntaxError as error:
        raise MrbotError(f'{error.filename or name}:{error.lineno}: {error.message}; expected a jinja2 template') from None
    except jinja2.TemplateNotFound:
        folders = ', '.join(environment.loader.searchpath)  # type: ignore[union-attr]
        raise MrbotError(f'template {name} not found in {folders}') from None


def render(name: str, overrides: Path | None = None, **values: Any) -> str:
    """Render template `name`; a file of that name in the `overrides` folder (a repository's own) wins. A template
    that does not parse, or uses a field it is not given, is one error naming its file and line."""
    environment = _environment(overrides)
    template = _template(environment, name)
    try:
        return template.render(**values)
    except jinja2.UndefinedError as error:
        line = next((frame.lineno for frame in traceback.extract_tb(error.__traceback__)
                     if frame.filename == template.filename), None)
        raise MrbotError(f"{template.filename}{f':{line}' if line else ''}: {error.message}; the fields are "
                         f"{', '.join(sorted(values))}") from None
    except jinja2.TemplateError as error:
        raise MrbotError(f'{template.filename}: {error}; expected a template that renders') from None
