# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot cache clean`: remove what mrbot keeps under `.mrbot/` (the selection index, compiled-kernel captures, the
evidence of the last `mrbot prepare`), all of which it builds again when needed."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from mrbot import git
from mrbot.config import STATE
from mrbot.records import MrbotError


def run(args: argparse.Namespace) -> int:
    state = git.repo_root(Path.cwd()) / STATE
    if state.is_symlink() or (state.exists() and not state.is_dir()):
        raise MrbotError(f'{state} is not a folder mrbot made; remove it yourself if it is not needed')
    if not state.exists():
        print(f'mrbot cache: nothing to clean ({state} does not exist)')
        return 0
    size = sum(path.stat().st_size for path in state.rglob('*') if path.is_file() and not path.is_symlink())
    shutil.rmtree(state)
    print(f'mrbot cache: removed {state} ({size / 1e6:.1f} MB)')
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('action', choices=['clean'], help='clean: remove .mrbot/ and everything in it')
