# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The face of `mrbot bench`: its options refused in one line before any work, its listing, and its record kept when
the file cannot be written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mrbot.cli import main
from tests.mrbot.bench.test_stage import PAIRED, _files


@pytest.mark.parametrize(('option', 'message'), [
    ('OP_VARIANT', "--env 'OP_VARIANT': expected NAME=VALUE with NAME a variable name"),
    ('TRITON_INTERPRET=0', '--env TRITON_INTERPRET: mrbot sets this variable itself (use --dispatch for backend '
                           'dispatch)'),
])
def test_a_bad_variable_is_a_clear_error(repo, monkeypatch, capsys, option, message):
    repo.commit(_files())
    monkeypatch.chdir(repo.root)
    assert main(['bench', *PAIRED, '--env', option]) == 2
    assert capsys.readouterr().err.strip() == f'mrbot bench: error: {message}'


def test_negative_gate_workers_are_a_clear_error(repo, monkeypatch, capsys):
    repo.commit(_files())
    monkeypatch.chdir(repo.root)
    assert main(['bench', *PAIRED, '--gate-workers', '-1']) == 2
    assert capsys.readouterr().err.strip() == ('mrbot bench: error: --gate-workers must be 0 (sized for this machine) or '
                                               'more, got -1')


@pytest.mark.parametrize(('argv', 'message'), [
    (['--op', 'nope'], "--op nope: unknown; benchmarkable ops: scaled_sum"),
    (['--from-diff'], '--from-diff needs --base REF to know the change'),
    (['--shapes', 'huge'], '--shapes huge: no chosen op has it'),
    (['compare', 'a.json'], 'usage: mrbot bench compare BASE.json HEAD.json'),
    (['compare', 'missing.json', 'other.json'], 'missing.json: cannot read it (No such file or directory); expected a '
                                                'bench record of mrbot bench --json'),
    (['frobnicate'], "unknown bench action 'frobnicate'"),
])
def test_bad_requests_are_one_line_errors(repo, monkeypatch, capsys, argv, message):
    repo.commit(_files())
    monkeypatch.chdir(repo.root)
    assert main(['bench', *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f'mrbot bench: error: {message}') and err.count('\n') == 1


def test_list_shows_the_declared_ops(repo, monkeypatch, capsys):
    repo.commit(_files())
    monkeypatch.chdir(repo.root)
    assert main(['bench', '--list']) == 0
    assert capsys.readouterr().out.startswith('scaled_sum: pkg.op:scaled_sum (config)')


@pytest.mark.parametrize(('argv', 'message'), [
    (['--rounds', '0'], '--rounds must be at least 1, got 0'),
    ([*PAIRED, '--rounds', '2'], '--rounds must be at least 3 with --base or --aa (a confidence interval needs them), got 2'),
    (['--min-effect', '-0.1'], '--min-effect must be at least 0 and below 1 (a share of the time), got -0.1'),
    (['--gate-timeout', '0'], '--gate-timeout must be above 0 seconds, got 0'),
    (['--json', '/nonexistent/x.json'], '--json /nonexistent/x.json: no folder /nonexistent; expected a file in an '
                                        'existing folder'),
    (['--json', '.'], '--json .: a folder; expected the name of a file to write'),
    (['compare', 'a.json', 'b.json', '--min-effect', '2'], '--min-effect must be at least 0 and below 1'),
])
def test_bad_flags_are_refused_before_any_work(repo, monkeypatch, capsys, argv, message):
    repo.commit(_files())
    monkeypatch.chdir(repo.root)
    assert main(['bench', *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f'mrbot bench: error: {message}') and captured.err.count('\n') == 1
    assert captured.out == ''
    # no gate ran, no worker started
    assert not (repo.root / '.mrbot' / 'bench').exists()


def test_a_record_that_cannot_be_written_at_the_end_is_printed_instead(repo, monkeypatch, capsys):
    """The folder was there when the run began and is gone when it ends."""
    import mrbot.commands.bench

    repo.commit(_files())
    monkeypatch.chdir(repo.root)
    monkeypatch.setattr(mrbot.commands.bench, 'writable_file', lambda path, flag: Path(path))
    assert main(['bench', '--rounds', '1', '--shapes', 'small', '--modes', 'fwd', '--no-gate', '--json',
                 '/nonexistent/x.json']) == 2
    captured = capsys.readouterr()
    table, _, record = captured.out.partition('{')
    assert table.startswith('op ') and json.loads('{' + record)['rows'][0]['op'] == 'scaled_sum'
    assert captured.err.splitlines()[-1] == ('mrbot bench: error: --json /nonexistent/x.json: cannot write it (No such '
                                             'file or directory); the record is printed above on stdout instead')
