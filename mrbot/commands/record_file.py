# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The file a command's `--json FILE` names for its run's record: checked before the work starts, written after it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from mrbot.records import MrbotError


def writable_file(path: str, flag: str) -> Path:
    """The file named by `flag path` (`--json run.json`), checked before any work: a file, not a folder, in an
    existing folder this user may write to, so that the work is never lost to a bad path at its end."""
    target = Path(path)
    if target.is_dir():
        raise MrbotError(f'{flag} {path}: a folder; expected the name of a file to write')
    folder = target.parent
    if not folder.is_dir():
        raise MrbotError(f'{flag} {path}: no folder {folder}; expected a file in an existing folder')
    if not os.access(folder, os.W_OK | os.X_OK) or target.exists() and not os.access(target, os.W_OK):
        raise MrbotError(f'{flag} {path}: not writable by this user; expected a file it may write')
    return target


def write_record(target: Path, record: dict, flag: str) -> None:
    """Write a finished run's JSON record where `flag` said; should that fail after all, print it on stdout rather
    than lose it, and say so."""
    text = json.dumps(record, indent=2) + '\n'
    try:
        target.write_text(text, encoding='utf-8')
    except OSError as error:
        print(text, end='', flush=True)
        raise MrbotError(f'{flag} {target}: cannot write it ({error.strerror or error}); the record is printed above on '
                         'stdout instead') from None
