# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""[tool.mrbot]: defaults, severities per rule and per path, and one-line errors for bad settings."""

from __future__ import annotations

import pytest

from mrbot.config import DEFAULT_HEADER, load_config
from mrbot.records import MrbotError


def _config(tmp_path, text):
    (tmp_path / 'pyproject.toml').write_text(text)
    return load_config(tmp_path)


def test_defaults_without_pyproject(tmp_path):
    config = load_config(tmp_path)
    assert config.header == DEFAULT_HEADER
    assert config.severity('TRI001', 'fla/x.py', 'error') == 'error'
    assert config.is_source('fla/ops/x.py') and not config.is_source('flash/x.py') and config.is_test('tests/a.py')


def test_rule_and_path_settings_most_specific_last(tmp_path):
    config = _config(tmp_path, """
[tool.mrbot]
title-tags = []
[tool.mrbot.rules]
RUF = "warning"
"RUF:E501" = "off"
CMT005 = "off"
[[tool.mrbot.overrides]]
paths = ["tests/*"]
rules = { PLT001 = "off", RUF = "note" }
""")
    assert config.title_tags == ()
    assert config.severity('RUF:F401', 'fla/a.py', 'error') == 'warning'
    assert config.severity('RUF:E501', 'fla/a.py', 'error') == 'off'
    assert config.severity('CMT005', 'fla/a.py', 'note') == 'off'
    assert config.severity('PLT001', 'tests/ops/test_a.py', 'warning') == 'off'
    assert config.severity('PLT001', 'fla/a.py', 'warning') == 'warning'
    assert config.severity('RUF:F401', 'tests/ops/test_a.py', 'error') == 'note'


def test_header_with_a_year_placeholder_as_one_string(tmp_path):
    config = _config(tmp_path, '[tool.mrbot]\nheader = """# Copyright (c) 2023-{year}, Someone\\n#\\n# MIT"""\n')
    assert config.header == ('# Copyright (c) 2023-{year}, Someone', '#', '# MIT')


@pytest.mark.parametrize(('text', 'message'), [
    ('[tool.mrbot]\ntitle-tag = ["Fix"]\n', r'^\[tool.mrbot\] title-tag: unknown setting; did you mean title-tags\?'),
    ('tool = 5\n', r'pyproject.toml: tool is 5; expected a table such as \[tool.mrbot\]$'),
    ('[tool]\nmrbot = 5\n', r'pyproject.toml: tool.mrbot is 5; expected a table \[tool.mrbot\]$'),
    ('[[tool.mrbot.overrides]]\npaths = ["a/*"]\nrule = { TRI001 = "off" }\n',
     r'^\[tool.mrbot\] overrides\[0\].rule: unknown key; did you mean rules\?'),
    ('[tool.mrbot.rules]\nTRI001 = "fatal"\n',
     r"^\[tool.mrbot\] rules.TRI001: expected one of error, warning, note, off; got 'fatal'"),
    ('[tool.mrbot]\nmax-file-bytes = -3\n', r'^\[tool.mrbot\] max-file-bytes: expected a positive integer, got -3'),
    ('[tool.mrbot]\nsource-roots = "fla"\n', r"^\[tool.mrbot\] source-roots: expected a list of strings, got 'fla'"),
    ('[[tool.mrbot.overrides]]\nrules = { A = "off" }\n', r'^\[tool.mrbot\] overrides\[0\].paths: expected a non-empty list'),
    ('[tool.mrbot\n', r'pyproject.toml: not valid TOML'),
])
def test_bad_settings_are_one_line_errors(tmp_path, text, message):
    with pytest.raises(MrbotError, match=message):
        _config(tmp_path, text)
