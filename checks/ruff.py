# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""ruff's own findings on the lines a change adds, under the ruff configuration of the branch the change targets."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from mrbot.git import read_blobs, tree_files
from mrbot.records import MrbotError
from mrbot.rules import Context, Violation, rule

_CONFIG_FILES = ('pyproject.toml', 'ruff.toml', '.ruff.toml')


def _ruff_binary() -> str | None:
    try:
        from ruff.__main__ import find_ruff_bin
        return str(find_ruff_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which('ruff')


def _stand_ins(root: Path, head: str | None) -> list[str]:
    """The head's Python files: ruff counts an import first-party where the module's file stands under a source root,
    so the copy it checks holds each of them, empty, to sort imports as in the repository. A name that could leave the
    copy is left out."""
    return [path for path in tree_files(root, head)
            if path.endswith(('.py', '.pyi')) and '..' not in Path(path).parts and not Path(path).is_absolute()]


def _touch(copy: Path, path: str) -> None:
    """An empty stand-in; one the file system refuses (a name too long, odd bytes) only weakens the sorting of imports
    of that module."""
    with contextlib.suppress(OSError):
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).touch()


def _run(ruff: str, cwd: Path, paths: list[str]) -> list[tuple[str, int, int, str, str]]:
    """`(path relative to cwd, line, column, code, message)` for each of ruff's findings on `paths`."""
    done = subprocess.run([ruff, 'check', '--output-format', 'json', '--no-fix', '--no-cache', '--force-exclude',
                           '--quiet', *paths], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f'exit {done.returncode}')
    # ruff reports a name that is not UTF-8 with U+FFFD for its odd bytes; the name as read is the one to report
    names = {os.fsencode(p).decode('utf-8', errors='replace'): p for p in paths}
    found = []
    for item in json.loads(done.stdout or '[]'):
        location = item.get('location') or {}
        reported = Path(item['filename']).resolve().relative_to(cwd.resolve()).as_posix()
        path = names.get(reported, reported)
        found.append((path, location.get('row', 0), max(location.get('column', 1) - 1, 0), item.get('code') or 'syntax',
                      item.get('message', '')))
    return found


@rule('RUF', "ruff's findings", 'error', 'fix what ruff reports (`ruff check --fix` fixes many)')
def ruff_findings(context: Context) -> Iterator[Violation]:
    """Reports ruff's findings (`RUF:<code>`, e.g. `RUF:E501` for a line over 127 characters) on added lines.

    The repository's ruff configuration already encodes most style rules (line length, modern typing, import
    order); mrbot runs ruff instead of re-implementing it and keeps only what the change adds, so an old file with
    old findings does not block a small fix. The configuration is that of the branch the change targets, as mrbot's
    own is: a change cannot silence ruff for itself, nor escape a rule added after it branched.

    Example: an added line of 130 characters.

    Instead: whatever ruff's message says; `ruff rule <code>` explains each code.
    """
    sources = [s for s in context.sources('*.py') if s.file.status != 'deleted']
    if not sources:
        return
    ruff = _ruff_binary()
    if ruff is None:
        yield Violation('', 0, 'ruff is not installed, so its findings were not checked', severity='note')
        return
    change = context.change
    paths = [s.path for s in sources]
    try:
        # the change's files in a copy, beside the ruff configuration it is graded by: a change that also edits that
        # configuration (an ignore, a per-file exemption, a shorter select) is checked by the rules it came to change;
        # the other Python files stand in empty, so that imports sort as in the repository
        configs = read_blobs(change.root, [f'{change.rules_at}:{name}' for name in _CONFIG_FILES])
        stand_ins = _stand_ins(change.root, change.head)
        with tempfile.TemporaryDirectory(prefix='mrbot-ruff-') as scratch:
            copy = Path(scratch)
            for path in stand_ins:
                _touch(copy, path)
            for name in _CONFIG_FILES:
                if (data := configs[f'{change.rules_at}:{name}']) is not None:
                    (copy / name).write_bytes(data)
            for source in sources:
                target = copy / source.path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(source.text, encoding='utf-8')
            results = _run(ruff, copy, paths)
    except (RuntimeError, ValueError, OSError, MrbotError) as exc:
        yield Violation('', 0, f'ruff could not run ({exc}), so its findings were not checked', severity='note')
        return
    for path, line, column, code, message in results:
        yield Violation(path, line, message, column, code=code)
