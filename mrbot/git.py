# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Git, one command per function, and the ChangeSet assembled from them."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from mrbot.config import Config, parse_config, state_dir
from mrbot.records import ChangedFile, ChangeSet, Commit, Hunk, MrbotError

# Settings that make git's output independent of the user's configuration.
_PLAIN = ('-c', 'core.quotePath=false', '-c', 'diff.noprefix=false', '-c', 'diff.mnemonicPrefix=false')
_HUNK_HEADER = re.compile(r'^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@')
_STATUS = {'A': 'added', 'M': 'modified', 'D': 'deleted', 'R': 'renamed', 'C': 'added', 'T': 'modified'}


def run_git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(['git', *_PLAIN, *args], cwd=root, input=stdin, capture_output=True, check=False)
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


def default_base(root: Path, targets: Iterable[str]) -> str:
    """The merge base of HEAD with the first target branch that exists."""
    targets = list(targets)
    for target in targets:
        try:
            return merge_base(root, 'HEAD', resolve(root, target))
        except MrbotError:
            continue
    raise MrbotError(f"no base: none of the target branches {', '.join(targets)} exists here; pass --base REF")


def worktree(root: Path, sha: str) -> Path:
    """A clean checkout of `sha` under .mrbot/worktrees/, made once and reused."""
    path = state_dir(root, 'worktrees') / sha[:12]
    if not (path / '.git').exists():
        run_git(root, 'worktree', 'prune')
        run_git(root, 'worktree', 'add', '--detach', '--force', str(path), sha)
    return path


def revisions(root: Path, base: str | None, head: str | None, targets: Iterable[str]) -> tuple[str, str | None]:
    """The base sha (default: merge base with the target branch) and the head sha (None for the working tree)."""
    return (resolve(root, base) if base else default_base(root, targets)), (resolve(root, head) if head else None)


def _diff_range(base: str, head: str | None) -> list[str]:
    return [base] if head is None else [base, head]


def name_status(root: Path, base: str, head: str | None) -> list[tuple[str, str | None, str]]:
    """`(status, old_path, path)` for each changed file, renames detected."""
    fields = run_git(root, 'diff', '--name-status', '-z', '-M', *_diff_range(base, head), '--').decode().split('\0')
    entries, i = [], 0
    while i < len(fields) - 1:
        code = fields[i]
        if code[0] in 'RC':
            entries.append((_STATUS[code[0]], fields[i + 1], fields[i + 2]))
            i += 3
        else:
            entries.append((_STATUS.get(code[0], 'modified'), None, fields[i + 1]))
            i += 2
    return entries


def binary_paths(root: Path, base: str, head: str | None) -> set[str]:
    """Paths git treats as binary in this diff (numstat prints '-' for their line counts)."""
    fields = run_git(root, 'diff', '--numstat', '-z', '-M', *_diff_range(base, head), '--').decode().split('\0')
    binary, i = set(), 0
    while i < len(fields) - 1:
        added, _, path = fields[i].split('\t', 2)
        if path:
            i += 1
        else:
            # a rename: the counts are followed by the old and the new path
            path = fields[i + 2]
            i += 3
        if added == '-':
            binary.add(path)
    return binary


def untracked(root: Path) -> list[str]:
    return [p for p in run_git(root, 'ls-files', '--others', '--exclude-standard', '-z').decode().split('\0') if p]


def changed_paths(root: Path, base: str, head: str | None) -> list[str]:
    """Every path the diff touches: new, modified, deleted, both sides of a rename, and untracked files for the tree."""
    paths = set()
    for _, old, path in name_status(root, base, head):
        paths.update(p for p in (old, path) if p)
    if head is None:
        paths.update(untracked(root))
    return sorted(paths)


def _unquote(path: str) -> str:
    if not path.startswith('"'):
        return path
    raw = path[1:-1].encode('latin-1', errors='backslashreplace').decode('unicode_escape')
    return raw.encode('latin-1').decode('utf-8', errors='replace')


def hunks(root: Path, base: str, head: str | None) -> dict[str, list[Hunk]]:
    """Hunks without context, keyed by the path in the head."""
    lines = run_git(root, 'diff', '-U0', '--no-color', '--no-ext-diff', '--no-textconv', '-M',
                    *_diff_range(base, head), '--').decode('utf-8', errors='replace').split('\n')
    by_path: dict[str, list[Hunk]] = {}
    path, i = None, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('diff --git '):
            path = None
        elif line.startswith('+++ ') and path is None:
            target = line[4:]
            path = None if target == '/dev/null' else _unquote(target)[2:]
        elif (match := _HUNK_HEADER.match(line)) and path is not None:
            old_count = 1 if match.group(2) is None else int(match.group(2))
            new_count = 1 if match.group(4) is None else int(match.group(4))
            body = [b for b in lines[i + 1:i + 1 + old_count + new_count + 2] if not b.startswith('\\')]
            removed, added = body[:old_count], body[old_count:old_count + new_count]
            by_path.setdefault(path, []).append(Hunk(
                int(match.group(1)), tuple(r[1:] for r in removed), int(match.group(3)), tuple(a[1:] for a in added)))
            i += old_count + new_count
        i += 1
    return by_path


def read_blobs(root: Path, specs: list[str]) -> dict[str, bytes | None]:
    """Contents of `rev:path` specs through one `git cat-file --batch`; None for a spec that names nothing."""
    if not specs:
        return {}
    out = run_git(root, 'cat-file', '--batch', stdin=''.join(f'{s}\n' for s in specs).encode())
    blobs, position = {}, 0
    for spec in specs:
        end = out.index(b'\n', position)
        header = out[position:end].split()
        position = end + 1
        if len(header) == 2 and header[1] == b'missing':
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


def _decode(path: str, data: bytes | None, max_bytes: int) -> tuple[str | None, str | None]:
    if data is None:
        return None, None
    if len(data) > max_bytes:
        return None, f'{path}: not read, {len(data)} bytes is over the {max_bytes}-byte limit'
    if b'\0' in data[:8000]:
        return None, f'{path}: not read, binary'
    try:
        return data.decode('utf-8'), None
    except UnicodeDecodeError:
        return None, f'{path}: not read, not UTF-8'


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
) -> ChangeSet:
    """Read the change from `base` to `head` (a commit sha, or None for the working tree, untracked files included)."""
    entries = name_status(root, base, head)
    if head is None:
        entries += [('added', None, p) for p in untracked(root)]
    binary = binary_paths(root, base, head)
    diff_hunks = hunks(root, base, head)
    old_specs = [f'{base}:{old or path}' for status, old, path in entries if status != 'added']
    new_specs = [] if head is None else [f'{head}:{path}' for status, _, path in entries if status != 'deleted']
    blobs = read_blobs(root, old_specs + new_specs)

    files, notes = [], []
    for status, old, path in entries:
        if status == 'deleted':
            files.append(ChangedFile(path, status, skipped='deleted'))
            continue
        if head is None:
            on_disk = root / path
            data = on_disk.read_bytes() if on_disk.is_file() and not on_disk.is_symlink() else None
        else:
            data = blobs.get(f'{head}:{path}')
        text, skipped = _decode(path, data, max_bytes)
        base_text, _ = _decode(path, blobs.get(f'{base}:{old or path}'), max_bytes) if status != 'added' else (None, None)
        file_hunks = tuple(diff_hunks.get(path, ()))
        if status == 'added' and text is not None and not file_hunks:
            # untracked files have no diff: every line is added
            file_hunks = (Hunk(0, (), 1, tuple(text.splitlines())),) if text else ()
        added = frozenset(h.new_start + k for h in file_hunks for k in range(len(h.new_lines)))
        if skipped:
            notes.append(skipped)
        files.append(ChangedFile(
            path, status, old, added, file_hunks, text, base_text,
            size=len(data) if data is not None else 0,
            binary=path in binary or (skipped or '').endswith('binary'),
            skipped=skipped,
        ))
    history = commits(root, base, head or 'HEAD')
    if title is None and len(history) == 1:
        title, title_source = history[0].subject, 'commit'
        if body is None:
            body, body_source = history[0].body, 'commit'
    return ChangeSet(root, base, head, tuple(files), tuple(history), title, body, title_source, body_source, perf,
                     tuple(notes))


def config_at(root: Path, rev: str) -> Config:
    """The settings of commit `rev`: a pull request cannot switch a rule off for itself by editing pyproject.toml."""
    spec = f'{rev}:pyproject.toml'
    settings = read_blobs(root, [spec])[spec]
    return parse_config(settings.decode('utf-8', 'replace'), f'{rev[:12]}:pyproject.toml') if settings else Config()
