# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The command surface as a user meets it: help, version, the global options, and one line with exit 2 for bad input
and for bugs, never a traceback."""

from __future__ import annotations

import json
import os
import re
import signal
import types
from pathlib import Path

import pytest

from mrbot import cli
from mrbot.cli import main
from mrbot.config import CONFIG_VARIABLE
from mrbot.records import MrbotError
from mrbot.repo.index import CACHE_PATH

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'


@pytest.fixture(autouse=True)
def _settings_of_this_test(monkeypatch):
    # --config and --color reach later stages through the environment; each test starts without them
    for name in (CONFIG_VARIABLE, 'NO_COLOR', 'FORCE_COLOR'):
        # set first, so that the variable is restored to what it was even where a command set it
        monkeypatch.setenv(name, '')
        monkeypatch.delenv(name)


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and 'Traceback' not in err, err
    return lines[0]


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as exited:
        main(['--version'])
    assert exited.value.code == 0 and capsys.readouterr().out.startswith('mrbot ')
    with pytest.raises(SystemExit):
        main(['--help'])
    text = capsys.readouterr().out
    assert 'examples:' in text and 'mrbot help check' in text and 'Exit codes:' in text
    assert main(['help', 'check']) == 0
    assert capsys.readouterr().out.startswith('usage: mrbot check ')
    with pytest.raises(SystemExit) as exited:
        main(['help', 'chek'])
    assert exited.value.code == 2 and "no command 'chek'" in capsys.readouterr().err


def _command(monkeypatch, failure: BaseException | None = None, action=None):
    """`mrbot rules` made to raise `failure`, or to do `action`."""
    def run(args):
        if action is not None:
            return action()
        raise failure

    monkeypatch.setattr(cli.importlib, 'import_module', lambda name: types.SimpleNamespace(
        run=run, add_arguments=lambda parser: None))


def test_a_bug_is_one_line_naming_where_its_traceback_went_and_exit_2(monkeypatch, capsys):
    _command(monkeypatch, ValueError('the bug'))
    assert main(['rules']) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith('mrbot rules: internal error: ValueError: the bug (a bug in mrbot; the traceback is in ')
    report = Path(line.split('the traceback is in ')[1].split(':')[0])
    try:
        assert 'Traceback' in report.read_text() and 'ValueError: the bug' in report.read_text()
    finally:
        report.unlink()


def test_an_error_quoting_a_strangers_text_stays_one_line_and_starts_no_workflow_command(monkeypatch, capsys):
    _command(monkeypatch, MrbotError('artifact rejected: it names run 1\n::error title=mrbot::Approved\r'))
    assert main(['rules']) == 2
    err = capsys.readouterr().err
    assert err == 'mrbot rules: error: artifact rejected: it names run 1\\n::error title=mrbot::Approved\\r\n'


def test_an_interrupt_or_a_termination_is_one_line_and_exit_130(monkeypatch, capsys):
    _command(monkeypatch, KeyboardInterrupt())
    assert main(['rules']) == 130 and _one_line(capsys.readouterr().err) == 'mrbot rules: interrupted'
    _command(monkeypatch, action=lambda: os.kill(os.getpid(), signal.SIGTERM) or 0)
    assert main(['rules']) == 130 and _one_line(capsys.readouterr().err) == 'mrbot rules: interrupted'
    # and the handler is the one it was before
    assert signal.getsignal(signal.SIGTERM) is not cli._terminate


def test_config_names_the_settings_file_for_every_command(repo, monkeypatch, capsys, tmp_path):
    repo.commit({'pyproject.toml': '[tool.mrbot]\ntitle-tags = ["Here"]\n'}, '[Here] Base')
    monkeypatch.chdir(repo.root)
    assert main(['config']) == 0
    assert 'title-tags = ["Here"]' in capsys.readouterr().out
    settings = tmp_path / 'mrbot.toml'
    settings.write_text('title-tags = ["Elsewhere"]\n[rules]\nTRI001 = "off"\n')
    assert main(['--config', str(settings), 'config']) == 0
    out = capsys.readouterr().out
    assert 'title-tags = ["Elsewhere"]' in out and 'rules = { TRI001 = "off" }' in out
    # as `mrbot init --print` writes a preset, under [tool.mrbot]
    preset = tmp_path / 'preset.toml'
    preset.write_text('[tool.mrbot]\ntitle-tags = ["Preset"]\n')
    assert main(['--config', str(preset), 'config']) == 0
    assert 'title-tags = ["Preset"]' in capsys.readouterr().out
    # after the command's name too, as every option
    assert main(['rules', 'TRI', '--config', str(settings)]) == 0
    assert 'TRI001  off (default error)' in capsys.readouterr().out
    assert main(['config', '--config', str(tmp_path / 'absent.toml')]) == 2
    assert _one_line(capsys.readouterr().err).endswith('absent.toml: no such file; expected a pyproject.toml or a TOML '
                                                       'file of settings')


@pytest.mark.parametrize(('pyproject', 'message', 'commands'), [
    ('tool = 5\n', 'tool is 5; expected a table such as [tool.mrbot]', (['check'], ['config'], ['test', '--list'])),
    ('[tool]\nmrbot = 5\n', 'tool.mrbot is 5; expected a table [tool.mrbot]', (['check'], ['config'], ['test', '--list'])),
    # a rule id is checked where the rules meet the settings: the commands that evaluate or list them, and the settings'
    ('[tool.mrbot.rules]\nTRI02 = "off"\n', '[tool.mrbot] rules.TRI02: unknown rule id; did you mean TRI002?',
     (['check'], ['config'], ['rules'])),
])
def test_bad_settings_stop_every_command_in_one_line(repo, monkeypatch, capsys, pyproject, message, commands):
    repo.commit({'pyproject.toml': pyproject}, '[Test] Base')
    monkeypatch.chdir(repo.root)
    for command in commands:
        assert main(command) == 2
        assert message in _one_line(capsys.readouterr().err)


def test_rules_takes_prefixes_and_shows_this_repositorys_severities(repo, monkeypatch, capsys):
    repo.commit({'pyproject.toml': '[tool.mrbot.rules]\nTRI002 = "warning"\n'}, '[Test] Base')
    monkeypatch.chdir(repo.root)
    assert main(['rules', 'tri00']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ['TRI001', 'TRI002', 'TRI003', 'TRI004', 'TRI005']
    assert lines[1].split('  ')[1].strip() == 'warning (default error)'
    assert main(['rules', 'TRI002']) == 0 and 'severity: error' in capsys.readouterr().out
    assert main(['rules', 'TRX']) == 2
    assert "no rule id is or starts with 'TRX'" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize('corrupt', [
    {'version': 8, 'files': [1]},
    {'version': 8, 'files': {'pkg/a.py': 5}},
    {'version': 8, 'files': {'pkg/a.py': {'hash': 'x', 'imports': 5}}},
    [1, 2],
])
def test_a_corrupt_selection_cache_is_rebuilt(repo, monkeypatch, capsys, corrupt):
    repo.commit({'pkg/a.py': HEADER + 'X = 1\n', 'tests/test_a.py': HEADER + 'from pkg.a import X\n'}, '[Test] Base')
    repo.write({'pkg/a.py': HEADER + 'X = 2\n'})
    monkeypatch.chdir(repo.root)
    (repo.root / CACHE_PATH).parent.mkdir(parents=True)
    (repo.root / CACHE_PATH).write_text(json.dumps(corrupt))
    assert main(['test', '--list', '--base', 'HEAD']) == 0
    assert 'tests/test_a.py' in capsys.readouterr().out


def test_a_state_folder_that_is_a_file_is_one_line(repo, monkeypatch, capsys):
    repo.commit({'pkg/a.py': HEADER + 'X = 1\n'}, '[Test] Base')
    (repo.root / '.mrbot').write_text('not a folder')
    monkeypatch.chdir(repo.root)
    assert main(['cache', 'clean']) == 2
    assert '.mrbot is not a folder mrbot made' in _one_line(capsys.readouterr().err)


def test_cache_clean_removes_the_state_and_says_so(repo, monkeypatch, capsys):
    repo.commit({'pkg/a.py': HEADER + 'X = 1\n', 'tests/test_a.py': HEADER + 'from pkg.a import X\n'}, '[Test] Base')
    monkeypatch.chdir(repo.root)
    main(['test', '--list', '--base', 'HEAD'])
    assert (repo.root / CACHE_PATH).is_file()
    capsys.readouterr()
    assert main(['cache', 'clean']) == 0
    assert 'mrbot cache: removed ' in capsys.readouterr().out and not (repo.root / '.mrbot').exists()
    assert main(['cache', 'clean']) == 0 and 'nothing to clean' in capsys.readouterr().out


@pytest.mark.parametrize(('template', 'message'), [
    ('{{ not_a_field }}\n', "pr_body.md.j2:1: 'not_a_field' is undefined; the fields are body, title"),
    ('fine\n{% if %}\n', "pr_body.md.j2:2: Expected an expression, got 'end of statement block'; expected a jinja2 "
                          'template'),
])
def test_a_repository_template_that_does_not_render_is_one_error_naming_its_line(tmp_path, template, message):
    from mrbot.records import MrbotError
    from mrbot.render import render

    (tmp_path / 'pr_body.md.j2').write_text(template)
    with pytest.raises(MrbotError, match='^' + re.escape(f'{tmp_path}/{message}') + '$'):
        render('pr_body.md.j2', tmp_path, title='t', body='b')


def test_color_is_asked_for_or_refused_everywhere(monkeypatch):
    from mrbot.output import wants_color

    class Pipe:
        def isatty(self):
            return False

    assert not wants_color(Pipe())
    monkeypatch.setenv('FORCE_COLOR', '1')
    assert wants_color(Pipe())
    monkeypatch.setenv('NO_COLOR', '1')
    assert not wants_color(Pipe())
