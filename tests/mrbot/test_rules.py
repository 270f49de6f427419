# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot rules`: every rule listed, documented in the same shape from its own docstring, tested, and named in CONTRIBUTING."""

from __future__ import annotations

from pathlib import Path

import pytest

from mrbot.cli import main
from mrbot.config import parse_config
from mrbot.records import MrbotError
from mrbot.rules import all_rules, check_rule_ids

RULE_TESTS = Path(__file__).resolve().parents[1] / 'checks'
CONTRIBUTING = Path(__file__).resolve().parents[2] / 'CONTRIBUTING.md'


def test_listing_names_every_rule_with_severity_and_title(capsys):
    assert main(['rules']) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == [r.id for r in all_rules()]
    assert any(line.split()[:2] == ['HDR001', 'error'] for line in listed)


def test_one_rule_prints_its_documentation_and_fix(capsys):
    assert main(['rules', 'hdr001']) == 0
    out = capsys.readouterr().out
    assert out.startswith('HDR001  License header missing or wrong\nseverity: error; reports on: file\n')
    assert 'Example:' in out and 'Instead:' in out
    assert out.rstrip().endswith("Fix: run `mrbot check --fix` to insert the header; it leaves another holder's "
                                 'copyright line alone')


def test_unknown_rule_is_a_one_line_error(capsys):
    assert main(['rules', 'XYZ999']) == 2
    assert capsys.readouterr().err == ("mrbot rules: error: no rule id is or starts with 'XYZ999' (`mrbot rules` lists "
                                       'them)\n')


@pytest.mark.parametrize(('text', 'message'), [
    # a near miss disabled nothing and said nothing
    ('[tool.mrbot.rules]\nTRI02 = "off"\n',
     r'^\[tool.mrbot\] rules.TRI02: unknown rule id; did you mean TRI002\? \(`mrbot rules` lists them\)$'),
    ('[[tool.mrbot.overrides]]\npaths = ["a/*"]\nrules = { "RUF:E501" = "off", NOPE1 = "off" }\n',
     r'^\[tool.mrbot\] overrides\[0\].rules.NOPE1: unknown rule id'),
])
def test_settings_that_set_a_severity_for_an_unknown_rule_are_refused(text, message):
    with pytest.raises(MrbotError, match=message):
        check_rule_ids(parse_config(text, 'pyproject.toml'))


def test_settings_that_name_known_rules_and_families_pass():
    check_rule_ids(parse_config('[tool.mrbot.rules]\nTRI001 = "off"\n"RUF:E501" = "off"\nRUF = "warning"\n',
                                'pyproject.toml'))


@pytest.mark.parametrize('rule', all_rules(), ids=lambda r: r.id)
def test_every_rule_is_documented_and_tested(rule):
    paragraphs = [p for p in rule.doc.split('\n\n') if p.strip()]
    assert len(paragraphs) in (4, 5), f'{rule.id}: docstring needs what, [details], why, Example:, Instead:'
    assert paragraphs[-2].startswith('Example:') and paragraphs[-1].startswith('Instead:')
    assert rule.title and rule.hint and rule.rationale == paragraphs[-3]
    assert any(rule.id in path.read_text() for path in RULE_TESTS.glob('test_*.py')), f'{rule.id}: no test names it'
    assert f'({rule.id}' in CONTRIBUTING.read_text(), f'{rule.id}: CONTRIBUTING.md does not name it next to its rule'
