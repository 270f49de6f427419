# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot config`: the settings in effect, defaults included, and the file they came from."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mrbot import git
from mrbot.config import load_config, render_settings, settings_file
from mrbot.rules import check_rule_ids


def run(args: argparse.Namespace) -> int:
    root = git.repo_root(Path.cwd())
    source = settings_file(root)
    config = load_config(root)
    check_rule_ids(config)
    where = source if source.is_file() else f'{source} (absent: every setting is its default)'
    print(f'# mrbot config: read from {where}', file=sys.stderr)
    print(render_settings(config), end='')
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments of its own: `--config FILE` chooses the file, as for every command."""
