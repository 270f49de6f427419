# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Git, one command per function, and the ChangeSet assembled from them."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mrbot.config import Config, parse_config, state_dir
from mrbot.records import MrbotError
from mrbot.records.change import ChangedFile, ChangeSet, Commit, Hunk

# Settings that make git's output independent of the user's configuration, and run no command of a checkout's
# configuration while reading it (a file system monitor).
_PLAIN = ('-c', 'core.quotePath=false', '-c', 'diff.noprefix=false', '-c', 'diff.mnemonicPrefix=false', '-c',
          'core.fsmonitor=false')
_HUNK_HEADER = re.compile(rb'^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@')
_STATUS = {'A': 'added', 'M': 'modified', 'D': 'deleted', 'R': 'renamed', 'C': 'added', 'T': 'modified'}
# The remote-tracking ref that `git clone` points at the remote's default branch.
REMOTE_DEFAULT = 'origin/HEAD'
# A full commit id: git's object name, SHA-1 (40 hex digits) or, in a SHA-256 repository, 64.
COMMIT_ID = '[0-9a-f]{40}|[0-9a-f]{64}'
_REGULAR_FILE_MODES = ('100644', '100755')
_C_ESCAPES = {ord('a'): 7, ord('b'): 8, ord('t'): 9, ord('n'): 10, ord('v'): 11, ord('f'): 12, ord('r'): 13}


@dataclass(frozen=True)
class DiffEntry:
    """One file of `git diff --raw`: its status, paths and blob ids (None where the side has no blob to read)."""

    status: str
    old_path: str | None
    path: str
    old_blob: str | None = None
    new_blob: str | None = None


def printable(text: str) -> str:
    """`text` as it can be printed anywhere: the bytes of a file name that are not UTF-8, which a path read from git
    or the file system holds as surrogate escapes, shown as `\\xNN`."""
    return os.fsencode(text).decode('utf-8', errors='backslashreplace')


def _paths(out: bytes) -> list[str]:
    """The NUL-separated paths of a `-z` listing, decoded as the file system decodes names so that they round-trip."""
    return [os.fsdecode(p) for p in out.split(b'\0') if p]


def run_git(root: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
    try:
        done = subprocess.run(['git', *_PLAIN, *args], cwd=root, input=stdin, env=env, capture_output=True,
                              check=False)
    except FileNotFoundError:
        raise MrbotError('git: not found on PATH; mrbot needs git') from None
    if done.returncode != 0:
        message = done.stderr.decode(errors='replace').strip().splitlines()
        raise MrbotError(f"git {args[0]}: {message[0] if message else 'failed with exit code ' + str(done.returncode)}")
    return done.stdout


def repo_root(cwd: Path) -> Path:
    try:
        return Path(run_git(cwd, 'rev-parse', '--show-toplevel').decode().strip())
    except MrbotError:
        raise MrbotError(f'{cwd}: not inside a git repository') from None


def resolve(root: Path, ref: str) -> str:
    try:
        return run_git(root, 'rev-parse', '--verify', '--quiet', f'{ref}^{{commit}}').decode().strip()
    except MrbotError:
        raise MrbotError(f"unknown revision '{ref}': expected a branch, tag or commit of this repository") from None


def files_of(root: Path, sha: str) -> str:
    """The sha of the tree of commit `sha`: the same for two commits that hold the same files."""
    return run_git(root, 'rev-parse', f'{sha}^{{tree}}').decode().strip()


def current_branch(root: Path) -> str | None:
    """The checked-out branch, or None on a detached HEAD."""
    return run_git(root, 'branch', '--show-current').decode().strip() or None


def remote_url(root: Path, remote: str) -> str:
    try:
        return run_git(root, 'remote', 'get-url', remote).decode().strip()
    except MrbotError:
        raise MrbotError(f"no git remote named '{remote}': expected one of `git remote`, or pass --remote NAME") from None


def merge_base(root: Path, a: str, b: str) -> str:
    return run_git(root, 'merge-base', a, b).decode().strip()


def is_shallow(root: Path) -> bool:
    return run_git(root, 'rev-parse', '--is-shallow-repository').decode().strip() == 'true'


def _fetch_hint(root: Path, target: str) -> str:
    """The fetch that creates `target` where it names a branch of a remote of this repository, else ''."""
    remote, _, branch = target.partition('/')
    if not branch or branch == 'HEAD' or remote not in run_git(root, 'remote').decode().split():
        return ''
    return f'fetch {target} (`git fetch {remote} {branch}:refs/remotes/{remote}/{branch}`) or '


def default_base(root: Path, targets: Iterable[str]) -> str:
    """The merge base of HEAD with the first target branch that exists."""
    targets = list(targets)
    for target in targets:
        try:
            tip = resolve(root, target)
        except MrbotError:
            continue
        try:
            return merge_base(root, 'HEAD', tip)
        except MrbotError:
            if is_shallow(root):
                raise MrbotError(f'no base: HEAD and {target} share no commit in this shallow clone; fetch the history '
                                 'between them (`git fetch --unshallow`, or `git fetch --deepen=N` until they meet) or '
                                 'pass --base REF') from None
            raise MrbotError(f'no base: HEAD and {target} share no history; pass --base REF') from None
    raise MrbotError(f"no base: none of the target branches {', '.join(targets)} exists here; "
                     f"{_fetch_hint(root, targets[0]) if targets else ''}pass --base REF")


def _git_dir(folder: Path) -> Path:
    """The repository folder that `folder`'s git commands share (a worktree's is its main repository's)."""
    common = Path(run_git(folder, 'rev-parse', '--git-common-dir').decode().strip())
    return (folder / common).resolve()


def worktree(root: Path, sha: str) -> Path:
    """A clean checkout of `sha` under .mrbot/worktrees/, made once and reused; a folder there that is a link, or a
    checkout of another repository or at another place, is refused rather than used."""
    path = state_dir(root, 'worktrees') / sha[:12]
    if path.is_symlink():
        raise MrbotError(f'{path.relative_to(root)} is a symbolic link: mrbot keeps its checkouts in real folders; '
                         'remove the link')
    if not (path / '.git').exists():
        run_git(root, 'worktree', 'prune')
        run_git(root, 'worktree', 'add', '--detach', '--force', str(path), sha)
    top = Path(run_git(path, 'rev-parse', '--show-toplevel').decode().strip())
    if top.resolve() != path.resolve() or _git_dir(path) != _git_dir(root):
        raise MrbotError(f'{path.relative_to(root)} is not a checkout of this repository made by mrbot; remove it '
                         '(`mrbot cache clean`)')
    return path


def pristine_worktree(root: Path, sha: str) -> Path:
    """`worktree(root, sha)` with the commit's files put back and everything else in it removed, bytecode included:
    what ran there since as the same user may have changed them. Only the checkout's files: the repository's own
    objects and configuration are not checked."""
    path = worktree(root, sha)
    run_git(path, 'reset', '-q', '--hard', sha)
    run_git(path, 'clean', '-q', '-ffdx')
    return path


def snapshot(root: Path, message: str) -> str:
    """The working tree as a commit on top of HEAD, untracked files included and ignored ones not, made with a
    separate index so that neither the user's index nor any branch moves; its sha."""
    with tempfile.TemporaryDirectory(prefix='mrbot-index-') as folder:
        environment = {**os.environ, 'GIT_INDEX_FILE': str(Path(folder) / 'index')}
        run_git(root, 'read-tree', 'HEAD', env=environment)
        run_git(root, 'add', '--all', '--', '.', env=environment)
        tree = run_git(root, 'write-tree', env=environment).decode().strip()
    return run_git(root, '-c', 'user.name=mrbot loop', '-c', 'user.email=mrbot@localhost', 'commit-tree', tree, '-p',
                   'HEAD', '-m', message).decode().strip()


def same_tree(root: Path, a: str, b: str) -> bool:
    """Whether commits `a` and `b` hold the same files."""
    return files_of(root, a) == files_of(root, b)


def is_ancestor(root: Path, ancestor: str, descendant: str) -> bool:
    """Whether commit `ancestor` is in the history of `descendant` (or is it)."""
    return subprocess.run(['git', 'merge-base', '--is-ancestor', ancestor, descendant], cwd=root,
                          capture_output=True, check=False).returncode == 0


def keep(root: Path, ref: str, sha: str) -> None:
    """Point `ref` (under refs/mrbot/) at `sha`, so that git's garbage collection keeps a commit no branch holds."""
    run_git(root, 'update-ref', ref, sha)


def revisions(root: Path, base: str | None, head: str | None, targets: Iterable[str]) -> tuple[str, str | None]:
    """The base sha (default: merge base with the first target branch that exists, else with the remote's default
    branch) and the head sha (None for the working tree)."""
    targets = list(targets)
    if REMOTE_DEFAULT not in targets:
        targets.append(REMOTE_DEFAULT)
    return (resolve(root, base) if base else default_base(root, targets)), (resolve(root, head) if head else None)


def _diff_range(base: str, head: str | None) -> list[str]:
    return [base] if head is None else [base, head]


def _blob(mode: bytes, sha: bytes) -> str | None:
    """The blob id of a regular file's side of a diff; None for a missing side, a symlink or a submodule."""
    return sha.decode() if mode.decode() in _REGULAR_FILE_MODES and sha.strip(b'0') else None


def diff_entries(root: Path, base: str, head: str | None) -> list[DiffEntry]:
    """Each changed file with its status and blob ids, renames detected."""
    fields = run_git(root, 'diff', '--raw', '-z', '--no-abbrev', '-M', *_diff_range(base, head), '--').split(b'\0')
    entries, i = [], 0
    while i < len(fields) - 1:
        old_mode, new_mode, old_sha, new_sha, code = fields[i].lstrip(b':').split()
        status = _STATUS.get(chr(code[0]), 'modified')
        if code[:1] in b'RC':
            old_path, path, i = os.fsdecode(fields[i + 1]), os.fsdecode(fields[i + 2]), i + 3
        else:
            old_path, path, i = None, os.fsdecode(fields[i + 1]), i + 2
        entries.append(DiffEntry(status, old_path, path, _blob(old_mode, old_sha), _blob(new_mode, new_sha)))
    return entries


def untracked(root: Path) -> list[str]:
    return _paths(run_git(root, 'ls-files', '--others', '--exclude-standard', '-z'))


def listed_files(root: Path, *pathspecs: str) -> list[str]:
    """Tracked and untracked, not ignored, files that match `pathspecs` (every file when none is given)."""
    return _paths(run_git(root, 'ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', *pathspecs))


def tree_files(root: Path, head: str | None) -> list[str]:
    """The files of commit `head`, or of the working tree (tracked and untracked, not ignored) when it is None."""
    if head is None:
        return listed_files(root)
    return _paths(run_git(root, 'ls-tree', '-r', '--name-only', '-z', head))


def changed_paths(root: Path, base: str, head: str | None) -> list[str]:
    """Every path the diff touches: new, modified, deleted, both sides of a rename, and untracked files for the tree."""
    paths = set()
    for entry in diff_entries(root, base, head):
        paths.update(p for p in (entry.old_path, entry.path) if p)
    if head is None:
        paths.update(untracked(root))
    return sorted(paths)


def _header_path(field: bytes) -> str | None:
    """The path of a `+++ b/<path>` line: C-quoted where it holds a control character, a quote or a backslash, and
    followed by a tab where it holds a space; None for /dev/null."""
    if field == b'/dev/null':
        return None
    if not field.startswith(b'"'):
        return os.fsdecode(field.rstrip(b'\t')[2:])
    raw, i = bytearray(), 1
    while i < len(field) and field[i] != ord('"'):
        if field[i] != ord('\\'):
            raw.append(field[i])
            i += 1
        elif field[i + 1:i + 2].isdigit():
            raw.append(int(field[i + 1:i + 4], 8))
            i += 4
        else:
            raw.append(_C_ESCAPES.get(field[i + 1], field[i + 1]))
            i += 2
    return os.fsdecode(bytes(raw[2:]))


def hunks(root: Path, base: str, head: str | None) -> dict[str, list[Hunk]]:
    """Hunks without context, keyed by the path in the head."""
    # --text: a change's own .gitattributes (`*.py -diff`) must not hide its lines as "binary"; the files' contents
    # decide what is binary (`_is_binary`), never their attributes
    lines = run_git(root, 'diff', '-U0', '--text', '--no-color', '--no-ext-diff', '--no-textconv', '-M',
                    *_diff_range(base, head), '--').split(b'\n')
    by_path: dict[str, list[Hunk]] = {}
    path, i = None, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(b'diff --git '):
            path = None
        elif line.startswith(b'+++ ') and path is None:
            path = _header_path(line[4:])
        elif path is not None and (match := _HUNK_HEADER.match(line)):
            old_count = 1 if match.group(2) is None else int(match.group(2))
            new_count = 1 if match.group(4) is None else int(match.group(4))
            body = [b[1:].decode('utf-8', errors='replace') for b in lines[i + 1:i + 1 + old_count + new_count + 2]
                    if not b.startswith(b'\\')]
            by_path.setdefault(path, []).append(Hunk(int(match.group(1)), tuple(body[:old_count]), int(match.group(3)),
                                                     tuple(body[old_count:old_count + new_count])))
            i += old_count + new_count
        i += 1
    return by_path


def read_blobs(root: Path, specs: list[str]) -> dict[str, bytes | None]:
    """Contents of `rev:path` specs or blob ids through one `git cat-file --batch`; None for a spec that names nothing.
    A spec holds no newline: the batch reads one per line."""
    if not specs:
        return {}
    out = run_git(root, 'cat-file', '--batch', stdin=b''.join(os.fsencode(s) + b'\n' for s in specs))
    blobs, position = {}, 0
    for spec in specs:
        end = out.index(b'\n', position)
        header = out[position:end].split()
        position = end + 1
        if header[-1] == b'missing':
            blobs[spec] = None
            continue
        size = int(header[2])
        blobs[spec] = out[position:position + size]
        position += size + 1
    return blobs


def commits(root: Path, base: str, head: str) -> list[Commit]:
    raw = run_git(root, 'log', '--no-color', '--format=%H%x1f%s%x1f%b%x1e', f'{base}..{head}').decode(errors='replace')
    found = []
    for record in raw.split('\x1e'):
        parts = record.strip('\n').split('\x1f')
        if len(parts) == 3:
            found.append(Commit(parts[0], parts[1], parts[2].strip()))
    return found


def _is_binary(data: bytes) -> bool:
    # git's own test: a NUL byte in the first 8000 bytes
    return b'\0' in data[:8000]


def _decode(path: str, data: bytes | None, max_bytes: int) -> tuple[str | None, str | None]:
    if data is None:
        return None, None
    if _is_binary(data):
        return None, f'{printable(path)}: not read, binary'
    if len(data) > max_bytes:
        return None, f'{printable(path)}: not read, {len(data)} bytes is over the {max_bytes}-byte limit'
    try:
        return data.decode('utf-8'), None
    except UnicodeDecodeError:
        return None, f'{printable(path)}: not read, not UTF-8'


def _read_file(path: Path) -> bytes | None:
    """A regular file's bytes; None for a symlink or anything else that is no file, as git's blob of one is not read."""
    return path.read_bytes() if path.is_file() and not path.is_symlink() else None


def _changed_file(path: str, status: str, old_path: str | None, data: bytes | None, base_data: bytes | None,
                  file_hunks: tuple[Hunk, ...] | None, max_bytes: int) -> ChangedFile:
    """The file as the checks see it; `file_hunks` None adds every line of its text."""
    text, skipped = _decode(path, data, max_bytes)
    base_text, _ = _decode(path, base_data, max_bytes)
    if file_hunks is None:
        file_hunks = (Hunk(0, (), 1, tuple(text.splitlines())),) if text else ()
    added = frozenset(h.new_start + k for h in file_hunks for k in range(len(h.new_lines)))
    return ChangedFile(path, status, old_path, added, file_hunks, text, base_text, size=len(data) if data else 0,
                       binary=data is not None and _is_binary(data), skipped=skipped)


def changeset(
    root: Path,
    base: str,
    head: str | None,
    title: str | None = None,
    body: str | None = None,
    title_source: str | None = None,
    body_source: str | None = None,
    perf: bool = False,
    max_bytes: int = 1_000_000,
    rules_at: str = '',
) -> ChangeSet:
    """Read the change from `base` to `head` (a commit sha, or None for the working tree, untracked files included),
    to be graded by the configuration of `rules_at` (default: `base`)."""
    entries = diff_entries(root, base, head)
    if head is None:
        entries += [DiffEntry('added', None, path) for path in untracked(root)]
    diff_hunks = hunks(root, base, head)
    blobs = read_blobs(root, [b for e in entries for b in (e.old_blob, None if head is None else e.new_blob) if b])

    files = []
    for entry in entries:
        if entry.status == 'deleted':
            files.append(ChangedFile(entry.path, entry.status, skipped='deleted'))
            continue
        data = _read_file(root / entry.path) if head is None else blobs.get(entry.new_blob or '')
        file_hunks = tuple(diff_hunks.get(entry.path, ()))
        # untracked files have no diff: every line is added
        whole = entry.status == 'added' and not file_hunks
        # a copy counts as added: it has no base version of its own
        base_data = None if entry.status == 'added' else blobs.get(entry.old_blob or '')
        files.append(_changed_file(entry.path, entry.status, entry.old_path, data, base_data,
                                   None if whole else file_hunks, max_bytes))
    history = commits(root, base, head or 'HEAD')
    if title is None and len(history) == 1:
        title, title_source = history[0].subject, 'commit'
        if body is None:
            body, body_source = history[0].body, 'commit'
    return ChangeSet(root, base, head, tuple(files), tuple(history), title, body, title_source, body_source, perf,
                     tuple(f.skipped for f in files if f.skipped and f.status != 'deleted'), rules_at)


def whole_files(root: Path, paths: list[str], max_bytes: int = 1_000_000) -> ChangeSet:
    """The named working-tree files as a change that adds each of them whole, on top of HEAD (the empty tree in a
    repository with no commit yet), with no commits, title or body."""
    try:
        base = resolve(root, 'HEAD')
    except MrbotError:
        base = run_git(root, 'hash-object', '-t', 'tree', '--stdin', stdin=b'').decode().strip()
    files = tuple(_changed_file(path, 'added', None, _read_file(root / path), None, None, max_bytes)
                  for path in paths)
    return ChangeSet(root, base, None, files, notes=tuple(f.skipped for f in files if f.skipped))


def config_at(root: Path, rev: str) -> Config:
    """The settings of commit `rev`: a pull request cannot switch a rule off for itself by editing pyproject.toml."""
    spec = f'{rev}:pyproject.toml'
    settings = read_blobs(root, [spec])[spec]
    return parse_config(settings.decode('utf-8', 'replace'), f'{rev[:12]}:pyproject.toml') if settings else Config()
