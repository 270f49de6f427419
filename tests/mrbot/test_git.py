# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The ChangeSet read from git: statuses, added lines, unreadable files, commits, title and base defaults."""

from __future__ import annotations

import subprocess

import pytest

from mrbot import git
from mrbot.records import MrbotError
from mrbot.records.change import ChangedFile


def _change(repo, base='HEAD', head=None, **kwargs):
    return git.changeset(repo.root, git.resolve(repo.root, base), git.resolve(repo.root, head) if head else None, **kwargs)


def test_statuses_and_added_lines_of_a_committed_change(repo):
    base = repo.commit({'keep.py': 'a\nb\nc\n', 'gone.py': 'x\n', 'old_name.py': 'one\ntwo\nthree\nfour\n'})
    repo.git('mv', 'old_name.py', 'new_name.py')
    head = repo.commit({'keep.py': 'a\nB\nc\nd\n', 'gone.py': None, 'fresh.py': 'new\n',
                        'new_name.py': 'one\ntwo\nthree\n4\n'})
    change = _change(repo, base, head)
    files = {f.path: f for f in change.files}
    assert files['keep.py'].status == 'modified' and files['keep.py'].added_lines == {2, 4}
    assert files['gone.py'].status == 'deleted' and files['gone.py'].text is None
    assert files['fresh.py'].status == 'added' and files['fresh.py'].added_lines == {1}
    renamed = files['new_name.py']
    assert (renamed.status, renamed.old_path, renamed.added_lines) == ('renamed', 'old_name.py', {4})
    assert renamed.base_text == 'one\ntwo\nthree\nfour\n'
    assert files['keep.py'].hunks[0].old_lines == ('b',) and files['keep.py'].hunks[0].new_lines == ('B',)


def test_working_tree_counts_uncommitted_and_untracked_files(repo):
    repo.commit({'a.py': 'x = 1\n', '.gitignore': 'ignored.py\n'})
    repo.write({'a.py': 'x = 1\ny = 2\n', 'untracked.py': 'z = 3\nw = 4\n', 'ignored.py': 'no\n'})
    change = _change(repo)
    files = {f.path: f for f in change.files}
    assert change.head is None
    assert files['a.py'].added_lines == {2}
    assert files['untracked.py'].status == 'added' and files['untracked.py'].added_lines == {1, 2}
    assert 'ignored.py' not in files


def test_unreadable_files_are_skipped_with_a_note(repo):
    repo.commit({'README.md': 'hi\n'})
    repo.write({'blob.bin': b'\x00\x01\x02' * 10, 'latin.py': 'caf\xe9 = 1\n'.encode('latin-1'), 'big.txt': 'y\n' * 600})
    change = _change(repo, max_bytes=1000)
    files = {f.path: f for f in change.files}
    assert files['blob.bin'].binary and files['blob.bin'].text is None
    assert files['latin.py'].text is None and files['latin.py'].skipped.endswith('not UTF-8')
    assert files['big.txt'].text is None and 'over the 1000-byte limit' in files['big.txt'].skipped
    assert len(change.notes) == 3


def test_an_untracked_binary_over_the_read_limit_is_binary_as_once_committed(repo):
    base = repo.commit({'README.md': 'hi\n'})
    repo.write({'weights.bin': b'\x00' * 1_500_000})
    untracked = _change(repo).file('weights.bin')
    committed = _change(repo, base, repo.commit({})).file('weights.bin')
    assert (untracked.binary, untracked.size) == (committed.binary, committed.size) == (True, 1_500_000)


def test_odd_file_names_keep_their_paths(repo):
    repo.commit({'plain.py': 'a\n'})
    repo.commit({'with space/naïve file.py': 'a\nb\n', 'tab\tname.py': 'c\n'})
    change = _change(repo, 'HEAD~1', 'HEAD')
    assert {f.path: f.added_lines for f in change.files} == {'with space/naïve file.py': {1, 2}, 'tab\tname.py': {1}}


def test_commits_and_title_from_the_single_commit(repo):
    base = repo.commit({'a.py': 'a\n'})
    repo.commit({'a.py': 'b\n'}, '[Fix] Correct a\n\nThe body explains.')
    change = _change(repo, base, 'HEAD')
    assert [(c.subject, c.body) for c in change.commits] == [('[Fix] Correct a', 'The body explains.')]
    assert (change.title, change.title_source, change.body) == ('[Fix] Correct a', 'commit', 'The body explains.')
    repo.commit({'a.py': 'c\n'}, '[Fix] Second')
    assert _change(repo, base, 'HEAD').title is None


def test_default_base_is_the_merge_base_with_the_target_branch(repo):
    fork = repo.commit({'a.py': 'a\n'})
    repo.git('checkout', '-q', '-b', 'feature')
    repo.commit({'a.py': 'b\n'})
    repo.git('checkout', '-q', 'main')
    repo.commit({'other.py': 'c\n'})
    repo.git('checkout', '-q', 'feature')
    assert git.default_base(repo.root, ['origin/main', 'main']) == fork
    with pytest.raises(MrbotError, match=r'^no base: none of the target branches origin/main, trunk exists here'):
        git.default_base(repo.root, ['origin/main', 'trunk'])


def test_without_a_target_branch_the_base_is_from_the_remotes_default_branch(repo, tmp_path_factory):
    repo.commit({'a.py': 'a\n'})
    repo.git('branch', '-m', 'master')
    clone = tmp_path_factory.mktemp('clone') / 'clone'
    repo.git('clone', '-q', str(repo.root), str(clone))
    fork = repo.git('-C', str(clone), 'rev-parse', 'HEAD')
    repo.git('-C', str(clone), 'checkout', '-q', '-b', 'feature')
    repo.git('-C', str(clone), 'commit', '-q', '--allow-empty', '-m', '[Test] Feature')
    assert git.revisions(clone, None, None, ['origin/main', 'main']) == (fork, None)


def test_a_shallow_clone_says_what_to_fetch_for_its_base(repo, tmp_path_factory):
    fork = repo.commit({'a.py': 'a\n'})
    repo.git('checkout', '-q', '-b', 'feature')
    repo.commit({'a.py': 'b\n'})
    repo.git('checkout', '-q', 'main')
    repo.commit({'other.py': 'c\n'})
    clone = tmp_path_factory.mktemp('shallow') / 'clone'
    repo.git('clone', '-q', '--depth', '1', '--branch', 'feature', f'file://{repo.root}', str(clone))
    with pytest.raises(MrbotError, match=r'^no base: none of the target branches origin/main, main, origin/HEAD exists '
                                         r'here; fetch origin/main \(`git fetch origin main:refs/remotes/origin/main`\)'):
        git.revisions(clone, None, None, ['origin/main', 'main'])
    repo.git('-C', str(clone), 'fetch', '-q', '--depth', '1', 'origin', 'main:refs/remotes/origin/main')
    with pytest.raises(MrbotError, match=r'^no base: HEAD and origin/main share no commit in this shallow clone; fetch '
                                         r'the history between them \(`git fetch --unshallow`'):
        git.revisions(clone, None, None, ['origin/main', 'main'])
    repo.git('-C', str(clone), 'fetch', '-q', '--unshallow')
    assert git.revisions(clone, None, None, ['origin/main', 'main']) == (fork, None)


def test_unknown_revision_and_non_repository_are_one_line_errors(repo, tmp_path_factory):
    repo.commit({'a.py': 'a\n'})
    with pytest.raises(MrbotError, match=r"^unknown revision 'no-such-branch': expected a branch, tag or commit"):
        git.resolve(repo.root, 'no-such-branch')
    outside = tmp_path_factory.mktemp('plain')
    with pytest.raises(MrbotError, match='not inside a git repository'):
        git.repo_root(outside)


CODE_CHANGES = {
    'a global read where a nested function has a local of that name': (
        'def f():\n    def g():\n        x = 1\n        return x\n    return g() + y\n',
        'def f():\n    def g():\n        y = 1\n        return y\n    return g() + y\n'),
    'a default read from a global named like a local': ('def f(b=BT):\n    BT = 2\n    return b\n',
                                                       'def f(b=BS):\n    BS = 2\n    return b\n'),
    'the type of a raised exception chosen by a string': ('def f():\n    raise ERRORS["shape"]()\n',
                                                         'def f():\n    raise ERRORS["dtype"]()\n'),
    'a call inside a raised message': ('def f(d):\n    raise KeyError(d.pop("a"))\n',
                                       'def f(d):\n    raise KeyError(d.pop("b"))\n'),
    'local names read back through dir()': ('def f():\n    a = 1\n    return dir()\n',
                                            'def f():\n    b = 1\n    return dir()\n'),
}
NO_CODE_CHANGES = {
    'a renamed local': ('def f(x):\n    resortd = x + 1\n    return resortd\n',
                        'def f(x):\n    resorted = x + 1\n    return resorted\n'),
    'an error message': ('def f(x):\n    raise ValueError(f"bad shpae {x.shape}")\n',
                         'def f(x):\n    raise ValueError(f"bad shape {x.shape}")\n'),
}


@pytest.mark.parametrize('base, head', CODE_CHANGES.values(), ids=CODE_CHANGES.keys())
def test_what_can_change_behaviour_is_a_code_change(base, head):
    assert ChangedFile('pkg/a.py', 'modified', text=head, base_text=base).changes_code


@pytest.mark.parametrize('base, head', NO_CODE_CHANGES.values(), ids=NO_CODE_CHANGES.keys())
def test_renamed_locals_and_error_messages_are_no_code_change(base, head):
    assert not ChangedFile('pkg/a.py', 'modified', text=head, base_text=base).changes_code


HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'
SKIPPED = HEADER + """import pytest


@pytest.mark.skip(reason='flaky')
def test_scale():
    assert True
"""


@pytest.mark.parametrize('attributes', ['*.py -diff\n', '*.py binary\n', '*.py diff=nothing\n'])
def test_a_changes_own_gitattributes_hide_none_of_its_lines(repo, attributes):
    repo.commit({'tests/ops/test_scale.py': HEADER + 'def test_scale():\n    assert True\n'}, '[Test] Base')
    base = repo.git('rev-parse', 'HEAD')
    head = repo.commit({'tests/ops/test_scale.py': SKIPPED, '.gitattributes': attributes}, '[Test] Skip it')
    for side in (head, None):
        change = git.changeset(repo.root, base, side)
        changed = change.file('tests/ops/test_scale.py')
        assert not changed.binary and 4 in changed.added_lines, attributes


def test_a_checkout_folder_replaced_by_a_link_is_refused_not_reset(repo):
    """`.mrbot/worktrees/<sha>` pointing at the repository itself: resetting it would move the branch and delete
    uncommitted files, so it is refused."""
    repo.commit({'a.txt': 'one\n'})
    first = repo.git('rev-parse', 'HEAD')
    repo.commit({'a.txt': 'two\n'})
    repo.write({'notes.txt': 'not committed\n'})
    folder = repo.root / '.mrbot' / 'worktrees'
    folder.mkdir(parents=True)
    (folder / first[:12]).symlink_to(repo.root)
    with pytest.raises(MrbotError, match=r'^\.mrbot/worktrees/\w{12} is a symbolic link'):
        git.pristine_worktree(repo.root, first)
    assert (repo.root / 'a.txt').read_text() == 'two\n' and (repo.root / 'notes.txt').exists()


def test_a_checkout_folder_of_another_repository_is_refused(repo, tmp_path):
    repo.commit({'a.txt': 'one\n'})
    sha = repo.git('rev-parse', 'HEAD')
    other = tmp_path / 'other'
    subprocess.run(['git', 'init', '-q', str(other)], check=True)
    folder = repo.root / '.mrbot' / 'worktrees' / sha[:12]
    folder.parent.mkdir(parents=True)
    (folder / '.git').parent.mkdir()
    (folder / '.git').write_text(f'gitdir: {other / ".git"}\n')
    with pytest.raises(MrbotError, match='is not a checkout of this repository made by mrbot'):
        git.pristine_worktree(repo.root, sha)
